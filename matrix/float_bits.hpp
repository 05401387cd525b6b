// matrix/float_bits.hpp — a float's 32 bits and back, for the roundings to 16-bit formats
// (matrix/bfloat16.cpp, matrix/float16.cpp). std::memcpy: the WebAssembly build's standard library has
// no std::bit_cast.
#pragma once

#include <cstdint>
#include <cstring>

namespace attn {

inline std::uint32_t bits_of(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}

inline float float_of(std::uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

}  // namespace attn
