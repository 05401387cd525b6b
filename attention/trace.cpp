// attention/trace.cpp — every intermediate of one forward pass, for `attn walk` and the tests,
// taken beside the chain rather than inside it: the chain runs as it always does (its Q, K, V, α
// and O are the ones recorded), and steps 3–4, whose results it overwrites in place, are computed
// once more here, step 3 with the same kernel, so they are the same bits it saw.
#include <stdexcept>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "matrix/ops.hpp"

namespace attn {

AttentionTrace trace_forward(const SingleHeadAttention& layer, const Matrix& X, const AttentionOptions& options) {
    const Backend b = options.backend;
    if (b == Backend::fused)
        throw std::invalid_argument(
            "trace_forward: the fused backend never stores S or α, so there is nothing to trace; "
            "use naive, simd or parallel");
    AttentionTrace t;
    t.X = X;
    auto [Q, K, V] = layer.project(X, options);
    const AttentionResult result = scaled_dot_product_attention(Q, K, V, options);
    backends::matmul_transposed_into(Q, K, t.S, b);  // step 3
    t.S_scaled =
        scaled(t.S, scale_factor(options.scale, Q.cols()));    // step 4: round(scale·S_ij), the bits step 5 reads
    if (options.causal) t.S_masked = causal_mask(t.S_scaled);  // step 4.mask
    t.Q = std::move(Q);
    t.K = std::move(K);
    t.V = std::move(V);
    t.weights = result.weights;
    t.output = result.output;
    return t;
}

}  // namespace attn
