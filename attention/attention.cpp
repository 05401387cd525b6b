// attention/attention.cpp — the lesson's chain, one statement per step. Each step carries a marker
// (“step 3” in square brackets, and so on) that docs/lesson-03.md links to, with its formula and
// shapes in the comment above it. Sizes: n query tokens, m key/value tokens (m = n in
// self-attention), d_model embedding width, d_k query/key width, d_v value width. Below the steps:
// the functions a caller calls, which check the inputs, charge a memory budget and choose between
// the steps and the fused kernel.
#include "attention/attention.hpp"

#include <cmath>
#include <utility>

#include "attention/backends.hpp"
#include "attention/guards.hpp"
#include "attention/plan.hpp"

namespace attn {

namespace {

// Steps 1–2: X → Q, K, V.
SingleHeadAttention::Projections projection_steps_1_2(const Matrix& X, const Matrix& W_Q, const Matrix& W_K,
                                                      const Matrix& W_V, Backend b) {
    SingleHeadAttention::Projections p;
    // [step 1] X = [x_1; …; x_n]: one d_model-wide embedding per token    (n×d_model)
    // [step 2.Q] Q = X·W_Q     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token is looking for
    backends::matmul_into(X, W_Q, p.Q, b);
    // [step 2.K] K = X·W_K     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token offers to be found by
    backends::matmul_into(X, W_K, p.K, b);
    // [step 2.V] V = X·W_V     (n×d_model)·(d_model×d_v) → (n×d_v);  what each token hands over when chosen
    backends::matmul_into(X, W_V, p.V, b);
    return p;
}

// Steps 3–6: Q, K, V → O, on the materialised backends (naive, simd, parallel).
void attention_steps_3_to_6(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options,
                            AttentionResult& out) {
    const Backend b = options.backend;
    Matrix& S = out.weights;  // one n×m buffer: S, then S', then α (each step overwrites the one before)
    // [step 3] S = Q·Kᵀ              (n×d_k)·(d_k×m) → (n×m);  S_ij = q_i·k_j
    backends::matmul_transposed_into(Q, K, S, b);
    // [step 4] S' = scale·S, scale = 1/√d_k     (n×m);  Var(S'_ij) = 1 when Var(q·k) = d_k
    //   why: for independent entries of mean 0 and variance 1, $\operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k$.
    const backends::ScaledScores S_scaled = backends::scale(S, score_factor(options, Q.cols()), b);
    // [step 4.mask] S'_ij += M_ij, and −∞ for j > i when causal      (n×m);  e^−∞ = 0, so no weight reaches the future
    const backends::ScaledScores S_masked = backends::mask(S_scaled, options, b);
    // [step 5] α = softmax_row(S')      (n×m) → (n×m);  α_ij = e^S'_ij / Σ_t e^S'_it, Σ_j α_ij = 1
    const Matrix& alpha = backends::softmax_rows_in_place(S_masked, b);
    // [step 6] O = α·V                  (n×m)·(m×d_v) → (n×d_v);  o_i = Σ_j α_ij·v_j
    backends::matmul_into(alpha, V, out.output, b);
}

}  // namespace

// The functions a caller calls: checks first, then the budget, then the steps.

// Steps 1–2, with their checks and budget.
SingleHeadAttention::Projections SingleHeadAttention::project(const Matrix& X, const AttentionOptions& options) const {
    guards::check_projection_shapes(X, W_Q_, options.names);
    const ScopedThreads threads(options.threads);
    const AttentionOptions run = Plan(options).projection(X.rows(), X.cols(), W_Q_.cols(), W_V_.cols()).charge();
    guards::check_projection_values(X, W_Q_, W_K_, W_V_, options.names);  // float range, before any work
    return projection_steps_1_2(X, W_Q_, W_K_, W_V_, run.backend);
}

// Steps 3–6 by the backend asked for: the lesson's steps one by one (above), or the fused kernel,
// which computes the same O in one tiled pass without S or α.
void scaled_dot_product_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                       const AttentionOptions& options, AttentionResult& out) {
    guards::check_attention_shapes(Q, K, V, options, out);
    const ScopedThreads threads(options.threads);
    const AttentionOptions run = Plan(options).attention(Q.rows(), K.rows(), Q.cols(), V.cols()).charge();
    guards::check_attention_values(Q, K, V, options);  // float range and the mask's values, before any work
    const float scale = score_factor(options, Q.cols());
    // [steps 3–6 fused] O = softmax(scale·Q·Kᵀ)·V   (n×d_k), (m×d_k), (m×d_v) → (n×d_v);  one tiled pass, no S, no α
    //   dtype bf16: the same pass with Q, K, V and each tile of α rounded to bfloat16, summed in float
    if (options.backend == Backend::fused) return backends::fused_attention_into(Q, K, V, scale, run, out);
    attention_steps_3_to_6(Q, K, V, run, out);
}

// The lesson's SingleHeadAttention.forward: steps 1–2, then 3–6. With a budget, everything both
// stages allocate is charged before step 1 runs: a run too large is refused before any work.
AttentionResult SingleHeadAttention::forward(const Matrix& X, const AttentionOptions& options) const {
    guards::check_projection_shapes(X, W_Q_, options.names);
    const std::size_t n = X.rows(), d_k = W_Q_.cols(), d_v = W_V_.cols();
    const ScopedThreads threads(options.threads);
    const AttentionOptions run = Plan(options).projection(n, X.cols(), d_k, d_v).attention(n, n, d_k, d_v).charge();
    const Projections p = project(X, run);
    return scaled_dot_product_attention(p.Q, p.K, p.V, run);
}

AttentionResult scaled_dot_product_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                             const AttentionOptions& options) {
    AttentionResult result;
    scaled_dot_product_attention_into(Q, K, V, options, result);
    return result;
}

SingleHeadAttention::SingleHeadAttention(Matrix W_Q, Matrix W_K, Matrix W_V, const OperandNames& names)
    : W_Q_(std::move(W_Q)), W_K_(std::move(W_K)), W_V_(std::move(W_V)) {
    guards::check_weights(W_Q_, W_K_, W_V_, names);
}

float score_factor(const AttentionOptions& options, std::size_t d_k) {
    return options.explicit_scale ? *options.explicit_scale : scale_factor(options.scale, d_k);
}

float scale_factor(Scale scale, std::size_t d_k) {
    switch (scale) {
        case Scale::sqrt_dk: return 1.0f / std::sqrt(static_cast<float>(d_k));
        case Scale::dk: return 1.0f / static_cast<float>(d_k);
        case Scale::none: return 1.0f;
    }
    return 1.0f;
}

}  // namespace attn
