// attention/trace.cpp — every intermediate of one forward pass, for `attn walk` and the tests,
// taken beside the chain rather than inside it: the chain runs as it always does (its Q, K, V, α
// and O are the ones recorded), and steps 3–4, whose results it overwrites in place, are computed
// once more here with the same kernels, so they are the same bits it saw.
#include <stdexcept>

#include "attention/attention.hpp"
#include "attention/backends.hpp"

namespace attn {

AttentionTrace trace_forward(const SingleHeadAttention& layer, const Matrix& X, const AttentionOptions& options) {
    const Backend b = options.backend;
    if (b == Backend::fused)
        throw std::invalid_argument(
            "trace_forward: the fused backend never stores S or α, so there is nothing to trace; "
            "use naive, simd or parallel");
    AttentionTrace t;
    t.X = X;
    auto [Q, K, V] = layer.project(X, b);
    const AttentionResult result = scaled_dot_product_attention(Q, K, V, options);
    backends::scaled_scores_into(Q, K, 1.0f, t.S, b);  // step 3 alone
    backends::scaled_scores_into(Q, K, scale_factor(options.scale, Q.cols()), t.S_scaled, b);
    if (options.causal) {
        t.S_masked = t.S_scaled;
        backends::causal_mask_in_place(t.S_masked, b);
    }
    t.Q = std::move(Q);
    t.K = std::move(K);
    t.V = std::move(V);
    t.weights = result.weights;
    t.output = result.output;
    return t;
}

}  // namespace attn
