// attention/guards.cpp — the checks the chain makes before any work: shapes, NaN and ±inf, and
// float32 range decided from the inputs alone.
//
// Why range is decided from the inputs: checking results instead lets a borderline sum overflow in
// one summation order and not in another, so the backends would disagree about the same inputs.
// Bounds that hold for every order:
//   step 2: |Q_ij| = |x_i·(column j of W_Q)| ≤ ‖x_i‖·‖column j‖, and so is every partial sum;
//   step 3: |S_ij| = |q_i·k_j| ≤ ‖q_i‖·‖k_j‖ (Cauchy–Schwarz), likewise;
//   step 6: the fused backend adds up e^(s_ij − m_i)·v_j before dividing by ℓ_i ≤ m, so every
//           entry stays ≤ m·max_j ‖v_j‖.
// Each bound must stay under half the largest float32 (1.7e38), which leaves room for rounding.
// A NaN or ±inf in a matrix makes its largest norm non-finite, and is refused as such.
#include "attention/guards.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "matrix/ops.hpp"

namespace attn::guards {

namespace {

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

}  // namespace

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

void check_attention_inputs(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options,
                            const AttentionResult& out) {
    for (const auto& [name, result] : {std::pair{"output", &out.output}, {"weights", &out.weights}})
        for (const auto& [input, M] : {std::pair{"Q", &Q}, {"K", &K}, {"V", &V}})
            if (result == M)
                throw std::invalid_argument(std::string("scaled_dot_product_attention_into: the result's ") + name +
                                            " is " + input + " itself; the chain would overwrite " + input +
                                            " while it still reads it (pass a separate AttentionResult)");
    check_attention_shapes(Q, K, V, options);
    const std::string who = "scaled_dot_product_attention";
    const double q = largest_row_norm(who, "Q", Q), k = largest_row_norm(who, "K", K),
                 v = largest_row_norm(who, "V", V);
    check_float_range(who, "step 3 (S = Q·Kᵀ)", "max‖q_i‖·max‖k_j‖", q * k);
    check_float_range(who, "step 6 (O = α·V, summed before ÷ℓ by the fused backend)", "m·max‖v_j‖",
                      double(V.rows()) * v);
}

void check_weights(const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V) {
    const auto fail = [&](const std::string& what) {
        throw std::invalid_argument("SingleHeadAttention: " + what + "; got W_Q (" + shape_string(W_Q) + "), W_K (" +
                                    shape_string(W_K) + "), W_V (" + shape_string(W_V) + ")");
    };
    if (W_Q.rows() != W_K.rows() || W_K.rows() != W_V.rows()) fail("all weights need d_model rows");
    if (W_Q.cols() != W_K.cols()) fail("W_Q and W_K need the same width d_k");
    if (W_Q.cols() == 0) fail("d_k = 0: W_Q and W_K have no columns, so there is nothing to compare");
    for (const auto& [name, W] : {std::pair{"W_Q", &W_Q}, {"W_K", &W_K}, {"W_V", &W_V}})
        largest_row_norm("SingleHeadAttention", name, *W);
}

void check_projection_inputs(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V) {
    if (X.cols() != W_Q.rows()) {
        throw std::invalid_argument("SingleHeadAttention::project: X (" + shape_string(X) + ") needs d_model = " +
                                    std::to_string(W_Q.rows()) + " columns to meet W_Q (" + shape_string(W_Q) + ")");
    }
    const double x_norm = largest_row_norm("SingleHeadAttention::project", "X", X);
    for (const auto& [step, W] :
         {std::pair{"step 2 (Q = X·W_Q)", &W_Q}, {"step 2 (K = X·W_K)", &W_K}, {"step 2 (V = X·W_V)", &W_V}})
        check_float_range("SingleHeadAttention::project", step, "max‖x_i‖·max‖column of the weight‖",
                          x_norm * max_col_norm(*W));
}

}  // namespace attn::guards
