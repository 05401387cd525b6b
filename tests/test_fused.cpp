// The fused backend is the same attention: against naive on every tail, causal or not, extreme
// scores, any thread count, and a sequence whose score matrix would need 1 GiB.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "check_close.hpp"
#include "masked_reference.hpp"
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
        // query i three times: one or two rows would go to the decode kernel (backends::fused_decodes)
        Matrix q(3, d_k), k(i + 1, d_k), v(i + 1, d_v);
        for (std::size_t r = 0; r < q.rows(); ++r) std::copy_n(Q.row(i).data(), d_k, q.row(r).data());
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

namespace {

using masked_reference::Layout;
using masked_reference::Terms;

// The fused forward (with its log-sum-exp) and backward, with or without terms.
struct FusedRun {
    Matrix O;
    std::vector<float> lse;  // per row L and its remainder
    Matrix dQ, dK, dV;
};

FusedRun fused_with_terms(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, float scale, bool causal,
                          const Terms* terms, attn::simd::Threads threads = attn::simd::Threads::all) {
    FusedRun r;
    r.lse.resize(Q.rows() * attn::simd::log_sum_exp_floats);
    const attn::simd::ScoreTerms view = terms ? terms->view() : attn::simd::ScoreTerms{};
    const attn::simd::ScoreTerms* given = terms ? &view : nullptr;
    attn::simd::fused_attention_into(Q, K, V, scale, causal, r.O, r.lse.data(), threads, attn::simd::blocking(), given);
    attn::simd::fused_attention_backward_into(Q, K, V, r.O, dO, r.lse, scale, causal, r.dQ, r.dK, r.dV, threads,
                                              attn::simd::blocking(), given);
    return r;
}

bool any_nan(const Matrix& M) {
    return std::any_of(M.data(), M.data() + M.size(), [](float x) { return std::isnan(x); });
}

bool same_bits(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::equal(a.data(), a.data() + a.size(), b.data(), [](float x, float y) {
               return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
           });
}

// The run against the float64 reference: O, the log-sum-exp (−∞ exactly where a row sees no key, and
// there an output row of exact zeros and a zero gradient) and the three gradients; no NaN anywhere.
void check_against_reference(const FusedRun& got, const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                             float scale, bool causal, const Terms* terms) {
    const auto want = masked_reference::forward(Q, K, V, scale, causal, terms);
    check_close(got.O, want.O, 2e-5, 2e-5);
    for (std::size_t i = 0; i < Q.rows(); ++i) {
        const double L = got.lse[2 * i], remainder = got.lse[2 * i + 1];
        INFO("row " << i << ": log-sum-exp " << L << " + " << remainder << ", float64 " << want.lse[i]);
        if (want.lse[i] == masked_reference::minus_inf) {
            REQUIRE(L == -INFINITY);
            REQUIRE(remainder == 0.0);
            for (std::size_t c = 0; c < got.O.cols(); ++c) REQUIRE(got.O(i, c) == 0.0f);
            for (std::size_t c = 0; c < got.dQ.cols(); ++c) REQUIRE(got.dQ(i, c) == 0.0f);
        } else {
            REQUIRE(std::fabs(L + remainder - want.lse[i]) <= 2e-5 * (1 + std::fabs(want.lse[i])));
        }
    }
    for (const Matrix* M : {&got.O, &got.dQ, &got.dK, &got.dV}) REQUIRE_FALSE(any_nan(*M));
    const auto grads = masked_reference::backward(Q, K, V, dO, scale, causal, terms);
    check_close(got.dQ, grads.dQ, 1e-5, 1e-4);
    check_close(got.dK, grads.dK, 1e-5, 1e-4);
    check_close(got.dV, grads.dV, 1e-5, 1e-4);
}

// Runs f once with each instruction set this CPU runs, then goes back to the set in use before.
template <class F>
void on_every_isa(F f) {
    const std::string before = attn::simd::isa();
    for (const std::string& isa : attn::simd::supported_isas()) {
        INFO("instruction set " << isa);
        attn::simd::set_isa(isa);
        f();
    }
    attn::simd::set_isa(before);
}

}  // namespace

TEST_CASE(
    "fused forward and backward with score terms equal float64: flags and floats, full and broadcast, "
    "causal for n < m and n > m, on every instruction set",
    "[fused][terms]") {
    std::mt19937 rng(31);
    on_every_isa([&] {
        for (const auto& [n, m] : {std::pair<std::size_t, std::size_t>{1, 9}, {37, 53}, {53, 37}, {300, 257}}) {
            const Matrix Q = random_matrix(n, 24, rng, -2, 2), K = random_matrix(m, 24, rng, -2, 2),
                         V = random_matrix(m, 16, rng), dO = random_matrix(n, 16, rng);
            const float scale = 1.0f / std::sqrt(24.0f);
            for (const bool causal : {false, true}) {
                INFO((causal ? "causal " : "") << n << "×" << m << ", no terms");
                check_against_reference(fused_with_terms(Q, K, V, dO, scale, causal, nullptr), Q, K, V, dO, scale,
                                        causal, nullptr);
                for (const bool boolean : {false, true})
                    for (const Layout layout : {Layout::full, Layout::per_key, Layout::per_query}) {
                        INFO((causal ? "causal " : "")
                             << n << "×" << m << (boolean ? ", flags" : ", floats") << ", layout " << int(layout));
                        Terms terms = masked_reference::random_terms(n, m, boolean, layout, 0.3, rng);
                        if (layout != Layout::per_key) terms.mask_row(n / 2, m);  // one row sees no key
                        check_against_reference(fused_with_terms(Q, K, V, dO, scale, causal, &terms), Q, K, V, dO,
                                                scale, causal, &terms);
                    }
            }
        }
    });
}

TEST_CASE("rows no key may attend: output 0, log-sum-exp −∞, gradient 0, and no NaN", "[fused][terms]") {
    std::mt19937 rng(32);
    on_every_isa([&] {
        // row 5 sees nothing for two tiles and more before its one key, `last`
        const std::size_t n = 40, tile = attn::simd::blocking().panel_kc, m = 2 * tile + 60, last = 2 * tile + 30;
        const Matrix Q = random_matrix(n, 16, rng), K = random_matrix(m, 16, rng), V = random_matrix(m, 8, rng),
                     dO = random_matrix(n, 8, rng);
        for (const bool boolean : {false, true}) {
            // every key hidden from every row (a padding mask of zeros)
            Terms none = masked_reference::random_terms(n, m, boolean, Layout::per_key, 0.0, rng);
            none.mask_row(0, m);
            const FusedRun hidden = fused_with_terms(Q, K, V, dO, 0.25f, false, &none);
            CHECK(std::all_of(hidden.O.data(), hidden.O.data() + hidden.O.size(), [](float x) { return x == 0.0f; }));
            for (std::size_t i = 0; i < n; ++i)
                CHECK((hidden.lse[2 * i] == -INFINITY && hidden.lse[2 * i + 1] == 0.0f));
            for (const Matrix* g : {&hidden.dQ, &hidden.dK, &hidden.dV})
                CHECK(std::all_of(g->data(), g->data() + g->size(), [](float x) { return x == 0.0f; }));
            // causal with key 0 hidden: row 0 sees nothing; row 5 sees only key `last` (its terms, not the mask)
            Terms terms = masked_reference::random_terms(n, m, boolean, Layout::full, 0.2, rng);
            terms.mask_row(5, m);
            if (boolean) terms.keep[5 * m + last] = 1;
            else terms.floats[5 * m + last] = 0.5f;
            terms.mask_row(0, 1);
            for (const bool causal : {false, true}) {
                INFO((causal ? "causal" : "full") << (boolean ? ", flags" : ", floats"));
                const FusedRun got = fused_with_terms(Q, K, V, dO, 0.25f, causal, &terms);
                check_against_reference(got, Q, K, V, dO, 0.25f, causal, &terms);
                if (!causal)
                    for (std::size_t c = 0; c < V.cols(); ++c) CHECK(got.O(5, c) == Approx(V(last, c)).margin(1e-6));
            }
        }
    });
}

TEST_CASE("fused forward and backward with score terms give the same bits for 1 and 2 threads",
          "[fused][terms][parallel]") {
    if (!several_thread_counts()) return;
    std::mt19937 rng(33);
    const std::size_t n = 700, m = 650;
    const Matrix Q = random_matrix(n, 48, rng), K = random_matrix(m, 48, rng), V = random_matrix(m, 20, rng),
                 dO = random_matrix(n, 20, rng);
    const int before = attn::simd::max_threads();
    for (const bool boolean : {false, true})
        for (const bool causal : {false, true}) {
            Terms terms = masked_reference::random_terms(n, m, boolean, Layout::full, 0.3, rng);
            terms.mask_row(3, m);
            attn::simd::set_max_threads(1);
            const FusedRun one = fused_with_terms(Q, K, V, dO, 0.125f, causal, &terms);
            CHECK(attn::simd::last_team_size() == 1);
            attn::simd::set_max_threads(2);
            const FusedRun two = fused_with_terms(Q, K, V, dO, 0.125f, causal, &terms);
            CHECK(attn::simd::last_team_size() == 2);  // the forward's team
            CHECK(same_bits(one.O, two.O));
            CHECK(std::equal(one.lse.begin(), one.lse.end(), two.lse.begin()));
            CHECK(same_bits(one.dQ, two.dQ));
            CHECK(same_bits(one.dK, two.dK));
            CHECK(same_bits(one.dV, two.dV));
        }
    attn::simd::set_max_threads(before);
}

namespace {

constexpr float lowest = std::numeric_limits<float>::lowest();  // −3.4028235e38, torch.finfo(torch.float32).min

// An additive mask for n = m keys over several tiles (`tile` keys each), ±2 at random, with rows
// whose terms are finite but near the ends of the float range: a row of float32's lowest value
// (the value many models mask with: naive gives the mean of the values it sees), 2.4e38 on one key
// (naive: that key's value), ±3e38 (the mean of the keys at +3e38), a first tile at −3e38 before
// a key at +3e38 (the running maximum jumps by 6e38), and rows whose first tiles are all lowest.
Matrix extreme_terms(std::size_t n, std::size_t tile, std::mt19937& rng) {
    Matrix M = random_matrix(n, n, rng, -2.0f, 2.0f);
    const auto fill = [&](std::size_t i, std::size_t from, std::size_t to, float value) {
        for (std::size_t j = from; j < to; ++j) M(i, j) = value;
    };
    fill(20, 0, n, lowest);
    fill(2 * tile + 10, 0, n, lowest);
    M(2 * tile + 11, 2 * tile + 3) = 2.4e38f;
    fill(2 * tile + 12, 0, n, -3e38f);
    M(2 * tile + 12, 3) = M(2 * tile + 12, tile + 5) = 3e38f;
    fill(2 * tile + 13, 0, tile, -3e38f);
    M(2 * tile + 13, 2 * tile + 1) = 3e38f;
    fill(2 * tile + 14, 0, 2 * tile, lowest);
    fill(100, 0, tile, -3e38f);  // causal: row 100 sees only these, so the mean of V's rows 0..100
    M(100, tile + 20) = 2.4e38f;
    return M;
}

attn::AttentionPass run_pass(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                             const attn::ScoreMask& mask, bool causal, Backend backend) {
    return attn::attention_forward_backward(Q, K, V, dO, {.causal = causal, .mask = &mask, .backend = backend});
}

}  // namespace

TEST_CASE(
    "finite terms near ±FLT_MAX and rows of float32's lowest value: every backend gives naive's output and "
    "gradients, causal or not, full, per-key and per-query masks",
    "[fused][terms]") {
    std::mt19937 rng(34);
    const std::size_t tile = attn::simd::blocking().panel_kc, n = 2 * tile + 37;
    const Matrix Q = random_matrix(n, 16, rng), K = random_matrix(n, 16, rng), V = random_matrix(n, 8, rng),
                 dO = random_matrix(n, 8, rng);
    const Matrix full = extreme_terms(n, tile, rng);
    Matrix one_row = random_matrix(1, n, rng, -2.0f, 2.0f);  // a padding mask: every query, the same terms
    std::fill(one_row.row(0).begin() + std::ptrdiff_t(n - 50), one_row.row(0).end(), lowest);
    one_row(0, 5) = 2.4e38f;
    Matrix one_column = random_matrix(n, 1, rng, -2.0f, 2.0f);  // a term per query, the same for every key
    one_column(7, 0) = lowest;
    one_column(8, 0) = 3e38f;
    one_column(9, 0) = -3e38f;
    using Kind = attn::ScoreMask::Kind;
    const attn::ScoreMask masks[] = {{Kind::additive, full.data(), 0, 0, std::ptrdiff_t(n), 1},
                                     {Kind::additive, one_row.data(), 0, 0, 0, 1},
                                     {Kind::additive, one_column.data(), 0, 0, 1, 0}};
    for (const bool causal : {false, true})
        for (std::size_t k = 0; k < std::size(masks); ++k) {
            const attn::AttentionPass want = run_pass(Q, K, V, dO, masks[k], causal, Backend::naive);
            if (k == 0 && !causal) {  // what naive gives, as PyTorch does
                for (std::size_t c = 0; c < V.cols(); ++c) {
                    double mean = 0.0;
                    for (std::size_t j = 0; j < n; ++j) mean += V(j, c) / double(n);
                    CHECK(want.result.output(20, c) == Approx(mean).margin(1e-6));
                    CHECK(want.result.output(2 * tile + 11, c) == V(2 * tile + 3, c));
                    CHECK(want.result.output(2 * tile + 12, c) == Approx((V(3, c) + V(tile + 5, c)) / 2).margin(1e-6));
                }
            }
            for (const Backend b : {Backend::simd, Backend::parallel, Backend::fused}) {
                INFO(attn::to_string(b) << (causal ? ", causal" : "") << ", mask " << k);
                const attn::AttentionPass got = run_pass(Q, K, V, dO, masks[k], causal, b);
                check_close(got.result.output, want.result.output, 1e-6, 1e-5);
                check_close(got.gradients.dQ, want.gradients.dQ, 1e-5, 1e-4);
                check_close(got.gradients.dK, want.gradients.dK, 1e-5, 1e-4);
                check_close(got.gradients.dV, want.gradients.dV, 1e-5, 1e-4);
            }
        }
}

TEST_CASE("boolean masks over several tiles: every backend gives naive's output and gradients, causal or not",
          "[fused][terms]") {
    // A row that sees one key, a row that sees none, a key nobody sees, and a mask at random.
    std::mt19937 rng(35);
    const std::size_t tile = attn::simd::blocking().panel_kc, n = 2 * tile + 41;
    const Matrix Q = random_matrix(n, 16, rng), K = random_matrix(n, 16, rng), V = random_matrix(n, 8, rng),
                 dO = random_matrix(n, 8, rng);
    std::vector<unsigned char> keep(n * n);
    for (auto& flag : keep) flag = rng() % 4 != 0;
    for (std::size_t j = 0; j < n; ++j) keep[4 * n + j] = j == 2;      // row 4 sees key 2 alone
    for (std::size_t j = 0; j < n; ++j) keep[(tile + 6) * n + j] = 0;  // row tile + 6 sees nothing
    for (std::size_t i = 0; i < n; ++i) keep[i * n + tile + 1] = 0;    // nobody sees key tile + 1
    const attn::ScoreMask mask{attn::ScoreMask::Kind::boolean, keep.data(), 0, 0, std::ptrdiff_t(n), 1};
    for (const bool causal : {false, true}) {
        const attn::AttentionPass want = run_pass(Q, K, V, dO, mask, causal, Backend::naive);
        for (const Backend b : {Backend::simd, Backend::parallel, Backend::fused}) {
            INFO(attn::to_string(b) << (causal ? ", causal" : ""));
            const attn::AttentionPass got = run_pass(Q, K, V, dO, mask, causal, b);
            check_close(got.result.output, want.result.output, 1e-6, 1e-5);
            check_close(got.gradients.dQ, want.gradients.dQ, 1e-5, 1e-4);
            check_close(got.gradients.dK, want.gradients.dK, 1e-5, 1e-4);
            check_close(got.gradients.dV, want.gradients.dV, 1e-5, 1e-4);
        }
    }
}
