// simd/mask.cpp — the causal mask on a square score matrix, rows split over threads.
#include <algorithm>

#include "matrix/shape_checks.hpp"
#include "simd/simd.hpp"
#include "simd/threads.hpp"

namespace attn::simd {

// [fast mask] step 4.mask, rows split over threads
void causal_mask_in_place(Matrix& S, Threads threads) {
    check_square("causal_mask", S);
    const auto rows = static_cast<std::ptrdiff_t>(S.rows());
    [[maybe_unused]] const bool team =
        use_team(threads, double(S.rows()) * double(S.cols()), S.rows());  // one store each
#pragma omp parallel for schedule(static) if (team)
    for (std::ptrdiff_t i = 0; i < rows; ++i) {
        const auto row = S.row(static_cast<std::size_t>(i));
        std::fill(row.begin() + i + 1, row.end(), neg_inf);
    }
}

}  // namespace attn::simd
