// simd/tile_softmax.cpp — the fused forward's online softmax on a tile of scores (simd/tile_softmax.hpp).
#include "simd/tile_softmax.hpp"

#include <cstdint>

#include "matrix/matrix.hpp"

#include "simd/bf16.hpp"
#include "simd/exp.hpp"

namespace attn::simd::ATTN_ISA {

void rescale_factors(const float* max_so_far, float* tile_max, float* correction, std::size_t rows) {
    // Whole batches: the caller's arrays are padded to a multiple of W (simd/fused.cpp's Scratch).
    for (std::size_t r = 0; r < rows; r += W) {
        const Batch m = Batch::load_aligned(max_so_far + r);
        const Batch new_max = xsimd::max(m, Batch::load_aligned(tile_max + r));
        // e^(m − m'), in the scores' own units: 0 from m = −∞ (a row's first visible tile); 1 while a
        // row has seen nothing; never NaN, however far apart two finite maxima lie (simd/exp.hpp)
        const Batch factor = xsimd::select(new_max == Batch(neg_inf), Batch(1.0f), exp_of_difference(m, new_max));
        new_max.store_aligned(tile_max + r);
        factor.store_aligned(correction + r);
    }
}

namespace {

// 2W scores at a time: their weights, 0 from `visible` on, summed in two batches (so the sum's order,
// and its bits, depend on the row alone) and stored as floats or pairs.
template <Grade grade, bool pairs>
float weights(float* x, std::size_t visible, std::size_t end, float m) {
    const Batch shift(m), first(lane_numbers());
    Batch sum_lo(0.0f), sum_hi(0.0f);
    for (std::size_t k = 0; k < end; k += 2 * W) {
        Batch lo = exp_of_difference<grade>(Batch::load_unaligned(x + k), shift);
        Batch hi = exp_of_difference<grade>(Batch::load_unaligned(x + k + W), shift);
        if (k + 2 * W > visible) {  // past the row's last key: weight 0, whatever was there
            const Batch seen(float(visible) - float(k));
            lo = xsimd::select(first < seen, lo, Batch(0.0f));
            hi = xsimd::select(first + Batch(float(W)) < seen, hi, Batch(0.0f));
        }
        sum_lo += lo;
        sum_hi += hi;
        if constexpr (pairs) {
            store_pairs(lo, hi, x + k / 2 * floats_per_pair);  // behind (or at) what is read next
        } else {
            lo.store_unaligned(x + k);
            hi.store_unaligned(x + k + W);
        }
    }
    return xsimd::hadd(sum_lo + sum_hi);
}

}  // namespace

float row_weights(float* x, std::size_t visible, std::size_t end, float m) {
    return weights<Grade::float32, false>(x, visible, end, m);
}

float row_weight_pairs(float* x, std::size_t visible, std::size_t end, float m) {
    return weights<Grade::bfloat16, true>(x, visible, end, m);
}

}  // namespace attn::simd::ATTN_ISA
