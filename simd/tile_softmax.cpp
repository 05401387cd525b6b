// simd/tile_softmax.cpp — the fused forward's online softmax on a tile of scores (simd/tile_softmax.hpp).
#include "simd/tile_softmax.hpp"

#include <cstdint>

#include "matrix/matrix.hpp"

#include "simd/bf16.hpp"
#include "simd/exp.hpp"

namespace attn::simd::ATTN_ISA {

void rescale_factors(const float* max_so_far, float* tile_max, float* correction, std::size_t rows, bool natural) {
    // Whole batches: the caller's arrays are padded to a multiple of W (simd/fused.cpp's Scratch).
    for (std::size_t r = 0; r < rows; r += W) {
        const Batch m = Batch::load_aligned(max_so_far + r);
        const Batch new_max = xsimd::max(m, Batch::load_aligned(tile_max + r));
        // e^(m − m'): 0 from m = −∞ (a row's first visible tile); 1 while a row has seen nothing; never
        // NaN, however far apart two finite maxima lie (simd/exp.hpp)
        const Batch e = natural ? exp_of_difference(m, new_max) : softmax_exp2(m - new_max);
        const Batch factor = xsimd::select(new_max == Batch(neg_inf), Batch(1.0f), e);
        new_max.store_aligned(tile_max + r);
        factor.store_aligned(correction + r);
    }
}

namespace {

// The weight of x: e^(x − m) in the scores' own units, or 2^(x − m) where they carry log₂e, taken as
// 2^(x − (m − exp2_shift)) with the exponential's shift folded into the row's maximum (`shift`): one
// subtraction, then the exponential (simd/exp.hpp).
template <Grade grade, bool natural>
Batch weight(Batch x, Batch m, Batch shift) {
    if constexpr (natural) return exp_of_difference<grade>(x, m);
    else return exp2_shifted<grade>(x - shift);
}

// 2W scores at a time: their weights, 0 from `visible` on, summed in two batches (so the sum's order,
// and its bits, depend on the row alone) and stored as floats or pairs.
template <Grade grade, bool pairs, bool natural>
float weights(float* x, std::size_t visible, std::size_t end, float m) {
    const Batch top(m), shift(m - exp2_shift<grade>), first(lane_numbers());
    Batch sum_lo(0.0f), sum_hi(0.0f);
    for (std::size_t k = 0; k < end; k += 2 * W) {
        Batch lo = weight<grade, natural>(Batch::load_unaligned(x + k), top, shift);
        Batch hi = weight<grade, natural>(Batch::load_unaligned(x + k + W), top, shift);
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

float row_weights(float* x, std::size_t visible, std::size_t end, float m, bool natural) {
    return natural ? weights<Grade::float32, false, true>(x, visible, end, m)
                   : weights<Grade::float32, false, false>(x, visible, end, m);
}

float row_weight_pairs(float* x, std::size_t visible, std::size_t end, float m, bool natural) {
    return natural ? weights<Grade::bfloat16, true, true>(x, visible, end, m)
                   : weights<Grade::bfloat16, true, false>(x, visible, end, m);
}

}  // namespace attn::simd::ATTN_ISA
