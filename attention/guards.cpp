// attention/guards.cpp — the values step of every call, before any work: NaN and ±inf, and the
// float32 range decided from the inputs alone.
//
// Why range is decided from the inputs: checking results instead lets a borderline sum overflow in
// one summation order and not in another, so the backends would disagree about the same inputs.
// Bounds that hold for every order:
//   step 2: |Q_ij| = |x_i·(column j of W_Q)| ≤ ‖x_i‖·‖column j‖, and so is every partial sum;
//   step 3: |S_ij| = |q_i·k_j| ≤ ‖q_i‖·‖k_j‖ (Cauchy–Schwarz), likewise;
//   step 4: the kernels add up s'_ij = scale·S_ij + M_ij (the mask's term): under the largest float32
//           when 2·scale·max‖q_i‖·max‖k_j‖ (the factor 2 for the rounding of the product's sum) plus
//           the largest finite term does not exceed it. Only a positive term can push a score up to +∞;
//           a negative one (down to float32's lowest, as many models mask) at worst makes it −∞,
//           which every backend reads as masked;
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

void check_row_norms(const RowNorms& largest, std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v,
                     const ScaleAndTerms& scores, const OperandNames& name) {
    const std::string who = forward_who;
    for (const auto& [label, norm, rows, cols] :
         {std::tuple{&name.Q, largest.Q, n, d_k}, {&name.K, largest.K, m, d_k}, {&name.V, largest.V, m, d_v}})
        if (!std::isfinite(norm))
            throw std::invalid_argument(who + ": " + *label + " (" + shape_string(rows, cols) + ") holds NaN or ±inf");
    const double products = largest.Q * largest.K;
    check_float_range(who, "step 3 (S = Q·Kᵀ)", "max‖q_i‖·max‖k_j‖", products);
    check_float_range(who, "step 4 (S' = scale·S + M, the mask's terms M added)",
                      "scale·max‖q_i‖·max‖k_j‖ + ½·(the largest finite term of the mask)",
                      double(scores.scale) * products + 0.5 * double(scores.largest_term));
    check_float_range(who, "step 6 (O = α·V, summed before ÷ℓ by the fused backend)", "m·max‖v_j‖",
                      double(m) * largest.V);
}

ScaleAndTerms scale_and_terms(const std::string& who, const AttentionOptions& options, const ScoreMask* mask,
                              std::size_t n, std::size_t m, std::size_t d_k) {
    const bool terms = mask && mask->kind == ScoreMask::Kind::additive;
    return {score_factor(options, d_k), terms ? check_mask_values(who, *mask, n, m) : 0.0f};
}

void check_attention_values(const Matrix& Q, const Matrix& K, const Matrix& V, const AttentionOptions& options) {
    const std::string who = forward_who;
    const ScaleAndTerms scores = scale_and_terms(who, options, options.mask, Q.rows(), K.rows(), Q.cols());
    const double flops = 2.0 * double(Q.rows()) * double(K.rows()) * double(Q.cols() + V.cols());
    // K's and V's norms as the call was given them (kept as a cache's rows arrived), else measured
    const std::vector<double> norms = options.kv_norms ? std::vector{largest_row_norms({&Q}, options.backend, flops)[0],
                                                                     options.kv_norms[0], options.kv_norms[1]}
                                                       : largest_row_norms({&Q, &K, &V}, options.backend, flops);
    check_row_norms({norms[0], norms[1], norms[2]}, Q.rows(), K.rows(), Q.cols(), V.cols(), scores, options.names);
    if (options.dtype == Dtype::bf16) {  // V's entries are under half the largest float32 already (step 6's check)
        check_bfloat16_range(who, options.names.Q, Q, norms[0]);
        check_bfloat16_range(who, options.names.K, K, norms[1]);
    }
}

float check_mask_values(const std::string& who, const ScoreMask& mask, std::size_t n, std::size_t m) {
    const auto* terms = static_cast<const float*>(mask.data);
    float largest = 0.0f;
    for (std::size_t i = 0; i < (mask.row_stride ? n : std::min<std::size_t>(n, 1)); ++i)
        for (std::size_t j = 0; j < (mask.col_stride ? m : std::min<std::size_t>(m, 1)); ++j) {
            const float t = terms[std::ptrdiff_t(i) * mask.row_stride + std::ptrdiff_t(j) * mask.col_stride];
            if (std::isnan(t) || t == std::numeric_limits<float>::infinity())
                throw std::invalid_argument(who + ": the mask's term for query " + std::to_string(i) + ", key " +
                                            std::to_string(j) + " is " + (std::isnan(t) ? "NaN" : "+∞") +
                                            " (an additive mask may hold finite numbers and −∞ only)");
            largest = std::max(largest, t);
        }
    return largest;
}

double largest_row_norm(const CacheView& cache) {
    const HeadsShape& s = cache.shape;
    double largest = 0.0;
    for (std::size_t row = 0; row < s.batch * s.heads * s.rows; ++row) {
        double sum = 0.0;
        for (std::size_t j = 0; j < s.cols; ++j) {
            const std::size_t k = row * s.cols + j;
            const double x = cache.type == KvDtype::f32 ? static_cast<const float*>(cache.data)[k]
                             : cache.type == KvDtype::bf16
                                 ? from_bfloat16_bits(static_cast<const std::uint16_t*>(cache.data)[k])
                                 : from_float16_bits(static_cast<const std::uint16_t*>(cache.data)[k]);
            sum += x * x;
        }
        largest = larger_norm(largest, std::sqrt(sum));
    }
    return largest;
}

GradientBounds check_backward_values(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                     const AttentionOptions& options) {
    const std::string who = "scaled_dot_product_attention_backward";
    const OperandNames& name = options.names;
    const double n = double(Q.rows()), m = double(K.rows());
    const ScaleAndTerms scores = scale_and_terms(who, options, options.mask, Q.rows(), K.rows(), Q.cols());
    const std::vector<double> norms =
        largest_row_norms({&Q, &K, &V, &dO}, options.backend, 4.0 * n * m * double(Q.cols() + V.cols()));
    const double q = finite_row_norm(who, name.Q, Q, norms[0]), k = finite_row_norm(who, name.K, K, norms[1]),
                 v = finite_row_norm(who, name.V, V, norms[2]), g = finite_row_norm(who, name.dO, dO, norms[3]);
    check_row_norms({q, k, v}, Q.rows(), K.rows(), Q.cols(), V.cols(), scores, name);  // the scores recomputed
    // |dα_ij| = |do_i·v_j| ≤ g·v, and so is rowsum(dα ⊙ α) (α ≥ 0 sums to 1), so |dα_ij − rowsum| ≤ 2·g·v;
    // dV sums n terms α·do, dQ sums m terms dS·k, dK sums n terms dS·q, dS = scale·dS' (the product
    // before the scale is bounded too: the fast backends multiply by it last)
    const double scale = std::max(1.0, double(scores.scale));
    const GradientBounds bounds{.dQ = 2 * m * g * v * k * scale, .dK = 2 * n * g * v * q * scale, .dV = n * g};
    check_float_range(who, "grad 5 (dS' = α ⊙ (dα − rowsum(dα ⊙ α)))", "2·max‖do_i‖·max‖v_j‖", 2 * g * v);
    check_float_range(who, "grad 6 (dV = αᵀ·dO)", "n·max‖do_i‖", bounds.dV);
    check_float_range(who, "grad 3 (dQ = dS·K)", "2·m·max‖do_i‖·max‖v_j‖·max‖k_j‖·max(1, scale)", bounds.dQ);
    check_float_range(who, "grad 3 (dK = dSᵀ·Q)", "2·n·max‖do_i‖·max‖v_j‖·max‖q_i‖·max(1, scale)", bounds.dK);
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

void check_weight_values(const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V, const OperandNames& name) {
    largest_row_norm("SingleHeadAttention", name.W_Q, W_Q);
    largest_row_norm("SingleHeadAttention", name.W_K, W_K);
    largest_row_norm("SingleHeadAttention", name.W_V, W_V);
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
