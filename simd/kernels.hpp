// simd/kernels.hpp — one instruction set's kernels as a table of functions, which simd/dispatch.cpp
// calls through; the kernels are listed once, in simd/kernel_list.hpp. Each kernel file defines its
// functions in attn::simd::ATTN_ISA (simd/batch.hpp); simd/kernel_table.cpp, compiled with them,
// fills that instruction set's table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "simd/kernel_list.hpp"
#include "simd/simd.hpp"

namespace attn::simd {

// The same functions as simd.hpp declares, for one instruction set.
struct Kernels {
    const char* name;             // "sse2", "avx2", "avx512", "avx512bf16", "neon", or "native" (-Dnative=true)
    const char* xsimd_name;       // the architecture xsimd compiled it for: "sse2", "fma3+avx2", "avx512bw", …
    std::size_t width;            // floats per batch
    std::size_t floats_per_pair;  // of bfloat16 pairs in the bf16 mode's products: 1 with vdpbf16ps, else 2
    bool f16_instructions;        // converts float16 with one instruction: decode reads such a cache in place
#define ATTN_KERNEL_MEMBER(result, name, parameters, arguments) result(*name) parameters;
    ATTN_FOR_EACH_KERNEL(ATTN_KERNEL_MEMBER)
#undef ATTN_KERNEL_MEMBER
    float (*pair_chains)(std::size_t steps);  // nullptr without vdpbf16ps
};

}  // namespace attn::simd

#ifdef ATTN_ISA
namespace attn::simd::ATTN_ISA {

#define ATTN_DECLARE_KERNEL(result, name, parameters, arguments) result name parameters;
ATTN_FOR_EACH_KERNEL(ATTN_DECLARE_KERNEL)
#undef ATTN_DECLARE_KERNEL
float pair_chains(std::size_t steps);

// Whether this set converts float16 numbers to floats with one instruction, which simd/decode.cpp
// then uses instead of its integer conversion: vcvtph2ps (AVX-512F, or F16C beside AVX2), fcvtl
// (every AArch64 CPU).
#if defined(__AVX512F__) || defined(__F16C__) || defined(__aarch64__)
#define ATTN_F16_INSTRUCTIONS 1
inline constexpr bool f16_instructions = true;
#else
inline constexpr bool f16_instructions = false;
#endif

// x_k ← scale·x_k (rounded, as a pass of its own would), returning the largest: step 4 folded into
// the first sweep of the materialised softmax (simd/softmax.cpp).
float scale_and_max(std::span<float> x, float scale);
// The online softmax's bookkeeping for `rows` rows (a multiple of W is read and written): the new
// maxima m' = max(m, tile max) into tile_max, and e^(m − m') into correction (simd/fused.cpp).
void rescale_factors(const float* max_so_far, float* tile_max, float* correction, std::size_t rows);

extern const Kernels kernels;

}  // namespace attn::simd::ATTN_ISA
#endif
