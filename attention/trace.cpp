// attention/trace.cpp — every intermediate of one forward pass, and every gradient of one backward
// pass, for `attn walk` and the tests, taken beside the chain rather than inside it: the chain runs
// as it always does (its Q, K, V, α, O and its gradients are the ones recorded), and the steps whose
// results it overwrites in place (3–4 forward, 6.α–4 backward) are computed once more here, with
// the same kernels, so they are the same bits it saw.
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
    backends::matmul_transposed_into(Q, K, t.S, b);             // step 3
    t.S_scaled = scaled(t.S, score_factor(options, Q.cols()));  // step 4: round(scale·S_ij), the bits step 5 reads
    if (options.causal || options.mask) {                       // step 4.mask, as the naive loops add it
        t.S_masked = t.S_scaled;
        backends::mask({t.S_masked, 1.0f}, options, Backend::naive);
    }
    t.Q = std::move(Q);
    t.K = std::move(K);
    t.V = std::move(V);
    t.weights = result.weights;
    t.output = result.output;
    return t;
}

BackwardTrace trace_backward(const SingleHeadAttention& layer, const Matrix& X, const Matrix& dO,
                             const AttentionOptions& options) {
    const Backend b = options.backend;
    if (b == Backend::fused)
        throw std::invalid_argument(
            "trace_backward: the fused backend never stores dα or dS, so there is nothing to trace; "
            "use naive, simd or parallel");
    SingleHeadAttention::Pass pass = layer.forward_backward(X, dO, options);
    BackwardTrace t;
    t.dO = dO;
    backends::matmul_transposed_into(dO, pass.projections.V, t.d_weights, b);  // grad 6.α
    t.dS_prime = t.d_weights;
    backends::softmax_gradient_in_place(pass.result.weights, t.dS_prime, b);  // grad 5
    t.dS = scaled(t.dS_prime, score_factor(options, layer.W_Q().cols()));     // grad 4
    t.dV = std::move(pass.gradients.qkv.dV);
    t.dQ = std::move(pass.gradients.qkv.dQ);
    t.dK = std::move(pass.gradients.qkv.dK);
    t.dW_Q = std::move(pass.gradients.dW_Q);
    t.dW_K = std::move(pass.gradients.dW_K);
    t.dW_V = std::move(pass.gradients.dW_V);
    t.dX = std::move(pass.gradients.dX);
    return t;
}

}  // namespace attn
