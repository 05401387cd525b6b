// tests/reference.hpp — an independent double-precision attention, written separately from the
// library (no shared code), used as the yardstick for every float path.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "matrix/matrix.hpp"

namespace reference {

using Mat = std::vector<std::vector<double>>;

inline Mat from(const attn::Matrix& m) {
    Mat r(m.rows(), std::vector<double>(m.cols()));
    for (std::size_t i = 0; i < m.rows(); ++i)
        for (std::size_t j = 0; j < m.cols(); ++j) r[i][j] = m(i, j);
    return r;
}

inline Mat mul(const Mat& a, const Mat& b, std::size_t inner, std::size_t cols) {
    Mat c(a.size(), std::vector<double>(cols, 0.0));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t p = 0; p < inner; ++p)
            for (std::size_t j = 0; j < cols; ++j) c[i][j] += a[i][p] * b[p][j];
    return c;
}

struct Result {
    Mat weights, output;
};

// divisor: √d_k, d_k or 1.
inline Result attention(const Mat& Q, const Mat& K, const Mat& V, double divisor, bool causal) {
    const std::size_t n = Q.size(), m = K.size(), dk = K.empty() ? 0 : K[0].size(), dv = V.empty() ? 0 : V[0].size();
    Mat w(n, std::vector<double>(m));
    for (std::size_t i = 0; i < n; ++i) {
        double top = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < m; ++j) {
            double s = 0.0;
            for (std::size_t p = 0; p < dk; ++p) s += Q[i][p] * K[j][p];
            w[i][j] = (causal && j > i) ? -std::numeric_limits<double>::infinity() : s / divisor;
            top = std::max(top, w[i][j]);
        }
        double total = 0.0;
        for (double& x : w[i]) total += (x = std::exp(x - top));
        for (double& x : w[i]) x /= total;
    }
    return {w, mul(w, V, m, dv)};
}

}  // namespace reference
