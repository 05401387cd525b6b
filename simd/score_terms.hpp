// simd/score_terms.hpp — reading the terms a caller adds to the scores (ScoreTerms, simd/simd.hpp).
//
// Used by the baseline (simd/mask.cpp) and by every copy of the kernels (simd/fused.cpp,
// simd/fused_backward.cpp): the functions have internal linkage, so each object keeps its own code,
// compiled with its own flags (tests/checks/check_isa_symbols.py).
#pragma once

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
// factor (−∞ stays −∞), a keep flag of 0 making x_k −∞ and any other leaving x_k as it is.
inline void add_terms(float* x, std::size_t count, const ScoreTerms& terms, std::ptrdiff_t first, std::ptrdiff_t step,
                      float factor) {
    if (terms.boolean) {
        const auto* keep = static_cast<const unsigned char*>(terms.data) + first;
        for (std::size_t k = 0; k < count; ++k)
            if (keep[static_cast<std::ptrdiff_t>(k) * step] == 0) x[k] = neg_inf;
    } else {
        const auto* term = static_cast<const float*>(terms.data) + first;
        for (std::size_t k = 0; k < count; ++k) x[k] += factor * term[static_cast<std::ptrdiff_t>(k) * step];
    }
}

}  // namespace

}  // namespace attn::simd
