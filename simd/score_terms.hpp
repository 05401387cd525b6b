// simd/score_terms.hpp — reading the terms a caller adds to the scores (ScoreTerms, simd/simd.hpp), and
// the log-sum-exp of a row whose terms may reach the ends of the float range.
//
// Used by the baseline (simd/mask.cpp) and by every copy of the kernels (simd/fused.cpp,
// simd/fused_backward.cpp, simd/decode.cpp): the functions have internal linkage, so each object keeps its own code,
// compiled with its own flags (tests/checks/check_isa_symbols.py).
#pragma once

#include <cmath>
#include <cstddef>

#include "matrix/matrix.hpp"
#include "simd/simd.hpp"

namespace attn::simd {

namespace {

// Where term(i, j) lies in terms.data, in elements.
inline std::ptrdiff_t term_index(const ScoreTerms& terms, std::size_t i, std::size_t j) {
    return static_cast<std::ptrdiff_t>(i) * terms.row_stride + static_cast<std::ptrdiff_t>(j) * terms.col_stride;
}

// x_k ← x_k + factor·term for the `count` terms at first, first + step, …: a float term scaled by
// factor (−∞ stays −∞), a keep flag of 0 making x_k −∞ and any other leaving x_k as it is. Returns
// the largest x_k after (−∞ for none), which the fused kernel's softmax needs next.
inline float add_terms(float* x, std::size_t count, const ScoreTerms& terms, std::ptrdiff_t first, std::ptrdiff_t step,
                       float factor) {
    float largest = neg_inf;
    if (terms.boolean) {
        const auto* keep = static_cast<const unsigned char*>(terms.data) + first;
        for (std::size_t k = 0; k < count; ++k) {
            if (keep[static_cast<std::ptrdiff_t>(k) * step] == 0) x[k] = neg_inf;
            largest = x[k] > largest ? x[k] : largest;
        }
    } else {
        const auto* term = static_cast<const float*>(terms.data) + first;
        for (std::size_t k = 0; k < count; ++k) {
            x[k] += factor * term[static_cast<std::ptrdiff_t>(k) * step];
            largest = x[k] > largest ? x[k] : largest;
        }
    }
    return largest;
}

// A row's log-sum-exp, L = log Σ_j e^(s_j) = m + log ℓ (m its largest score, ℓ = Σ_j e^(s_j − m) ≥ 1),
// as the float nearest to it and what that float leaves out: L + remainder = m + log ℓ to about a
// float's rounding of log ℓ. The backward recomputes α_j = e^((s_j − L) − remainder). Where m is
// large, the float L cannot hold log ℓ at all: a row of float32's lowest value (−3.4·10³⁸, the value
// many models mask with) has L = m, whatever ℓ is, and e^(s_j − L) would give every key weight 1
// where the softmax gives 1/ℓ; the remainder keeps log ℓ. A row that sees no key (m = −∞) has
// L = −∞ and remainder 0.
struct LogSumExp {
    float L, remainder;
};
inline LogSumExp log_sum_exp(float m, float l) {
    if (m == neg_inf) return {neg_inf, 0.0f};
    const float log_l = std::log(l), L = m + log_l;
    // Knuth's two-sum: m + log_l − L exactly (every step exact, whichever is the larger)
    const float m_part = L - log_l, log_part = L - m_part;
    return {L, (m - m_part) + (log_l - log_part)};
}

}  // namespace

}  // namespace attn::simd
