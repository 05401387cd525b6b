// tests/reference.hpp — an independent double-precision attention, written separately from the
// library (no shared code), used as the yardstick for every float path.
#pragma once

#include <algorithm>
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

// Row i of the weights and of the output, for a query q against the first `visible` keys (all of
// them, or i + 1 under a causal mask); divisor: √d_k, d_k or 1. Masked weights are 0.
inline Result attention_row(const std::vector<double>& q, const Mat& K, const Mat& V, double divisor,
                            std::size_t visible) {
    const std::size_t dv = V.empty() ? 0 : V[0].size();
    std::vector<double> w(K.size(), 0.0);
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < visible; ++j) {
        double s = 0.0;
        for (std::size_t p = 0; p < q.size(); ++p) s += q[p] * K[j][p];
        w[j] = s / divisor;
        top = std::max(top, w[j]);
    }
    double total = 0.0;
    for (std::size_t j = 0; j < visible; ++j) total += (w[j] = std::exp(w[j] - top));
    std::vector<double> o(dv, 0.0);
    for (std::size_t j = 0; j < visible; ++j) {
        w[j] /= total;
        for (std::size_t k = 0; k < dv; ++k) o[k] += w[j] * V[j][k];
    }
    return {{w}, {o}};
}

inline Result attention(const Mat& Q, const Mat& K, const Mat& V, double divisor, bool causal) {
    Result all;
    for (std::size_t i = 0; i < Q.size(); ++i) {
        Result row = attention_row(Q[i], K, V, divisor, causal ? i + 1 : K.size());
        all.weights.push_back(row.weights[0]);
        all.output.push_back(row.output[0]);
    }
    return all;
}

}  // namespace reference
