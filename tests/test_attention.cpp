// The attention chain: the lesson's worked example, a double-precision reference, properties, errors.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>

#include "attention/attention.hpp"
#include "attention/backends.hpp"
#include "check_close.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/ops.hpp"
#include "matrix/random.hpp"
#include "reference.hpp"

using attn::random_matrix;

using attn::AttentionOptions;
using attn::Matrix;
using attn::Scale;

namespace {

attn::SingleHeadAttention example_layer() { return attn::worked_example::layer(); }

double divisor(Scale s, std::size_t d_k) {
    return s == Scale::sqrt_dk ? std::sqrt(double(d_k)) : s == Scale::dk ? double(d_k) : 1.0;
}

}  // namespace

TEST_CASE("worked example: Q, K, V equal the values computed by hand", "[attention][example]") {
    const attn::AttentionTrace tr = attn::worked_example::trace();
    // e.g. Q₁₁ = 1.0·0.5 + 0.5·0.9 + (−0.2)·(−0.6) + 0.8·0.3 = 0.5 + 0.45 + 0.12 + 0.24 = 1.31
    const reference::Mat Q{{1.31, -0.12, 1.17}, {-1.08, 0.91, 0.73}, {0.77, 0.57, 0.02}};
    const reference::Mat K{{1.52, 0.47, -0.28}, {-0.31, 0.25, 0.96}, {0.11, 1.36, 0.30}};
    const reference::Mat V{{0.50, 1.00, 0.05}, {0.85, -1.15, 1.65}, {1.15, 0.45, 0.30}};
    check_close(tr.Q, Q, 1e-6, 0.0);
    check_close(tr.K, K, 1e-6, 0.0);
    check_close(tr.V, V, 1e-6, 0.0);
}

TEST_CASE("worked example: α and output match the lesson's PyTorch figures", "[attention][example]") {
    const auto r = example_layer().forward(attn::worked_example::X());
    // PyTorch (float64) on the same X and weights, printed to 4 decimals: ±5e-5 is their rounding.
    const double alpha_row1[] = {0.4838, 0.2844, 0.2317}, output_row1[] = {0.7502, 0.2610, 0.5630};
    for (std::size_t j = 0; j < 3; ++j) {
        CHECK(r.weights(0, j) == Approx(alpha_row1[j]).margin(5e-5));
        CHECK(r.output(0, j) == Approx(output_row1[j]).margin(5e-5));
    }
    // Exercise 2, answered by the example: 坐 (row 2) puts more weight on 地毯 than on itself.
    CHECK(r.weights(1, 2) > r.weights(1, 1));
}

TEST_CASE("worked example agrees with the double reference for every scale, with and without mask",
          "[attention][example][reference]") {
    const Scale scale = GENERATE(Scale::sqrt_dk, Scale::dk, Scale::none);
    const bool causal = GENERATE(false, true);
    INFO("scale " << attn::to_string(scale) << (causal ? ", causal" : ""));
    const attn::AttentionTrace tr = attn::worked_example::trace({.causal = causal, .scale = scale});
    const auto r = example_layer().forward(attn::worked_example::X(), {.causal = causal, .scale = scale});
    const auto want = reference::attention(reference::from(tr.Q), reference::from(tr.K), reference::from(tr.V),
                                           divisor(scale, 3), causal);
    check_close(r.weights, want.weights, 1e-6, 1e-5);
    check_close(r.output, want.output, 1e-6, 1e-5);
}

TEST_CASE("the trace holds each intermediate of the chain", "[attention][trace]") {
    const attn::AttentionTrace tr = attn::worked_example::trace({.causal = true});
    const auto r = example_layer().forward(attn::worked_example::X(), {.causal = true});
    CHECK(tr.X == attn::worked_example::X());
    CHECK(tr.S == attn::matmul(tr.Q, attn::transpose(tr.K)));
    CHECK(tr.S_scaled == attn::scaled(tr.S, 1.0f / std::sqrt(3.0f)));
    CHECK(tr.S_masked == attn::causal_mask(tr.S_scaled));
    CHECK(tr.weights == r.weights);
    CHECK(tr.output == r.output);
    CHECK(tr.output == attn::matmul(tr.weights, tr.V));
    // Taken beside the chain, on every backend that has intermediates: its α and O are the chain's
    // own bits, and its S' is what the chain's softmax started from.
    std::mt19937 rng(23);
    const attn::SingleHeadAttention layer(random_matrix(16, 8, rng), random_matrix(16, 8, rng),
                                          random_matrix(16, 5, rng));
    const Matrix X = random_matrix(37, 16, rng);
    for (const attn::Backend b : {attn::Backend::naive, attn::Backend::simd, attn::Backend::parallel}) {
        INFO(attn::to_string(b));
        const attn::AttentionTrace t = attn::trace_forward(layer, X, {.causal = true, .backend = b});
        const auto chain = layer.forward(X, {.causal = true, .backend = b});
        CHECK(t.weights == chain.weights);
        CHECK(t.output == chain.output);
        Matrix alpha = t.S_masked;
        attn::backends::softmax_rows_in_place({alpha, 1.0f}, b);
        CHECK(alpha == chain.weights);
    }
}

TEST_CASE("scale factors are 1/√d_k, 1/d_k and 1", "[attention]") {
    CHECK(attn::scale_factor(Scale::sqrt_dk, 64) == 0.125f);
    CHECK(attn::scale_factor(Scale::dk, 64) == 1.0f / 64);
    CHECK(attn::scale_factor(Scale::none, 64) == 1.0f);
}

TEST_CASE("random shapes with d_v ≠ d_k and m ≠ n agree with the double reference", "[attention][reference]") {
    std::mt19937 rng(7);
    for (const auto [n, m, dk, dv] :
         {std::array<std::size_t, 4>{1, 1, 1, 1}, {5, 9, 3, 7}, {17, 4, 16, 2}, {33, 33, 64, 5}}) {
        const Matrix Q = random_matrix(n, dk, rng), K = random_matrix(m, dk, rng), V = random_matrix(m, dv, rng);
        const bool causal = n == m;
        INFO("n=" << n << " m=" << m << " d_k=" << dk << " d_v=" << dv);
        const auto r = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal});
        const auto want = reference::attention(reference::from(Q), reference::from(K), reference::from(V),
                                               std::sqrt(double(dk)), causal);
        CHECK(r.output.cols() == dv);
        check_close(r.weights, want.weights, 1e-6, 1e-5);
        check_close(r.output, want.output, 1e-6, 1e-5);
    }
}

TEST_CASE("every row of α sums to 1 and the causal upper triangle is exactly 0", "[attention][property]") {
    std::mt19937 rng(11);
    const Matrix Q = random_matrix(40, 8, rng, -3, 3), K = random_matrix(40, 8, rng, -3, 3),
                 V = random_matrix(40, 8, rng);
    const bool causal = GENERATE(false, true);
    const auto r = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal});
    for (std::size_t i = 0; i < 40; ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j < 40; ++j) {
            sum += r.weights(i, j);
            if (causal && j > i) CHECK(r.weights(i, j) == 0.0f);
        }
        CHECK(sum == Approx(1.0).epsilon(1e-6));
    }
}

TEST_CASE("causal row 1 copies v₁: the first token can see only itself", "[attention][property]") {
    std::mt19937 rng(3);
    const Matrix Q = random_matrix(6, 4, rng), K = random_matrix(6, 4, rng), V = random_matrix(6, 5, rng);
    const auto r = attn::scaled_dot_product_attention(Q, K, V, {.causal = true});
    for (std::size_t j = 0; j < 5; ++j) CHECK(r.output(0, j) == V(0, j));
}

TEST_CASE("scores of ±1e4 give finite weights and outputs", "[attention][property]") {
    std::mt19937 rng(5);
    const Matrix Q = random_matrix(8, 4, rng, -100, 100), K = random_matrix(8, 4, rng, -100, 100);
    const Matrix V = random_matrix(8, 3, rng);
    const auto r = attn::scaled_dot_product_attention(Q, K, V, {.scale = Scale::none});
    for (std::size_t k = 0; k < r.weights.size(); ++k) CHECK(std::isfinite(r.weights.data()[k]));
    for (std::size_t k = 0; k < r.output.size(); ++k) CHECK(std::isfinite(r.output.data()[k]));
}

TEST_CASE("the _into form reuses its buffers and gives the same result", "[attention]") {
    std::mt19937 rng(9);
    const Matrix Q = random_matrix(12, 4, rng), K = random_matrix(12, 4, rng), V = random_matrix(12, 6, rng);
    attn::AttentionResult out;
    attn::scaled_dot_product_attention_into(Q, K, V, {}, out);
    const float* weights_buffer = out.weights.data();
    attn::scaled_dot_product_attention_into(Q, K, V, {}, out);
    CHECK(out.weights.data() == weights_buffer);
    const auto fresh = attn::scaled_dot_product_attention(Q, K, V);
    CHECK(out.weights == fresh.weights);
    CHECK(out.output == fresh.output);
}

TEST_CASE("shape errors name the op and both shapes", "[attention][errors]") {
    using Catch::Contains;
    const Matrix a(3, 3), b(4, 3), c(3, 2);
    CHECK_THROWS_AS(attn::scaled_dot_product_attention(a, c, a), std::invalid_argument);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(a, c, a),
                      Contains("scaled_dot_product_attention") && Contains("Q (3×3)") && Contains("K (3×2)"));
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(a, a, b), Contains("K (3×3)") && Contains("V (4×3)"));
    CHECK_THROWS_WITH(example_layer().forward(Matrix(3, 5)),
                      Contains("SingleHeadAttention::project") && Contains("X (3×5)") && Contains("W_Q (4×3)"));
    CHECK_THROWS_WITH((attn::SingleHeadAttention{Matrix(4, 3), Matrix(4, 2), Matrix(4, 3)}),
                      Contains("W_Q (4×3)") && Contains("W_K (4×2)"));
    CHECK_THROWS_WITH((attn::SingleHeadAttention{Matrix(4, 3), Matrix(5, 3), Matrix(4, 3)}),
                      Contains("W_Q (4×3)") && Contains("W_K (5×3)"));
}

TEST_CASE("causal with n ≠ m: query i sees keys 0..i, the triangle aligned top-left", "[attention][mask]") {
    const Matrix Q{{0.5f, -1.0f}, {1.0f, 0.25f}, {-0.5f, 2.0f}},
        K{{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}, {2.0f, -1.0f}},
        V{{1.0f, 2.0f}, {3.0f, -1.0f}, {0.5f, 0.5f}, {-2.0f, 4.0f}};
    for (const attn::Backend b :
         {attn::Backend::naive, attn::Backend::simd, attn::Backend::parallel, attn::Backend::fused}) {
        INFO(attn::to_string(b));
        const auto wide = attn::scaled_dot_product_attention(Q, K, V, {.causal = true, .backend = b});
        CHECK(wide.output(0, 0) == Approx(1.0).epsilon(1e-6));  // query 0 sees key 0 alone
        CHECK(wide.output(0, 1) == Approx(2.0).epsilon(1e-6));
        // query 2 sees keys 0–2 and not key 3: as if key 3 were not there
        const Matrix K3{{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}}, V3{{1.0f, 2.0f}, {3.0f, -1.0f}, {0.5f, 0.5f}};
        const auto three = attn::scaled_dot_product_attention(Q, K3, V3, {.backend = b});
        CHECK(wide.output(2, 0) == Approx(three.output(2, 0)).epsilon(1e-6));
        CHECK(wide.output(2, 1) == Approx(three.output(2, 1)).epsilon(1e-6));
        // 4 queries against 3 keys: the last query sees all 3
        const Matrix Q4{{0.5f, -1.0f}, {1.0f, 0.25f}, {-0.5f, 2.0f}, {0.1f, 0.2f}};
        const auto tall = attn::scaled_dot_product_attention(Q4, K3, V3, {.causal = true, .backend = b});
        const auto all = attn::scaled_dot_product_attention(Q4, K3, V3, {.backend = b});
        CHECK(tall.output(3, 0) == Approx(all.output(3, 0)).epsilon(1e-6));
        CHECK(tall.output(3, 1) == Approx(all.output(3, 1)).epsilon(1e-6));
    }
}

TEST_CASE("zero query rows give zero output rows; one token attends fully to itself", "[attention][edge]") {
    const auto none = attn::scaled_dot_product_attention(Matrix(0, 4), Matrix(5, 4), Matrix(5, 2));
    CHECK(none.output.rows() == 0);
    CHECK(none.output.cols() == 2);
    const auto one =
        attn::scaled_dot_product_attention(Matrix{{0.3f, -2.0f}}, Matrix{{1.0f, 1.0f}}, Matrix{{4.0f, 5.0f, 6.0f}});
    CHECK(one.weights == Matrix{{1.0f}});
    CHECK(one.output == Matrix{{4.0f, 5.0f, 6.0f}});
}
