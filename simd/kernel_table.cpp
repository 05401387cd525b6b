// simd/kernel_table.cpp — the table of this instruction set's kernels (compiled once per set, like
// the kernels themselves), through which simd/dispatch.cpp calls them.
#include "simd/batch.hpp"
#include "simd/bf16.hpp"
#include "simd/kernels.hpp"

#define ATTN_QUOTE(x) #x
#define ATTN_NAME_OF(x) ATTN_QUOTE(x)

namespace attn::simd::ATTN_ISA {

// constinit: filled in before any code runs, so the dispatcher can never see it half made.
extern constinit const Kernels kernels{
    .name = ATTN_NAME_OF(ATTN_ISA),
    .xsimd_name = xsimd::default_arch::name(),
    .width = W,
    .floats_per_pair = floats_per_pair,
    .f16_instructions = f16_instructions,
#define ATTN_TABLE_ENTRY(name) .name = &name,
    ATTN_FOR_EACH_KERNEL(ATTN_TABLE_ENTRY)
#undef ATTN_TABLE_ENTRY
        .pair_chains = bf16_instructions ? &pair_chains : nullptr,
};

}  // namespace attn::simd::ATTN_ISA
