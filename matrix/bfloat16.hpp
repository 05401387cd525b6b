// matrix/bfloat16.hpp — bfloat16, the narrower number the fused kernel's bf16 mode multiplies with,
// written as the textbook rounding the fast kernels are tested against.
//
// A bfloat16 is the top 16 bits of a float: the same sign and the same 8-bit exponent (so the same
// range, up to 3.4·10³⁸), but 8 significant bits (7 stored) instead of 24. Rounding a float to the
// nearest bfloat16 (ties to the even one) moves it by at most half a step, 2⁻⁸ of its size (a float's
// own rounding: 2⁻²⁴); and the product of two bfloat16 numbers has at most 16 significant bits, so a
// float holds it exactly.
#pragma once

#include <cstdint>

#include "matrix/matrix.hpp"

namespace attn {

// The float format in which a kernel multiplies: f32 (the default: everything in float), or bf16
// (the operands of each product rounded to bfloat16, the products summed in float).
enum class Dtype { f32, bf16 };

// The largest finite bfloat16, (2 − 2⁻⁷)·2¹²⁷ ≈ 3.39·10³⁸ (pattern 0x7F7F): a float of at least its
// midpoint with 2¹²⁸ (the top 2⁻⁹ of float32's range) rounds to ±∞.
inline constexpr float largest_bfloat16 = 0x1.fep127f;

// The 16 bits of x rounded to the nearest bfloat16, ties to even. A subnormal x (below 2⁻¹²⁶ in size,
// where bfloat16 keeps fewer bits than its 7) becomes a zero of its sign, as the CPU's bfloat16
// instructions make it; a NaN stays a NaN; a float past the largest bfloat16 rounds to ±∞.
std::uint16_t bfloat16_bits(float x);
// The value of those bits as a float (exact: a bfloat16 is a float whose low 16 bits are zero).
float from_bfloat16_bits(std::uint16_t bits);
// Both: the bfloat16 nearest to x, as a float.
float round_to_bfloat16(float x);
// Every element of A so rounded.
Matrix rounded_to_bfloat16(const Matrix& A);

}  // namespace attn
