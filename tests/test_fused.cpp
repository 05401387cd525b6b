// The fused backend is the same attention: against naive on every tail, causal or not, extreme
// scores, any thread count, and a sequence whose score matrix would need 1 GiB.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "attention/attention.hpp"
#include "check_close.hpp"
#include "matrix/ops.hpp"
#include "matrix/random.hpp"
#include "reference.hpp"
#include "simd/simd.hpp"
#include "thread_counts.hpp"

using attn::random_matrix;

using attn::Backend;
using attn::Matrix;

namespace {

Matrix fused(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal) {
    return attn::scaled_dot_product_attention(Q, K, V, {.causal = causal, .backend = Backend::fused}).output;
}

Matrix naive(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal) {
    return attn::scaled_dot_product_attention(Q, K, V, {.causal = causal}).output;
}

}  // namespace

TEST_CASE("fused equals naive for every size 1 to 70, causal or not", "[fused]") {
    std::mt19937 rng(21);
    const bool causal = GENERATE(false, true);
    for (std::size_t n = 1; n <= 70; ++n) {
        const std::size_t m = causal ? n : 1 + (n * 11) % 70, d_k = 1 + (n * 7) % 70, d_v = 1 + (n * 13) % 70;
        INFO((causal ? "causal " : "") << "n=" << n << " m=" << m << " d_k=" << d_k << " d_v=" << d_v);
        const Matrix Q = random_matrix(n, d_k, rng), K = random_matrix(m, d_k, rng), V = random_matrix(m, d_v, rng);
        check_close(fused(Q, K, V, causal), naive(Q, K, V, causal), 1e-5f);
    }
}

TEST_CASE("fused equals naive when n is not a multiple of the tile, over many tiles", "[fused]") {
    std::mt19937 rng(22);
    const bool causal = GENERATE(false, true);
    for (const std::size_t n : {255, 256, 257, 300, 517, 1000}) {
        INFO((causal ? "causal " : "") << "n=" << n);
        const Matrix Q = random_matrix(n, 64, rng), K = random_matrix(n, 64, rng), V = random_matrix(n, 40, rng);
        check_close(fused(Q, K, V, causal), naive(Q, K, V, causal), 1e-5f);
    }
}

TEST_CASE("fused with scores up to ±1e4 stays finite and equals naive to the scores' resolution", "[fused]") {
    std::mt19937 rng(23);
    const bool causal = GENERATE(false, true);
    const std::size_t n = 333, d = 64;
    const Matrix Q = random_matrix(n, d, rng, -85, 85), K = random_matrix(n, d, rng, -85, 85),
                 V = random_matrix(n, d, rng);
    // As in test_simd.cpp: a score of size 1e4 is only known to ulp(1e4) ≈ 1e-3 in float, so two
    // correct kernels can differ by a few of those in the weights and outputs.
    const Matrix S = attn::scaled(attn::matmul(Q, attn::transpose(K)), 0.125f);
    float largest = 0.0f;
    for (std::size_t k = 0; k < S.size(); ++k) largest = std::max(largest, std::fabs(S.data()[k]));
    REQUIRE(largest > 5e3f);
    const Matrix got = fused(Q, K, V, causal);
    for (std::size_t k = 0; k < got.size(); ++k) REQUIRE(std::isfinite(got.data()[k]));
    check_close(got, naive(Q, K, V, causal), 4 * (std::nextafter(largest, INFINITY) - largest));
}

TEST_CASE("fused returns no α and refuses to trace", "[fused]") {
    const Matrix Q(4, 3, 0.5f), K(4, 3, 0.25f), V(4, 2, 1.0f);
    const auto r = attn::scaled_dot_product_attention(Q, K, V, {.backend = Backend::fused});
    CHECK(r.weights.empty());
    CHECK(r.output.rows() == 4);
    const attn::SingleHeadAttention layer(Matrix(2, 3, 0.5f), Matrix(2, 3, 0.25f), Matrix(2, 2, 1.0f));
    CHECK_THROWS_WITH(attn::trace_forward(layer, Matrix(4, 2, 1.0f), {.backend = Backend::fused}),
                      Catch::Contains("fused backend never stores S or α"));
}

TEST_CASE("fused shape errors and empty inputs", "[fused][errors]") {
    Matrix O;
    CHECK_THROWS_WITH(attn::simd::fused_attention_into(Matrix(3, 4), Matrix(3, 5), Matrix(3, 2), 1.0f, false, O,
                                                       nullptr, attn::simd::Threads::one),
                      Catch::Contains("fused_attention: (3×4)·(3×5)ᵀ"));
    CHECK_THROWS_WITH(attn::simd::fused_attention_into(Matrix(3, 4), Matrix(3, 4), Matrix(2, 2), 1.0f, false, O,
                                                       nullptr, attn::simd::Threads::one),
                      Catch::Contains("K (3×4) and V (2×2)"));
    CHECK(fused(Matrix(0, 4), Matrix(5, 4), Matrix(5, 2), false).rows() == 0);
    CHECK(fused(Matrix(2, 4, 1.0f), Matrix(0, 4), Matrix(0, 3), false) ==
          naive(Matrix(2, 4, 1.0f), Matrix(0, 4), Matrix(0, 3), false));
}

TEST_CASE("a causal row is the attention of its query over its own past, bit for bit", "[fused]") {
    // The mask only takes keys away: row i of the causal result is the unmasked attention of query i
    // over keys and values 0..i, to the last bit. What the kernel skips for it (strips and panels
    // wholly in the future, the weights after the diagonal) must add nothing, on every tile edge.
    // Every row: a strip of rows crossing a panel's first key is where a skip could go wrong.
    std::mt19937 rng(26);
    const std::size_t n = 1100, d_k = 40, d_v = 24, tile = attn::simd::blocking().panel_kc;
    const Matrix Q = random_matrix(n, d_k, rng), K = random_matrix(n, d_k, rng), V = random_matrix(n, d_v, rng);
    const Matrix O = fused(Q, K, V, true);
    for (std::size_t i = 0; i < n; ++i) {
        INFO("row " << i << ", " << tile << " keys a tile");
        Matrix q(1, d_k), k(i + 1, d_k), v(i + 1, d_v);
        std::copy_n(Q.row(i).data(), d_k, q.row(0).data());
        std::copy_n(K.row(0).data(), (i + 1) * d_k, k.row(0).data());
        std::copy_n(V.row(0).data(), (i + 1) * d_v, v.row(0).data());
        const Matrix own_past = fused(q, k, v, false);
        for (std::size_t c = 0; c < d_v; ++c) CHECK(O(i, c) == own_past(0, c));
    }
}

TEST_CASE("fused results are bit-for-bit identical for 1, 2 and 3 threads", "[fused][parallel]") {
    if (!several_thread_counts()) return;
    std::mt19937 rng(24);
    const Matrix Q = random_matrix(700, 48, rng), K = random_matrix(700, 48, rng), V = random_matrix(700, 20, rng);
    const int before = attn::simd::max_threads();
    attn::simd::set_max_threads(1);
    const Matrix serial = fused(Q, K, V, true), serial_full = fused(Q, K, V, false);
    for (int threads : {2, 3}) {
        attn::simd::set_max_threads(threads);
        CHECK(fused(Q, K, V, true) == serial);
        CHECK(fused(Q, K, V, false) == serial_full);
    }
    attn::simd::set_max_threads(before);
}

TEST_CASE("n = 16384, d = 64: where S would need 1 GiB, fused runs and matches row by row", "[fused][large][slow]") {
    const std::size_t n = 16384, d = 64;
    std::mt19937 rng(25);
    const Matrix Q = random_matrix(n, d, rng), K = random_matrix(n, d, rng), V = random_matrix(n, d, rng);
    const bool causal = GENERATE(false, true);
    const Matrix O = fused(Q, K, V, causal);
    REQUIRE(O.rows() == n);
    const reference::Mat Q_ref = reference::from(Q), K_ref = reference::from(K), V_ref = reference::from(V);
    for (const std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{47}, std::size_t{48}, std::size_t{255},
                                std::size_t{256}, std::size_t{4097}, std::size_t{9999}, n - 2, n - 1}) {
        INFO((causal ? "causal " : "") << "row " << i);
        const auto want = reference::attention_row(Q_ref[i], K_ref, V_ref, std::sqrt(double(d)), causal ? i + 1 : n);
        for (std::size_t k = 0; k < d; ++k) CHECK(O(i, k) == Approx(want.output[0][k]).epsilon(1e-5).margin(1e-6));
    }
}
