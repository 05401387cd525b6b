// matrix/float16.cpp — rounding to float16 and back with integer operations on the float's bits.
#include "matrix/float16.hpp"

#include "matrix/float_bits.hpp"

namespace attn {

namespace {

// value >> shift (1 ≤ shift ≤ 31) rounded to the nearest integer, ties to the even one.
std::uint32_t shift_right_to_nearest(std::uint32_t value, unsigned shift) {
    const std::uint32_t kept = value >> shift, dropped = value & ((1u << shift) - 1), half = 1u << (shift - 1);
    return kept + ((dropped > half || (dropped == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

std::uint16_t float16_bits(float x) {
    const std::uint32_t bits = bits_of(x), size = bits & 0x7FFFFFFFu;
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    if (size > 0x7F800000u) return sign | 0x7E00u | static_cast<std::uint16_t>((size >> 13) & 0x01FFu);  // NaN
    if (size >= 0x477FF000u) return sign | 0x7C00u;  // ≥ 65520 (∞ too): past the largest float16, ±∞
    const std::uint32_t exponent = size >> 23;       // the float's, biased by 127
    if (exponent >= 113) {
        // Normal (≥ 2⁻¹⁴): rebias the exponent from 127 to 15 (subtract 112·2²³), then drop 13 mantissa
        // bits to the nearest; a carry out of the mantissa steps the exponent, as it should.
        return sign | static_cast<std::uint16_t>(shift_right_to_nearest(size - (112u << 23), 13));
    }
    // Subnormal float16: the value in units of 2⁻²⁴, m·2^(exponent − 150) with the implicit bit in m,
    // shifted right by 126 − exponent (≥ 14). Below 2⁻²⁵ that rounds to 0; a carry to 0x400 gives the
    // smallest normal float16, whose pattern it is.
    if (exponent < 101) return sign;  // < 2⁻²⁶: well under half the smallest step (float subnormals too)
    const std::uint32_t mantissa = (size & 0x007FFFFFu) | 0x00800000u;
    return sign | static_cast<std::uint16_t>(shift_right_to_nearest(mantissa, 126 - exponent));
}

float from_float16_bits(std::uint16_t bits) {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1Fu,
                        mantissa = bits & 0x03FFu;
    if (exponent == 0) {  // zero or subnormal: mantissa·2⁻²⁴, exact in a float
        const float size = float(mantissa) * 5.9604644775390625e-8f;
        return float_of(bits_of(size) | sign);
    }
    if (exponent == 31) return float_of(sign | 0x7F800000u | (mantissa << 13));  // ±∞, NaN
    return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace attn
