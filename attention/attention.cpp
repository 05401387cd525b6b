// attention/attention.cpp — the lesson's chain, one statement per step. Each step carries a marker
// (“step 3” in square brackets, and so on) that docs/lesson-03.md links to, with its formula and
// shapes in the comment above it. Sizes: n query tokens, m key/value tokens (m = n in
// self-attention), d_model embedding width, d_k query/key width, d_v value width. Below the steps:
// how a score is scaled. The functions a caller calls (attention/calls.cpp) describe their call for
// the one path (attention/run.cpp), which checks, charges and then runs these steps on every head.
#include "attention/attention.hpp"

#include <cmath>

#include "attention/backends.hpp"
#include "attention/chain.hpp"

namespace attn {

namespace chain {

// Steps 1–2: X → Q, K, V.
void project(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V, Backend b,
             SingleHeadAttention::Projections& p) {
    // [step 1] X = [x_1; …; x_n]: one d_model-wide embedding per token    (n×d_model)
    // [step 2.Q] Q = X·W_Q     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token is looking for
    backends::matmul_into(X, W_Q, p.Q, b);
    // [step 2.K] K = X·W_K     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token offers to be found by
    backends::matmul_into(X, W_K, p.K, b);
    // [step 2.V] V = X·W_V     (n×d_model)·(d_model×d_v) → (n×d_v);  what each token hands over when chosen
    backends::matmul_into(X, W_V, p.V, b);
}

namespace {

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

// Steps 3–6 by the backend asked for: the lesson's steps one by one (above), or the fused kernel,
// which computes the same O in one tiled pass without S or α.
void forward(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options, AttentionResult& out) {
    const float scale = score_factor(options, Q.cols());
    // [steps 3–6 fused] O = softmax(scale·Q·Kᵀ)·V   (n×d_k), (m×d_k), (m×d_v) → (n×d_v);  one tiled pass, no S, no α
    //   dtype bf16: the same pass with Q, K, V and each tile of α rounded to bfloat16, summed in float
    if (options.backend == Backend::fused) return backends::fused_attention_into(Q, K, V, scale, options, out);
    attention_steps_3_to_6(Q, K, V, options, out);
}

}  // namespace chain

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
