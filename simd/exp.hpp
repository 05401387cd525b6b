// simd/exp.hpp — the softmax's own exponentials: e^x and 2^t for arguments ≤ 0, W lanes at once, no
// branches.
//
// The softmax only ever exponentiates x − max ≤ 0, so it needs no overflow check; below the smallest
// normal float (e^x < FLT_MIN ≈ 1.2·10⁻³⁸) the result is 0, and the row's sum is at least 1, so no
// weight changes. Both are 2ⁿ times a polynomial of a small remainder:
//
//   1. range reduction. e^x: n = round(x·log₂e), r = x − n·ln 2 (Cody–Waite: ln 2 split into a short
//      high part, exact when multiplied by any n here, and the small rest, so r loses no bits to the
//      subtraction), |r| ≤ ln(2)/2. 2^t: n = round(t), f = t − n, exact, |f| ≤ ½.
//   2. e^r = 1 + r + r²·P(r), P of degree 4; 2^f = 1 + f·Q(f), Q of degree 5; each fitted to the
//      smallest largest relative error on its interval (scripts/fit_exp.py: 3.8·10⁻⁹ and 3·10⁻⁹, far
//      below a float's 6·10⁻⁸ rounding).
//   3. 2ⁿ is built in the exponent field directly: (n + 127) << 23 is the bit pattern of 2ⁿ.
//
// The fused kernel uses 2^t: its scores carry the factor log₂e already (multiplied in with the scale,
// at no cost), which spares each exponential the multiply by log₂e and the Cody–Waite steps: its loop
// in exp2_and_sum does 16 vector operations a batch where exp_and_sum's does 20 (AVX-512, GCC 12),
// fused core 1.02–1.03× (docs/performance.md). The materialised softmax exponentiates the scores the
// library returns, in natural units: e^x.
//
// Accuracy, against the double exp and exp2 for every float argument in [−88, 0] and [−127, 0]
// (tests/test_simd.cpp, "softmax exp"): wherever the result is a normal float, e^x is at most
// 0.99 ulp off with SSE2 and 1.01 ulp with AVX2 and AVX-512, 2^t at most 1.08 and 0.80 ulp (measured
// on x86-64; the test fails above 1.25); where it is not, 0 or the subnormal. xsimd::exp costs more
// because it handles every x (range checks and selects for overflow, large and positive arguments).
// Measured in docs/performance.md ("Where the time goes" and "The fused kernel in base 2").
#pragma once

#include <cstdint>

#include "simd/batch.hpp"

namespace attn::simd::ATTN_ISA {

// 2ⁿ for an integer-valued n in [−127, 127], built in the exponent field: (n + 127) << 23 is its bit
// pattern (n = −127 gives that of 0; for n outside the range the bits mean nothing).
inline Batch pow2(Batch n) {
    using Ints = xsimd::batch<std::int32_t>;
    return xsimd::bitwise_cast<Batch>((xsimd::to_int(n) + Ints(127)) << 23);
}

// e^x for x ≤ 0; 0 where e^x is not a normal float (x < ln FLT_MIN) and for x = −∞.
inline Batch softmax_exp(Batch x) {
    const Batch ln2_hi(0.693359375f), ln2_lo(-2.12194440e-4f);  // ln 2 = ln2_hi + ln2_lo; ln2_hi has 9 bits
    const Batch log2_e(1.44269504f), round_shift(12582912.0f);  // 1.5·2²³: adding it rounds to an integer
    const Batch smallest(-87.3365448f);                         // ln(FLT_MIN): below, e^x is not a normal float
    const Batch n = (x * log2_e + round_shift) - round_shift;   // n = round(x·log₂e)
    Batch r = xsimd::fma(n, -ln2_hi, x);                        // r = x − n·ln 2, in two exact-enough parts
    r = xsimd::fma(n, -ln2_lo, r);
    Batch p(1.38146128e-3f);  // P(r) = c2 + c3·r + c4·r² + c5·r³ + c6·r⁴ (scripts/fit_exp.py)
    p = xsimd::fma(p, r, Batch(8.36871006e-3f));
    p = xsimd::fma(p, r, Batch(4.16683890e-2f));
    p = xsimd::fma(p, r, Batch(1.66665211e-1f));
    p = xsimd::fma(p, r, Batch(4.99999940e-1f));
    const Batch e_r = xsimd::fma(p, r * r, r) + Batch(1.0f);         // e^r = 1 + r + r²·P(r)
    return xsimd::select(x < smallest, Batch(0.0f), e_r * pow2(n));  // x = −∞ lands here too
}

// 2^t for t ≤ 0. Below −126, where 2^t is not a normal float: the subnormal, or 0 from −126.5 down
// (and for t = −∞), where n = −127 makes the bit pattern of 2ⁿ that of 0.
inline Batch softmax_exp2(Batch t) {
    const Batch round_shift(12582912.0f);             // 1.5·2²³: adding it rounds to an integer
    t = xsimd::max(Batch(-127.0f), t);                // (in this order a NaN t stays NaN)
    const Batch n = (t + round_shift) - round_shift;  // n = round(t)
    const Batch f = t - n;                            // exact
    Batch q(0.00015326463f);                          // Q(f) = c1 + c2·f + … + c6·f⁵ (scripts/fit_exp.py)
    q = xsimd::fma(q, f, Batch(0.0013390806f));
    q = xsimd::fma(q, f, Batch(0.009618506f));
    q = xsimd::fma(q, f, Batch(0.0555036f));
    q = xsimd::fma(q, f, Batch(0.24022648f));
    q = xsimd::fma(q, f, Batch(0.6931472f));
    const Batch two_f = xsimd::fma(q, f, Batch(1.0f));  // 2^f = 1 + f·Q(f)
    return two_f * pow2(n);
}

}  // namespace attn::simd::ATTN_ISA
