// matrix/ops.cpp — naive reference implementations. Plain loops, no tricks: read these first. (The
// one exception is at the end: the row and column norms that guard every call, written for speed.)
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

// [naive mask] S_ij ← −∞ for j > i
void causal_mask_in_place(Matrix& S) {
    check_square("causal_mask", S);
    for (std::size_t i = 0; i < S.rows(); ++i) {
        for (std::size_t j = i + 1; j < S.cols(); ++j) S(i, j) = neg_inf;
    }
}

Matrix causal_mask(const Matrix& S) {
    Matrix R = S;
    causal_mask_in_place(R);
    return R;
}

// A NaN must win every comparison here, so that it is reported rather than skipped.
static double larger(double a, double b) { return (std::isnan(a) || a >= b) ? a : b; }

// Σ_k x_k², summed in `Sum`. Eight partial sums, each in its own order, let the compiler use vector
// instructions without reassociating any one of them: this check runs on every attention call, and
// the one-accumulator loop cost ~12% of a fused n = 2048 core.
template <class Sum>
static Sum sum_of_squares(std::span<const float> x) {
    Sum part[8] = {};
    std::size_t k = 0;
    for (; k + 8 <= x.size(); k += 8)
        for (std::size_t lane = 0; lane < 8; ++lane) part[lane] += Sum(x[k + lane]) * Sum(x[k + lane]);
    Sum sum = 0;
    for (; k < x.size(); ++k) sum += Sum(x[k]) * Sum(x[k]);
    for (Sum p : part) sum += p;
    return sum;
}

double norm(std::span<const float> x) { return std::sqrt(sum_of_squares<double>(x)); }  // a float square can overflow

// The guard of every call takes this of Q, K and V, on one thread: the other threads of the fast
// paths wait for it. So a row is summed in float first, four lanes a vector instead of two (SSE2):
// 25 → 12 ns for a row of 64 (AMD EPYC family 25), fused core 1.01–1.03× on two threads
// (docs/performance.md). That sum is kept where it lies in [2⁻⁶⁰, FLT_MAX]: no square overflowed,
// and squares too small to be normal floats add less than d·2⁻¹²⁶, nothing beside 2⁻⁶⁰; it is then
// within d·2⁻²⁴ (relative) of the exact sum, which a bound kept under half the float range never
// notices. Any other row (huge or tiny entries, NaN, ±inf) is summed again in double. The lengths
// are compared squared, and √ taken once.
double max_row_norm(const Matrix& A) {
    double largest = 0.0;               // of the squared lengths
    if (A.cols() == 0) return largest;  // a header may claim 2⁶² empty rows: don't walk them
    for (std::size_t i = 0; i < A.rows(); ++i) {
        const float fast = sum_of_squares<float>(A.row(i));
        const bool exact_enough = fast >= 0x1p-60f && fast <= std::numeric_limits<float>::max();
        largest = larger(largest, exact_enough ? double(fast) : sum_of_squares<double>(A.row(i)));
    }
    return std::sqrt(largest);
}

double max_col_norm(const Matrix& A) {
    if (A.cols() == 0) return 0.0;
    std::vector<double> sums(A.cols(), 0.0);
    for (std::size_t i = 0; i < A.rows(); ++i)
        for (std::size_t j = 0; j < A.cols(); ++j) sums[j] += double(A(i, j)) * A(i, j);
    double result = 0.0;
    for (double sum : sums) result = larger(result, std::sqrt(sum));
    return result;
}

}  // namespace attn
