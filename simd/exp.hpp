// simd/exp.hpp — the softmax's own exponentials: e^x and 2^t for arguments ≤ 0, W lanes at once, no
// branches.
//
// The softmax only ever exponentiates x − max ≤ 0, so it needs no overflow check; below the smallest
// normal float (e^x < FLT_MIN ≈ 1.2·10⁻³⁸) the result is 0 or a value under FLT_MIN, and the row's
// sum is at least 1, so no weight changes. Both are 2ⁿ times a polynomial of a small remainder:
//
//   1. range reduction. e^x: n = round(x·log₂e), r = x − n·ln 2 (Cody–Waite: ln 2 split into a short
//      high part, exact when multiplied by any n here, and the small rest, so r loses no bits to the
//      subtraction), |r| ≤ ln(2)/2. 2^t: n = round(t), f = t − n, exact, |f| ≤ ½; for the bfloat16
//      grade n = ⌊t⌋, 0 ≤ f < 1 (without AVX-512, ⌊t⌋ + 1 within 2⁻¹⁷ of it: −2⁻¹⁷ ≤ f < 1).
//   2. e^r = 1 + r + r²·P(r), P of degree 4; 2^f = 1 + f·Q(f), each fitted to the smallest largest
//      relative error on its interval (bench/tools/fit_exp.py): P 3.8·10⁻⁹; Q of degree 5 3·10⁻⁹, far
//      below a float's 6·10⁻⁸ rounding, or, for the bf16 mode's weights (Grade::bfloat16), of degree 2,
//      8.6·10⁻⁵, far below bfloat16's 2⁻⁹ ≈ 2·10⁻³ (below).
//   3. ×2ⁿ by an integer add to the exponent field: the sum that rounded n, v + 1.5·2²³, holds n in the
//      low bits of its pattern, so n·2²³ is that pattern shifted left by 23.
//
// AVX-512 has an instruction for step 3 and one for 2^t's step 1. vscalefps multiplies by 2^⌊v⌋ for
// a float v, rounding a result below FLT_MIN to the nearest float (as a multiply would) and giving 0
// for v = −∞; vreduceps gives f = t − round(t) in one operation. The copy compiled for AVX-512 uses both
// (XSIMD_WITH_AVX512DQ: its flags include the DQ subset that has vreduceps, so its Batch is a 16-float
// register), and drops the clamp, the rounding sum and the integer add for them. The bfloat16 grade
// lets vreduceps round down, so that vscalefps's own floor of t is n: 2^t is then vreduceps, three
// FMAs and vscalefps, 5 operations. (Rounding down, f = t − ⌊t⌋ is inexact for −1 < t < 0, off by up to
// 2⁻²⁵: 0.35 ulp more, which the float grade, at 1.25 ulp, cannot spare, and bfloat16 does not see.)
//
// The fused kernels use 2^t: e^(s − m) = 2^((s − m)·log₂e) (exp_of_difference): the difference
// first, in the scores' own units, as the lesson's softmax takes it, then one multiply, so that no
// finite score or mask term overflows (s·log₂e alone would, past FLT_MAX/log₂e ≈ 2.4·10³⁸). Its loop
// does 2 + 9 vector operations a batch besides its load, store and sum, with AVX-512 (the
// difference, the multiply, vreduceps, six FMAs, vscalefps), where exp_and_sum's e^x does 13
// (BM_core/fused measures it). The materialised softmax exponentiates the scores the library
// returns with e^x.
//
// Accuracy, against the double exp and exp2 for every float argument in [−88, 0] and [−127, 0]
// (tests/test_simd.cpp, "softmax exp"): wherever the result is a normal float, e^x and 2^t are
// within 1.25 ulp (the test's bound; it prints the worst error of each instruction set); where it
// is not, a value within FLT_MIN of it (0 at −∞; with AVX-512, within one step of the smallest
// subnormal, 1.4·10⁻⁴⁵). exp_of_difference adds the rounding of its argument: the difference is
// rounded as the lesson's softmax rounds it, and the multiply by log₂e moves 2^t by at most
// |s − m|·2⁻²⁴ relative, which for the weights that matter (s − m ≥ −16: the others are below 10⁻⁷ of
// the largest, which is 1) is a few ulp at most.
// The bfloat16 grade, for every float t in [−126, 0] (the same test): within 8.7·10⁻⁵ relative
// (simd.hpp's bf16_exp2_error): the fit's 8.56·10⁻⁵, and the float rounding of its three FMAs, each
// within 2⁻²⁴ of its result, which the later steps carry on times f ≤ 1: at most 2⁻²² ≈ 2.4·10⁻⁷ of a
// result of at least 1; and f's rounding for −1 < t < 0, 2⁻²⁵·ln 2 ≈ 2·10⁻⁸ (the scaling is exact
// where 2^t is a normal float).
// xsimd::exp costs more because it handles every x (range checks and selects for overflow, large and
// positive arguments).
// BM_softmax_rows measures the materialised softmax, BM_core/fused and BM_core/fused_bf16 the kernels
// that use 2^t.
#pragma once

#include <cstdint>

#include "simd/batch.hpp"

namespace attn::simd::ATTN_ISA {

// 1.5·2²³: added to a float below 2²² in magnitude, it rounds it to an integer (the float's spacing
// there is 1), so (v + round_shift) − round_shift = round(v).
inline constexpr float round_shift = 12582912.0f;

inline constexpr float log2_e = 1.44269504f;

// y·2ⁿ for y in [2^−½, 2] (the polynomial's result) and an integer n ≥ −127, carried by `shifted` =
// v + 1.5·2²³, n = round(v): the low 9 bits of shifted's pattern are n's (the rest of 1.5·2²³'s
// pattern leaves with the shift by 23), and n·2²³ added to y's pattern adds n to its exponent field. One shift and
// one integer add, where building 2ⁿ and multiplying took a conversion, two integer operations and a
// multiply. For n ≥ −126 the result is y·2ⁿ exactly; below, the exponent field reaches 0 and the
// result is a value under FLT_MIN (within FLT_MIN of y·2ⁿ), and y = 1 with n = −127 gives the
// pattern of +0.
inline Batch times_pow2(Batch y, Batch shifted) {
    using Ints = xsimd::batch<std::int32_t>;
    return xsimd::bitwise_cast<Batch>(xsimd::bitwise_cast<Ints>(y) + (xsimd::bitwise_cast<Ints>(shifted) << 23));
}

// e^x for x ≤ 0; 0 at x = −∞. Where e^x is not a normal float (x < ln FLT_MIN): with AVX-512 the
// nearest float (0 below about −104), elsewhere 0.
inline Batch softmax_exp(Batch x) {
    const Batch ln2_hi(0.693359375f), ln2_lo(-2.12194440e-4f);  // ln 2 = ln2_hi + ln2_lo; ln2_hi has 9 bits
#if XSIMD_WITH_AVX512DQ
    x = xsimd::max(Batch(-104.0f), x);  // e^−104 rounds to 0, and x = −∞ would make r a NaN (a NaN x stays NaN)
#endif
    const Batch shifted = x * Batch(log2_e) + Batch(round_shift);  // carries n = round(x·log₂e)
    const Batch n = shifted - Batch(round_shift);
    Batch r = xsimd::fma(n, -ln2_hi, x);  // r = x − n·ln 2, in two exact-enough parts
    r = xsimd::fma(n, -ln2_lo, r);
    Batch p(1.38146128e-3f);  // P(r) = c2 + c3·r + c4·r² + c5·r³ + c6·r⁴ (bench/tools/fit_exp.py)
    p = xsimd::fma(p, r, Batch(8.36871006e-3f));
    p = xsimd::fma(p, r, Batch(4.16683890e-2f));
    p = xsimd::fma(p, r, Batch(1.66665211e-1f));
    p = xsimd::fma(p, r, Batch(4.99999940e-1f));
    const Batch e_r = xsimd::fma(p, r * r, r) + Batch(1.0f);  // e^r = 1 + r + r²·P(r)
#if XSIMD_WITH_AVX512DQ
    return Batch(_mm512_scalef_ps(e_r, n));  // e^r·2ⁿ
#else
    const Batch smallest(-87.3365448f);  // ln(FLT_MIN): below, e^x is not a normal float
    return xsimd::select(x < smallest, Batch(0.0f), times_pow2(e_r, shifted));  // x = −∞ lands here too
#endif
}

// How closely an exponential must follow the exact value: to a float's rounding (the float32 kernels
// and the backward), or to bfloat16's, to which the bf16 mode rounds each weight anyway.
enum class Grade { float32, bfloat16 };

// 2^f = 1 + f·Q(f) (bench/tools/fit_exp.py): for −½ ≤ f ≤ ½, Q of degree 5 (Grade::float32); for
// 0 ≤ f ≤ 1, Q of degree 2 (Grade::bfloat16). Exactly 1 at f = 0, so a row's largest score gets
// weight 1.
template <Grade grade>
inline Batch exp2_fraction(Batch f) {
    Batch q;
    if constexpr (grade == Grade::float32) {
        q = Batch(0.00015326463f);  // Q(f) = c1 + c2·f + … + c6·f⁵
        q = xsimd::fma(q, f, Batch(0.0013390806f));
        q = xsimd::fma(q, f, Batch(0.009618506f));
        q = xsimd::fma(q, f, Batch(0.0555036f));
        q = xsimd::fma(q, f, Batch(0.24022648f));
        q = xsimd::fma(q, f, Batch(0.6931472f));
    } else {
        q = Batch(0.07706699f);  // Q(f) = c1 + c2·f + c3·f²
        q = xsimd::fma(q, f, Batch(0.22764507f));
        q = xsimd::fma(q, f, Batch(0.69511676f));
    }
    return xsimd::fma(q, f, Batch(1.0f));
}

// 2^t for t ≤ 0. Where 2^t is a normal float, within 1.25 ulp (Grade::float32) or bf16_exp2_error
// relative (Grade::bfloat16, simd/simd.hpp). Below (t < −126): with AVX-512 the float nearest
// 2^f·2ⁿ (0 from t < −150 on, and for t = −∞); elsewhere a value under FLT_MIN within FLT_MIN of it,
// and exactly 0 for any t ≤ −127 (t = −∞ too).
template <Grade grade = Grade::float32>
inline Batch softmax_exp2(Batch t) {
#if XSIMD_WITH_AVX512DQ
    if constexpr (grade == Grade::float32) {
        const Batch f(_mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT));   // f = t − round(t), exact; 0 at t = −∞
        return Batch(_mm512_scalef_ps(exp2_fraction<grade>(f), t - f));  // 2^f · 2^round(t)
    } else {
        const Batch f(_mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF));   // f = t − ⌊t⌋; 0 at t = −∞
        return Batch(_mm512_scalef_ps(exp2_fraction<grade>(f), t));  // 2^f · 2^⌊t⌋: vscalefps takes the floor
    }
#else
    t = xsimd::max(Batch(-127.0f), t);                                          // (in this order a NaN t stays NaN)
    // n = round(t), or for the bfloat16 grade round(t − c), c = ½ − 2⁻¹⁷: ⌊t⌋, or ⌊t⌋ + 1 where t lies
    // within 2⁻¹⁷ below that (f = t − n is then at most 2⁻¹⁷ below 0, where the polynomial holds as
    // well); an integer t gives n = t, f = 0 (at t = −127, the pattern of +0). (With c = ½ such a t would
    // be a tie, rounded to even: n = t − 1 and f = 1, which at −127 leaves the exponent field.)
    const Batch shifted = (grade == Grade::float32 ? t : t - Batch(0.5f - 0x1p-17f)) + Batch(round_shift);
    const Batch f = t - (shifted - Batch(round_shift));  // exact
    return times_pow2(exp2_fraction<grade>(f), shifted);
#endif
}

// e^(x − m) for x ≤ m (a softmax weight: m is the row's largest score, or any number at least x), as
// 2^((x − m)·log₂e): the difference first, in the scores' own units, so no finite x or m overflows
// (−∞ where the difference does, whose weight is 0). x = −∞ gives 0; m must not be ±∞.
template <Grade grade = Grade::float32>
inline Batch exp_of_difference(Batch x, Batch m) {
    return softmax_exp2<grade>((x - m) * Batch(log2_e));
}

}  // namespace attn::simd::ATTN_ISA
