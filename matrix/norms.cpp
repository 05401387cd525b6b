// matrix/norms.cpp — row and column lengths, summed for speed where that is exact enough.
#include "matrix/norms.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace attn {

double larger_norm(double a, double b) { return (std::isnan(a) || a >= b) ? a : b; }

// Σ_k x_k², summed in `Sum`. Eight partial sums, each in its own order, let the compiler use vector
// instructions without reassociating any one of them.
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

// Every call's guard needs this of Q, K and V before any work, so a row is summed in float first,
// four lanes a vector instead of two (SSE2; on the fast backends the guards sum with the widest
// vectors, attention/guards.cpp, and come here for what that sum does not settle). It is kept where
// it lies in [2⁻⁶⁰, FLT_MAX]: no square overflowed, and squares too small to be normal floats add
// less than d·2⁻¹²⁶, nothing beside 2⁻⁶⁰; it is then within d·2⁻²⁴ (relative) of the exact sum,
// which a bound kept under half the float range never notices. Any other row (huge or tiny
// entries, NaN, ±inf) is summed again in double. The lengths are compared squared, and √ taken once.
double max_row_norm(const Matrix& A) {
    double largest = 0.0;               // of the squared lengths
    if (A.cols() == 0) return largest;  // a header may claim 2⁶² empty rows: don't walk them
    for (std::size_t i = 0; i < A.rows(); ++i) {
        const float fast = sum_of_squares<float>(A.row(i));
        const bool exact_enough = fast >= 0x1p-60f && fast <= std::numeric_limits<float>::max();
        largest = larger_norm(largest, exact_enough ? double(fast) : sum_of_squares<double>(A.row(i)));
    }
    return std::sqrt(largest);
}

double max_col_norm(const Matrix& A) {
    if (A.cols() == 0) return 0.0;
    std::vector<double> sums(A.cols(), 0.0);
    for (std::size_t i = 0; i < A.rows(); ++i)
        for (std::size_t j = 0; j < A.cols(); ++j) sums[j] += double(A(i, j)) * A(i, j);
    double result = 0.0;
    for (double sum : sums) result = larger_norm(result, std::sqrt(sum));
    return result;
}

}  // namespace attn
