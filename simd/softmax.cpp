// simd/softmax.cpp — row-wise softmax with xsimd batches, rows split over threads; step 4's scale
// folded in.
//
// Per row, three sweeps over data that sits in L1 (a 2048-wide row is 8 KiB):
//   x_j ← s·x_j, m = max_j x_j   the scale of step 4, and the batched max (scale_and_max; row_max for s = 1)
//   x_j ← e^(x_j − m), ℓ = Σ      vectorised exp, the sum accumulated in a batch (exp_and_sum)
//   x_j ← x_j · (1/ℓ)             one division per row, then multiplies
// Step 4 (S' = s·S) rides in the first sweep, on a row already in L1: a pass of its own would read
// and write the whole n×m matrix once more (BM_scale_folding measures it). Each product is stored,
// so rounded, exactly as that pass would round it: the same bits. (Left in a register, GCC fuses it
// with the subtraction of m into one FMA, and for scores near 10³⁶ the maximum's own rounding
// residue, s·x − round(s·m), is then far past e^88.)
#include <cmath>

#include "simd/batch.hpp"
#include "simd/kernels.hpp"
#include "simd/threads.hpp"

namespace attn::simd::ATTN_ISA {

namespace {

void softmax_row(std::span<float> x, float scale) {
    const float m = scale == 1.0f ? row_max(x) : scale_and_max(x, scale);
    if (m == neg_inf) {  // nothing visible: zeros, as in the naive op (matrix/ops.cpp says why)
        std::fill(x.begin(), x.end(), 0.0f);
        return;
    }
    const float inv_sum = 1.0f / exp_and_sum(x, m);
    const Batch inv(inv_sum);
    std::size_t k = 0;
    for (; k + W <= x.size(); k += W) (Batch::load_unaligned(x.data() + k) * inv).store_unaligned(x.data() + k);
    for (; k < x.size(); ++k) x[k] *= inv_sum;
}

// Work of a pass over S, counted as flops for use_team: an exponential costs about 16.
double pass_flops(const Matrix& S) { return 16.0 * double(S.rows()) * double(S.cols()); }

}  // namespace

// [fast softmax] step 5 (with step 4's scale), rows split over threads
void softmax_rows_in_place(Matrix& S, float scale, Threads threads) {
    const auto rows = static_cast<std::ptrdiff_t>(S.rows());
    [[maybe_unused]] const bool team = use_team(threads, pass_flops(S), S.rows());
#pragma omp parallel for schedule(static) if (team)
    for (std::ptrdiff_t i = 0; i < rows; ++i) softmax_row(S.row(static_cast<std::size_t>(i)), scale);
}

namespace {

// x_j ← p_j·(x_j − D), D = Σ_t x_t·p_t: the dot product (simd::dot's four chains), then one sweep.
void softmax_gradient_row(std::span<const float> p, std::span<float> x) {
    const float D = dot(x.data(), p.data(), x.size());
    const Batch d(D);
    std::size_t k = 0;
    for (; k + W <= x.size(); k += W)
        (Batch::load_unaligned(p.data() + k) * (Batch::load_unaligned(x.data() + k) - d)).store_unaligned(x.data() + k);
    for (; k < x.size(); ++k) x[k] = p[k] * (x[k] - D);
}

}  // namespace

// [fast softmax gradient] grad 5, rows split over threads: dS'_ij = α_ij·(dα_ij − Σ_t dα_it·α_it)
void softmax_gradient_rows_in_place(const Matrix& P, Matrix& G, Threads threads) {
    const auto rows = static_cast<std::ptrdiff_t>(P.rows());
    [[maybe_unused]] const bool team = use_team(threads, 4.0 * double(P.rows()) * double(P.cols()), P.rows());
#pragma omp parallel for schedule(static) if (team)
    for (std::ptrdiff_t i = 0; i < rows; ++i)
        softmax_gradient_row(P.row(static_cast<std::size_t>(i)), G.row(static_cast<std::size_t>(i)));
}

}  // namespace attn::simd::ATTN_ISA
