// tests/masked_reference.hpp — attention with terms added to the scores (a boolean or additive mask,
// simd::ScoreTerms) and the causal mask, in float64, with its gradients: the yardstick of the fused
// kernels' terms (tests/test_fused.cpp, tests/test_bf16.cpp). Written apart from the library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "matrix/matrix.hpp"
#include "simd/simd.hpp"

namespace masked_reference {

using Mat = std::vector<std::vector<double>>;
inline constexpr double minus_inf = -std::numeric_limits<double>::infinity();

// How the terms of an n×m score matrix are laid out: one per score, one row shared by every query
// (a padding mask: row stride 0), or one column shared by every key (column stride 0).
enum class Layout { full, per_key, per_query };

// The terms, owned, and the ScoreTerms that reads them.
struct Terms {
    std::vector<float> floats;
    std::vector<unsigned char> keep;
    bool boolean = false;
    std::ptrdiff_t row_stride = 0, col_stride = 0;

    attn::simd::ScoreTerms view() const {
        return {boolean ? static_cast<const void*>(keep.data()) : floats.data(), boolean, row_stride, col_stride};
    }
    double at(std::size_t i, std::size_t j) const {
        const std::ptrdiff_t k = std::ptrdiff_t(i) * row_stride + std::ptrdiff_t(j) * col_stride;
        return boolean ? (keep[std::size_t(k)] ? 0.0 : minus_inf) : double(floats[std::size_t(k)]);
    }
    // Every term of query row i made −∞ (a row no key may attend; with Layout::per_key, every row).
    void mask_row(std::size_t i, std::size_t m) {
        for (std::size_t j = 0; j < m; ++j) {
            const std::ptrdiff_t k = std::ptrdiff_t(i) * row_stride + std::ptrdiff_t(j) * col_stride;
            if (boolean) keep[std::size_t(k)] = 0;
            else floats[std::size_t(k)] = -INFINITY;
        }
    }
};

// Random terms for n×m scores: about `masked` of them −∞ (flag 0), the other floats in ±2 and the
// other flags any nonzero byte.
inline Terms random_terms(std::size_t n, std::size_t m, bool boolean, Layout layout, double masked, std::mt19937& rng) {
    Terms t;
    t.boolean = boolean;
    const std::size_t count = layout == Layout::full ? n * m : layout == Layout::per_key ? m : n;
    t.row_stride = layout == Layout::full ? std::ptrdiff_t(m) : layout == Layout::per_key ? 0 : 1;
    t.col_stride = layout == Layout::per_query ? 0 : 1;
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    std::bernoulli_distribution hidden(masked);
    for (std::size_t k = 0; k < count; ++k) {
        const bool h = hidden(rng);
        if (boolean) t.keep.push_back(h ? 0 : static_cast<unsigned char>(1 + rng() % 255));
        else t.floats.push_back(h ? -INFINITY : value(rng));
    }
    return t;
}

inline Mat from(const attn::Matrix& m) {
    Mat r(m.rows(), std::vector<double>(m.cols()));
    for (std::size_t i = 0; i < m.rows(); ++i)
        for (std::size_t j = 0; j < m.cols(); ++j) r[i][j] = m(i, j);
    return r;
}

struct Forward {
    Mat P, O;                 // the weights (n×m) and the output
    std::vector<double> lse;  // log Σ_j e^(s_ij) per row: −∞ for a row that sees no key
};

// s_ij = scale·q_i·k_j + term(i, j), −∞ for j > i when causal; a row whose scores are all −∞ has
// weights 0 and output 0.
inline Forward forward(const attn::Matrix& Q, const attn::Matrix& K, const attn::Matrix& V, double scale, bool causal,
                       const Terms* terms) {
    const std::size_t n = Q.rows(), m = K.rows(), d_k = Q.cols(), d_v = V.cols();
    Forward f{Mat(n, std::vector<double>(m, 0.0)), Mat(n, std::vector<double>(d_v, 0.0)),
              std::vector<double>(n, minus_inf)};
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> s(m, minus_inf);
        double top = minus_inf;
        for (std::size_t j = 0; j < m && !(causal && j > i); ++j) {
            double dot = 0.0;
            for (std::size_t p = 0; p < d_k; ++p) dot += double(Q(i, p)) * K(j, p);
            s[j] = scale * dot + (terms ? terms->at(i, j) : 0.0);
            top = std::max(top, s[j]);
        }
        if (top == minus_inf) continue;
        double total = 0.0;
        for (std::size_t j = 0; j < m; ++j) total += std::exp(s[j] - top);
        f.lse[i] = top + std::log(total);
        for (std::size_t j = 0; j < m; ++j) {
            f.P[i][j] = std::exp(s[j] - top) / total;
            for (std::size_t c = 0; c < d_v; ++c) f.O[i][c] += f.P[i][j] * V(j, c);
        }
    }
    return f;
}

struct Gradients {
    Mat dQ, dK, dV;
};

// dV = Pᵀ·dO, dP = dO·Vᵀ, dS = scale·P ⊙ (dP − rowsum(P ⊙ dP)), dQ = dS·K, dK = dSᵀ·Q.
inline Gradients backward(const attn::Matrix& Q, const attn::Matrix& K, const attn::Matrix& V, const attn::Matrix& dO,
                          double scale, bool causal, const Terms* terms) {
    const std::size_t n = Q.rows(), m = K.rows(), d_k = Q.cols(), d_v = V.cols();
    const Mat P = forward(Q, K, V, scale, causal, terms).P;
    Gradients g{Mat(n, std::vector<double>(d_k, 0.0)), Mat(m, std::vector<double>(d_k, 0.0)),
                Mat(m, std::vector<double>(d_v, 0.0))};
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> dP(m, 0.0);
        double D = 0.0;
        for (std::size_t j = 0; j < m; ++j) {
            for (std::size_t c = 0; c < d_v; ++c) {
                dP[j] += double(dO(i, c)) * V(j, c);
                g.dV[j][c] += P[i][j] * dO(i, c);
            }
            D += P[i][j] * dP[j];
        }
        for (std::size_t j = 0; j < m; ++j) {
            const double dS = scale * P[i][j] * (dP[j] - D);
            for (std::size_t p = 0; p < d_k; ++p) {
                g.dQ[i][p] += dS * K(j, p);
                g.dK[j][p] += dS * Q(i, p);
            }
        }
    }
    return g;
}

}  // namespace masked_reference
