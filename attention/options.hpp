// attention/options.hpp — the words of the chain's interface: how to scale, which kernels, the
// options of a call and what it returns. Included by attention.hpp and backends.hpp alike.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "matrix/bfloat16.hpp"
#include "matrix/float16.hpp"
#include "matrix/matrix.hpp"
#include "matrix/size.hpp"

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

// How messages name the operands: the lesson's symbols by default. A caller that read them from
// files passes the files' names (`attn run` does), so that an error says "k.npy (4×3) and v.npy
// (9×3) must have the same number of rows" as it is raised, and nobody rewrites it afterwards.
struct OperandNames {
    std::string X = "X", W_Q = "W_Q", W_K = "W_K", W_V = "W_V", Q = "Q", K = "K", V = "V", dO = "dO", mask = "the mask";
};

// A mask over the scores, as PyTorch's attn_mask: boolean (true: the query may attend to the key;
// false: −∞ before the softmax) or additive (added to scale·S; −∞ allowed, +∞ and NaN are not).
// Read through strides in elements, 0 on an axis it is broadcast along, so one (L×S) mask serves
// every head and a (1×S) padding mask every query. The batch and head strides are read only by the
// many-heads entry points (attention/heads.hpp); a single head reads the rows and columns.
struct ScoreMask {
    enum class Kind { boolean, additive };
    Kind kind = Kind::additive;
    const void* data = nullptr;  // bool (one byte each) or float
    std::ptrdiff_t batch_stride = 0, head_stride = 0, row_stride = 0, col_stride = 0;
    // The same mask, its origin moved to head (b, h): what that head's single-head call reads.
    ScoreMask for_head(std::size_t b, std::size_t h) const;
};

struct AttentionOptions {
    // Exercise 4: position i sees only positions j ≤ i. With n queries and m ≠ n keys, PyTorch's
    // is_causal convention: the lower triangle of the n×m matrix, aligned top-left (query i sees keys
    // 0..i), whatever m is.
    bool causal = false;
    // A mask given by the caller (nullptr: none), applied after the scale, with the causal one if both.
    // A row that no key may attend has output 0 (and gradient 0), as PyTorch's scaled_dot_product_attention
    // gives it from version 2.5 on (before, its math path gave NaN).
    const ScoreMask* mask = nullptr;
    Scale scale = Scale::sqrt_dk;
    // PyTorch's scale=: when set, used instead of `scale` (S' = explicit_scale·S); positive and finite.
    std::optional<float> explicit_scale = std::nullopt;
    // Threads the fast backends may use: 0 for OpenMP's count as it stands (OMP_NUM_THREADS, or every
    // core, unless another library in the process changed it); a positive count is what runs, whatever
    // another library set, up to the CPUs this process may run on (a larger count runs that many:
    // more threads than CPUs would only take turns). A negative count is refused.
    int threads = 0;
    Backend backend = Backend::naive;
    // When given, every buffer the call allocates (its results, S/α, the kernels' scratch) is charged
    // to it by name before the first step runs; one that does not fit throws std::length_error
    // naming it, and nothing has been computed.
    MemoryBudget* budget = nullptr;
    OperandNames names = {};
    // The format of the products' operands (matrix/bfloat16.hpp): f32, or bf16 — Q, K, V and the
    // softmax's unnormalised exponentials e^(s − m) rounded to bfloat16, the products summed in
    // float, the maxima and sums in float. bf16 runs on
    // the fused backend only (simd/fused.cpp), and has no backward.
    Dtype dtype = Dtype::f32;
    // Keep what the backward needs (attention/attention.hpp). The materialised backends keep α
    // anyway; the fused one then also keeps each row's log-sum-exp, 2·n floats.
    bool keep_for_backward = false;
    // The largest row norms of the keys and values, known already (a KvCache keeps them as its rows
    // arrive): max‖k_j‖ and max‖v_j‖ of each key/value head, a pair per (batch, key/value head) in
    // order (one pair for one head). Given, the values step checks these and does not measure K and V
    // again (attention/guards.cpp); whoever gives them vouches that they are those of the K and V read.
    // nullptr: measured, every call.
    const double* kv_norms = nullptr;
};

// The threads of every core this process may use, counted as OpenMP counts them before any library
// changes its count: OMP_NUM_THREADS (its first number) when set, else the CPUs this process may run
// on; at most OMP_THREAD_LIMIT and those CPUs. 1 without OpenMP. (Python's threads=None.)
int every_core();

// X's width does not meet the weights' d_model (or the weights disagree on it). Its own type, so that
// a caller who knows a likely cause can say so: `attn run` suggests --torch-weights, since
// nn.Linear stores its weight as (d_k × d_model).
struct DModelMismatch : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

struct AttentionResult {
    Matrix output;       // O (n×d_v): one context-mixed vector per token
    Matrix weights;      // α (n×m): row i is how token i spreads its attention; each row sums to 1.
                         // In code α is always `weights`; `attn run --out` writes it as attn.npy.
                         // Empty (0×0) with Backend::fused, which never forms α.
    Matrix log_sum_exp;  // L_i = log Σ_j e^(S'_ij) (n×2: the float, and what it leaves out): Backend::fused
                         // with keep_for_backward, else 0×0. α_ij = e^((S'_ij − L_i) − remainder_i): all
                         // the fused backward needs to recompute α.
};

// The gradients of a loss L with respect to the chain's inputs: ∂L/∂Q, ∂L/∂K, ∂L/∂V, each the
// shape of the matrix it belongs to (attention/backward.cpp computes them from ∂L/∂O).
struct AttentionGradients {
    Matrix dQ, dK, dV;
    Matrix dS;  // ∂L/∂S (n×m) on the materialised backends: the buffer of grads 6–4 (dα, then dS'), kept
                // as the forward keeps α, so a loop calling the _into form allocates it once. Empty
                // (0×0) with Backend::fused, which never forms it.
};

// Each option's names (attention/options.cpp), as every front end spells them: to_string gives an
// option's name, X_from_string reads one back. An unknown name is refused with std::invalid_argument
// listing the known ones, under the name the caller gives the option (`option`: "--backend" on the
// command line, "backend" in Python): "--backend must be one of naive, simd, parallel and fused, got 'gpu'".
inline constexpr Scale all_scales[] = {Scale::sqrt_dk, Scale::dk, Scale::none};
inline constexpr Backend all_backends[] = {Backend::naive, Backend::simd, Backend::parallel, Backend::fused};
inline constexpr Dtype all_dtypes[] = {Dtype::f32, Dtype::bf16};
std::string to_string(Scale scale);      // "sqrt", "dk", "none"
std::string to_string(Backend backend);  // "naive", "simd", "parallel", "fused"
std::string to_string(Dtype dtype);      // "f32", "bf16"
Scale scale_from_string(const std::string& name, const std::string& option = "scale");
Backend backend_from_string(const std::string& name, const std::string& option = "backend");
Dtype dtype_from_string(const std::string& name, const std::string& option = "dtype");

// The type a key/value cache is stored in (attention/heads.hpp's CacheView): float32, bfloat16
// (matrix/bfloat16.hpp) or IEEE float16 (matrix/float16.hpp). Q, the softmax's statistics and O
// stay float32; each cached element is read as the value its bits hold.
using KvDtype = Storage;
inline constexpr KvDtype all_kv_dtypes[] = {KvDtype::f32, KvDtype::bf16, KvDtype::f16};
std::string to_string(KvDtype type);  // "f32", "bf16", "f16"
KvDtype kv_dtype_from_string(const std::string& name, const std::string& option = "kv dtype");

}  // namespace attn
