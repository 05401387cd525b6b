// attention/guards.hpp — the values step of the one path (attention/guards.cpp): inputs whose steps
// cannot leave float32's range, before any work. (The shapes were checked first, attention/shapes.cpp.)
// Every failure throws, naming the function and the operands (by options.names: the lesson's
// symbols, or the caller's labels) with their shapes, before any work is done.
#pragma once

#include "attention/attention.hpp"
#include "attention/heads.hpp"

namespace attn::guards {

// How the forward's checks name the call, on every backend, also when it is the forward of a backward.
inline constexpr const char* forward_who = "scaled_dot_product_attention";

// What the scores are made of besides Q·Kᵀ: the factor that multiplies them and the largest finite
// term a mask adds to them (0 without one: −∞ and a boolean mask's 0 never raise a score).
struct ScaleAndTerms {
    float scale;
    float largest_term;
};

// For one head: no NaN or ±inf in Q, K, V; the scores as the kernels add them up (scaled, the mask's
// terms with them) and step 6 provably within float32 (std::overflow_error naming the step); for
// dtype bf16, no entry of Q or K that rounds to ±∞ in bfloat16; an additive mask's terms finite or −∞.
// K's and V's largest row norms are options.kv_norms when given (a KvCache's), else measured here.
void check_attention_values(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options);
// The largest row norms of Q, K and V (NaN or ±inf when a matrix holds one), however they were
// measured: check_attention_values measures them; the decode path (attention/heads.cpp) has its
// kernel measure K's and V's as it reads them, so that the cache is read once.
struct RowNorms {
    double Q, K, V;
};
// No NaN or ±inf (naming Q, K, V in turn, as n×d_k, m×d_k and m×d_v), and steps 3, 4 and 6 within float32.
void check_row_norms(const RowNorms& largest, std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                     const ScaleAndTerms& scores, const OperandNames& names);
// Every term an additive mask gives an n×m score matrix is finite or −∞ (std::invalid_argument from
// `who` naming the first that is NaN or +∞); each term is read once, whatever axis it is broadcast
// along. Returns the largest finite term, 0 when none is positive (a boolean mask adds 0 or −∞).
float check_mask_values(const std::string& who, const ScoreMask& mask, std::size_t n, std::size_t m);
// The scores' factor and the largest term `mask` (nullptr: none) adds to an n×m score matrix.
ScaleAndTerms scale_and_terms(const std::string& who, const AttentionOptions& options, const ScoreMask* mask,
                              std::size_t n, std::size_t m, std::size_t d_k);

// The largest row norm of a cache of any type, each element read as the value its bits hold.
double largest_row_norm(const CacheView& cache);

// Bounds on every row norm (so every entry and partial sum) of dQ, dK and dV, from the inputs alone:
// ‖dq_i‖ ≤ scale·Σ_j |dS'_ij|·‖k_j‖, and likewise for dK and dV.
struct GradientBounds {
    double dQ, dK, dV;
};
// dO has no NaN or ±inf, the forward's scores are within float32 as for the forward, and no
// gradient's sum can leave float32: every product of the backward sums n or m terms, each bounded by
// the norms of the rows it multiplies. Returns the bounds it proved.
GradientBounds check_backward_values(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                     const AttentionOptions& options);
// … and through the projections: X has no NaN or ±inf, and dW = Xᵀ·dQ (and K, V) and dX stay within
// float32 given those bounds.
void check_projection_gradient_values(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                                      const GradientBounds& core, const OperandNames& names);

// The layer's weights hold no NaN or ±inf.
void check_weight_values(const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V, const OperandNames& names);
// Step 2: X holds no NaN or ±inf, and Q, K and V stay within float32.
void check_projection_values(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                             const OperandNames& names);

}  // namespace attn::guards
