// matrix/float16.hpp — IEEE 754 half precision (float16), the other 16-bit format a key/value cache
// may be stored in, written as the textbook rounding the kernels and tests are checked against.
//
// A float16 has a sign, a 5-bit exponent (bias 15) and 10 stored bits of mantissa: 11 significant
// bits, three more than a bfloat16's 8, but a far smaller range: the largest finite float16 is 65504,
// the smallest normal 2⁻¹⁴ ≈ 6.1·10⁻⁵, and below it the subnormals go down in steps of 2⁻²⁴. Rounding
// a float in the normal range to the nearest float16 moves it by at most 2⁻¹¹ of its size.
#pragma once

#include <cstdint>

namespace attn {

// How numbers are stored: float32, or the 16 bits of a bfloat16 (matrix/bfloat16.hpp) or of an IEEE
// float16. (The library's key/value caches name it KvDtype: attention/options.hpp.)
enum class Storage { f32, bf16, f16 };

// The largest finite float16 (pattern 0x7BFF).
inline constexpr float largest_float16 = 65504.0f;

// The 16 bits of the float16 nearest to x, ties to even. Past the largest float16 (from 65520 on in
// size, the midpoint between 65504 and 2¹⁶) it is ±∞; below 2⁻¹⁴ in size it is a subnormal float16
// (or a zero of x's sign below 2⁻²⁵); a NaN stays a NaN (a quiet one).
std::uint16_t float16_bits(float x);
// The value of those bits as a float (exact: every float16 is a float).
float from_float16_bits(std::uint16_t bits);

}  // namespace attn
