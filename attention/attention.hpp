// attention/attention.hpp — single-head scaled dot-product attention, as in the lesson:
//
//   X (n×d_model) → Q = X·W_Q, K = X·W_K, V = X·W_V → S = Q·Kᵀ → S/√d_k → α = softmax_row(·) → O = α·V
//
// in one line:  $O = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$
//
// Weight convention: the lesson's formulas, Q = X·W_Q with W_Q of shape (d_model × d_k).
// PyTorch's nn.Linear stores its weight the other way round, (d_k × d_model), and computes X·Wᵀ;
// so a weight taken from PyTorch must be transposed before it goes in here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "matrix/matrix.hpp"

namespace attn {

// What the scores are divided by before the softmax (the lesson's exercise 1 compares them).
enum class Scale {
    sqrt_dk,  // ÷√d_k — the lesson's choice: keeps Var(S_ij) at 1 whatever d_k is
    dk,       // ÷d_k  — shrinks scores too much: α drifts toward uniform as d_k grows
    none,     // ÷1    — Var(S_ij) = d_k: α drifts toward one-hot, gradients vanish
};

// Which kernels compute each step. The formulas are the same; only the loops differ.
enum class Backend {
    naive,     // matrix/ops.cpp: the textbook loops
    simd,      // simd/: xsimd-vectorised, cache-blocked kernels on one thread
    parallel,  // the same simd kernels with output rows split over OpenMP threads
    fused,     // steps 3–6 in one tiled pass with an online softmax: S and α are never stored
};

struct AttentionOptions {
    bool causal = false;  // exercise 4: position i sees only positions j ≤ i
    Scale scale = Scale::sqrt_dk;
    Backend backend = Backend::naive;
};

struct AttentionResult {
    Matrix output;   // O (n×d_v): one context-mixed vector per token
    Matrix weights;  // α (n×m): row i is how token i spreads its attention; each row sums to 1.
                     // In code α is always `weights`; `attn run --out` writes it as attn.npy.
                     // Empty (0×0) with Backend::fused, which never forms α.
};

// Every intermediate of one forward pass, for the walkthrough and the tests (trace_forward, below).
struct AttentionTrace {
    Matrix X, Q, K, V;
    Matrix S;         // Q·Kᵀ
    Matrix S_scaled;  // scale·S, scale = scale_factor(...)
    Matrix S_masked;  // S_scaled with −∞ above the diagonal (only when causal)
    Matrix weights;   // α = softmax_row of the above
    Matrix output;    // α·V
};

// The factor with S' = scale·S: 1/√d_k, 1/d_k or 1.
float scale_factor(Scale scale, std::size_t d_k);

// The core: softmax(Q·Kᵀ·scale [+ mask])·V for Q (n×d_k), K (m×d_k), V (m×d_v).
AttentionResult scaled_dot_product_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                             const AttentionOptions& options = {});
// Same, writing into `out`, whose matrices are reused when they already have room: a loop calling
// this allocates (and first-touches) the n×m score buffer only once.
void scaled_dot_product_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                       const AttentionOptions& options, AttentionResult& out);

// Memory a call allocates besides its inputs, for a caller that must keep within a budget
// (`attn run --max-memory`). Checked arithmetic: std::length_error when it cannot even be counted.
//   attention_bytes: Q (n×d_k), K (m×d_k), V (m×d_v) → the output (n×d_v), the n×m S/α unless the
//                    backend is fused, and the kernels' scratch (per thread for fused).
//   projection_bytes: X (n×d_model) → Q, K, V and the kernels' scratch.
std::uint64_t attention_bytes(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, Backend backend);
std::uint64_t projection_bytes(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v, Backend backend);

// The lesson's SingleHeadAttention: three projection matrices and a forward pass.
class SingleHeadAttention {
public:
    // W_Q (d_model×d_k), W_K (d_model×d_k), W_V (d_model×d_v).
    SingleHeadAttention(Matrix W_Q, Matrix W_K, Matrix W_V);

    AttentionResult forward(const Matrix& X, const AttentionOptions& options = {}) const;

    // Steps 1–2 alone: Q, K, V for X (forward = project, then scaled_dot_product_attention).
    struct Projections {
        Matrix Q, K, V;
    };
    Projections project(const Matrix& X, Backend backend = Backend::naive) const;

    const Matrix& W_Q() const { return W_Q_; }
    const Matrix& W_K() const { return W_K_; }
    const Matrix& W_V() const { return W_V_; }

private:
    Matrix W_Q_, W_K_, W_V_;
};

// layer.forward(X, options) with every intermediate kept (attention/trace.cpp). Backend::fused keeps
// no n×n intermediates, so asking it for a trace is an error (std::invalid_argument).
AttentionTrace trace_forward(const SingleHeadAttention& layer, const Matrix& X, const AttentionOptions& options = {});

// What the fast backends were built for, as `attn --version` prints it.
struct BuildInfo {
    std::string isa;                     // the kernels' instruction set in use: "sse2", "avx2", "avx512", …
    std::vector<std::string> compiled;   // every instruction set the kernels were compiled for
    std::vector<std::string> supported;  // those this CPU runs (the widest is used unless ATTN_ISA says)
    std::string instruction_set;         // xsimd's name for the one in use, e.g. "fma3+avx2"
    std::size_t batch_width;             // floats per vector
    bool openmp;                         // false: parallel and fused run on one thread
    int threads;                         // threads a team gets (OMP_NUM_THREADS, default: every core)
    std::string cpu;                     // the CPU's model name, as the OS reports it
    std::string caches;                  // the cache sizes found, e.g. "L1d 32 KiB 8-way, L2 512 KiB 8-way, …"
    std::string blocks;                  // the block sizes derived from them (simd/blocking.cpp)
};
BuildInfo build_info();

std::string to_string(Scale scale);      // "sqrt", "dk", "none"
std::string to_string(Backend backend);  // "naive", "simd", "parallel", "fused"

}  // namespace attn
