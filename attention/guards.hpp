// attention/guards.hpp — what the chain checks before it computes anything (attention/guards.cpp):
// shapes that chain, and inputs whose steps cannot leave float32's range. Every failure throws,
// naming the function and the operands (by options.names: the lesson's symbols, or the caller's
// labels) with their shapes, before any work is done.
#pragma once

#include "attention/attention.hpp"

namespace attn::guards {

// For scaled_dot_product_attention: Q (n×d_k), K (m×d_k), V (m×d_v), d_k ≥ 1; a mask with data, and
// explicit_scale (when set) positive and finite.
// `out` must not hold Q, K or V itself: the chain writes its results while it still reads them.
void check_attention_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options,
                            const AttentionResult& out);
// No NaN or ±inf; steps 3 and 6 provably within float32 (std::overflow_error naming the step); for
// dtype bf16, no entry of Q or K that rounds to ±∞ in bfloat16 (std::overflow_error naming it); an
// additive mask's terms as check_mask_values.
void check_attention_values(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options);
// The largest row norms of Q, K and V (NaN or ±inf when a matrix holds one), however they were
// measured: check_attention_values measures them; the decode path (attention/heads.cpp) has its
// kernel measure K's and V's as it reads them, so that the cache is read once.
struct RowNorms {
    double Q, K, V;
};
// No NaN or ±inf (naming Q, K, V in turn, as n×d_k, m×d_k and m×d_v), and steps 3 and 6 within float32.
void check_row_norms(const RowNorms& largest, std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                     const OperandNames& names);
// Every term an additive mask gives an n×m score matrix is finite or −∞ (std::invalid_argument from `who`
// naming the first that is NaN or +∞); each term is read once, whatever axis it is broadcast along.
void check_mask_values(const std::string& who, const ScoreMask& mask, std::size_t n, std::size_t m);

// For the backward: the forward's result has the shapes a forward of Q, K, V gives, with what the
// backward needs kept (α, or on the fused backend the log-sum-exp), and dO is n×d_v (named by
// options.names.dO). Shapes of Q, K and V as check_attention_shapes.
// dO is n×d_v, the shape of O: one gradient per entry of O (named by options.names.dO).
void check_grad_output_shape(std::size_t n, std::size_t d_v, const Matrix& dO, const AttentionOptions& options);
// `out` must hold none of the inputs: the backward writes it while it still reads them.
void check_backward_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward,
                           const Matrix& dO, const AttentionOptions& options, const AttentionGradients& out);
// Bounds on every row norm (so every entry and partial sum) of dQ, dK and dV, from the inputs alone:
// ‖dq_i‖ ≤ Σ_j |dS_ij|·‖k_j‖, and likewise for dK and dV.
struct GradientBounds {
    double dQ, dK, dV;
};
// dO has no NaN or ±inf, and no gradient's sum can leave float32: every product of the backward sums
// n or m terms, each bounded by the norms of the rows it multiplies. Returns the bounds it proved.
GradientBounds check_backward_values(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                     const AttentionOptions& options);
// … and through the projections: X has no NaN or ±inf, and dW = Xᵀ·dQ (and K, V) and dX stay within
// float32 given those bounds.
void check_projection_gradient_values(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                                      const GradientBounds& core, const OperandNames& names);

// For SingleHeadAttention's constructor: d_model rows each (else DModelMismatch), W_Q and W_K as wide
// (d_k ≥ 1), finite.
void check_weights(const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V, const OperandNames& names);

// For project: X has the weights' d_model columns (else DModelMismatch) …
void check_projection_shapes(const Matrix& X, const Matrix& W_Q, const OperandNames& names);
// … no NaN or ±inf, and step 2 stays within float32.
void check_projection_values(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                             const OperandNames& names);

}  // namespace attn::guards
