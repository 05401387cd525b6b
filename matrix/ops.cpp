// matrix/ops.cpp — naive reference implementations. Plain loops, no tricks: read these first.
#include "matrix/ops.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn {

// [naive matmul] C_ij = Σ_p A_ip·B_pj: for each (i, j), one dot product of a row of A and a column of B
void matmul_into(const Matrix& A, const Matrix& B, Matrix& C) {
    check_matmul_shapes("matmul", A, B);
    C.resize_for_overwrite(A.rows(), B.cols());
    if (C.empty()) return;  // no element to compute (and maybe 2⁶² empty rows not worth walking)
    for (std::size_t i = 0; i < A.rows(); ++i) {
        for (std::size_t j = 0; j < B.cols(); ++j) {
            float sum = 0.0f;  // C_ij = row i of A · column j of B
            for (std::size_t p = 0; p < A.cols(); ++p) sum += A(i, p) * B(p, j);
            C(i, j) = sum;
        }
    }
}

Matrix matmul(const Matrix& A, const Matrix& B) {
    Matrix C;
    matmul_into(A, B, C);
    return C;
}

// [naive transpose] (Aᵀ)_ij = A_ji: an actual copy, as the formula S = Q·Kᵀ reads literally
Matrix transpose(const Matrix& A) {
    Matrix T(A.cols(), A.rows());
    if (A.empty()) return T;  // nothing to copy, however many empty rows a header claims
    for (std::size_t i = 0; i < A.rows(); ++i) {
        for (std::size_t j = 0; j < A.cols(); ++j) T(j, i) = A(i, j);
    }
    return T;
}

// [naive scale] A_ij ← factor·A_ij
void scale_in_place(Matrix& A, float factor) {
    for (std::size_t i = 0; i < A.size(); ++i) A.data()[i] *= factor;
}

Matrix scaled(const Matrix& A, float factor) {
    Matrix R = A;
    scale_in_place(R, factor);
    return R;
}

// Why subtract the row maximum: e^x overflows float for x > 88.7, and scores of a few hundred are
// easy to get (exercise 1 without scaling). Since e^(x−m) / Σ e^(x_t−m) = e^x / Σ e^(x_t) for any m,
// that is $\frac{e^{x_j - m}}{\sum_t e^{x_t - m}} = \frac{e^{x_j}}{\sum_t e^{x_t}}$,
// subtracting m = max changes nothing mathematically, but now every exponent is ≤ 0, so every term
// is in (0, 1], the largest is exactly 1, and the sum lies in [1, n]: no overflow, no division by 0.
//
// A row that is entirely −∞ has no position it may look at. Mathematically it is 0/0; literally
// computed, −∞ − (−∞) is NaN and would poison every later step. We return all zeros instead: such a
// query then takes nothing from V and its output row is the zero vector. (A causal mask never does
// this, because the diagonal j = i always stays visible.)
// [naive softmax] α_ij = e^(S_ij − m_i) / Σ_t e^(S_it − m_i), m_i = max_t S_it
void softmax_rows_in_place(Matrix& S) {
    for (std::size_t i = 0; i < S.rows(); ++i) {
        auto x = S.row(i);
        float m = neg_inf;
        for (float v : x) m = std::fmax(m, v);  // fmax ignores a NaN unless all are NaN
        if (m == neg_inf) {
            for (float& v : x) v = 0.0f;
            continue;
        }
        float sum = 0.0f;
        for (float& v : x) {
            v = std::exp(v - m);
            sum += v;
        }
        for (float& v : x) v /= sum;
    }
}

Matrix softmax_rows(const Matrix& S) {
    Matrix R = S;
    softmax_rows_in_place(R);
    return R;
}

// [naive mask] S_ij ← −∞ for j > i (n×m: the triangle aligned at the top-left corner)
void causal_mask_in_place(Matrix& S) {
    for (std::size_t i = 0; i < S.rows(); ++i) {
        for (std::size_t j = i + 1; j < S.cols(); ++j) S(i, j) = neg_inf;
    }
}

Matrix causal_mask(const Matrix& S) {
    Matrix R = S;
    causal_mask_in_place(R);
    return R;
}

// The softmax's backward. With p = softmax(x) and an upstream gradient g = ∂L/∂p, the Jacobian is
// ∂p_j/∂x_k = p_j·(δ_jk − p_k), so
//     ∂L/∂x_k = Σ_j g_j·p_j·(δ_jk − p_k) = p_k·g_k − p_k·Σ_j g_j·p_j = p_k·(g_k − Σ_j g_j·p_j):
// one dot product per row, then one multiply per element; the n×n Jacobian is never formed.
// [naive softmax gradient] dX_ij = P_ij·(G_ij − Σ_t G_it·P_it)
void softmax_gradient_rows_in_place(const Matrix& P, Matrix& G) {
    check_same_shape("softmax_gradient", "P", P, "G", G);
    for (std::size_t i = 0; i < P.rows(); ++i) {
        float dot = 0.0f;
        for (std::size_t j = 0; j < P.cols(); ++j) dot += G(i, j) * P(i, j);
        for (std::size_t j = 0; j < P.cols(); ++j) G(i, j) = P(i, j) * (G(i, j) - dot);
    }
}

// [naive add] A_ij ← A_ij + B_ij
void add_in_place(Matrix& A, const Matrix& B) {
    check_same_shape("add", "A", A, "B", B);
    for (std::size_t i = 0; i < A.size(); ++i) A.data()[i] += B.data()[i];
}

}  // namespace attn
