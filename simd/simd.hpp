// simd/simd.hpp — the fast kernels: the same formulas as matrix/ops.hpp, computed with xsimd batches,
// cache blocking and, on request, OpenMP threads. Knows matrices, not attention and not the CLI.
//
// Every kernel is deterministic: each output element is computed by exactly one thread, in an order
// that does not depend on how rows are split, so results are bit-for-bit identical for any number
// of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "matrix/bfloat16.hpp"
#include "matrix/float16.hpp"
#include "matrix/matrix.hpp"
#include "simd/blocking.hpp"

namespace attn::simd {

enum class Threads {
    one,  // the calling thread only
    all,  // an OpenMP team (OMP_NUM_THREADS, default: every core), output rows split between them;
          // work too small to be worth a team runs on the calling thread (simd/threads.hpp)
};

// Terms added to the scores before the softmax (a mask), read through strides in elements (0 along an
// axis the terms are broadcast over): term(i, j) = data[i·row_stride + j·col_stride]. Floats are
// added as they are (−∞ allowed: weight 0); bytes are a keep flag, nonzero adding 0 and zero adding
// −∞. A row whose every score ends at −∞ has weight 0 everywhere: its output row is 0.
struct ScoreTerms {
    const void* data = nullptr;
    bool boolean = false;  // bytes (true: keep) rather than floats
    std::ptrdiff_t row_stride = 0, col_stride = 0;
};

// The products and the fused kernel take their block sizes from `blocking`: by default the running
// CPU's (simd/blocking.hpp); the tuning sweep of bench/ passes others. Results do not depend on them
// beyond the order of float sums over the depth (kc), and not at all on the row blocks.

// C = A·B                 (m×k)·(k×n) → (m×n)
void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Threads threads,
                 const Blocking& blocking = simd::blocking());

// Step 2 of simd/gemm.cpp's story alone (the register tile straight on B, no packing or blocks), so
// bench/ can measure what packing and blocking add. B's width must be a multiple of tile_columns().
void matmul_register_tile_into(const Matrix& A, const Matrix& B, Matrix& C);

// C = scale·(A·Bᵀ)        (m×k)·(n×k)ᵀ → (m×n);  C_ij = scale·(a_i·b_j), rows of A against rows of B.
// With A = Q, B = K and scale = 1/√d_k this is the lesson's steps 3 and 4 in one pass.
void matmul_transposed_into(const Matrix& A, const Matrix& B, float scale, Matrix& C, Threads threads,
                            const Blocking& blocking = simd::blocking());

// The same with A and B rounded to bfloat16 and multiplied in pairs, as the bf16 mode of the fused
// kernel computes its scores (below); one thread.
void matmul_transposed_bf16_into(const Matrix& A, const Matrix& B, float scale, Matrix& C);

// Floats a row's log-sum-exp takes: L_i = log Σ_j e^(s_ij) as a float, and what that float leaves out,
// which is log Σ_j e^(s_ij − m_i) itself where the row's largest score m_i is too large for L_i to
// hold it (a row of float32's lowest value: simd/score_terms.hpp's log_sum_exp).
inline constexpr std::size_t log_sum_exp_floats = 2;

// O = softmax(scale·Q·Kᵀ [+ causal mask])·V without storing the n×m scores: K and V stream past
// blocks of query rows in tiles, with an online softmax (simd/fused.cpp). α is never formed. With
// log_sum_exp (n × log_sum_exp_floats, or nullptr), each row's L_i and its remainder are written there
// too: all the backward needs to recompute α.
// With terms (nullptr: none), s_ij = scale·(q_i·k_j) + term(i, j), the term added after the product is
// rounded, as the materialised path adds it to S' (add_score_terms_in_place).
void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                          float* log_sum_exp, Threads threads, const Blocking& blocking = simd::blocking(),
                          const ScoreTerms* terms = nullptr);

// The same O with the products on bfloat16 (Dtype::bf16): Q, K, V and each tile of weights rounded
// to bfloat16 (nearest, ties to even), the products summed in float, the softmax in float
// (simd/bf16.hpp, simd/fused.cpp). With vdpbf16ps where the CPU has it (instruction set
// "avx512bf16"), emulated with FMAs elsewhere: the same bits at the same width (AVX-512), within the
// bounds docs/using.md states at others (tests/test_bf16.cpp). No log-sum-exp: it has no backward.
void fused_attention_bf16_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale, bool causal, Matrix& O,
                               Threads threads, const Blocking& blocking = simd::blocking(),
                               const ScoreTerms* terms = nullptr);

// The gradients of that O for dO = ∂L/∂O (n×d_v): dQ, dK and dV, from Q, K, V, O and the forward's
// log_sum_exp, without the n×m matrices (simd/fused_backward.cpp).
// With the forward's terms: a score they set to −∞ has weight 0 and gradient 0.
void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& O, const Matrix& dO,
                                   std::span<const float> log_sum_exp, float scale, bool causal, Matrix& dQ, Matrix& dK,
                                   Matrix& dV, Threads threads, const Blocking& blocking = simd::blocking(),
                                   const ScoreTerms* terms = nullptr);

// Decoding (simd/decode.cpp): a few query rows per key/value head against a long cache of keys and
// values stored as floats or as 16-bit patterns (matrix/float16.hpp's Storage). The call holds
// `groups` key/value heads; group g has `rows` query rows (the G·L rows of its G query heads, one
// after another, row r at position r mod `positions` of its head), `keys` cached keys and values.
struct DecodeProblem {
    const float* Q = nullptr;  // groups × rows × d_k floats
    const void* K = nullptr;   // groups × keys × d_k, stored as `type`
    const void* V = nullptr;   // groups × keys × d_v, stored as `type`
    Storage type = Storage::f32;
    std::size_t groups = 0, rows = 0, positions = 1, keys = 0, d_k = 0, d_v = 0;
    float scale = 1.0f;
    bool causal = false;  // row r sees keys 0 .. r mod positions (the lower triangle, aligned top-left)
    // nullptr, or one ScoreTerms per query row (groups·rows of them, row r of group g at g·rows + r):
    // its data points at the row's term for key 0, and col_stride steps to the next key.
    const ScoreTerms* row_terms = nullptr;
    float* O = nullptr;            // groups × rows × d_v
    float* log_sum_exp = nullptr;  // groups × rows × log_sum_exp_floats (L = log Σ_j e^(s_j)), or nullptr
    // groups × 2, or nullptr: the largest row norms of each group's keys and values, max_j ‖k_j‖ and
    // max_j ‖v_j‖, measured as the rows are read (NaN when a row holds NaN, +∞ for ±∞), so that a
    // caller can check the cache without reading it once more.
    double* largest_norms = nullptr;
};
// O = softmax(scale·Q·Kᵀ [+ terms, causal])·V for every group: the keys cut into blocks of
// blocking.decode_keys, each block's running maximum, sum and unnormalised output computed on one
// thread (units = group × block, shared over the team), then merged per group in block order. Each
// cached row is read once for all the group's query rows; the bits do not depend on the thread count.
// A row that no key may attend has output 0 and L = −∞.
void decode_attention_into(const DecodeProblem& problem, Threads threads, const Blocking& blocking = simd::blocking());
// The scratch it allocates: `per_thread` bytes on each of `threads` threads, and `shared` bytes on the
// calling thread (the blocks' partial results).
struct DecodeScratchBytes {
    std::uint64_t per_thread, shared;
    std::size_t threads;
};
DecodeScratchBytes decode_scratch_bytes(std::size_t groups, std::size_t rows, std::size_t keys, std::size_t d_k,
                                        std::size_t d_v, Storage type);

// Scratch memory the kernels allocate, for a caller that must budget it before the call:
// matmul/matmul_transposed keep the packed panels of B (depth k, width n) on the calling thread;
// fused_attention keeps one scratch area per OpenMP thread, whatever n, m and d_v are.
std::uint64_t gemm_scratch_bytes(std::size_t m, std::size_t k, std::size_t n);
std::uint64_t fused_scratch_bytes(std::size_t d_k, Dtype dtype = Dtype::f32);
// The most threads fused_attention_into starts for n queries against m keys (each with its
// scratch): one when the work is too small for a team, never more than one per MR query rows.
std::size_t fused_team_size(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v);
// The fused backward's: per thread of its team (fused_backward_team_size), two tiles, a panel and a
// block of Kᵀ for m keys; besides, on the calling thread, dq_lanes copies of dQᵀ (simd/blocking.hpp)
// and two floats per query row.
std::uint64_t fused_backward_scratch_bytes(std::size_t m, std::size_t d_k, std::size_t d_v);
std::size_t fused_backward_team_size(std::size_t n, std::size_t m, std::size_t d_k);

// S_ij ← −∞ for j > i (any n×m S: the lower triangle aligned top-left).
void causal_mask_in_place(Matrix& S, Threads threads);
// S_ij ← scale·S_ij + term(i, j): step 4 and a caller's mask in one pass, the product rounded first.
void add_score_terms_in_place(Matrix& S, float scale, const ScoreTerms& terms, Threads threads);

// body(0), …, body(count − 1), shared out over an OpenMP team when `threads` is all and count ≥ 2
// (dynamic schedule, each index on one thread); the body's own kernels should then run with
// Threads::one. Exceptions thrown by a body are rethrown on the calling thread (the first one).
void for_each_in_team(std::size_t count, Threads threads, const std::function<void(std::size_t)>& body);
// The threads of the last team for_each_in_team or the fused forward (f32 or bf16) started, in any
// thread of the process (1 when it ran on the calling thread, or without OpenMP): what a caller can
// report as the threads it used.
int last_team_size();

// Row-wise softmax of scale·S in place (scale > 0), with the same −∞ conventions as the naive op (an
// all −∞ row → zeros): α_ij = e^(s_ij − m_i) / Σ_t e^(s_it − m_i) where s_ij = scale·S_ij, each
// product rounded to float as a pass of its own would round it, so the result is the same bits as
// scaling S first. The multiply rides in the row's first sweep (simd/softmax.cpp).
void softmax_rows_in_place(Matrix& S, float scale, Threads threads);

// The softmax's backward in place, row by row: G_ij ← P_ij·(G_ij − Σ_t G_it·P_it), P = softmax_rows(·)
// and G = ∂L/∂P (the same formula as the naive op in matrix/ops.cpp, which derives it).
void softmax_gradient_rows_in_place(const Matrix& P, Matrix& G, Threads threads);

// Building blocks, exposed for tests and benchmarks. All take any length (vector body + tail).
float dot(const float* a, const float* b, std::size_t n);          // Σ a_k·b_k
void axpy(float factor, const float* x, float* y, std::size_t n);  // y ← y + factor·x
float exp_and_sum(std::span<float> x, float shift);                // x_k ← e^(x_k − shift); returns Σ x_k
float exp2_and_sum(std::span<float> x, float shift);               // x_k ← 2^(x_k − shift) (the fused kernels')
float exp2_bf16_and_sum(std::span<float> x, float shift);          // the same to bfloat16's grade (the bf16 mode's)
float row_max(std::span<const float> x);                           // max_k x_k (−∞ for an empty row)
float fma_chains(std::size_t steps);   // 12·steps FMAs of batch_width() lanes on registers only (bench/: the peak)
float pair_chains(std::size_t steps);  // the same with vdpbf16ps (two products a lane); needs bf16_instructions()
// max_i Σ_k x_ik² over `count` rows of n floats (row-major), each summed in float by dot (0 for none);
// NaN as soon as a row gives NaN. The guards' check of every call (attention/guards.cpp).
float largest_row_square(const float* rows, std::size_t count, std::size_t n);
// The largest relative error of exp2_bf16_and_sum's 2^t where it is a normal float (simd/exp.hpp derives
// it; tests/test_simd.cpp tries every float, and tests/test_bf16.cpp's bound counts it).
inline constexpr double bf16_exp2_error = 8.7e-5;

// Instruction sets (simd/dispatch.cpp). Every kernel above is compiled once per instruction set of
// the target: "sse2", "avx2" (with FMA and F16C), "avx512" and "avx512bf16" (AVX-512 with vdpbf16ps) on x86-64, "neon" on AArch64, or one "native"
// set in a build made with -Dnative=true. The widest one this CPU runs is used, unless the
// environment variable ATTN_ISA names another or set_isa() chooses one.
std::vector<std::string> compiled_isas();   // from the baseline to the widest
std::vector<std::string> supported_isas();  // those of compiled_isas() this CPU can run
std::string isa();                          // the one in use; throws for an ATTN_ISA that cannot be used
void set_isa(const std::string& name);      // throws std::invalid_argument if not compiled or not run by this CPU
std::string instruction_set();              // xsimd's name for the one in use: "sse2", "fma3+avx2", "avx512bw", …
std::size_t batch_width();                  // its floats per batch: 4, 8 or 16
std::size_t tile_columns();                 // its register tile's columns, NR = 2·batch_width()
bool bf16_instructions();                   // whether it multiplies bfloat16 pairs with vdpbf16ps (else emulated)

// What this build runs on (simd/build_info.cpp): the CPU's model name as the OS reports it ("AMD EPYC
// 7B13", …, or "unknown"); whether OpenMP was compiled in, and the threads a team gets (1 without).
std::string cpu_model();
bool openmp_built();
int max_threads();
void set_max_threads(int threads);  // omp_set_num_threads; does nothing without OpenMP

}  // namespace attn::simd
