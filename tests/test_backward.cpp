// The backward pass, proven rather than trusted: every gradient entry against central finite
// differences of the independent double-precision forward (tests/reference.hpp), on every backend,
// causal or not, every scale, n ≠ m, d_k ≠ d_v and d = 1, and with a mask; the fused backward
// against the materialised one over many tiles; the same bits for any thread count; and bad input
// refused before any work.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "attention/worked_example.hpp"
#include "check_close.hpp"
#include "matrix/random.hpp"
#include "reference.hpp"
#include "simd/simd.hpp"
#include "thread_counts.hpp"

using attn::AttentionOptions;
using attn::Backend;
using attn::Matrix;
using attn::random_matrix;
using attn::Scale;

namespace {

const Backend all_backends[] = {Backend::naive, Backend::simd, Backend::parallel, Backend::fused};

double divisor_of(Scale scale, std::size_t d_k) {
    return scale == Scale::sqrt_dk ? std::sqrt(double(d_k)) : scale == Scale::dk ? double(d_k) : 1.0;
}

// L = Σ_ij dO_ij·O_ij, computed in double by the reference: ∂L/∂O = dO, so the gradients of L are
// exactly what the backward computes from dO.
double loss(const reference::Mat& O, const reference::Mat& dO) {
    double sum = 0.0;
    for (std::size_t i = 0; i < O.size(); ++i)
        for (std::size_t j = 0; j < O[i].size(); ++j) sum += O[i][j] * dO[i][j];
    return sum;
}

// ∂L/∂M_ij by central differences, for every entry of one input M of the double forward `L_of`.
reference::Mat finite_differences(reference::Mat& M, const std::function<double()>& L_of) {
    constexpr double h = 1e-6;  // error O(h²) ≈ 1e-12 from the formula, ≈ 1e-10 from rounding: far below float's
    reference::Mat grad = M;
    for (std::size_t i = 0; i < M.size(); ++i)
        for (std::size_t j = 0; j < M[i].size(); ++j) {
            const double keep = M[i][j];
            M[i][j] = keep + h;
            const double up = L_of();
            M[i][j] = keep - h;
            const double down = L_of();
            M[i][j] = keep;
            grad[i][j] = (up - down) / (2 * h);
        }
    return grad;
}

// The float backward is within float rounding of the double truth: entries here are O(1), and each
// is a sum of at most a few hundred float products, so 2e-5 absolute plus 2e-5 relative.
constexpr double tolerance = 2e-5;

AttentionOptions options_for(Backend b, Scale scale, bool causal) {
    return {.causal = causal, .scale = scale, .backend = b, .keep_for_backward = true};
}

attn::AttentionGradients backward(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                  const AttentionOptions& options) {
    const attn::AttentionResult forward = attn::scaled_dot_product_attention(Q, K, V, options);
    return attn::scaled_dot_product_attention_backward(Q, K, V, forward, dO, options);
}

}  // namespace

TEST_CASE("dQ, dK, dV equal central finite differences of the double forward, on every backend", "[backward]") {
    struct Shape {
        std::size_t n, m, d_k, d_v;
    };
    const Shape shape = GENERATE(Shape{3, 3, 3, 3}, Shape{4, 7, 5, 2}, Shape{6, 6, 1, 1}, Shape{1, 5, 3, 4},
                                 Shape{9, 9, 2, 6}, Shape{5, 2, 8, 3});
    const Scale scale = GENERATE(Scale::sqrt_dk, Scale::dk, Scale::none);
    const bool causal = GENERATE(false, true);
    INFO("n=" << shape.n << " m=" << shape.m << " d_k=" << shape.d_k << " d_v=" << shape.d_v
              << " scale=" << attn::to_string(scale) << (causal ? " causal" : ""));
    std::mt19937 rng(unsigned(shape.n * 131 + shape.m * 17 + shape.d_k * 5 + shape.d_v));
    const Matrix Q = random_matrix(shape.n, shape.d_k, rng), K = random_matrix(shape.m, shape.d_k, rng),
                 V = random_matrix(shape.m, shape.d_v, rng), dO = random_matrix(shape.n, shape.d_v, rng);
    reference::Mat q = reference::from(Q), k = reference::from(K), v = reference::from(V);
    const reference::Mat d_out = reference::from(dO);
    const double divisor = divisor_of(scale, shape.d_k);
    const auto L = [&] {  // causal with n ≠ m: query i sees keys 0..i, the triangle aligned top-left
        reference::Mat O;
        for (std::size_t i = 0; i < q.size(); ++i)
            O.push_back(
                reference::attention_row(q[i], k, v, divisor, causal ? std::min(i + 1, k.size()) : k.size()).output[0]);
        return loss(O, d_out);
    };
    const reference::Mat dQ = finite_differences(q, L), dK = finite_differences(k, L), dV = finite_differences(v, L);
    for (const Backend b : all_backends) {
        INFO("backend " << attn::to_string(b));
        const attn::AttentionGradients g = backward(Q, K, V, dO, options_for(b, scale, causal));
        check_close(g.dQ, dQ, tolerance, tolerance);
        check_close(g.dK, dK, tolerance, tolerance);
        check_close(g.dV, dV, tolerance, tolerance);
    }
}

namespace {

// softmax(S/divisor + M)·V in double, M additive (−∞: the key is not seen); a row that sees no key is 0.
reference::Mat masked_output(const reference::Mat& q, const reference::Mat& k, const reference::Mat& v, double divisor,
                             const Matrix& M) {
    reference::Mat O(q.size(), std::vector<double>(v[0].size(), 0.0));
    for (std::size_t i = 0; i < q.size(); ++i) {
        std::vector<double> w(k.size());
        double top = -std::numeric_limits<double>::infinity(), total = 0.0;
        for (std::size_t j = 0; j < k.size(); ++j) {
            double dot = 0.0;
            for (std::size_t p = 0; p < q[i].size(); ++p) dot += q[i][p] * k[j][p];
            top = std::max(top, w[j] = dot / divisor + M(i, j));
        }
        if (top == -std::numeric_limits<double>::infinity()) continue;
        for (double& x : w) total += (x = std::exp(x - top));
        for (std::size_t j = 0; j < k.size(); ++j)
            for (std::size_t c = 0; c < O[i].size(); ++c) O[i][c] += w[j] / total * v[j][c];
    }
    return O;
}

}  // namespace

TEST_CASE("with a mask, dQ, dK, dV equal central finite differences, and a row that sees no key has none",
          "[backward][mask]") {
    std::mt19937 rng(71);
    const std::size_t n = 5, m = 6;
    const Matrix Q = random_matrix(n, 4, rng), K = random_matrix(m, 4, rng), V = random_matrix(m, 3, rng),
                 dO = random_matrix(n, 3, rng);
    Matrix M = random_matrix(n, m, rng, -2.0f, 2.0f);
    M(0, 1) = M(3, 4) = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < m; ++j) M(2, j) = -std::numeric_limits<float>::infinity();  // query 2 sees nothing
    const attn::ScoreMask mask{attn::ScoreMask::Kind::additive, M.data(), 0, 0, std::ptrdiff_t(m), 1};
    reference::Mat q = reference::from(Q), k = reference::from(K), v = reference::from(V);
    const reference::Mat d_out = reference::from(dO);
    const auto L = [&] { return loss(masked_output(q, k, v, 2.0, M), d_out); };
    const reference::Mat dQ = finite_differences(q, L), dK = finite_differences(k, L), dV = finite_differences(v, L);
    for (const Backend b : all_backends) {
        INFO("backend " << attn::to_string(b));
        const AttentionOptions options{.mask = &mask, .backend = b, .keep_for_backward = true};
        const attn::AttentionGradients g = backward(Q, K, V, dO, options);
        check_close(g.dQ, dQ, tolerance, tolerance);
        check_close(g.dK, dK, tolerance, tolerance);
        check_close(g.dV, dV, tolerance, tolerance);
        for (std::size_t c = 0; c < 4; ++c) CHECK(g.dQ(2, c) == 0.0f);
    }
}

TEST_CASE("dX, dW_Q, dW_K, dW_V equal central finite differences through the projections, on every backend",
          "[backward]") {
    const bool causal = GENERATE(false, true);
    const std::size_t n = 5, d_model = 4, d_k = 3, d_v = 2;
    std::mt19937 rng(causal ? 41 : 42);
    const Matrix X = random_matrix(n, d_model, rng), W_Q = random_matrix(d_model, d_k, rng),
                 W_K = random_matrix(d_model, d_k, rng), W_V = random_matrix(d_model, d_v, rng),
                 dO = random_matrix(n, d_v, rng);
    reference::Mat x = reference::from(X), wq = reference::from(W_Q), wk = reference::from(W_K),
                   wv = reference::from(W_V);
    const reference::Mat d_out = reference::from(dO);
    const auto L = [&] {
        const auto project = [&](const reference::Mat& W) { return reference::mul(x, W, d_model, W[0].size()); };
        return loss(reference::attention(project(wq), project(wk), project(wv), std::sqrt(double(d_k)), causal).output,
                    d_out);
    };
    const reference::Mat dX = finite_differences(x, L), dW_Q = finite_differences(wq, L),
                         dW_K = finite_differences(wk, L), dW_V = finite_differences(wv, L);
    const attn::SingleHeadAttention layer(W_Q, W_K, W_V);
    for (const Backend b : all_backends) {
        INFO("backend " << attn::to_string(b) << (causal ? " causal" : ""));
        const AttentionOptions options = options_for(b, Scale::sqrt_dk, causal);
        const auto projections = layer.project(X, options);
        const attn::AttentionResult result =
            attn::scaled_dot_product_attention(projections.Q, projections.K, projections.V, options);
        const auto g = layer.backward(X, projections, result, dO, options);
        check_close(g.dX, dX, tolerance, tolerance);
        check_close(g.dW_Q, dW_Q, tolerance, tolerance);
        check_close(g.dW_K, dW_K, tolerance, tolerance);
        check_close(g.dW_V, dW_V, tolerance, tolerance);
    }
}

TEST_CASE("the fused backward equals the materialised one over many tiles, with every kind of tail", "[backward]") {
    std::mt19937 rng(43);
    const bool causal = GENERATE(false, true);
    for (const std::size_t n : {1, 7, 64, 255, 300, 517}) {
        const std::size_t m = causal ? n : n + 37, d_k = n % 2 ? 40 : 64, d_v = n % 2 ? 24 : 64;
        INFO((causal ? "causal " : "") << "n=" << n << " m=" << m << " d_k=" << d_k << " d_v=" << d_v);
        const Matrix Q = random_matrix(n, d_k, rng), K = random_matrix(m, d_k, rng), V = random_matrix(m, d_v, rng),
                     dO = random_matrix(n, d_v, rng);
        const auto want = backward(Q, K, V, dO, options_for(Backend::naive, Scale::sqrt_dk, causal));
        for (const Backend b : {Backend::simd, Backend::parallel, Backend::fused}) {
            INFO("backend " << attn::to_string(b));
            const auto got = backward(Q, K, V, dO, options_for(b, Scale::sqrt_dk, causal));
            check_close(got.dQ, want.dQ, 1e-5, 1e-4);
            check_close(got.dK, want.dK, 1e-5, 1e-4);
            check_close(got.dV, want.dV, 1e-5, 1e-4);
        }
    }
}

TEST_CASE("backward results are bit-for-bit identical for 1, 2 and 3 threads", "[backward][parallel]") {
    if (!several_thread_counts()) return;
    std::mt19937 rng(44);
    const Matrix Q = random_matrix(700, 48, rng), K = random_matrix(700, 48, rng), V = random_matrix(700, 20, rng),
                 dO = random_matrix(700, 20, rng);
    const int before = attn::simd::max_threads();
    for (const Backend b : {Backend::parallel, Backend::fused})
        for (const bool causal : {false, true}) {
            INFO("backend " << attn::to_string(b) << (causal ? " causal" : ""));
            attn::simd::set_max_threads(1);
            const auto serial = backward(Q, K, V, dO, options_for(b, Scale::sqrt_dk, causal));
            for (int threads : {2, 3}) {
                attn::simd::set_max_threads(threads);
                const auto g = backward(Q, K, V, dO, options_for(b, Scale::sqrt_dk, causal));
                CHECK(g.dQ == serial.dQ);
                CHECK(g.dK == serial.dK);
                CHECK(g.dV == serial.dV);
            }
        }
    attn::simd::set_max_threads(before);
}

TEST_CASE("the backward refuses bad input by name before any work", "[backward]") {
    std::mt19937 rng(45);
    const Matrix Q = random_matrix(4, 3, rng), K = random_matrix(4, 3, rng), V = random_matrix(4, 2, rng);
    const Backend b = GENERATE(Backend::naive, Backend::simd, Backend::parallel, Backend::fused);
    INFO("backend " << attn::to_string(b));
    const AttentionOptions options = options_for(b, Scale::sqrt_dk, false);
    const attn::AttentionResult forward = attn::scaled_dot_product_attention(Q, K, V, options);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention_backward(Q, K, V, forward, Matrix(4, 3), options),
                      "scaled_dot_product_attention_backward: dO (4×3) must be 4×2, the shape of O: one gradient "
                      "per output entry");
    Matrix nan_grad(4, 2);
    nan_grad(2, 1) = std::nanf("");
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention_backward(Q, K, V, forward, nan_grad, options),
                      "scaled_dot_product_attention_backward: dO (4×2) holds NaN or ±inf");
    Matrix nan_q = Q;  // the backward checks its inputs itself, whatever forward it is handed
    nan_q(0, 0) = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention_backward(nan_q, K, V, forward, Matrix(4, 2), options),
                      "scaled_dot_product_attention_backward: Q (4×3) holds NaN or ±inf");
    const Matrix other = random_matrix(5, 3, rng);
    CHECK_THROWS_AS(attn::scaled_dot_product_attention_backward(other, K, V, forward, Matrix(5, 2), options),
                    std::invalid_argument);
    attn::MemoryBudget tiny(64, "--max-memory");
    AttentionOptions limited = options;
    limited.budget = &tiny;
    CHECK_THROWS_AS(attn::scaled_dot_product_attention_backward(Q, K, V, forward, Matrix(4, 2), limited),
                    std::length_error);
}

TEST_CASE("the backward refuses inputs whose gradients could leave float32, naming the step", "[backward]") {
    const Backend b = GENERATE(Backend::naive, Backend::simd, Backend::parallel, Backend::fused);
    INFO("backend " << attn::to_string(b));
    const AttentionOptions options = options_for(b, Scale::sqrt_dk, false);
    // Small scores but large values: dα = dO·Vᵀ = ±4e38 is past float32 (computed, it would be ±inf and
    // make dQ and dK NaN), although the bounds on dQ and dK, scaled by ‖k‖ = ‖q‖ = 0.1, are in range.
    const Matrix Q(2, 1, 0.1f), K(2, 1, 0.1f);
    const Matrix V = Matrix{{2e19f}, {-2e19f}};
    const Matrix dO(2, 1, 2e19f);
    CHECK_THROWS_WITH(backward(Q, K, V, dO, options),
                      Catch::StartsWith("scaled_dot_product_attention_backward: grad 5 (dS' = α ⊙ (dα − rowsum(dα ⊙ "
                                        "α))) could leave the float32 range: 2·max‖do_i‖·max‖v_j‖ = 8e+38"));
    // Through the projections: dQ stays in range, but dW_Q = Xᵀ·dQ sums n products of x (3e19) and dQ.
    const attn::SingleHeadAttention layer(Matrix(1, 1, 1e-20f), Matrix(1, 1, 1e-20f), Matrix(1, 1, 1.0f));
    const Matrix X = Matrix{{3e19f}, {-3e19f}};
    CHECK_THROWS_WITH(layer.forward_backward(X, Matrix(2, 1, 1.0f), options),
                      Catch::StartsWith("SingleHeadAttention::backward: grad 2 (dW_Q = Xᵀ·dQ) could leave the "
                                        "float32 range"));
}

TEST_CASE("the gradients stay finite where scores near 1e19 round differently in the fused recomputation",
          "[backward]") {
    // Scores near 1e19 carry rounding errors near 1e12, so the fused backward's recomputed score need
    // not equal the forward's bit for bit; α = e^(s − L) must still come out ≤ 1, not e^(1e12) = ∞.
    std::mt19937 rng(1019);
    Matrix Q = random_matrix(37, 5, rng);
    for (std::size_t k = 0; k < Q.size(); ++k) Q.data()[k] *= 1e19f;
    const Matrix K = random_matrix(37, 5, rng), V = random_matrix(37, 3, rng), dO = random_matrix(37, 3, rng);
    const Backend b = GENERATE(Backend::naive, Backend::simd, Backend::parallel, Backend::fused);
    const bool causal = GENERATE(false, true);
    INFO("backend " << attn::to_string(b) << (causal ? ", causal" : ""));
    const attn::AttentionGradients g = backward(Q, K, V, dO, options_for(b, Scale::sqrt_dk, causal));
    for (const Matrix* m : {&g.dQ, &g.dK, &g.dV})
        for (std::size_t k = 0; k < m->size(); ++k) REQUIRE(std::isfinite(m->data()[k]));
}

TEST_CASE("the fused backward needs the forward's log-sum-exp, and says how to get it", "[backward]") {
    const Matrix Q(3, 2, 0.5f);
    AttentionOptions options = {.backend = Backend::fused};
    const attn::AttentionResult forward = attn::scaled_dot_product_attention(Q, Q, Q, options);
    CHECK(forward.log_sum_exp.empty());
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention_backward(Q, Q, Q, forward, Matrix(3, 2), options),
                      Catch::Contains("run the fused forward with keep_for_backward"));
}

TEST_CASE("the fused forward's log-sum-exp is log Σ_j e^(S'_ij), row by row", "[backward]") {
    std::mt19937 rng(46);
    const bool causal = GENERATE(false, true);
    const Matrix Q = random_matrix(300, 16, rng), K = random_matrix(300, 16, rng), V = random_matrix(300, 8, rng);
    const auto forward =
        attn::scaled_dot_product_attention(Q, K, V, options_for(Backend::fused, Scale::sqrt_dk, causal));
    const reference::Mat q = reference::from(Q), k = reference::from(K);
    reference::Mat want(300, std::vector<double>(attn::simd::log_sum_exp_floats));
    for (std::size_t i = 0; i < 300; ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j < (causal ? i + 1 : 300); ++j) {
            double s = 0.0;
            for (std::size_t p = 0; p < 16; ++p) s += q[i][p] * k[j][p];
            sum += std::exp(s / 4.0);
        }
        want[i][0] = std::log(sum);
        want[i][1] = want[i][0] - forward.log_sum_exp(i, 0);  // what the float L leaves out of log Σ
    }
    check_close(forward.log_sum_exp, want, 1e-5, 1e-5);
}

TEST_CASE("the backward trace is the library's backward, step by step", "[backward]") {
    const bool causal = GENERATE(false, true);
    const Backend b = GENERATE(Backend::naive, Backend::simd, Backend::parallel);
    const AttentionOptions options{.causal = causal, .backend = b};
    INFO("backend " << attn::to_string(b) << (causal ? " causal" : ""));
    const attn::AttentionTrace forward = attn::worked_example::trace(options);
    const attn::BackwardTrace t = attn::worked_example::backward_trace(options);
    const auto pass = attn::worked_example::layer().forward_backward(attn::worked_example::X(), t.dO, options);
    CHECK(t.dQ == pass.gradients.qkv.dQ);
    CHECK(t.dW_Q == pass.gradients.dW_Q);
    CHECK(t.dX == pass.gradients.dX);
    // dO = O − T; dS = dS'/√d_k; every row of dS' sums to 0 (a softmax ignores a shift of its row)
    for (std::size_t k = 0; k < t.dO.size(); ++k)
        CHECK(t.dO.data()[k] == forward.output.data()[k] - attn::worked_example::target().data()[k]);
    for (std::size_t i = 0; i < t.dS.rows(); ++i) {
        double row = 0.0;
        for (std::size_t j = 0; j < t.dS.cols(); ++j) {
            CHECK(t.dS(i, j) == Approx(t.dS_prime(i, j) / std::sqrt(3.0)).margin(1e-7));
            if (causal && j > i) CHECK(t.dS_prime(i, j) == 0.0f);
            row += t.dS_prime(i, j);
        }
        CHECK(row == Approx(0.0).margin(1e-6));
    }
    // one step against the gradient lowers the loss
    CHECK(attn::worked_example::loss_after_step(0.1f, options) < attn::worked_example::loss(forward.output));
    CHECK_THROWS_WITH(attn::trace_backward(attn::worked_example::layer(), attn::worked_example::X(), t.dO,
                                           {.backend = Backend::fused}),
                      Catch::Contains("the fused backend never stores dα or dS"));
}
