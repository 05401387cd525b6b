// attention/attention.hpp — single-head scaled dot-product attention, as in the lesson:
//
//   X (n×d_model) → Q = X·W_Q, K = X·W_K, V = X·W_V → S = Q·Kᵀ → S/√d_k → α = softmax_row(·) → O = α·V
//
// in one line:  $O = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$
//
// Weight convention: the lesson's formulas, Q = X·W_Q with W_Q of shape (d_model × d_k).
// PyTorch's nn.Linear stores its weight the other way round, (d_k × d_model), and computes X·Wᵀ;
// so a weight taken from PyTorch must be transposed before it goes in here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/options.hpp"
#include "matrix/matrix.hpp"

namespace attn {

// Every intermediate of one forward pass, for the walkthrough and the tests (trace_forward, below).
struct AttentionTrace {
    Matrix X, Q, K, V;
    Matrix S;         // Q·Kᵀ
    Matrix S_scaled;  // scale·S, scale = scale_factor(...)
    Matrix S_masked;  // S_scaled with the mask added and −∞ above the diagonal (only with a mask or causal)
    Matrix weights;   // α = softmax_row of the above
    Matrix output;    // α·V
};

// The factor with S' = scale·S: 1/√d_k, 1/d_k or 1.
float scale_factor(Scale scale, std::size_t d_k);
// The factor a call with these options uses for queries d_k wide: options.explicit_scale when set,
// else scale_factor(options.scale, d_k).
float score_factor(const AttentionOptions& options, std::size_t d_k);

// The core: softmax(Q·Kᵀ·scale [+ mask])·V for Q (n×d_k), K (m×d_k), V (m×d_v). With
// options.budget, every buffer it allocates is charged before the first step.
AttentionResult scaled_dot_product_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                             const AttentionOptions& options = {});
// Same, writing into `out`, whose matrices are reused when they already have room: a loop calling
// this allocates (and first-touches) the n×m score buffer only once.
void scaled_dot_product_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                       const AttentionOptions& options, AttentionResult& out);

// The backward of the core (attention/backward.cpp): given dO = ∂L/∂O (n×d_v) for some loss L, the
// gradients dQ, dK, dV. `forward` is what scaled_dot_product_attention returned for these Q, K, V and
// options (with options.keep_for_backward on the fused backend). With options.budget, every buffer
// is charged before the first gradient is computed.
AttentionGradients scaled_dot_product_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                         const AttentionResult& forward, const Matrix& dO,
                                                         const AttentionOptions& options = {});
// Same, writing into `out`, whose matrices are reused when they already have room.
void scaled_dot_product_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                const AttentionResult& forward, const Matrix& dO,
                                                const AttentionOptions& options, AttentionGradients& out);

// Forward and backward in one call, what a training step needs: O (and α, or the log-sum-exp) and
// the gradients for dO. With options.budget, all that both passes allocate is charged before step 3.
struct AttentionPass {
    AttentionResult result;
    AttentionGradients gradients;
};
AttentionPass attention_forward_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                         const AttentionOptions& options = {});

// The lesson's SingleHeadAttention: three projection matrices and a forward pass.
class SingleHeadAttention {
public:
    // W_Q (d_model×d_k), W_K (d_model×d_k), W_V (d_model×d_v); `names` say how errors name them.
    SingleHeadAttention(Matrix W_Q, Matrix W_K, Matrix W_V, const OperandNames& names = {});

    // With options.budget, all that both stages allocate is charged before step 1.
    AttentionResult forward(const Matrix& X, const AttentionOptions& options = {}) const;

    // Steps 1–2 alone: Q, K, V for X (forward = project, then scaled_dot_product_attention); of the
    // options, the backend, the budget and the names count.
    struct Projections {
        Matrix Q, K, V;
    };
    Projections project(const Matrix& X, const AttentionOptions& options = {}) const;

    // The backward of forward (attention/backward.cpp): from dO = ∂L/∂O, the gradients of L with
    // respect to the weights (what training changes) and to X, and on the way to Q, K and V.
    // `projections` and `result` are project(X, options) and the core's result for them.
    struct Gradients {
        Matrix dX, dW_Q, dW_K, dW_V;
        AttentionGradients qkv;  // dQ, dK, dV
    };
    Gradients backward(const Matrix& X, const Projections& projections, const AttentionResult& result, const Matrix& dO,
                       const AttentionOptions& options = {}) const;

    // Forward and backward in one call (a training step's): with options.budget, all that both passes
    // allocate is charged before step 1.
    struct Pass {
        Projections projections;
        AttentionResult result;
        Gradients gradients;
    };
    Pass forward_backward(const Matrix& X, const Matrix& dO, const AttentionOptions& options = {}) const;

    const Matrix& W_Q() const { return W_Q_; }
    const Matrix& W_K() const { return W_K_; }
    const Matrix& W_V() const { return W_V_; }

private:
    Matrix W_Q_, W_K_, W_V_;
};

// Every gradient of one backward pass of the layer, for the walkthrough and the tests (trace_backward).
struct BackwardTrace {
    Matrix dO;                    // ∂L/∂O, as given
    Matrix dV, d_weights;         // grad 6: αᵀ·dO, and dα = dO·Vᵀ
    Matrix dS_prime;              // grad 5: α ⊙ (dα − rowsum(dα ⊙ α)); 0 where the mask put −∞
    Matrix dS;                    // grad 4: scale·dS'
    Matrix dQ, dK;                // grad 3
    Matrix dW_Q, dW_K, dW_V, dX;  // grads 2 and 1
};

// layer.forward_backward(X, dO, options) with every gradient kept (attention/trace.cpp); the fused
// backend keeps no n×n gradients, so asking it is an error (std::invalid_argument).
BackwardTrace trace_backward(const SingleHeadAttention& layer, const Matrix& X, const Matrix& dO,
                             const AttentionOptions& options = {});

// layer.forward(X, options) with every intermediate kept (attention/trace.cpp). Backend::fused keeps
// no n×n intermediates, so asking it for a trace is an error (std::invalid_argument).
AttentionTrace trace_forward(const SingleHeadAttention& layer, const Matrix& X, const AttentionOptions& options = {});

}  // namespace attn
