// simd/batch.hpp — the one vector type of simd/: a batch of W floats for the widest instruction set
// the compiler was told about (-march=native: 8 with AVX2, 16 with AVX-512; 4 with plain SSE2).
#pragma once

#include <cstddef>
#include <xsimd/xsimd.hpp>

namespace attn::simd {

using Batch = xsimd::batch<float>;
inline constexpr std::size_t W = Batch::size;

}  // namespace attn::simd
