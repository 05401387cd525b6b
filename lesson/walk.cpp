// lesson/walk.cpp — the worked example and its demos, each computed here once (the demos by
// attention/experiments.hpp), for every surface that shows them.
#include "lesson/walk.hpp"

#include <algorithm>
#include <cmath>

#include "attention/worked_example.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/norms.hpp"
#include "matrix/print.hpp"

namespace attn::lesson {

namespace {

std::vector<float> column_of(const Matrix& m, std::size_t j) {
    std::vector<float> c;
    for (std::size_t p = 0; p < m.rows(); ++p) c.push_back(m(p, j));
    return c;
}

std::vector<float> row_of(const Matrix& m, std::size_t i) {
    const auto r = m.row(i);
    return {r.begin(), r.end()};
}

std::vector<std::size_t> largest_per_row(const Matrix& S) {
    std::vector<std::size_t> best;
    for (std::size_t i = 0; i < S.rows(); ++i) best.push_back(experiments::row_argmax(S.row(i)));
    return best;
}

// The lesson's confusion 4: the original Transformer, d_model = 512 with h = 8 heads.
Heads original_transformer() {
    constexpr std::size_t d_model = 512, h = 8;
    return {d_model, h, experiments::head_width(d_model, h)};
}

void add_confusions(ForwardWalk& w) {
    const AttentionTrace& t = w.trace;
    if (t.Q.rows() == t.Q.cols() && t.K.rows() == t.Q.cols()) {  // Q·K is defined only when n = d_k
        w.Q_times_K = experiments::scores_without_transpose(t.Q, t.K);
        w.qk_entry = DotProduct{row_of(t.Q, 0), column_of(t.K, w.column), (*w.Q_times_K)(0, w.column)};
    }
    w.cosines = experiments::cosines(t.Q, t.K);
    w.q_norm = float(norm(t.Q.row(0)));
    w.k_norm = float(norm(t.K.row(w.column)));
    w.S_with_W_K_as_W_Q = experiments::scores_with_weights(t.X, w.W_Q, w.W_Q);
    w.largest_in_S = largest_per_row(t.S);
    w.largest_with_W_K_as_W_Q = largest_per_row(w.S_with_W_K_as_W_Q);
    w.softmax_by_column = experiments::softmax_columns(w.softmax_input);
    w.by_column_column_sums = experiments::column_sums(w.softmax_by_column);
    w.by_column_row_sums = experiments::row_sums(w.softmax_by_column);
    w.heads = original_transformer();
}

}  // namespace

ForwardWalk forward_walk(const SingleHeadAttention& layer, const Matrix& X, const AttentionOptions& options) {
    ForwardWalk w;
    w.options = options;
    w.W_Q = layer.W_Q();
    w.W_K = layer.W_K();
    w.W_V = layer.W_V();
    w.trace = trace_forward(layer, X, options);
    const AttentionTrace& t = w.trace;
    const std::size_t n = t.X.rows();
    w.softmax_input = options.causal ? t.S_masked : t.S_scaled;
    w.q_entry = {row_of(t.X, 0), column_of(w.W_Q, 0), t.Q(0, 0)};
    w.column = std::min<std::size_t>(1, n - 1);
    w.s_entry = {row_of(t.Q, 0), row_of(t.K, w.column), t.S(0, w.column)};
    add_confusions(w);
    w.weights_row_sums = experiments::row_sums(t.weights);
    const std::size_t written = options.causal ? n - 1 : 0;  // under the mask row 1 sees only itself
    w.softmax_row = {written, experiments::softmax_written_out(w.softmax_input.row(written))};
    w.exercise5.push_back({0, experiments::output_against_value(t, 0)});
    if (options.causal && n > 1) w.exercise5.push_back({n - 1, experiments::output_against_value(t, n - 1)});
    return w;
}

ForwardWalk worked_example_walk(const AttentionOptions& options) {
    return forward_walk(worked_example::layer(), worked_example::X(), options);
}

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

Bf16Walk bf16_walk(const AttentionOptions& options) {
    const AttentionTrace walk = worked_example::trace(options);
    AttentionOptions bf16 = options;
    bf16.backend = Backend::fused;
    bf16.dtype = Dtype::bf16;
    Bf16Walk b{rounded_to_bfloat16(walk.Q),
               rounded_to_bfloat16(walk.K),
               rounded_to_bfloat16(walk.V),
               scaled_dot_product_attention(walk.Q, walk.K, walk.V, bf16).output,
               walk.output,
               0.0};
    for (std::size_t k = 0; k < b.output.size(); ++k)
        b.largest_change = std::max(b.largest_change, std::fabs(double(b.output.data()[k]) - b.output_f32.data()[k]));
    return b;
}

std::size_t changed_at(const Bf16Walk& walk, int precision) {
    std::size_t changed = 0;
    for (std::size_t k = 0; k < walk.output.size(); ++k)
        changed +=
            format_number(walk.output.data()[k], precision) != format_number(walk.output_f32.data()[k], precision);
    return changed;
}

}  // namespace attn::lesson
