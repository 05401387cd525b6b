// attention/backends.hpp — one function per step of the chain, choosing the kernel by Backend.
// The chain in attention.cpp calls only these, so the backend changes which loops run, never
// which formula is computed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/call.hpp"
#include "attention/options.hpp"

namespace attn::backends {

// S' = factor·S as step 4 leaves it for step 5: the naive backend multiplies every S_ij at step 4
// and leaves factor 1; the fast backends leave S as the product computed it, and their softmax
// multiplies each score as it reads it (the fold lives in that kernel, simd/softmax.cpp: no pass of
// its own over the n×m matrix; BM_scale_folding measures what such a pass would cost). Either way
// step 5 sees the same bits, round(factor·S_ij).
// The backward's grad 4 (dS = factor·dS') returns one too: there the fast backends multiply the thin
// results of grad 3 (dQ, n×d_k; dK, m×d_k) instead of the n×m matrix.
struct ScaledScores {
    Matrix& S;
    float factor;
};

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend);  // C = A·B (steps 2 and 6)
void matmul_transposed_into(const Matrix& A, const Matrix& B, Matrix& C,
                            Backend backend);                  // C = A·Bᵀ (step 3: S = Q·Kᵀ)
ScaledScores scale(Matrix& S, float factor, Backend backend);  // S' = factor·S (step 4)
// Step 4.mask: S'_ij + M_ij for options.mask (a boolean one adds 0 where true, −∞ where false), then
// −∞ for j > i when options.causal (the lower triangle of n×m, aligned top-left). The fast backends
// add the mask as they multiply by the factor still pending, so what they return has factor 1.
ScaledScores mask(const ScaledScores& S, const AttentionOptions& options, Backend backend);
// α = softmax_row(S') in S's own buffer, which it returns under its new name (step 5).
Matrix& softmax_rows_in_place(const ScaledScores& S, Backend backend);
// O = softmax(scale·Q·Kᵀ [masked])·V in one tiled pass (Backend::fused only): out.output is O,
// out.weights is left empty (0×0), since α is never formed.
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale,
                          const AttentionOptions& options, AttentionResult& out);

// The backward's steps (attention/backward.cpp), in its order.
// C = Aᵀ·B (grads 6.V, 3.K and 2); with a ScaledScores A, C = factor·Aᵀ·B.
void transposed_matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend);
void transposed_matmul_into(const ScaledScores& A, const Matrix& B, Matrix& C, Backend backend);
void softmax_gradient_in_place(const Matrix& alpha, Matrix& dA, Backend backend);      // dα → dS' (grad 5)
void matmul_into(const ScaledScores& A, const Matrix& B, Matrix& C, Backend backend);  // C = factor·A·B (grad 3.Q)
// dQ, dK, dV in one fused pass from Q, K, V, the forward's O and log-sum-exp, and dO (Backend::fused only).
void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward,
                                   const Matrix& dO, float scale, const AttentionOptions& options,
                                   AttentionGradients& out);

// Which kernel a forward runs on the fused backend: the decode kernel (simd/decode.cpp), not the
// fused one, for every 16-bit cache, and for float keys and values when a query head has few rows,
// L < MR / 2. The fused kernel takes a head's rows in strips of MR = 6, its register tile: a head of 1
// or 2 rows (one token at a time, or two in speculative decoding) leaves more than half of the tile's
// rows on padding, makes one block of queries for the team (one thread works) and, with heads, reads
// its key/value head once per query head. The decode kernel shares the keys out over the threads
// instead, and reads a key/value head once for all its query heads (attention/heads.cpp). bf16
// products have no decode kernel: dtype bf16 stays on the fused one.
bool decodes(Backend backend, Dtype dtype, std::size_t L, KvDtype cache);

// What a stage allocates besides its inputs, buffer by buffer, for a memory budget: its kernels'
// scratch and, for steps 1–2 and grads 2–1, its results, on this backend (attention/backends.cpp,
// beside the kernel calls they account for); the plan (attention/plan.cpp) adds the stacks of
// results of every head, and counts them all.
//
// The decode kernel's scratch for `groups` key/value heads of `rows` query rows each against m keys.
std::vector<Need> decode_scratch_buffers(std::size_t groups, std::size_t rows, std::size_t m, std::size_t d_k,
                                         std::size_t d_v, Storage type);
// Steps 1–2: X (n×d_model) → Q (n×d_k), K (n×d_k), V (n×d_v), and the products' scratch.
std::vector<Need> projection_buffers(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                     Backend backend);
// Steps 3–6 of one head, Q (n×d_k), K (m×d_k), V (m×d_v): the scratch its kernels use (Kᵀ, packed
// panels, the fused kernel's per-thread blocks).
std::vector<Need> attention_scratch_buffers(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                                            Backend backend, Dtype dtype);
// Grads 6–3 of one head: dO (n×d_v) → dQ (n×d_k), dK (m×d_k), dV (m×d_v), the scratch alike.
std::vector<Need> attention_gradient_scratch_buffers(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                                                     Backend backend);
// Grads 2–1: dQ, dK, dV → dW_Q (d_model×d_k), dW_K, dW_V (d_model×d_v), dX (n×d_model).
std::vector<Need> projection_gradient_buffers(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                              Backend backend);

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
    int cores;                           // the CPUs this process may run on: the most threads a call's count asks
    int last_team;                       // threads of the last team a fused forward or a team of heads started
    std::string cpu;                     // the CPU's model name, as the OS reports it
    std::string caches;                  // the cache sizes found, e.g. "L1d 32 KiB 8-way, L2 512 KiB 8-way, …"
    std::string blocks;                  // the block sizes derived from them (simd/blocking.cpp)
};
BuildInfo build_info();

}  // namespace attn
