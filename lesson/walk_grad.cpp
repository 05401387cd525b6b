// lesson/walk_grad.cpp — the worked example run backwards (attn walk --grad): the library's gradients
// for L = ½‖O − T‖² with T = I (lesson/worked_example.hpp), in the order the walk shows them.
#include <string>

#include "lesson/walk.hpp"
#include "lesson/worked_example.hpp"

namespace attn::lesson {

std::vector<Gradient> BackwardWalk::in_order() const {
    const char* divisor = options.scale == Scale::sqrt_dk ? "÷ √d_k" : options.scale == Scale::dk ? "÷ d_k" : "× 1";
    const BackwardTrace& g = gradients;
    return {{"grad 6.V", "dV = αᵀ·dO", Backward::dV, &g.dV},
            {"grad 6.α", "dα = dO·Vᵀ", Backward::d_weights, &g.d_weights},
            {"grad 5", "dS' = α ⊙ (dα − rowsum(dα ⊙ α))", Backward::dS_prime, &g.dS_prime},
            {"grad 4", std::string("dS = dS' ") + divisor, Backward::dS, &g.dS},
            {"grad 3.Q", "dQ = dS·K", Backward::dQ, &g.dQ},
            {"grad 3.K", "dK = dSᵀ·Q", Backward::dK, &g.dK},
            {"grad 2.Q", "dW_Q = Xᵀ·dQ", Backward::dW_Q, &g.dW_Q},
            {"grad 2.K", "dW_K = Xᵀ·dK", Backward::dW_K, &g.dW_K},
            {"grad 2.V", "dW_V = Xᵀ·dV", Backward::dW_V, &g.dW_V},
            {"grad 1", "dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ", Backward::dX, &g.dX}};
}

BackwardWalk backward_walk(const AttentionOptions& options) {
    constexpr float step_size = 0.1f;
    BackwardWalk b;
    b.options = options;
    b.target = worked_example::target();
    b.loss = worked_example::loss(worked_example::trace(options).output);
    b.gradients = worked_example::backward_trace(options);
    b.step_size = step_size;
    b.loss_after_step = worked_example::loss_after_step(step_size, options);
    return b;
}

}  // namespace attn::lesson
