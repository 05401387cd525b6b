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

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend);                      // C = A·B
void scaled_scores_into(const Matrix& Q, const Matrix& K, float scale, Matrix& S, Backend backend);  // S = scale·Q·Kᵀ
void causal_mask_in_place(Matrix& S, Backend backend);   // S_ij ← −∞, j > i
void softmax_rows_in_place(Matrix& S, Backend backend);  // row-wise softmax
// O = softmax(scale·Q·Kᵀ [masked])·V in one tiled pass (Backend::fused only): out.output is O,
// out.weights is left empty (0×0), since α is never formed.
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal,
                          AttentionResult& out);

}  // namespace attn::backends

// Defined in attention/backends.cpp, beside the kernel calls they account for.
namespace attn {

// Memory a call allocates besides its inputs, for a caller that must keep within a budget
// (`attn run --max-memory`). Checked arithmetic: std::length_error when it cannot even be counted.
//   attention_bytes: Q (n×d_k), K (m×d_k), V (m×d_v) → the output (n×d_v), the n×m S/α unless the
//                    backend is fused, and the kernels' scratch (per thread for fused).
//   projection_bytes: X (n×d_model) → Q, K, V and the kernels' scratch.
std::uint64_t attention_bytes(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, Backend backend);
std::uint64_t projection_bytes(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v, Backend backend);

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
