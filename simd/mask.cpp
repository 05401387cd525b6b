// simd/mask.cpp — the causal mask and a caller's score terms on a materialised score matrix, rows
// split over threads.
#include <algorithm>

#include "simd/score_terms.hpp"
#include "simd/simd.hpp"
#include "simd/threads.hpp"

namespace attn::simd {

// [fast mask] step 4.mask, rows split over threads: row i keeps keys 0 … i (top-left, any n×m)
void causal_mask_in_place(Matrix& S, Threads threads) {
    const auto rows = static_cast<std::ptrdiff_t>(S.rows());
    [[maybe_unused]] const bool team =
        use_team(threads, double(S.rows()) * double(S.cols()), S.rows());  // one store each
#pragma omp parallel for schedule(static) if (team)
    for (std::ptrdiff_t i = 0; i < rows; ++i) {
        const auto row = S.row(static_cast<std::size_t>(i));
        std::fill(row.begin() + std::min<std::ptrdiff_t>(i + 1, std::ssize(row)), row.end(), neg_inf);
    }
}

// S_ij ← scale·S_ij, then + term(i, j): the row is scaled in a pass of its own, so every product is
// rounded before the term is added (no multiply-add fuses the two).
void add_score_terms_in_place(Matrix& S, float scale, const ScoreTerms& terms, Threads threads) {
    const auto rows = static_cast<std::ptrdiff_t>(S.rows());
    [[maybe_unused]] const bool team = use_team(threads, 2.0 * double(S.rows()) * double(S.cols()), S.rows());
#pragma omp parallel for schedule(static) if (team)
    for (std::ptrdiff_t i = 0; i < rows; ++i) {
        const auto row = S.row(static_cast<std::size_t>(i));
        for (float& s : row) s *= scale;
        add_terms(row.data(), row.size(), terms, term_index(terms, std::size_t(i), 0), terms.col_stride, 1.0f);
    }
}

}  // namespace attn::simd
