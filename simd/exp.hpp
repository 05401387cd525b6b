// simd/exp.hpp — the softmax's own exponentials: e^x and 2^t for arguments ≤ 0, W lanes at once, no
// branches.
//
// The softmax only ever exponentiates x − max ≤ 0, so it needs no overflow check; below the smallest
// normal float (e^x < FLT_MIN ≈ 1.2·10⁻³⁸) the result is 0 or a value under FLT_MIN, and the row's
// sum is at least 1, so no weight changes. Both are 2ⁿ times a polynomial of a small remainder:
//
//   1. range reduction. e^x: n = round(x·log₂e), r = x − n·ln 2 (Cody–Waite: ln 2 split into a short
//      high part, exact when multiplied by any n here, and the small rest, so r loses no bits to the
//      subtraction), |r| ≤ ln(2)/2. 2^t: n = round(t), f = t − n, exact, |f| ≤ ½.
//   2. e^r = 1 + r + r²·P(r), P of degree 4; 2^f = 1 + f·Q(f), Q of degree 5; each fitted to the
//      smallest largest relative error on its interval (bench/tools/fit_exp.py: 3.8·10⁻⁹ and 3·10⁻⁹, far
//      below a float's 6·10⁻⁸ rounding).
//   3. ×2ⁿ by an integer add to the exponent field: the n of step 1 already sits in the low bits of
//      v + 1.5·2²³, the sum that rounded it, so n·2²³ is that sum's bit pattern shifted left by 23.
//
// AVX-512 has an instruction for step 3 and one for 2^t's step 1. vscalefps multiplies by 2ⁿ for a
// float n, rounding a result below FLT_MIN to the nearest float (as a multiply would) and giving 0
// for n = −∞; vreduceps gives f = t − round(t) in one operation. The copy compiled for AVX-512 uses
// both (XSIMD_WITH_AVX512DQ: its flags include the DQ subset that has vreduceps, so its Batch is a
// 16-float register), and drops the clamp, the rounding sum and the integer add for them.
//
// The fused kernel uses 2^t: its scores carry the factor log₂e already (multiplied in with the scale,
// at no cost), which spares each exponential the multiply by log₂e and the Cody–Waite steps: its loop
// in exp2_and_sum does 11 vector operations a batch besides its load and store, where exp_and_sum's
// does 15 (AVX-512 with vscalefps, GCC 12; 14 and 17 with the integer add, 16 and 19 when 2ⁿ is
// built and multiplied; BM_core/fused measures what each saves). The materialised softmax
// exponentiates the scores the library returns, in natural units: e^x.
//
// Accuracy, against the double exp and exp2 for every float argument in [−88, 0] and [−127, 0]
// (tests/test_simd.cpp, "softmax exp"): wherever the result is a normal float, e^x and 2^t are
// within 1.25 ulp (the test's bound; it prints the worst error of each instruction set); where it
// is not, a value within FLT_MIN of it (0 at −∞; with AVX-512, within one step of the smallest
// subnormal, 1.4·10⁻⁴⁵).
// xsimd::exp costs more because it handles every x (range checks and selects for overflow, large and
// positive arguments).
// BM_softmax_rows measures the materialised softmax, BM_core/fused the kernel that uses 2^t.
#pragma once

#include <cstdint>

#include "simd/batch.hpp"

namespace attn::simd::ATTN_ISA {

// 1.5·2²³: added to a float below 2²² in magnitude, it rounds it to an integer (the float's spacing
// there is 1), so (v + round_shift) − round_shift = round(v).
inline constexpr float round_shift = 12582912.0f;

// y·2ⁿ for y in [2^−½, 2^½] (the polynomial's result), with n = round(v) carried by
// `shifted` = v + 1.5·2²³: the low 9 bits of shifted's pattern are n's (the rest of 1.5·2²³'s pattern
// leaves with the shift by 23), and n·2²³ added to y's pattern adds n to its exponent field. One
// shift and one integer add, where building 2ⁿ and multiplying took a conversion, two integer
// operations and a multiply. For n ≥ −125 the result is y·2ⁿ exactly; below, the exponent field
// reaches 0 and the result is a value under FLT_MIN (within FLT_MIN of y·2ⁿ), and y = 1 with
// n = −127 gives the pattern of +0.
inline Batch times_pow2(Batch y, Batch shifted) {
    using Ints = xsimd::batch<std::int32_t>;
    return xsimd::bitwise_cast<Batch>(xsimd::bitwise_cast<Ints>(y) + (xsimd::bitwise_cast<Ints>(shifted) << 23));
}

// e^x for x ≤ 0; 0 at x = −∞. Where e^x is not a normal float (x < ln FLT_MIN): with AVX-512 the
// nearest float (0 below about −104), elsewhere 0.
inline Batch softmax_exp(Batch x) {
    const Batch ln2_hi(0.693359375f), ln2_lo(-2.12194440e-4f);  // ln 2 = ln2_hi + ln2_lo; ln2_hi has 9 bits
    const Batch log2_e(1.44269504f);
#if XSIMD_WITH_AVX512DQ
    x = xsimd::max(Batch(-104.0f), x);  // e^−104 rounds to 0, and x = −∞ would make r a NaN (a NaN x stays NaN)
#endif
    const Batch shifted = x * log2_e + Batch(round_shift);  // carries n = round(x·log₂e)
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

// 2^f = 1 + f·Q(f) for |f| ≤ ½ (bench/tools/fit_exp.py); 1 at f = 0.
inline Batch exp2_fraction(Batch f) {
    Batch q(0.00015326463f);  // Q(f) = c1 + c2·f + … + c6·f⁵
    q = xsimd::fma(q, f, Batch(0.0013390806f));
    q = xsimd::fma(q, f, Batch(0.009618506f));
    q = xsimd::fma(q, f, Batch(0.0555036f));
    q = xsimd::fma(q, f, Batch(0.24022648f));
    q = xsimd::fma(q, f, Batch(0.6931472f));
    return xsimd::fma(q, f, Batch(1.0f));
}

// 2^t for t ≤ 0. Where 2^t is a normal float, within 0.80 ulp (AVX2, AVX-512). Below (t < −126):
// with AVX-512 the float nearest 2^f·2ⁿ (0 from t < −150 on, and for t = −∞); elsewhere a value under
// FLT_MIN within FLT_MIN of it, and exactly 0 for any t ≤ −127 (t = −∞ too).
inline Batch softmax_exp2(Batch t) {
#if XSIMD_WITH_AVX512DQ
    const Batch f(_mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT));  // f = t − round(t), exact; 0 at t = −∞
    return Batch(_mm512_scalef_ps(exp2_fraction(f), t - f));        // 2^f · 2^round(t)
#else
    t = xsimd::max(Batch(-127.0f), t);                                          // (in this order a NaN t stays NaN)
    const Batch shifted = t + Batch(round_shift);                               // exact; carries n = round(t)
    const Batch f = t - (shifted - Batch(round_shift));                         // f = t − n, exact
    return times_pow2(exp2_fraction(f), shifted);                               // at t = −127, f = 0 and 2^f = 1
#endif
}

}  // namespace attn::simd::ATTN_ISA
