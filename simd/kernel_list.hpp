// simd/kernel_list.hpp — the kernels every instruction set defines, listed once, by name.
//
// Each is declared once, with its documentation and its scratch size beside it, in simd/simd.hpp,
// and defined in its own file once per instruction set (in attn::simd::ATTN_ISA, simd/batch.hpp);
// simd/dispatch.cpp defines the function simd.hpp declares, which calls the chosen set's. From this
// list come the rest of the dispatch, each typed from the declaration (decltype), never again by
// hand: the members of an instruction set's table and the declarations of its functions
// (simd/kernels.hpp), and each set's table (simd/kernel_table.cpp).
//
// A new kernel: its file (and its line in meson.build's kernel sources), one line here, its
// declaration in simd.hpp and its call in simd/dispatch.cpp, and its test.
// (pair_chains is not listed: a set without vdpbf16ps has none, and its table says so with nullptr.)
#pragma once

#define ATTN_FOR_EACH_KERNEL(X)       \
    X(matmul_into)                    \
    X(matmul_transposed_into)         \
    X(matmul_transposed_bf16_into)    \
    X(fused_attention_into)           \
    X(fused_attention_bf16_into)      \
    X(fused_attention_backward_into)  \
    X(decode_attention_into)          \
    X(softmax_rows_in_place)          \
    X(softmax_gradient_rows_in_place) \
    X(dot)                            \
    X(largest_row_square)             \
    X(axpy)                           \
    X(exp_and_sum)                    \
    X(exp2_and_sum)                   \
    X(exp2_bf16_and_sum)              \
    X(row_max)                        \
    X(fma_chains)                     \
    X(matmul_register_tile_into)
