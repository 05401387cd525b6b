// simd/kernels.hpp — one instruction set's kernels as a table of functions, which simd/dispatch.cpp
// calls through. Each kernel file defines its functions in attn::simd::ATTN_ISA (simd/batch.hpp);
// simd/kernel_table.cpp, compiled with them, fills that instruction set's table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "simd/simd.hpp"

namespace attn::simd {

// The same functions as simd.hpp declares, for one instruction set.
struct Kernels {
    const char* name;             // "sse2", "avx2", "avx512", "avx512bf16", "neon", or "native" (-Dnative=true)
    const char* xsimd_name;       // the architecture xsimd compiled it for: "sse2", "fma3+avx2", "avx512bw", …
    std::size_t width;            // floats per batch
    std::size_t floats_per_pair;  // of bfloat16 pairs in the bf16 mode's products: 1 with vdpbf16ps, else 2
    void (*matmul_into)(const Matrix& A, const Matrix& B, Matrix& C, Threads threads, const Blocking& blocking);
    void (*matmul_transposed_into)(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads,
                                   const Blocking& blocking);
    void (*matmul_transposed_bf16_into)(const Matrix& A, const Matrix& B, float scale, Matrix& C);
    void (*fused_attention_into)(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                                 float* log_sum_exp, Threads threads, const Blocking& blocking,
                                 const ScoreTerms* terms);
    void (*fused_attention_bf16_into)(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal,
                                      Matrix& O, Threads threads, const Blocking& blocking, const ScoreTerms* terms);
    void (*fused_attention_backward_into)(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O,
                                          const Matrix& dO, std::span<const float> log_sum_exp, float scale,
                                          bool causal, Matrix& dQ, Matrix& dK, Matrix& dV, Threads threads,
                                          const Blocking& blocking, const ScoreTerms* terms);
    void (*softmax_rows_in_place)(Matrix& S, float scale, Threads threads);
    void (*softmax_gradient_rows_in_place)(const Matrix& P, Matrix& G, Threads threads);
    float (*dot)(const float* a, const float* b, std::size_t n);
    void (*axpy)(float factor, const float* x, float* y, std::size_t n);
    float (*exp_and_sum)(std::span<float> x, float shift);
    float (*exp2_and_sum)(std::span<float> x, float shift);
    float (*row_max)(std::span<const float> x);
    float (*fma_chains)(std::size_t steps);
    float (*pair_chains)(std::size_t steps);  // nullptr without vdpbf16ps
    void (*matmul_register_tile_into)(const Matrix& A, const Matrix& B, Matrix& C);
};

}  // namespace attn::simd

#ifdef ATTN_ISA
namespace attn::simd::ATTN_ISA {

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Threads threads, const Blocking& blocking);
void matmul_transposed_into(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads,
                            const Blocking& blocking);
void matmul_transposed_bf16_into(const Matrix& A, const Matrix& B, float scale, Matrix& C);
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          float* log_sum_exp, Threads threads, const Blocking& blocking, const ScoreTerms* terms);
void fused_attention_bf16_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                               Threads threads, const Blocking& blocking, const ScoreTerms* terms);
void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O, const Matrix& dO,
                                   std::span<const float> log_sum_exp, float scale, bool causal, Matrix& dQ, Matrix& dK,
                                   Matrix& dV, Threads threads, const Blocking& blocking, const ScoreTerms* terms);
void softmax_rows_in_place(Matrix& S, float scale, Threads threads);
void softmax_gradient_rows_in_place(const Matrix& P, Matrix& G, Threads threads);
float dot(const float* a, const float* b, std::size_t n);
void axpy(float factor, const float* x, float* y, std::size_t n);
float exp_and_sum(std::span<float> x, float shift);
float exp2_and_sum(std::span<float> x, float shift);
// x_k ← scale·x_k (rounded, as a pass of its own would), returning the largest: step 4 folded into
// the first sweep of the materialised softmax (simd/softmax.cpp).
float scale_and_max(std::span<float> x, float scale);
float row_max(std::span<const float> x);
// The online softmax's bookkeeping for `rows` rows (a multiple of W is read and written): the new
// maxima m' = max(m, tile max) into tile_max, and 2^(m − m') into correction (simd/fused.cpp, whose
// scores are in log₂ units).
void rescale_factors(const float* max_so_far, float* tile_max, float* correction, std::size_t rows);
float fma_chains(std::size_t steps);
float pair_chains(std::size_t steps);
void matmul_register_tile_into(const Matrix& A, const Matrix& B, Matrix& C);

extern const Kernels kernels;

}  // namespace attn::simd::ATTN_ISA
#endif
