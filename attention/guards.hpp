// attention/guards.hpp — what the chain checks before it computes anything (attention/guards.cpp):
// shapes that chain, and inputs whose steps cannot leave float32's range. Every failure throws,
// naming the function, the matrices and their shapes, before any work is done.
#pragma once

#include "attention/attention.hpp"

namespace attn::guards {

// For scaled_dot_product_attention: Q (n×d_k), K (m×d_k), V (m×d_v), d_k ≥ 1, n = m when causal;
// no NaN or ±inf; steps 3 and 6 provably within float32 (std::overflow_error naming the step).
// `out` must not hold Q, K or V itself: the chain writes its results while it still reads them.
void check_attention_inputs(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options,
                            const AttentionResult& out);
// The shapes alone (no pass over the values), for a caller that must know before it budgets memory.
void check_attention_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options);

// For SingleHeadAttention's constructor: d_model rows each, W_Q and W_K as wide (d_k ≥ 1), finite.
void check_weights(const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V);

// For project: X has d_model columns and no NaN or ±inf, and step 2 stays within float32.
void check_projection_inputs(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V);

}  // namespace attn::guards
