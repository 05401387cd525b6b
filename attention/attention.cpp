// attention/attention.cpp — the lesson's chain. Every step is one statement, tagged with a marker
// (“step 3” in square brackets, and so on) that docs/lesson-03.md links to and a test keeps in step
// with the docs, with its formula and shapes in the comment above it.
//
// Sizes: n query tokens, m key/value tokens (m = n in self-attention), d_model embedding width,
// d_k query/key width, d_v value width.
#include "attention/attention.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

#include "attention/backends.hpp"
#include "matrix/ops.hpp"

namespace attn {

float scale_factor(Scale scale, std::size_t d_k) {
    switch (scale) {
        case Scale::sqrt_dk: return 1.0f / std::sqrt(static_cast<float>(d_k));
        case Scale::dk: return 1.0f / static_cast<float>(d_k);
        case Scale::none: return 1.0f;
    }
    return 1.0f;
}

namespace {

// All shape errors are caught here, before any work, and name both shapes involved.
void check_attention_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options) {
    const auto fail = [](const std::string& what) {
        throw std::invalid_argument("scaled_dot_product_attention: " + what);
    };
    if (Q.cols() != K.cols())
        fail("Q (" + shape_string(Q) + ") and K (" + shape_string(K) + ") must have the same width d_k");
    if (K.rows() != V.rows())
        fail("K (" + shape_string(K) + ") and V (" + shape_string(V) + ") must have the same number of rows m");
    if (options.causal && Q.rows() != K.rows())
        fail("a causal mask needs as many queries as keys, got Q (" + shape_string(Q) + ") and K (" + shape_string(K) +
             ")");
    if (Q.cols() == 0)  // every score would be an empty sum, and ÷√d_k a division by zero
        fail("d_k = 0: Q (" + shape_string(Q) + ") and K (" + shape_string(K) + ") have no columns to compare");
}

// Whether a step can leave float32's range is decided from the inputs alone, before any work, so
// that every backend refuses the same inputs (the alternative, checking results, lets a borderline
// sum overflow in one summation order and not in another):
//   step 2: |Q_ij| = |x_i·(column j of W_Q)| ≤ ‖x_i‖·‖column j‖, and so is every partial sum;
//   step 3: |S_ij| = |q_i·k_j| ≤ ‖q_i‖·‖k_j‖ (Cauchy–Schwarz), likewise;
//   step 6: the fused backend adds up e^(s_ij − m_i)·v_j before dividing by ℓ_i ≤ m, so every
//           entry stays ≤ m·max_j ‖v_j‖.
// The bound must stay under half the largest float32 (1.7e38), which leaves room for rounding.
// A NaN or ±inf in a matrix makes its largest norm non-finite, and is refused as such.
void check_float_range(const std::string& who, const std::string& step, const std::string& bound_name, double bound) {
    constexpr double limit = std::numeric_limits<float>::max() / 2.0;
    if (bound <= limit) return;
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, " = %.3g, more than %.3g", bound, limit);
    throw std::overflow_error(who + ": " + step + " could leave the float32 range: " + bound_name + numbers +
                              " (half the largest float32, kept free for rounding)");
}

// max_i ‖row i of A‖, refused when A holds NaN or ±inf.
double largest_row_norm(const std::string& who, const char* name, const Matrix& A) {
    const double norm = max_row_norm(A);
    if (!std::isfinite(norm))
        throw std::invalid_argument(who + ": " + name + " (" + shape_string(A) + ") holds NaN or ±inf");
    return norm;
}

void check_attention_range(const Matrix& Q, const Matrix& K, const Matrix& V) {
    const std::string who = "scaled_dot_product_attention";
    const double q = largest_row_norm(who, "Q", Q), k = largest_row_norm(who, "K", K),
                 v = largest_row_norm(who, "V", V);
    check_float_range(who, "step 3 (S = Q·Kᵀ)", "max‖q_i‖·max‖k_j‖", q * k);
    check_float_range(who, "step 6 (O = α·V, summed before ÷ℓ by the fused backend)", "m·max‖v_j‖",
                      double(V.rows()) * v);
}

}  // namespace

void scaled_dot_product_attention_into(const Matrix& Q, const Matrix& K, const Matrix& V,
                                       const AttentionOptions& options, AttentionResult& out, AttentionTrace* trace) {
    check_attention_shapes(Q, K, V, options);
    check_attention_range(Q, K, V);
    const Backend b = options.backend;
    const float scale = scale_factor(options.scale, Q.cols());
    if (b == Backend::fused) {
        if (trace)
            throw std::invalid_argument(
                "scaled_dot_product_attention: the fused backend never stores S or α, "
                "so there is nothing to trace; use naive, simd or parallel");
        out.weights.resize_for_overwrite(0, 0);  // there is no α to return
        // [steps 3–6 fused] O = softmax(scale·Q·Kᵀ)·V   (n×d_k), (m×d_k), (m×d_v) → (n×d_v);  tile by tile, online softmax
        return backends::fused_attention_into(Q, K, V, scale, options.causal, out.output);
    }
    Matrix& S = out.weights;  // one n×m buffer holds S, then S', then α: each step overwrites the last

    // [step 3] S = Q·Kᵀ              (n×d_k)·(d_k×m) → (n×m);  S_ij = q_i·k_j
    // [step 4] S' = scale·S, scale = 1/√d_k     (n×m);  Var(S'_ij) = 1 when Var(q·k) = d_k
    //   why: for independent unit-variance entries, $\operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k$
    // One call does both: the naive kernel multiplies then scales, the fast ones scale each S_ij
    // as it leaves the registers, which saves a pass over the n×m matrix (12% of this step at
    // n = 2048, 14% at 4096: BM_scale_folding).
    backends::scaled_scores_into(Q, K, scale, S, b);
    if (trace) backends::scaled_scores_into(Q, K, 1.0f, trace->S, b);  // unscaled S, for the walkthrough only
    if (trace) trace->S_scaled = S;

    // [step 4.mask] S'_ij = −∞ for j > i      (n×n);  e^−∞ = 0, so no weight reaches the future
    if (options.causal) backends::causal_mask_in_place(S, b);
    if (trace && options.causal) trace->S_masked = S;

    // [step 5] α = softmax_row(S')      (n×m) → (n×m);  α_ij = e^S'_ij / Σ_t e^S'_it, Σ_j α_ij = 1
    backends::softmax_rows_in_place(S, b);
    const Matrix& weights = S;

    // [step 6] O = α·V                  (n×m)·(m×d_v) → (n×d_v);  o_i = Σ_j α_ij·v_j
    backends::matmul_into(weights, V, out.output, b);

    if (trace) {
        trace->weights = weights;
        trace->output = out.output;
    }
}

AttentionResult scaled_dot_product_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                             const AttentionOptions& options, AttentionTrace* trace) {
    AttentionResult result;
    scaled_dot_product_attention_into(Q, K, V, options, result, trace);
    return result;
}

SingleHeadAttention::SingleHeadAttention(Matrix W_Q, Matrix W_K, Matrix W_V)
    : W_Q_(std::move(W_Q)), W_K_(std::move(W_K)), W_V_(std::move(W_V)) {
    const auto fail = [&](const std::string& what) {
        throw std::invalid_argument("SingleHeadAttention: " + what + "; got W_Q (" + shape_string(W_Q_) + "), W_K (" +
                                    shape_string(W_K_) + "), W_V (" + shape_string(W_V_) + ")");
    };
    if (W_Q_.rows() != W_K_.rows() || W_K_.rows() != W_V_.rows()) fail("all weights need d_model rows");
    if (W_Q_.cols() != W_K_.cols()) fail("W_Q and W_K need the same width d_k");
    if (W_Q_.cols() == 0) fail("d_k = 0: W_Q and W_K have no columns, so there is nothing to compare");
    for (const auto& [name, W] : {std::pair{"W_Q", &W_Q_}, {"W_K", &W_K_}, {"W_V", &W_V_}})
        largest_row_norm("SingleHeadAttention", name, *W);
}

SingleHeadAttention::Projections SingleHeadAttention::project(const Matrix& X, Backend b) const {
    // [step 1] X = [x_1; …; x_n]: one d_model-wide embedding per token    (n×d_model)
    if (X.cols() != W_Q_.rows()) {
        throw std::invalid_argument("SingleHeadAttention::project: X (" + shape_string(X) + ") needs d_model = " +
                                    std::to_string(W_Q_.rows()) + " columns to meet W_Q (" + shape_string(W_Q_) + ")");
    }
    const double x_norm = largest_row_norm("SingleHeadAttention::project", "X", X);
    for (const auto& [step, W] :
         {std::pair{"step 2 (Q = X·W_Q)", &W_Q_}, {"step 2 (K = X·W_K)", &W_K_}, {"step 2 (V = X·W_V)", &W_V_}})
        check_float_range("SingleHeadAttention::project", step, "max‖x_i‖·max‖column of the weight‖",
                          x_norm * max_col_norm(*W));
    Projections p;
    // [step 2.Q] Q = X·W_Q     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token is looking for
    backends::matmul_into(X, W_Q_, p.Q, b);
    // [step 2.K] K = X·W_K     (n×d_model)·(d_model×d_k) → (n×d_k);  what each token offers to be found by
    backends::matmul_into(X, W_K_, p.K, b);
    // [step 2.V] V = X·W_V     (n×d_model)·(d_model×d_v) → (n×d_v);  what each token hands over when chosen
    backends::matmul_into(X, W_V_, p.V, b);
    return p;
}

AttentionResult SingleHeadAttention::forward(const Matrix& X, const AttentionOptions& options,
                                             AttentionTrace* trace) const {
    const Projections p = project(X, options.backend);  // steps 1–2
    if (trace) {
        trace->X = X;
        trace->Q = p.Q;
        trace->K = p.K;
        trace->V = p.V;
    }
    return scaled_dot_product_attention(p.Q, p.K, p.V, options, trace);  // steps 3–6
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
