// simd/kernel_list.hpp — every kernel simd/dispatch.cpp calls through an instruction set's table, listed
// once: X(result, name, (parameters), (arguments)) for each. simd/kernels.hpp expands it into the
// members of the table (Kernels) and the declarations of each set's functions, simd/kernel_table.cpp
// into the table, simd/dispatch.cpp into the functions of simd.hpp that forward to it. A new kernel is
// one line here (and its declaration and documentation in simd.hpp), its definition in a kernel file.
// (pair_chains is not listed: a set without vdpbf16ps has none, and its table says so with nullptr.)
#pragma once

#define ATTN_FOR_EACH_KERNEL(X)                                                                                        \
    X(void, matmul_into, (const Matrix& A, const Matrix& B, Matrix& C, Threads threads, const Blocking& blocking),     \
      (A, B, C, threads, blocking))                                                                                    \
    X(void, matmul_transposed_into,                                                                                    \
      (const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads, const Blocking& blocking),           \
      (A, B, scale, C, threads, blocking))                                                                             \
    X(void, matmul_transposed_bf16_into, (const Matrix& A, const Matrix& B, float scale, Matrix& C), (A, B, scale, C)) \
    X(void, fused_attention_into,                                                                                      \
      (const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O, float* log_sum_exp,     \
       Threads threads, const Blocking& blocking, const ScoreTerms* terms),                                            \
      (Q, K, V, scale, causal, O, log_sum_exp, threads, blocking, terms))                                              \
    X(void, fused_attention_bf16_into,                                                                                 \
      (const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O, Threads threads,        \
       const Blocking& blocking, const ScoreTerms* terms),                                                             \
      (Q, K, V, scale, causal, O, threads, blocking, terms))                                                           \
    X(void, fused_attention_backward_into,                                                                             \
      (const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O, const Matrix& dO,                           \
       std::span<const float> log_sum_exp, float scale, bool causal, Matrix& dQ, Matrix& dK, Matrix& dV,               \
       Threads threads, const Blocking& blocking, const ScoreTerms* terms),                                            \
      (Q, K, V, O, dO, log_sum_exp, scale, causal, dQ, dK, dV, threads, blocking, terms))                              \
    X(void, decode_attention_into, (const DecodeProblem& problem, Threads threads, const Blocking& blocking),          \
      (problem, threads, blocking))                                                                                    \
    X(void, softmax_rows_in_place, (Matrix & S, float scale, Threads threads), (S, scale, threads))                    \
    X(void, softmax_gradient_rows_in_place, (const Matrix& P, Matrix& G, Threads threads), (P, G, threads))            \
    X(float, dot, (const float* a, const float* b, std::size_t n), (a, b, n))                                          \
    X(float, largest_row_square, (const float* rows, std::size_t count, std::size_t n), (rows, count, n))              \
    X(void, axpy, (float factor, const float* x, float* y, std::size_t n), (factor, x, y, n))                          \
    X(float, exp_and_sum, (std::span<float> x, float shift), (x, shift))                                               \
    X(float, exp2_and_sum, (std::span<float> x, float shift), (x, shift))                                              \
    X(float, exp2_bf16_and_sum, (std::span<float> x, float shift), (x, shift))                                         \
    X(float, row_max, (std::span<const float> x), (x))                                                                 \
    X(float, fma_chains, (std::size_t steps), (steps))                                                                 \
    X(void, matmul_register_tile_into, (const Matrix& A, const Matrix& B, Matrix& C), (A, B, C))
