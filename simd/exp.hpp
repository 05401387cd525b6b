// simd/exp.hpp — the softmax's own exponential: e^x for x ≤ 0, W lanes at once, no branches.
//
// The softmax only ever exponentiates x − max ≤ 0, so it needs no overflow check; below
// ln(FLT_MIN) ≈ −87.34 the result is 0 (the true value is under 1.2·10⁻³⁸, and the row's sum is at
// least 1, so no weight changes). The recipe:
//
//   1. range reduction (Cody–Waite): n = round(x / ln 2), r = x − n·ln 2, so that e^x = 2ⁿ · e^r
//      with |r| ≤ ln(2)/2. ln 2 is split into a short high part (exact when multiplied by any n
//      here) and the small rest, so r loses no bits to the subtraction.
//   2. e^r = 1 + r + r²·P(r), P of degree 4 fitted to the smallest largest relative error on
//      [−ln2/2, ln2/2] (scripts/fit_exp.py: 3.8·10⁻⁹, far below a float's 6·10⁻⁸ rounding).
//   3. 2ⁿ is built in the exponent field directly: (n + 127) << 23 is the bit pattern of 2ⁿ.
//
// Accuracy, against the double exp for every float in [−88, 0] (tests/test_simd.cpp, "softmax
// exp"): wherever e^x is a normal float, at most 0.99 ulp off with SSE2 and 1.01 ulp with AVX2 and
// AVX-512 (measured on x86-64; the test fails above 1.25); where it is not, 0 or the subnormal.
// xsimd::exp costs more because it handles every x (range checks and selects for overflow, large
// and positive arguments). Measured in docs/performance.md ("The softmax's own exponential").
#pragma once

#include <cstdint>

#include "simd/batch.hpp"

namespace attn::simd::ATTN_ISA {

inline Batch softmax_exp(Batch x) {
    using Ints = xsimd::batch<std::int32_t>;
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
    const Batch e_r = xsimd::fma(p, r * r, r) + Batch(1.0f);                               // e^r = 1 + r + r²·P(r)
    const Batch two_n = xsimd::bitwise_cast<Batch>((xsimd::to_int(n) + Ints(127)) << 23);  // 2ⁿ
    return xsimd::select(x < smallest, Batch(0.0f), e_r * two_n);                          // x = −∞ lands here too
}

}  // namespace attn::simd::ATTN_ISA
