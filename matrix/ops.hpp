// matrix/ops.hpp — the textbook operations, each the plainest loop that is correct.
//
// These are the reference every faster kernel in simd/ is tested against, and the code a learner
// reads first. Each op checks its shapes and throws std::invalid_argument whose message names the op
// and the shapes, e.g. "matmul: (3×4)·(3×3): inner dimensions 4 and 3 differ".
//
// Names follow one convention across matrix/, simd/ and attention/: `op(...)` returns a new
// matrix; `op_into(..., out)` writes its result into a matrix the caller owns (resized as needed,
// so a loop that runs the op many times allocates once); `op_in_place(M)` changes M itself.
#pragma once

#include "matrix/matrix.hpp"
#include "matrix/shape_checks.hpp"

namespace attn {

// C = A·B,  (m×k)·(k×n) → (m×n),  C_ij = Σ_p A_ip·B_pj
Matrix matmul(const Matrix& A, const Matrix& B);
void matmul_into(const Matrix& A, const Matrix& B, Matrix& C);

// Aᵀ,  (m×n) → (n×m),  (Aᵀ)_ij = A_ji
Matrix transpose(const Matrix& A);

// factor·A, element by element (step 4 multiplies S by scale = 1/√d_k); also in place.
Matrix scaled(const Matrix& A, float factor);
void scale_in_place(Matrix& A, float factor);

// Each row turned into a probability distribution: p_j = e^(x_j − max) / Σ_t e^(x_t − max).
// A row that is entirely −∞ (every position masked) becomes all zeros; see ops.cpp for why.
Matrix softmax_rows(const Matrix& S);
void softmax_rows_in_place(Matrix& S);

// Causal mask on an n×m score matrix: S_ij = −∞ wherever j > i (position i may not see the future), the
// triangle aligned at the top-left corner whatever m is.
Matrix causal_mask(const Matrix& S);
void causal_mask_in_place(Matrix& S);

// The softmax's backward, row by row: given P = softmax_rows(X) and G = ∂L/∂P, G becomes ∂L/∂X,
// G_ij ← P_ij·(G_ij − Σ_t G_it·P_it) (ops.cpp derives it).
void softmax_gradient_rows_in_place(const Matrix& P, Matrix& G);

// A ← A + B, element by element.
void add_in_place(Matrix& A, const Matrix& B);

}  // namespace attn
