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

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "matrix/bfloat16.hpp"
#include "matrix/norms.hpp"
#include "matrix/ops.hpp"
#include "simd/simd.hpp"
#include "simd/threads.hpp"

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

// `norm` (a largest row norm of A), refused when A holds NaN or ±inf.
double finite_row_norm(const std::string& who, const std::string& name, const Matrix& A, double norm) {
    if (!std::isfinite(norm))
        throw std::invalid_argument(who + ": " + name + " (" + shape_string(A) + ") holds NaN or ±inf");
    return norm;
}

// max_i ‖row i of A‖, refused when A holds NaN or ±inf.
double largest_row_norm(const std::string& who, const std::string& name, const Matrix& A) {
    return finite_row_norm(who, name, A, max_row_norm(A));
}

// max_row_norm of each matrix. The fast backends sum with the widest vectors (simd::largest_row_square);
// the naive one, which a build without simd/ still has, with max_row_norm alone. On the multi-threaded
// backends (parallel, fused), for work that starts a team (`flops`, simd::use_team), the rows are cut
// into pieces shared over the kernels' team: every call's check runs before its kernels, and one core
// checking while the others wait is a visible share of a small call.
std::vector<double> largest_row_norms(const std::vector<const Matrix*>& matrices, Backend backend, double flops) {
    constexpr std::size_t piece_floats = std::size_t(1) << 14;  // 64 KiB of rows a piece: a few µs of work
    struct Piece {
        std::size_t matrix, first, rows;
    };
    std::vector<Piece> pieces;
    for (std::size_t i = 0; i < matrices.size(); ++i) {
        const Matrix& A = *matrices[i];
        if (A.cols() == 0) continue;  // no row has a length: its norm stays 0, however many rows it claims
        const std::size_t rows = std::max<std::size_t>(1, piece_floats / A.cols());
        for (std::size_t first = 0; first < A.rows(); first += rows)
            pieces.push_back({i, first, std::min(rows, A.rows() - first)});
    }
    std::vector<double> piece_norms(pieces.size());
    const bool team = (backend == Backend::parallel || backend == Backend::fused) && simd::max_threads() > 1 &&
                      simd::use_team(simd::Threads::all, flops, pieces.size());
    const auto measure = [&](std::size_t k) {
        const Matrix& A = *matrices[pieces[k].matrix];
        const float* first = A.data() + pieces[k].first * A.cols();
        // The vector sum in float is kept on the terms of max_row_norm (matrix/norms.cpp), which hold
        // for any order of the sum: no square overflowed, and the largest is far from the subnormals.
        // Any other piece (huge or tiny entries, NaN, ±inf) is measured again by max_row_norm, and so
        // is every piece on the naive backend (its square 0 is outside that range).
        const float square =
            backend == Backend::naive ? 0.0f : simd::largest_row_square(first, pieces[k].rows, A.cols());
        piece_norms[k] = square >= 0x1p-60f && square <= std::numeric_limits<float>::max()
                             ? std::sqrt(double(square))
                             : max_row_norm(Matrix::borrow(first, pieces[k].rows, A.cols()));
    };
    if (team) simd::for_each_in_team(pieces.size(), simd::Threads::all, measure);
    else  // on the calling thread, starting no team: the team a caller reports stays the kernels'
        for (std::size_t k = 0; k < pieces.size(); ++k) measure(k);
    std::vector<double> norms(matrices.size(), 0.0);
    for (std::size_t k = 0; k < pieces.size(); ++k)
        norms[pieces[k].matrix] = larger_norm(norms[pieces[k].matrix], piece_norms[k]);
    return norms;
}

// For dtype bf16, which rounds every entry of A to bfloat16 first: none may round past the largest
// bfloat16 to ±∞. Step 3's check allows such an entry in Q when every key is small, or in K when every
// query is. A row norm up to the largest bfloat16 bounds every entry of its matrix, so only a larger
// one has the entries read.
void check_bfloat16_range(const std::string& who, const std::string& name, const Matrix& A, double norm) {
    if (norm <= double(largest_bfloat16)) return;
    for (std::size_t i = 0; i < A.rows(); ++i)
        for (std::size_t j = 0; j < A.cols(); ++j) {
            if (!std::isinf(round_to_bfloat16(A(i, j)))) continue;
            char numbers[256];
            std::snprintf(numbers, sizeof numbers,
                          " holds %.6g at row %zu, column %zu, which rounds to ±∞ in bfloat16 (the largest is %.6g)",
                          double(A(i, j)), i, j, double(largest_bfloat16));
            throw std::overflow_error(who + ": dtype bf16: " + name + " (" + shape_string(A) + ")" + numbers);
        }
}

}  // namespace

void check_attention_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options,
                            const AttentionResult& out) {
    const OperandNames& name = options.names;
    for (const auto& [result_name, result] : {std::pair{"output", &out.output}, {"weights", &out.weights}})
        for (const auto& [input, M] : {std::pair{&name.Q, &Q}, {&name.K, &K}, {&name.V, &V}})
            if (result == M)
                throw std::invalid_argument(std::string("scaled_dot_product_attention_into: the result's ") +
                                            result_name + " is " + *input + " itself; the chain would overwrite " +
                                            *input + " while it still reads it (pass a separate AttentionResult)");
    const auto fail = [](const std::string& what) {
        throw std::invalid_argument("scaled_dot_product_attention: " + what);
    };
    const auto operand = [](const std::string& label, const Matrix& M) { return label + " (" + shape_string(M) + ")"; };
    if (Q.cols() != K.cols()) fail(operand(name.Q, Q) + " and " + operand(name.K, K) + " must have the same width d_k");
    if (K.rows() != V.rows())
        fail(operand(name.K, K) + " and " + operand(name.V, V) + " must have the same number of rows m");
    if (options.mask && !options.mask->data) fail("options.mask has no data (pass nullptr for no mask)");
    if (options.explicit_scale && !(std::isfinite(*options.explicit_scale) && *options.explicit_scale > 0.0f))
        fail("explicit_scale = " + std::to_string(*options.explicit_scale) + ": the scale must be positive and finite");
    if (options.dtype == Dtype::bf16 && options.backend != Backend::fused)
        fail("dtype bf16 runs on the fused backend only, not on the " + to_string(options.backend) + " backend");
    if (options.dtype == Dtype::bf16 && options.keep_for_backward)
        fail("dtype bf16 keeps nothing for a backward: it has none (use dtype f32)");
    if (Q.cols() == 0)  // every score would be an empty sum, and ÷√d_k a division by zero
        fail("d_k = 0: " + operand(name.Q, Q) + " and " + operand(name.K, K) + " have no columns to compare");
}

void check_row_norms(const RowNorms& largest, std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                     const OperandNames& name) {
    const std::string who = "scaled_dot_product_attention";
    for (const auto& [label, norm, rows, cols] :
         {std::tuple{&name.Q, largest.Q, n, d_k}, {&name.K, largest.K, m, d_k}, {&name.V, largest.V, m, d_v}})
        if (!std::isfinite(norm))
            throw std::invalid_argument(who + ": " + *label + " (" + shape_string(rows, cols) + ") holds NaN or ±inf");
    check_float_range(who, "step 3 (S = Q·Kᵀ)", "max‖q_i‖·max‖k_j‖", largest.Q * largest.K);
    check_float_range(who, "step 6 (O = α·V, summed before ÷ℓ by the fused backend)", "m·max‖v_j‖",
                      double(m) * largest.V);
}

void check_attention_values(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options) {
    const std::string who = "scaled_dot_product_attention";
    const double flops = 2.0 * double(Q.rows()) * double(K.rows()) * double(Q.cols() + V.cols());
    const std::vector<double> norms = largest_row_norms({&Q, &K, &V}, options.backend, flops);
    check_row_norms({norms[0], norms[1], norms[2]}, Q.rows(), K.rows(), Q.cols(), V.cols(), options.names);
    if (options.dtype == Dtype::bf16) {  // V's entries are under half the largest float32 already (step 6's check)
        check_bfloat16_range(who, options.names.Q, Q, norms[0]);
        check_bfloat16_range(who, options.names.K, K, norms[1]);
    }
    if (options.mask && options.mask->kind == ScoreMask::Kind::additive)
        check_mask_values(who, *options.mask, Q.rows(), K.rows());
}

void check_mask_values(const std::string& who, const ScoreMask& mask, std::size_t n, std::size_t m) {
    const auto* terms = static_cast<const float*>(mask.data);
    for (std::size_t i = 0; i < (mask.row_stride ? n : 1); ++i)
        for (std::size_t j = 0; j < (mask.col_stride ? m : 1); ++j) {
            const float t = terms[std::ptrdiff_t(i) * mask.row_stride + std::ptrdiff_t(j) * mask.col_stride];
            if (std::isnan(t) || t == std::numeric_limits<float>::infinity())
                throw std::invalid_argument(who + ": the mask's term for query " + std::to_string(i) + ", key " +
                                            std::to_string(j) + " is " + (std::isnan(t) ? "NaN" : "+∞") +
                                            " (an additive mask may hold finite numbers and −∞ only)");
        }
}

// The backward runs in float32 only: a bf16 forward's rounding has no gradient written for it.
void check_backward_dtype(const AttentionOptions& options) {
    if (options.dtype == Dtype::bf16)
        throw std::invalid_argument(
            "scaled_dot_product_attention_backward: dtype bf16 has no backward (the gradients run in dtype f32)");
}

void check_grad_output_shape(std::size_t n, std::size_t d_v, const Matrix& dO, const AttentionOptions& options) {
    check_backward_dtype(options);
    if (dO.rows() != n || dO.cols() != d_v)
        throw std::invalid_argument("scaled_dot_product_attention_backward: " + options.names.dO + " (" +
                                    shape_string(dO) + ") must be " + shape_string(n, d_v) +
                                    ", the shape of O: one gradient per output entry");
}

void check_backward_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionResult& forward,
                           const Matrix& dO, const AttentionOptions& options, const AttentionGradients& out) {
    check_backward_dtype(options);
    check_attention_shapes(Q, K, V, options, AttentionResult{});
    const std::string who = "scaled_dot_product_attention_backward: ";
    const OperandNames& name = options.names;
    for (const Matrix* result : {&out.dQ, &out.dK, &out.dV, &out.dS})
        for (const auto& [input, M] : {std::pair{&name.Q, &Q},
                                       {&name.K, &K},
                                       {&name.V, &V},
                                       {&name.dO, &dO},
                                       {nullptr, &forward.output},
                                       {nullptr, &forward.weights},
                                       {nullptr, &forward.log_sum_exp}})
            if (result == M)
                throw std::invalid_argument(who + "a gradient's buffer is " +
                                            (input ? *input : std::string("the forward's")) +
                                            " itself; the backward would overwrite it while it still reads it "
                                            "(pass a separate AttentionGradients)");
    const std::size_t n = Q.rows(), m = K.rows(), d_v = V.cols();
    const auto expect = [&](const std::string& name, const Matrix& M, std::size_t rows, std::size_t cols,
                            const std::string& why) {
        if (M.rows() != rows || M.cols() != cols)
            throw std::invalid_argument(who + name + " (" + shape_string(M) + ") must be " + shape_string(rows, cols) +
                                        ", " + why);
    };
    check_grad_output_shape(Q.rows(), V.cols(), dO, options);
    expect("the forward's output", forward.output, n, d_v, "the forward of these Q, K and V");
    if (options.backend == Backend::fused)
        expect("the forward's log-sum-exp", forward.log_sum_exp, n, simd::log_sum_exp_floats,
               "one per query row: run the fused forward with keep_for_backward");
    else expect("the forward's α", forward.weights, n, m, "the forward of these Q, K and V on a materialised backend");
}

GradientBounds check_backward_values(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                     const AttentionOptions& options) {
    const std::string who = "scaled_dot_product_attention_backward";
    const OperandNames& name = options.names;
    const double n = double(Q.rows()), m = double(K.rows());
    const std::vector<double> norms =
        largest_row_norms({&Q, &K, &V, &dO}, options.backend, 4.0 * n * m * double(Q.cols() + V.cols()));
    const double q = finite_row_norm(who, name.Q, Q, norms[0]), k = finite_row_norm(who, name.K, K, norms[1]),
                 v = finite_row_norm(who, name.V, V, norms[2]), g = finite_row_norm(who, name.dO, dO, norms[3]);
    // |dα_ij| = |do_i·v_j| ≤ g·v, and so is rowsum(dα ⊙ α) (α ≥ 0 sums to 1), so |dα_ij − rowsum| ≤ 2·g·v;
    // dV sums n terms α·do, dQ sums m terms dS·k, dK sums n terms dS·q (scale ≤ 1 only shrinks them).
    const GradientBounds bounds{.dQ = 2 * m * g * v * k, .dK = 2 * n * g * v * q, .dV = n * g};
    check_float_range(who, "grad 5 (dS' = α ⊙ (dα − rowsum(dα ⊙ α)))", "2·max‖do_i‖·max‖v_j‖", 2 * g * v);
    check_float_range(who, "grad 6 (dV = αᵀ·dO)", "n·max‖do_i‖", bounds.dV);
    check_float_range(who, "grad 3 (dQ = dS·K)", "2·m·max‖do_i‖·max‖v_j‖·max‖k_j‖", bounds.dQ);
    check_float_range(who, "grad 3 (dK = dSᵀ·Q)", "2·n·max‖do_i‖·max‖v_j‖·max‖q_i‖", bounds.dK);
    return bounds;
}

void check_projection_gradient_values(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                                      const GradientBounds& core, const OperandNames& name) {
    const std::string who = "SingleHeadAttention::backward";
    const double x = largest_row_norm(who, name.X, X), n = double(X.rows());
    // dW = Xᵀ·dQ sums n terms x_ia·dq_ib, each ≤ x times the bound on dQ;
    // dX_ia sums three dot products dq_i·(row a of W_Q), …, each ≤ ‖dq_i‖·‖row a‖ by Cauchy–Schwarz.
    check_float_range(who, "grad 2 (dW_Q = Xᵀ·dQ)", "n·max‖x_i‖·(bound on dQ)", n * x * core.dQ);
    check_float_range(who, "grad 2 (dW_K = Xᵀ·dK)", "n·max‖x_i‖·(bound on dK)", n * x * core.dK);
    check_float_range(who, "grad 2 (dW_V = Xᵀ·dV)", "n·max‖x_i‖·(bound on dV)", n * x * core.dV);
    check_float_range(who, "grad 1 (dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ)", "Σ (bound on ‖dq_i‖)·max‖row of the weight‖",
                      core.dQ * max_row_norm(W_Q) + core.dK * max_row_norm(W_K) + core.dV * max_row_norm(W_V));
}

void check_weights(const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V, const OperandNames& name) {
    const auto shapes = [&] {
        return "; got " + name.W_Q + " (" + shape_string(W_Q) + "), " + name.W_K + " (" + shape_string(W_K) + "), " +
               name.W_V + " (" + shape_string(W_V) + ")";
    };
    if (W_Q.rows() != W_K.rows() || W_K.rows() != W_V.rows())
        throw DModelMismatch("SingleHeadAttention: all weights need d_model rows" + shapes());
    const auto fail = [&](const std::string& what) {
        throw std::invalid_argument("SingleHeadAttention: " + what + shapes());
    };
    if (W_Q.cols() != W_K.cols()) fail(name.W_Q + " and " + name.W_K + " need the same width d_k");
    if (W_Q.cols() == 0)
        fail("d_k = 0: " + name.W_Q + " and " + name.W_K + " have no columns, so there is nothing to compare");
    largest_row_norm("SingleHeadAttention", name.W_Q, W_Q);
    largest_row_norm("SingleHeadAttention", name.W_K, W_K);
    largest_row_norm("SingleHeadAttention", name.W_V, W_V);
}

void check_projection_shapes(const Matrix& X, const Matrix& W_Q, const OperandNames& name) {
    if (X.cols() != W_Q.rows())
        throw DModelMismatch("SingleHeadAttention::project: " + name.X + " (" + shape_string(X) +
                             ") needs d_model = " + std::to_string(W_Q.rows()) + " columns to meet " + name.W_Q + " (" +
                             shape_string(W_Q) + ")");
}

void check_projection_values(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                             const OperandNames& name) {
    const std::string who = "SingleHeadAttention::project";
    const double x_norm = largest_row_norm(who, name.X, X);
    for (const auto& [step, W] :
         {std::pair{"step 2 (Q = X·W_Q)", &W_Q}, {"step 2 (K = X·W_K)", &W_K}, {"step 2 (V = X·W_V)", &W_V}})
        check_float_range(who, step, "max‖x_i‖·max‖column of the weight‖", x_norm * max_col_norm(*W));
}

}  // namespace attn::guards
