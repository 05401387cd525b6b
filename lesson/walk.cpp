// lesson/walk.cpp — the worked example and its demos, each computed here once (the demos by
// lesson/experiments.hpp), for every surface that shows them.
#include "lesson/walk.hpp"

#include <algorithm>

#include "lesson/worked_example.hpp"
#include "matrix/norms.hpp"

namespace attn::lesson {

namespace {

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
    if (t.Q.rows() == t.Q.cols() && t.K.rows() == t.Q.cols())  // Q·K is defined only when n = d_k
        w.Q_times_K = experiments::scores_without_transpose(t.Q, t.K);
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
    w.column = std::min<std::size_t>(1, n - 1);
    add_confusions(w);
    w.weights_row_sums = experiments::row_sums(t.weights);
    const std::size_t written = options.causal ? n - 1 : 0;  // under the mask row 1 sees only itself
    w.softmax_row = {written, experiments::softmax_written_out(w.softmax_input.row(written))};
    w.exercise5.push_back({0, experiments::output_against_value(t, 0)});
    if (options.causal && n > 1) w.exercise5.push_back({n - 1, experiments::output_against_value(t, n - 1)});
    w.fused = fused_walk(w.softmax_input, t.V, t.output);
    return w;
}

ForwardWalk worked_example_walk(const AttentionOptions& options) {
    return forward_walk(worked_example::layer(), worked_example::X(), options);
}

}  // namespace attn::lesson
