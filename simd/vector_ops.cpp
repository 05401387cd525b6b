// simd/vector_ops.cpp — dot, axpy, max and exp over one vector (and the online softmax's rescale factors,
// W rows at once; the largest squared row length, a dot a row): the xsimd loop shape
//
//   for (k = 0; k + W ≤ n; k += W)  one batch of W floats at a time  (W = 8 with AVX2)
//   for (; k < n; ++k)              the scalar tail, so every length works
//
// dot, axpy and row_max end with that scalar tail; exp_and_sum, exp2_and_sum and exp2_bf16_and_sum
// instead pad their tail to a full batch with −∞, so that every element goes through the same vector
// exponential.
//
// The chain's steps do not call dot: the GEMM (gemm.cpp) computes a whole register tile of dot
// products at once. It is here as the one-vector form of S_ij = q_i·k_j — the loop to read before
// the microkernel — and the tests check it against the plain sum; the guards' row lengths use it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "simd/batch.hpp"
#include "simd/bf16.hpp"
#include "simd/exp.hpp"
#include "simd/kernels.hpp"

namespace attn::simd::ATTN_ISA {

float dot(const float* a, const float* b, std::size_t n) {
    // Four accumulators: with one, every FMA waits for the previous result (about 4 cycles); four
    // independent chains keep the FMA units busy.
    Batch acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
    std::size_t k = 0;
    for (; k + 4 * W <= n; k += 4 * W) {
        acc0 = xsimd::fma(Batch::load_unaligned(a + k), Batch::load_unaligned(b + k), acc0);
        acc1 = xsimd::fma(Batch::load_unaligned(a + k + W), Batch::load_unaligned(b + k + W), acc1);
        acc2 = xsimd::fma(Batch::load_unaligned(a + k + 2 * W), Batch::load_unaligned(b + k + 2 * W), acc2);
        acc3 = xsimd::fma(Batch::load_unaligned(a + k + 3 * W), Batch::load_unaligned(b + k + 3 * W), acc3);
    }
    for (; k + W <= n; k += W) acc0 = xsimd::fma(Batch::load_unaligned(a + k), Batch::load_unaligned(b + k), acc0);
    float sum = xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
    for (; k < n; ++k) sum = std::fma(a[k], b[k], sum);
    return sum;
}

float largest_row_square(const float* rows, std::size_t count, std::size_t n) {
    float largest = 0.0f;
    for (std::size_t i = 0; i < count; ++i) {
        const float* row = rows + i * n;
        const float square = dot(row, row, n);
        if (std::isnan(square)) return square;  // a NaN must come out, whatever rows follow
        largest = std::max(largest, square);
    }
    return largest;
}

void axpy(float factor, const float* x, float* y, std::size_t n) {
    const Batch a(factor);
    std::size_t k = 0;
    for (; k + W <= n; k += W)
        xsimd::fma(a, Batch::load_unaligned(x + k), Batch::load_unaligned(y + k)).store_unaligned(y + k);
    for (; k < n; ++k) y[k] = std::fma(factor, x[k], y[k]);
}

namespace {

// Lane i of the swizzle takes lane i XOR `half`: the two halves of every group of 2·half lanes swap.
template <unsigned half>
struct SwapHalves {
    static constexpr unsigned get(unsigned i, unsigned) { return i ^ half; }
};

// The largest of the W lanes, in log₂W steps: each takes the lane-wise max with the lanes' halves
// swapped, so after the step for W/2 every lane holds the max of all of them. 4 shuffles and 4 max
// for AVX-512, against a store and 16 compares one lane at a time.
Batch all_lanes_max(Batch m) {
    using Indices = xsimd::batch<std::uint32_t>;
    if constexpr (W >= 16) m = xsimd::max(m, xsimd::swizzle(m, xsimd::make_batch_constant<Indices, SwapHalves<8>>()));
    if constexpr (W >= 8) m = xsimd::max(m, xsimd::swizzle(m, xsimd::make_batch_constant<Indices, SwapHalves<4>>()));
    m = xsimd::max(m, xsimd::swizzle(m, xsimd::make_batch_constant<Indices, SwapHalves<2>>()));
    return xsimd::max(m, xsimd::swizzle(m, xsimd::make_batch_constant<Indices, SwapHalves<1>>()));
}

// max_k x_k, and with `scale_first` each x_k ← scale·x_k first, stored (so rounded: a store cannot be
// fused with a later subtraction into one FMA, as -ffp-contract=fast would fuse the product with the
// softmax's shift).
template <bool scale_first, class Float>  // Float: const float, or float with scale_first
float largest(Float* x, std::size_t n, float scale) {
    const Batch factor(scale);
    Batch m(neg_inf);
    std::size_t k = 0;
    for (; k + W <= n; k += W) {
        Batch v = Batch::load_unaligned(x + k);
        if constexpr (scale_first) {
            v *= factor;
            v.store_unaligned(x + k);
        }
        m = xsimd::max(m, v);
    }
    // The lanes by shuffles (all_lanes_max), the tail by plain comparisons, inlined (std::fmax is a
    // call into libm, a dozen of them a row, on every row of every tile of the fused kernel).
    float result = all_lanes_max(m).get(0);
    for (; k < n; ++k) {
        if constexpr (scale_first) x[k] *= scale;
        result = x[k] > result ? x[k] : result;
    }
    return result;
}

}  // namespace

float row_max(std::span<const float> x) { return largest<false>(x.data(), x.size(), 1.0f); }

float scale_and_max(std::span<float> x, float scale) { return largest<true>(x.data(), x.size(), scale); }

namespace {

// x_k ← exponential(x_k − shift), returning their sum: e^ for the materialised softmax; 2^, the
// exponential of the fused kernels (simd/exp.hpp), for scores that carry log₂e, to a float's grade or
// to bfloat16's. The exponential takes W lanes at once with a polynomial, within 1.25 ulp, or within
// bf16_exp2_error relative (tests/test_simd.cpp tries every float). BM_softmax_rows measures the whole
// vectorised softmax, of which this is most of the work, against the naive std::exp loop.
template <Batch (*exponential)(Batch)>
float exponentials_and_sum(std::span<float> x, float shift) {
    const Batch s(shift);
    Batch sum(0.0f);
    std::size_t k = 0;
    for (; k + W <= x.size(); k += W) {
        const Batch e = exponential(Batch::load_unaligned(x.data() + k) - s);
        e.store_unaligned(x.data() + k);
        sum += e;
    }
    // Tail: pad to one full batch with −∞ (e^−∞ = 2^−∞ = 0 adds nothing to the sum), so the tail goes
    // through the same exponential as the body and every element is computed the same way.
    if (k < x.size()) {
        alignas(64) float tail[W];
        std::fill(std::begin(tail), std::end(tail), neg_inf);
        std::copy(x.begin() + k, x.end(), tail);
        const Batch e = exponential(Batch::load_aligned(tail) - s);
        e.store_aligned(tail);
        sum += e;
        std::copy(tail, tail + (x.size() - k), x.begin() + k);
    }
    return xsimd::hadd(sum);
}

}  // namespace

float exp_and_sum(std::span<float> x, float shift) { return exponentials_and_sum<softmax_exp>(x, shift); }

float exp2_and_sum(std::span<float> x, float shift) {
    return exponentials_and_sum<softmax_exp2<Grade::float32>>(x, shift);
}

float exp2_bf16_and_sum(std::span<float> x, float shift) {
    return exponentials_and_sum<softmax_exp2<Grade::bfloat16>>(x, shift);
}

void rescale_factors(const float* max_so_far, float* tile_max, float* correction, std::size_t rows) {
    // Whole batches: the caller's arrays are padded to a multiple of W (simd/fused.cpp's Scratch).
    // (Here rather than in fused.cpp, whose FMA loops are all register tiles: tests/checks/count_spills.py
    // checks every one of them for spills, and Clang keeps this loop's exp constants on the stack.)
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

// The peaks of bench/: twelve independent chains (enough to cover the latency on both pipes), on
// registers only, of one step each: the FMA (2·W flops), or vdpbf16ps (two products a lane, 4·W
// flops; simd/bf16.hpp). Returns a lane of the sum, so the compiler must do the work.
template <class Step>
float chains_of(std::size_t steps) {
    constexpr std::size_t chains = 12;
    Batch acc[chains];
    for (std::size_t r = 0; r < chains; ++r) acc[r] = Batch(static_cast<float>(r));
    // acc ← acc + x·y: read as floats x ≈ 1.002 and y ≈ 1.04·10⁻⁶; read as pairs, both halves of x are
    // the bfloat16 1 and both of y about 1.04·10⁻⁶. Either way the sums stay small and normal.
    const Batch x(std::bit_cast<float>(0x3F803F80u)), y(std::bit_cast<float>(0x358C358Cu));
    for (std::size_t s = 0; s < steps; ++s)
        for (std::size_t r = 0; r < chains; ++r) acc[r] = Step::apply(x, y, acc[r]);
    Batch sum(0.0f);
    for (std::size_t r = 0; r < chains; ++r) sum += acc[r];
    return sum.get(0);
}

float fma_chains(std::size_t steps) { return chains_of<FmaStep>(steps); }
float pair_chains(std::size_t steps) { return chains_of<Bf16Step>(steps); }

}  // namespace attn::simd::ATTN_ISA
