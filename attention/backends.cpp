// attention/backends.cpp — each step of the chain, sent to the kernel its backend names (naive loops
// or simd/), what each stage allocates on each backend (beside the calls that allocate it), and what
// the kernels were built for.
#include "attention/backends.hpp"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>

#include "matrix/ops.hpp"
#include "matrix/size.hpp"
#include "simd/simd.hpp"

namespace attn::backends {

namespace {

simd::Threads threads_of(Backend backend) { return backend == Backend::simd ? simd::Threads::one : simd::Threads::all; }

// The fused kernels' threads: the calling thread alone when the call asks for one thread.
simd::Threads fused_threads(const AttentionOptions& options) {
    return options.threads == 1 ? simd::Threads::one : simd::Threads::all;
}

}  // namespace

void matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    if (backend == Backend::naive) return matmul_into(A, B, C);
    simd::matmul_into(A, B, C, threads_of(backend));
}

void matmul_transposed_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    if (backend == Backend::naive) {  // the formula as written: build Bᵀ, then multiply
        check_matmul_transposed_shapes("matmul_transposed", A, B);
        return matmul_into(A, transpose(B), C);
    }
    simd::matmul_transposed_into(A, B, 1.0f, C, threads_of(backend));  // panels of Bᵀ packed from rows of B
}

ScaledScores scale(Matrix& S, float factor, Backend backend) {
    // multiplied later: the forward's in step 5's kernel as it reads S, the backward's on grad 3's thin results
    if (backend != Backend::naive) return {S, factor};
    scale_in_place(S, factor);
    return {S, 1.0f};
}

namespace {

// A single head's mask as the kernels read it: its rows and columns.
std::optional<simd::ScoreTerms> terms_of(const ScoreMask* mask) {
    if (!mask) return std::nullopt;
    return simd::ScoreTerms{mask->data, mask->kind == ScoreMask::Kind::boolean, mask->row_stride, mask->col_stride};
}

// M_ij as a number: a boolean mask's true is 0 (the score stays), its false −∞ (weight 0).
float term(const ScoreMask& M, std::size_t i, std::size_t j) {
    const std::ptrdiff_t at = std::ptrdiff_t(i) * M.row_stride + std::ptrdiff_t(j) * M.col_stride;
    if (M.kind == ScoreMask::Kind::boolean) return static_cast<const unsigned char*>(M.data)[at] ? 0.0f : neg_inf;
    return static_cast<const float*>(M.data)[at];
}

// the naive loops: S'_ij ← S'_ij + M_ij
void add_terms_in_place(Matrix& S, const ScoreMask& M) {
    for (std::size_t i = 0; i < S.rows(); ++i)
        for (std::size_t j = 0; j < S.cols(); ++j) S(i, j) += term(M, i, j);
}

}  // namespace

ScaledScores mask(const ScaledScores& S, const AttentionOptions& options, Backend backend) {
    ScaledScores masked = S;
    if (backend == Backend::naive) {  // S holds S' already (factor 1)
        if (options.mask) add_terms_in_place(S.S, *options.mask);
        if (options.causal) causal_mask_in_place(S.S);  // matrix/ops.cpp
        return masked;
    }
    if (options.mask) {  // −∞ stays −∞ under any factor > 0, so the causal mask may come after
        simd::add_score_terms_in_place(S.S, S.factor, *terms_of(options.mask), threads_of(backend));
        masked.factor = 1.0f;
    }
    if (options.causal) simd::causal_mask_in_place(S.S, threads_of(backend));
    return masked;
}

Matrix& softmax_rows_in_place(const ScaledScores& S, Backend backend) {
    if (backend == Backend::naive) {
        if (S.factor != 1.0f) scale_in_place(S.S, S.factor);
        softmax_rows_in_place(S.S);
    } else {
        simd::softmax_rows_in_place(S.S, S.factor, threads_of(backend));
    }
    return S.S;
}

bool decodes(Backend backend, Dtype dtype, std::size_t L, KvDtype cache) {
    return backend == Backend::fused && dtype == Dtype::f32 && (cache != KvDtype::f32 || L < simd::MR / 2);
}

void fused_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V, float scale,
                          const AttentionOptions& options, AttentionResult& out) {
    const bool keep = options.keep_for_backward;
    out.weights.resize_for_overwrite(0, 0);
    out.log_sum_exp.resize_for_overwrite(keep ? Q.rows() : 0, keep ? simd::log_sum_exp_floats : 0);
    const std::optional<simd::ScoreTerms> terms = terms_of(options.mask);
    const simd::ScoreTerms* given = terms ? &*terms : nullptr;
    if (options.dtype == Dtype::bf16)
        return simd::fused_attention_bf16_into(Q, K, V, scale, options.causal, out.output, fused_threads(options),
                                               simd::blocking(), given);
    simd::fused_attention_into(Q, K, V, scale, options.causal, out.output, keep ? out.log_sum_exp.data() : nullptr,
                               fused_threads(options), simd::blocking(), given);
}

namespace {

// C = factor·Aᵀ·B. The naive backend builds Aᵀ, as the formula reads (its factor is always 1: it
// multiplied dS itself). The fast kernels multiply row-major A·B and A·Bᵀ, so they take Aᵀ·B as
// (Bᵀ·A)ᵀ: in the backward A is the large one (α or dS, n×m; X, n×d_model) and B thin (n×d), so
// both transposes are of thin matrices (d×n and d×m), never of the n×m one.
void factor_transposed_matmul_into(const Matrix& A, float factor, const Matrix& B, Matrix& C, Backend backend) {
    check_same_rows("transposed_matmul", "A", A, "B", B);
    if (backend == Backend::naive) return matmul_into(transpose(A), B, C);
    Matrix product;  // Bᵀ·A (d×m), thin
    simd::matmul_into(transpose(B), A, product, threads_of(backend));
    C.resize_for_overwrite(product.cols(), product.rows());
    for (std::size_t i = 0; i < C.rows(); ++i)  // transposed back, the factor applied on the way
        for (std::size_t j = 0; j < C.cols(); ++j) C(i, j) = factor * product(j, i);
}

}  // namespace

void transposed_matmul_into(const Matrix& A, const Matrix& B, Matrix& C, Backend backend) {
    factor_transposed_matmul_into(A, 1.0f, B, C, backend);
}

void transposed_matmul_into(const ScaledScores& A, const Matrix& B, Matrix& C, Backend backend) {
    factor_transposed_matmul_into(A.S, A.factor, B, C, backend);
}

void softmax_gradient_in_place(const Matrix& alpha, Matrix& dA, Backend backend) {
    if (backend == Backend::naive) return softmax_gradient_rows_in_place(alpha, dA);
    check_same_shape("softmax_gradient", "α", alpha, "dα", dA);
    simd::softmax_gradient_rows_in_place(alpha, dA, threads_of(backend));
}

void matmul_into(const ScaledScores& A, const Matrix& B, Matrix& C, Backend backend) {
    matmul_into(A.S, B, C, backend);
    if (A.factor != 1.0f) scale_in_place(C, A.factor);  // the deferred factor, on the thin result (n×d)
}

void fused_attention_backward_into(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward,
                                   const Matrix& dO, float scale, const AttentionOptions& options,
                                   AttentionGradients& out) {
    out.dS.resize_for_overwrite(0, 0);
    const std::optional<simd::ScoreTerms> terms = terms_of(options.mask);
    simd::fused_attention_backward_into(
        Q, K, V, forward.output, dO, {forward.log_sum_exp.data(), forward.log_sum_exp.size()}, scale, options.causal,
        out.dQ, out.dK, out.dV, fused_threads(options), simd::blocking(), terms ? &*terms : nullptr);
}

namespace {

// The product kernels keep one packing buffer on the calling thread, grown to the largest call asked
// for (simd/gemm.cpp). For products called in this order, the most it holds at once: while it grows,
// the old buffer and the new one together.
std::uint64_t packing_of(std::initializer_list<std::uint64_t> in_order) {
    std::uint64_t held = 0, most = 0;
    for (const std::uint64_t bytes : in_order)
        if (bytes > held) {
            most = std::max(most, checked_sum(held, bytes, "packing"));
            held = bytes;
        }
    return most;
}

}  // namespace

std::vector<Need> projection_buffers(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                     Backend backend) {
    std::vector<Need> buffers = {
        {"Q", {n, d_k}, " of step 2"}, {"K", {n, d_k}, " of step 2"}, {"V", {n, d_v}, " of step 2"}};
    if (backend != Backend::naive)
        buffers.push_back(
            {"the packed panels of W_Q, W_K and W_V (step 2 on the " + to_string(backend) + " backend)",
             {},
             {},
             packing_of({simd::gemm_scratch_bytes(n, d_model, d_k), simd::gemm_scratch_bytes(n, d_model, d_v)})});
    return buffers;
}

std::vector<Need> attention_scratch_buffers(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                                            Backend backend, Dtype dtype) {
    const std::string on = " on the " + to_string(backend) + " backend";
    if (backend == Backend::naive) return {{"Kᵀ", {d_k, m}, " of step 3" + on}};
    if (backend != Backend::fused)
        return {{"the packed panels of Kᵀ and V (steps 3 and 6" + on + ")",
                 {},
                 {},
                 packing_of({simd::gemm_scratch_bytes(n, d_k, m), simd::gemm_scratch_bytes(n, m, d_v)})}};
    const std::size_t team = simd::fused_team_size(n, m, d_k, d_v);
    return {{"the fused kernel's scratch (" + std::to_string(team) + " thread" + (team == 1 ? "" : "s") +
                 ", one score block each" + (dtype == Dtype::bf16 ? ", and the block's queries in bfloat16" : "") + ")",
             {},
             {},
             simd::fused_scratch_bytes(d_k, dtype),
             team},
            {std::string("K and V packed once for the fused kernel") + (dtype == Dtype::bf16 ? ", in bfloat16" : ""),
             {},
             {},
             simd::fused_packed_bytes(m, d_k, d_v, dtype)}};
}

std::vector<Need> decode_scratch_buffers(std::size_t groups, std::size_t rows, std::size_t m, std::size_t d_k,
                                         std::size_t d_v, Storage type) {
    const simd::DecodeScratchBytes scratch = simd::decode_scratch_bytes(groups, rows, m, d_k, d_v, type);
    return {{"the decode kernel's scratch (" + std::to_string(scratch.threads) + " thread" +
                 (scratch.threads == 1 ? "" : "s") + ", one block of scores each)",
             {},
             {},
             scratch.per_thread,
             scratch.threads},
            {"the decode kernel's blocks of keys: their maxima, sums and outputs before the merge",
             {},
             {},
             scratch.shared}};
}

std::vector<Need> attention_gradient_scratch_buffers(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                                                     Backend backend) {
    const std::string on = " on the " + to_string(backend) + " backend";
    if (backend == Backend::fused) {
        const std::size_t team = simd::fused_backward_team_size(n, m, d_k);
        return {{"the fused backward's scratch (" + std::to_string(team) + " thread" + (team == 1 ? "" : "s") +
                     ", two tiles, a panel and a block of Kᵀ each)",
                 {},
                 {},
                 simd::fused_backward_scratch_bytes(m, d_k, d_v),
                 team},
                {"the lanes of dQᵀ", {simd::dq_lanes, d_k, n}, " of the fused backward"},
                {"L and its remainder", {n, 2}, " of the fused backward"},
                {"D", {n, 1}, " of the fused backward"}};
    }
    std::vector<Need> buffers = {{"dα, then dS", {n, m}, " of grads 6–4" + on + "; --backend fused never stores it"}};
    if (backend == Backend::naive) {  // the transposes the formulas name, each built where it is used
        buffers.push_back({"αᵀ", {m, n}, " of grad 6.V" + on});
        buffers.push_back({"Vᵀ", {d_v, m}, " of grad 6.α" + on});
        buffers.push_back({"dSᵀ", {m, n}, " of grad 3.K" + on});
        return buffers;
    }
    // Aᵀ·B as (Bᵀ·A)ᵀ: Bᵀ, and the product before it is transposed back, all thin
    buffers.push_back({"dOᵀ", {d_v, n}, " of grad 6.V" + on});
    buffers.push_back({"dVᵀ", {d_v, m}, " of grad 6.V" + on});
    buffers.push_back({"Qᵀ", {d_k, n}, " of grad 3.K" + on});
    buffers.push_back({"dKᵀ", {d_k, m}, " of grad 3.K" + on});
    buffers.push_back({"the packed panels of α, Vᵀ, K and dS (grads 6 and 3" + on + ")",
                       {},
                       {},
                       packing_of({simd::gemm_scratch_bytes(d_v, n, m), simd::gemm_scratch_bytes(n, d_v, m),
                                   simd::gemm_scratch_bytes(n, m, d_k), simd::gemm_scratch_bytes(d_k, n, m)})});
    return buffers;
}

std::vector<Need> projection_gradient_buffers(std::size_t n, std::size_t d_model, std::size_t d_k, std::size_t d_v,
                                              Backend backend) {
    const std::string on = " on the " + to_string(backend) + " backend";
    std::vector<Need> buffers = {{"dW_Q", {d_model, d_k}, " of grad 2"},  {"dW_K", {d_model, d_k}, " of grad 2"},
                                 {"dW_V", {d_model, d_v}, " of grad 2"},  {"dX", {n, d_model}, " of grad 1"},
                                 {"dK·W_Kᵀ", {n, d_model}, " of grad 1"}, {"dV·W_Vᵀ", {n, d_model}, " of grad 1"}};
    // Each weight's gradient and its path back to X: W_Q and W_K are d_k wide, W_V d_v.
    const std::pair<const char*, std::size_t> weights[] = {{"Q", d_k}, {"K", d_k}, {"V", d_v}};
    for (const auto& [w, d] : weights) {
        const std::string W = std::string("W_") + w, dM = std::string("d") + w;
        if (backend == Backend::naive) {  // the transposes the formulas name
            buffers.push_back({"Xᵀ", {d_model, n}, " of grad 2." + std::string(w) + on});
            buffers.push_back({W + "ᵀ", {d, d_model}, " of grad 1" + on});
        } else {  // Xᵀ·dM as (dMᵀ·X)ᵀ: both thin
            buffers.push_back({dM + "ᵀ", {d, n}, " of grad 2." + std::string(w) + on});
            buffers.push_back({"d" + W + "ᵀ", {d, d_model}, " of grad 2." + std::string(w) + on});
        }
    }
    if (backend != Backend::naive)
        buffers.push_back(
            {"the packed panels of X and the weights (grads 2 and 1" + on + ")",
             {},
             {},
             packing_of({simd::gemm_scratch_bytes(d_k, n, d_model), simd::gemm_scratch_bytes(d_v, n, d_model),
                         simd::gemm_scratch_bytes(n, d_k, d_model), simd::gemm_scratch_bytes(n, d_v, d_model)})});
    return buffers;
}

}  // namespace attn::backends

attn::BuildInfo attn::build_info() {
    return {simd::isa(),
            simd::compiled_isas(),
            simd::supported_isas(),
            simd::instruction_set(),
            simd::batch_width(),
            simd::openmp_built(),
            simd::max_threads(),
            simd::cores(),
            simd::last_team_size(),
            simd::cpu_model(),
            simd::describe(simd::caches()),
            simd::describe(simd::blocking())};
}
