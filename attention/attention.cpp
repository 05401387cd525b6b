// attention/attention.cpp — the lesson's chain, one statement per step. Each step carries a marker
// (“step 3” in square brackets, and so on) that docs/lesson-03.md links to, with its formula and
// shapes in the comment above it. Sizes: n query tokens, m key/value tokens (m = n in
// self-attention), d_model embedding width, d_k query/key width, d_v value width.
#include "attention/attention.hpp"

#include <cmath>
#include <utility>

#include "attention/backends.hpp"
#include "attention/guards.hpp"

namespace attn {

// Steps 1–2: X → Q, K, V.
SingleHeadAttention::Projections SingleHeadAttention::project(const Matrix& X, Backend b) const {
    guards::check_projection_inputs(X, W_Q_, W_K_, W_V_);  // shapes and float range, before any work
    Projections p;
    // [step 1] X = [x_1; …; x_n]: one d_model-wide embedding per token    (n×d_model)
    // [step 2.Q] Q = X·W_Q     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token is looking for
    backends::matmul_into(X, W_Q_, p.Q, b);
    // [step 2.K] K = X·W_K     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token offers to be found by
    backends::matmul_into(X, W_K_, p.K, b);
    // [step 2.V] V = X·W_V     (n×d_model)·(d_model×d_v) → (n×d_v);  what each token hands over when chosen
    backends::matmul_into(X, W_V_, p.V, b);
    return p;
}

// Steps 3–6: Q, K, V → O.
void scaled_dot_product_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                       const AttentionOptions& options, AttentionResult& out) {
    guards::check_attention_inputs(Q, K, V, options, out);  // shapes and float range, before any work
    const Backend b = options.backend;
    const float scale = scale_factor(options.scale, Q.cols());
    // [steps 3–6 fused] O = softmax(scale·Q·Kᵀ)·V   (n×d_k), (m×d_k), (m×d_v) → (n×d_v);  one tiled pass, no S, no α
    if (b == Backend::fused) return backends::fused_attention_into(Q, K, V, scale, options.causal, out);
    Matrix& S = out.weights;  // one n×m buffer holds S, then S', then α: each step overwrites the last

    // [step 3] S = Q·Kᵀ              (n×d_k)·(d_k×m) → (n×m);  S_ij = q_i·k_j
    // [step 4] S' = scale·S, scale = 1/√d_k     (n×m);  Var(S'_ij) = 1 when Var(q·k) = d_k
    //   why: for independent unit-variance entries, $\operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k$.
    // One call does both; the fast kernels scale as each S_ij leaves the registers (BM_scale_folding).
    backends::scaled_scores_into(Q, K, scale, S, b);
    // [step 4.mask] S'_ij = −∞ for j > i      (n×n);  e^−∞ = 0, so no weight reaches the future
    if (options.causal) backends::causal_mask_in_place(S, b);
    // [step 5] α = softmax_row(S')      (n×m) → (n×m);  α_ij = e^S'_ij / Σ_t e^S'_it, Σ_j α_ij = 1
    backends::softmax_rows_in_place(S, b);
    // [step 6] O = α·V                  (n×m)·(m×d_v) → (n×d_v);  o_i = Σ_j α_ij·v_j
    backends::matmul_into(out.weights, V, out.output, b);  // out.weights: the buffer S now holds α
}

// The lesson's SingleHeadAttention.forward: steps 1–2, then 3–6.
AttentionResult SingleHeadAttention::forward(const Matrix& X, const AttentionOptions& options) const {
    const Projections p = project(X, options.backend);
    return scaled_dot_product_attention(p.Q, p.K, p.V, options);
}

AttentionResult scaled_dot_product_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                             const AttentionOptions& options) {
    AttentionResult result;
    scaled_dot_product_attention_into(Q, K, V, options, result);
    return result;
}

SingleHeadAttention::SingleHeadAttention(Matrix W_Q, Matrix W_K, Matrix W_V)
    : W_Q_(std::move(W_Q)), W_K_(std::move(W_K)), W_V_(std::move(W_V)) {
    guards::check_weights(W_Q_, W_K_, W_V_);
}

float scale_factor(Scale scale, std::size_t d_k) {
    switch (scale) {
        case Scale::sqrt_dk: return 1.0f / std::sqrt(static_cast<float>(d_k));
        case Scale::dk: return 1.0f / static_cast<float>(d_k);
        case Scale::none: return 1.0f;
    }
    return 1.0f;
}

std::string to_string(Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk: return "sqrt";
        case Scale::dk: return "dk";
        case Scale::none: return "none";
    }
    return "?";
}

std::string to_string(Backend backend) {
    switch (backend) {
        case Backend::naive: return "naive";
        case Backend::simd: return "simd";
        case Backend::parallel: return "parallel";
        case Backend::fused: return "fused";
    }
    return "?";
}

}  // namespace attn
