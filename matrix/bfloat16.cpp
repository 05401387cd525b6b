// matrix/bfloat16.cpp — rounding to bfloat16 with integer operations on the float's bits.
#include "matrix/bfloat16.hpp"

#include "matrix/float_bits.hpp"

namespace attn {

std::uint16_t bfloat16_bits(float x) {
    const std::uint32_t bits = bits_of(x);
    const std::uint32_t sign = bits & 0x80000000u, exponent = bits & 0x7F800000u;
    if (exponent == 0) return static_cast<std::uint16_t>(sign >> 16);  // ±0 and the subnormals: ±0
    if (exponent == 0x7F800000u && (bits & 0x007FFFFFu) != 0)
        return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // NaN: keep it one (a quiet one)
    // Nearest, ties to even: add just under half of the dropped part's unit (0x7FFF), plus one more when
    // the kept part is odd, and cut. A carry out of the mantissa steps the exponent, up to ∞ at the top.
    const std::uint32_t odd = (bits >> 16) & 1u;
    return static_cast<std::uint16_t>((bits + 0x7FFFu + odd) >> 16);
}

float from_bfloat16_bits(std::uint16_t bits) { return float_of(std::uint32_t{bits} << 16); }

float round_to_bfloat16(float x) { return from_bfloat16_bits(bfloat16_bits(x)); }

Matrix rounded_to_bfloat16(const Matrix& A) {
    Matrix out = A;
    for (std::size_t i = 0; i < out.rows(); ++i)
        for (float& x : out.row(i)) x = round_to_bfloat16(x);
    return out;
}

}  // namespace attn
