// simd/bf16.hpp — what the fused kernel's bf16 mode (simd/fused.cpp) needs of bfloat16: rounding
// to it, the pair layout its products read, and the multiply-add step over pairs.
//
// bfloat16 is the top half of a float (matrix/bfloat16.hpp): the product of two of them is exact in
// float, so only the rounding of the operands (at most 2⁻⁸ of each) and the float sums cost accuracy.
//
// vdpbf16ps (AVX512_BF16) multiplies pairs. Each 32-bit lane of its two operands holds two bfloat16
// numbers, x_even in the low half and x_odd in the high half, and each lane of the float accumulator
// takes both products, in this order, each sum rounded to float:
//     c ← c + a_odd·b_odd,   then   c ← c + a_even·b_even,
// reading a subnormal c as 0 and flushing a subnormal sum to 0, whatever the CPU's modes say. It
// does two products a lane at the rate of one FMA: twice the flops (BM_peak_bf16 against BM_peak_fma).
//
// Where the CPU lacks it (every other instruction set), the same arithmetic is done with FMAs on
// floats that hold bfloat16 values: each pair is stored as two floats, odd first, and the ordinary
// register tile (simd/microkernel.hpp) adds exactly the products the instruction adds, in its order,
// each product exact and each sum rounded once. The CPU's flush-to-zero and denormals-are-zero modes,
// set for the whole kernel (FlushSubnormals), treat subnormals as the instruction does. So with the
// same batch width the emulation gives the instruction's bits (tests/test_bf16.cpp compares avx512
// with avx512bf16). An instruction set without FMA (SSE2) multiplies and then adds: the same, since
// the product is exact, except where a product is itself below 2⁻¹²⁶ and flushed before the add.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "simd/batch.hpp"
#include "simd/microkernel.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace attn::simd::ATTN_ISA {

#ifdef __AVX512BF16__
inline constexpr bool bf16_instructions = true;
#else
inline constexpr bool bf16_instructions = false;
#endif

// Floats a pair of bfloat16 numbers takes in the operands of a product: one 32-bit lane holding
// both (the instruction's layout), or two floats, odd first (the emulation's).
inline constexpr std::size_t floats_per_pair = bf16_instructions ? 1 : 2;

// The bfloat16 nearest to x, ties to even, as its 16 bits; a subnormal x becomes a zero of its sign.
// (The same rounding as matrix/bfloat16.cpp's reference, written here for each instruction set's copy.)
inline std::uint32_t bf16_bits(float x) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    if ((bits & 0x7F800000u) == 0) return (bits & 0x80000000u) >> 16;
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (bits >> 16) | 0x0040u;  // NaN (refused before any work)
    return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

// The pair (x0, x1), rounded, stored where a product reads it: one lane at dst, or x1 at dst and x0 at
// dst + stride (the emulation's two floats, odd first: the next row of a panel, or the next float of a row).
inline void store_pair(float* dst, std::size_t stride, float x0, float x1) {
    if constexpr (bf16_instructions) {
        dst[0] = std::bit_cast<float>(bf16_bits(x0) | bf16_bits(x1) << 16);
    } else {
        dst[0] = std::bit_cast<float>(bf16_bits(x1) << 16);
        dst[stride] = std::bit_cast<float>(bf16_bits(x0) << 16);
    }
}

// x[0..n) as ⌈n/2⌉ pairs (an odd n's last pair completed with 0) at dst, which may be x itself: each
// pair is read before anything at or after it is written.
inline void round_to_pairs(const float* x, std::size_t n, float* dst) {
    std::size_t k = 0;
#ifdef __AVX512BF16__
    // vcvtne2ps2bf16 rounds 32 floats (ties to even, subnormals to 0, as bf16_bits) into 16 lanes of pairs
    for (; k + 32 <= n; k += 32) {
        const __m512 low = _mm512_loadu_ps(x + k), high = _mm512_loadu_ps(x + k + 16);
        _mm512_storeu_ps(dst + k / 2, (__m512)_mm512_cvtne2ps_pbh(high, low));
    }
#endif
    for (; k < n; k += 2) store_pair(dst + k / 2 * floats_per_pair, 1, x[k], k + 1 < n ? x[k + 1] : 0.0f);
}

// Two rows rounded into one row of pairs: (even[c], odd[c]) for c < cols (odd = nullptr: zeros), as
// store_pair(dst + c, stride, even[c], odd[c]) would. V's panels pair the rows of two keys this way.
inline void round_rows_to_pairs(const float* even, const float* odd, std::size_t cols, float* dst, std::size_t stride) {
    std::size_t c = 0;
#ifdef __AVX512BF16__
    // 16 columns at a time: vcvtne2ps2bf16 rounds both rows into one register (even in the low 16
    // halves, odd in the high 16), and vpermw interleaves them into 16 pairs
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                                6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (; c + 16 <= cols; c += 16) {
        const __m512 high = odd ? _mm512_loadu_ps(odd + c) : _mm512_setzero_ps();
        const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(high, _mm512_loadu_ps(even + c));
        _mm512_storeu_si512(dst + c, _mm512_permutexvar_epi16(interleave, both));
    }
#endif
    for (; c < cols; ++c) store_pair(dst + c, stride, even[c], odd ? odd[c] : 0.0f);
}

// The 2W floats lo, hi (in this order: lane k of hi is float W + k), finite and ≥ 0 (softmax weights),
// rounded to W pairs at dst, as round_to_pairs stores them: W lanes with the instruction, else 2W
// floats, each pair odd first. Straight from registers: the bf16 mode writes its weights so, as it
// computes them (simd/tile_softmax.cpp).
inline void store_pairs(Batch lo, Batch hi, float* dst) {
#ifdef __AVX512BF16__
    _mm512_storeu_ps(dst, (__m512)_mm512_cvtne2ps_pbh(hi, lo));
#else
    using Bits = xsimd::batch<std::uint32_t>;
    struct SwapNeighbours {  // lane k takes lane k XOR 1: each pair odd first
        static constexpr unsigned get(unsigned k, unsigned) { return k ^ 1u; }
    };
    const auto rounded_odd_first = [](Batch x) {  // bf16_bits's rounding, lane by lane, for x ≥ 0
        const Bits bits = xsimd::bitwise_cast<Bits>(x);
        const Bits nearest = (bits + Bits(0x7FFFu) + ((bits >> 16) & Bits(1u))) & Bits(0xFFFF0000u);
        const Bits kept = xsimd::select((bits & Bits(0x7F800000u)) == Bits(0u), Bits(0u), nearest);  // subnormal: 0
        return xsimd::swizzle(xsimd::bitwise_cast<Batch>(kept), xsimd::make_batch_constant<Bits, SwapNeighbours>());
    };
    rounded_odd_first(lo).store_unaligned(dst);
    rounded_odd_first(hi).store_unaligned(dst + W);
#endif
}

// The register tile's step (simd/microkernel.hpp) on pairs: with the instruction, acc + a_odd·b_odd +
// a_even·b_even lane by lane, `a` one lane of pairs broadcast to every lane; without it, the FMA step
// on the two floats of each pair.
#ifdef __AVX512BF16__
struct PairStep {
    static Batch apply(Batch a, Batch b, Batch acc) {
        return Batch(_mm512_dpbf16_ps(acc, (__m512bh)__m512(a), (__m512bh)__m512(b)));
    }
};
using Bf16Step = PairStep;
#else
using Bf16Step = FmaStep;
#endif

// The depth of a product over n elements: n floats, or with bf16 ⌈n/2⌉ pairs of floats_per_pair each.
template <bool bf16>
constexpr std::size_t depth_of(std::size_t n) {
    return bf16 ? (n + 1) / 2 * floats_per_pair : n;
}

// The register tile's step: the FMA, or with bf16 the step on pairs.
template <bool bf16>
using StepOf = std::conditional_t<bf16, Bf16Step, FmaStep>;

// While alive, subnormal inputs of float operations read as 0 and subnormal results are flushed to
// 0 on this thread (x86: MXCSR's DAZ and FTZ bits; AArch64: FPCR's FZ), as vdpbf16ps treats them.
class FlushSubnormals {
public:
    FlushSubnormals() {
#if defined(__x86_64__) || defined(__i386__)
        saved_ = _mm_getcsr();
        _mm_setcsr(saved_ | 0x8040u);  // bit 15: flush to zero; bit 6: denormals are zero
#elif defined(__aarch64__)
        asm volatile("mrs %0, fpcr" : "=r"(saved_));
        asm volatile("msr fpcr, %0" ::"r"(saved_ | (std::uint64_t{1} << 24)));  // FZ
#endif
    }
    ~FlushSubnormals() {
#if defined(__x86_64__) || defined(__i386__)
        _mm_setcsr(saved_);
#elif defined(__aarch64__)
        asm volatile("msr fpcr, %0" ::"r"(saved_));
#endif
    }
    FlushSubnormals(const FlushSubnormals&) = delete;
    FlushSubnormals& operator=(const FlushSubnormals&) = delete;

private:
#if defined(__aarch64__)
    std::uint64_t saved_ = 0;
#else
    unsigned saved_ = 0;
#endif
};

}  // namespace attn::simd::ATTN_ISA
