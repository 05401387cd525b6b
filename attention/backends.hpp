// attention/backends.hpp — one function per step of the chain, choosing the kernel by Backend.
// The chain in attention.cpp calls only these, so the backend changes which loops run, never
// which formula is computed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/options.hpp"

namespace attn::backends {

// S' = factor·S as step 4 leaves it for step 5: the naive backend multiplies every S_ij at step 4
// and leaves factor 1; the fast backends leave S as the product computed it, and their softmax
// multiplies each score as it reads it (the fold lives in that kernel, simd/softmax.cpp: no pass of
// its own over the n×m matrix; BM_scale_folding measures what such a pass would cost). Either way
// step 5 sees the same bits, round(factor·S_ij).
struct ScaledScores {
    Matrix& S;
    float factor;
};

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend);  // C = A·B (steps 2 and 6)
void scores_into(const Matrix& Q, const Matrix& K, Matrix& S, Backend backend);  // S = Q·Kᵀ (step 3)
ScaledScores scale(Matrix& S, float factor, Backend backend);                    // S' = factor·S (step 4)
void causal_mask_in_place(const ScaledScores& S, Backend backend);               // S'_ij ← −∞, j > i
// α = softmax_row(S') in S's own buffer, which it returns under its new name (step 5).
Matrix& softmax_rows_in_place(const ScaledScores& S, Backend backend);
// O = softmax(scale·Q·Kᵀ [masked])·V in one tiled pass (Backend::fused only): out.output is O,
// out.weights is left empty (0×0), since α is never formed.
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal,
                          AttentionResult& out);

// What a stage allocates besides its inputs, buffer by buffer, for a memory budget: its results
// and its kernels' scratch, on this backend (attention/backends.cpp, beside the kernel calls they
// account for). Checked arithmetic: std::length_error when a size cannot even be counted.
struct Buffer {
    std::string name;  // "S, then α (65536×65536) of steps 3–5", …
    std::uint64_t bytes;
};
// Steps 1–2: X (n×d_model) → Q (n×d_k), K (n×d_k), V (n×d_v).
std::vector<Buffer> projection_buffers(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                       Backend backend);
// Steps 3–6: Q (n×d_k), K (m×d_k), V (m×d_v) → O (n×d_v), and α (n×m) unless the backend is fused.
std::vector<Buffer> attention_buffers(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, Backend backend);

}  // namespace attn::backends

namespace attn {

// What the fast backends were built for, as `attn --version` prints it.
struct BuildInfo {
    std::string isa;                     // the kernels' instruction set in use: "sse2", "avx2", "avx512", …
    std::vector<std::string> compiled;   // every instruction set the kernels were compiled for
    std::vector<std::string> supported;  // those this CPU runs (the widest is used unless ATTN_ISA says)
    std::string instruction_set;         // xsimd's name for the one in use, e.g. "fma3+avx2"
    std::size_t batch_width;             // floats per vector
    bool openmp;                         // false: parallel and fused run on one thread
    int threads;                         // threads a team gets (OMP_NUM_THREADS or every core, ≤ OMP_THREAD_LIMIT)
    std::string cpu;                     // the CPU's model name, as the OS reports it
    std::string caches;                  // the cache sizes found, e.g. "L1d 32 KiB 8-way, L2 512 KiB 8-way, …"
    std::string blocks;                  // the block sizes derived from them (simd/blocking.cpp)
};
BuildInfo build_info();

}  // namespace attn
