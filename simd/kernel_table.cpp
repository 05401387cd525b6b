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
    .matmul_into = &matmul_into,
    .matmul_transposed_into = &matmul_transposed_into,
    .matmul_transposed_bf16_into = &matmul_transposed_bf16_into,
    .fused_attention_into = &fused_attention_into,
    .fused_attention_bf16_into = &fused_attention_bf16_into,
    .fused_attention_backward_into = &fused_attention_backward_into,
    .softmax_rows_in_place = &softmax_rows_in_place,
    .softmax_gradient_rows_in_place = &softmax_gradient_rows_in_place,
    .dot = &dot,
    .axpy = &axpy,
    .exp_and_sum = &exp_and_sum,
    .exp2_and_sum = &exp2_and_sum,
    .row_max = &row_max,
    .fma_chains = &fma_chains,
    .pair_chains = bf16_instructions ? &pair_chains : nullptr,
    .matmul_register_tile_into = &matmul_register_tile_into,
};

}  // namespace attn::simd::ATTN_ISA
