// The bf16 mode: the rounding, the pair arithmetic (against a model of vdpbf16ps, element by element,
// on every instruction set), the instruction against its emulation at the same vector width (bit for
// bit, where the CPU has the instruction), and the fused kernel, at every width, against the float64
// reference within a bound derived from the rounding; and the mode's one refusal of its own.
#include <catch2/catch.hpp>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "attention/attention.hpp"
#include "masked_reference.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/norms.hpp"
#include "matrix/random.hpp"
#include "simd/blocking.hpp"
#include "simd/simd.hpp"

using attn::Matrix;
using attn::random_matrix;
using Catch::Contains;

namespace {

// The two matrices hold the same bits, element by element (so +0 and −0 differ, and NaN equals NaN).
bool same_bits(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (std::size_t i = 0; i < a.rows(); ++i)
        for (std::size_t j = 0; j < a.cols(); ++j)
            if (std::bit_cast<std::uint32_t>(a(i, j)) != std::bit_cast<std::uint32_t>(b(i, j))) return false;
    return true;
}

// A subnormal float becomes a zero of its sign, as vdpbf16ps reads its accumulator and flushes its results.
float flushed(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// vdpbf16ps as Intel documents it, one lane: c ← c + a_odd·b_odd, then c ← c + a_even·b_even, each
// one rounding (the products are exact), subnormals read and written as zeros. Element (i, j) of
// scale·Â·B̂ᵀ is that step along the pairs of row i of A and row j of B, from 0, then times scale.
Matrix model_of_pair_products(const Matrix& A, const Matrix& B, float scale) {
    Matrix C(A.rows(), B.rows());
    const std::size_t d = A.cols();
    for (std::size_t i = 0; i < A.rows(); ++i)
        for (std::size_t j = 0; j < B.rows(); ++j) {
            float c = 0.0f;
            for (std::size_t p = 0; p < d; p += 2) {
                const auto at = [&](const Matrix& M, std::size_t r, std::size_t k) {
                    return k < d ? attn::round_to_bfloat16(M(r, k)) : 0.0f;
                };
                c = flushed(std::fma(at(A, i, p + 1), at(B, j, p + 1), flushed(c)));
                c = flushed(std::fma(at(A, i, p), at(B, j, p), c));
            }
            C(i, j) = flushed(c * scale);
        }
    return C;
}

Matrix fused_bf16(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal,
                  attn::simd::Threads threads = attn::simd::Threads::all,
                  const attn::simd::ScoreTerms* terms = nullptr) {
    Matrix O;
    attn::simd::fused_attention_bf16_into(Q, K, V, 1.0f / std::sqrt(float(Q.cols())), causal, O, threads,
                                          attn::simd::blocking(), terms);
    return O;
}

// Runs f with the kernels of instruction set `isa`, then goes back to the set in use before.
template <class F>
auto with_isa(const std::string& isa, F f) {
    const std::string before = attn::simd::isa();
    attn::simd::set_isa(isa);
    auto result = f();
    attn::simd::set_isa(before);
    return result;
}

bool runs(const std::string& isa) {
    const auto all = attn::simd::supported_isas();
    return std::find(all.begin(), all.end(), isa) != all.end();
}

}  // namespace

TEST_CASE("rounding to bfloat16: nearest, ties to even, subnormals to zero, NaN and range kept", "[bf16]") {
    using attn::bfloat16_bits;
    CHECK(bfloat16_bits(1.0f) == 0x3F80);
    CHECK(bfloat16_bits(-2.0f) == 0xC000);
    // 1 + 2⁻⁸ lies halfway between 1 and 1 + 2⁻⁷: ties go to the even one, 1; 1 + 3·2⁻⁸ lies halfway
    // between 1 + 2⁻⁷ (odd) and 1 + 2·2⁻⁷ (even): up.
    CHECK(bfloat16_bits(1.0f + 0x1p-8f) == 0x3F80);
    CHECK(bfloat16_bits(1.0f + 3 * 0x1p-8f) == 0x3F82);
    CHECK(bfloat16_bits(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);  // just past halfway: up
    CHECK(bfloat16_bits(0x1p-130f) == 0x0000);                  // subnormal: +0
    CHECK(bfloat16_bits(-0x1p-130f) == 0x8000);                 // and −0
    CHECK(bfloat16_bits(FLT_MIN) == 0x0080);                    // the smallest normal stays
    CHECK(bfloat16_bits(FLT_MAX) == 0x7F80);                    // past the largest bfloat16: ∞
    CHECK(std::isnan(attn::round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));
    CHECK(attn::round_to_bfloat16(-std::numeric_limits<float>::infinity()) == -std::numeric_limits<float>::infinity());
    // At most 2⁻⁸ of the value away, over a million normal floats of every size.
    std::mt19937 rng(71);
    std::uniform_int_distribution<std::uint32_t> pattern(0x00800000u, 0x7E7FFFFFu);
    double worst = 0.0;
    for (int k = 0; k < 1000000; ++k) {
        const float x = std::bit_cast<float>(pattern(rng));
        worst = std::max(worst, std::fabs(double(attn::round_to_bfloat16(x)) - x) / x);
    }
    INFO("largest relative rounding error: " << worst);
    CHECK(worst <= 0x1p-8);
    CHECK(worst > 0x1p-9);  // and that much is reached: it is a bfloat16, not a wider format
}

TEST_CASE("the bf16 products are vdpbf16ps's arithmetic, bit for bit, on every instruction set", "[bf16]") {
    // On instruction sets with FMA the pair step is the instruction or two FMAs on exact products:
    // equal to the model everywhere, subnormals included. SSE2 has no FMA: it rounds a product below
    // 2⁻¹²⁶ (flushing it) before the add, so there the tiny scales are not compared.
    const bool fma = attn::simd::isa() != "sse2";
    std::mt19937 rng(72);
    for (const float size : {1.0f, 1e-3f, 1e3f, 1e-19f, 3e-20f, 1e-25f}) {
        if (!fma && size < 1e-10f) continue;
        for (const std::size_t d : {1, 2, 7, 64, 65}) {
            INFO("entries up to " << size << ", d = " << d << ", kernels " << attn::simd::isa());
            const Matrix A = random_matrix(29, d, rng, -size, size), B = random_matrix(37, d, rng, -size, size);
            Matrix C;
            attn::simd::matmul_transposed_bf16_into(A, B, 0.125f, C);
            CHECK(same_bits(C, model_of_pair_products(A, B, 0.125f)));
        }
    }
}

TEST_CASE("the bf16 fused kernel's weights, rounded: with one key, O is V rounded to bfloat16", "[bf16]") {
    // One key: the weight is 2⁰ = 1 (exact in bfloat16) and ℓ = 1, so O = 1·round(v) / 1, whatever v is.
    std::mt19937 rng(73);
    std::uniform_int_distribution<std::uint32_t> pattern(0x00800000u, 0x7E7FFFFFu);
    Matrix V(1, 1000);
    for (float& x : V.row(0)) x = std::bit_cast<float>(pattern(rng) | (std::uint32_t(rng()) & 0x80000000u));
    V(0, 0) = 1.0f + 0x1p-8f;  // a tie
    const Matrix Q = random_matrix(1, 3, rng), K = random_matrix(1, 3, rng);
    CHECK(same_bits(fused_bf16(Q, K, V, false), attn::rounded_to_bfloat16(V)));
}

TEST_CASE("at the same vector width the emulation gives vdpbf16ps's bits, where the CPU has the instruction",
          "[bf16]") {
    // avx512 and avx512bf16 are the same kernels with the same batch width, so the same blocks; only
    // the pair step (and the rounding's instructions) differ. Both are compared with the model above on
    // every run; here the whole fused kernel, where the CPU can run the instruction. Without it there
    // is nothing to compare the emulation with at its own width: the case says so and checks nothing.
    if (!runs("avx512bf16")) {
        WARN(
            "this CPU has no vdpbf16ps: not compared; its emulation was held against the model of the instruction "
            "only");
        return;
    }
    std::mt19937 rng(74);
    for (const float size : {1.0f, 4.0f, 1e-19f}) {
        for (const bool causal : {false, true}) {
            for (const std::size_t n : {1, 13, 64, 300, 517}) {
                const std::size_t m = causal ? n : n + 31, d_k = n % 2 ? 63 : 64, d_v = n % 3 ? 40 : 64;
                INFO("n=" << n << " m=" << m << " d_k=" << d_k << " d_v=" << d_v << " size " << size
                          << (causal ? " causal" : ""));
                const Matrix Q = random_matrix(n, d_k, rng, -size, size), K = random_matrix(m, d_k, rng, -size, size),
                             V = random_matrix(m, d_v, rng, -size, size);
                const Matrix emulated = with_isa("avx512", [&] { return fused_bf16(Q, K, V, causal); });
                const Matrix instruction = with_isa("avx512bf16", [&] { return fused_bf16(Q, K, V, causal); });
                CHECK(same_bits(emulated, instruction));
            }
        }
    }
}

namespace {

// The bound of bf16's error, for row i and column c, u = 2⁻⁸ (bfloat16's rounding), ε = 2⁻²³ (a
// float's, doubled), η = 2⁻¹²⁶ (the smallest normal float: bfloat16 makes anything smaller 0, and
// vdpbf16ps flushes a smaller sum to 0):
// - each q_p, k_p moves by at most u·|itself| + η, so q̂·k̂ moves by at most (2u + u²)·Σ|q_p·k_p|
//   + (1 + u)·η·(Σ|q_p| + Σ|k_p|) + d_k·η² ≤ (2u + u²)·‖q_i‖·‖k_j‖ + (1 + u)·η·√d_k·(‖q_i‖ + ‖k_j‖)
//   + d_k·η², and the float sum of d_k products by d_k·ε of ‖q_i‖·‖k_j‖ and (d_k + 2)·η of flushes;
//   times the scale, every score of row i moves by at most E_i (below, with K = max_j ‖k_j‖), and by
//   2ε·max_j |term_ij| more where terms are added (the term and its sum with the product, rounded);
// - scores that each move by at most E move every softmax weight by a factor within e^(±2E);
// - each weight is rounded (1 ± u) and so is each v_jc (1 ± u); the float sums of m terms, the
//   tiles' rescalings and the division add (m + 64)·ε relatively at most;
// - and absolutely: a weight or a v_jc that is flushed loses at most η·|v_jc| or η (times the other,
//   ≤ 1 + u for a weight), the sums of m terms flush at most (m + 1)·η, over ℓ_i ≥ 1;
// so with f_i = (1 + u)²·e^(2E_i)·(1 + (m + 64)·ε) − 1 and A = max_j |v_jc|, j over the keys row i sees,
//   |Ô_ic − O_ic| ≤ A·f_i + (1 + f_i)·((1 + u)·η·(m·A + 2) + m·η² + (m + 1)·η).
// The η terms matter only where a norm comes near the top of the float range (1/η ≈ 8.5·10³⁷).
// Each error is REQUIREd within its bound; returned: the largest fraction of its bound an error used,
// and the largest error.
std::pair<double, double> bf16_errors(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal,
                                      const masked_reference::Terms* terms) {
    const double u = 0x1p-8, eps = 0x1p-23, eta = 0x1p-126;
    const std::size_t n = Q.rows(), m = K.rows(), d = Q.cols();
    Matrix got;
    const attn::simd::ScoreTerms view = terms ? terms->view() : attn::simd::ScoreTerms{};
    attn::simd::fused_attention_bf16_into(Q, K, V, 1.0f / std::sqrt(float(d)), causal, got, attn::simd::Threads::all,
                                          attn::simd::blocking(), terms ? &view : nullptr);
    const auto want = masked_reference::forward(Q, K, V, 1.0 / std::sqrt(double(d)), causal, terms).O;
    const double scale = 1.0 / std::sqrt(double(d)), longest_key = attn::max_row_norm(K);
    double worst_ratio = 0.0, largest_error = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        double largest_term = 0.0;  // of row i
        for (std::size_t j = 0; terms && j < m; ++j)
            if (std::isfinite(terms->at(i, j))) largest_term = std::max(largest_term, std::fabs(terms->at(i, j)));
        const double q = attn::norm(Q.row(i));
        const double E = scale * ((2 * u + u * u + double(d) * eps) * q * longest_key +
                                  (1 + u) * eta * std::sqrt(double(d)) * (q + longest_key) + double(d) * eta * eta +
                                  double(d + 2) * eta) +
                         2 * eps * largest_term;
        const double factor = (1 + u) * (1 + u) * std::exp(2 * E) * (1 + double(m + 64) * eps) - 1;
        for (std::size_t c = 0; c < V.cols(); ++c) {
            double largest_v = 0.0;
            for (std::size_t j = 0; j < m && !(causal && j > i); ++j)
                if (!terms || std::isfinite(terms->at(i, j)))
                    largest_v = std::max(largest_v, double(std::fabs(V(j, c))));
            const double flushed =
                (1 + u) * eta * (double(m) * largest_v + 2) + double(m) * eta * eta + double(m + 1) * eta;
            const double error = std::fabs(got(i, c) - want[i][c]), bound = largest_v * factor + (1 + factor) * flushed;
            INFO((causal ? "causal " : "") << "n=" << n << " d=" << d << " O[" << i << "][" << c << "] = " << got(i, c)
                                           << ", float64 " << want[i][c]);
            REQUIRE(error <= bound);
            if (bound > 0) worst_ratio = std::max(worst_ratio, error / bound);
            largest_error = std::max(largest_error, error);
        }
    }
    return {worst_ratio, largest_error};
}

}  // namespace

TEST_CASE("bf16 fused attention is within the bound its rounding allows of the float64 reference", "[bf16]") {
    std::mt19937 rng(75);
    double worst_ratio = 0.0, largest_change = 0.0;
    for (const bool causal : {false, true}) {
        for (const std::size_t n : {1, 5, 64, 129, 300}) {
            for (const std::size_t d : {1, 16, 63, 64}) {
                const std::size_t m = causal ? n : n + 17;
                const Matrix Q = random_matrix(n, d, rng, -2, 2), K = random_matrix(m, d, rng, -2, 2),
                             V = random_matrix(m, d, rng);
                const auto [ratio, error] = bf16_errors(Q, K, V, causal, nullptr);
                worst_ratio = std::max(worst_ratio, ratio);
                largest_change = std::max(largest_change, error);
            }
        }
    }
    WARN("bf16 fused against float64: the largest error used " << worst_ratio * 100 << "% of its bound");
    // The mode does round: a float32 kernel would be within about 1e-6 here.
    CHECK(largest_change > 1e-4);
}

TEST_CASE("bf16 fused attention is within its bound where bfloat16 flushes a subnormal query to 0", "[bf16]") {
    // A query entry below the smallest normal float against a key entry at the top of the range:
    // q·k_0 ≈ −2, but bfloat16 makes the query 0 and every score 0, so O is the plain mean of the
    // values, not ≈ 0.2·v_0 + 0.8·v_1 (an input the pipeline fuzzer found). The bound's η terms
    // allow that; its relative terms alone (E_0 ≈ 0.01) would not.
    const Matrix Q{{0.0f, 0x1p-127f}}, K{{0.0f, -attn::largest_bfloat16}, {1.0f, 0.0f}}, V{{0.0f, 0.0f}, {0.0f, 2.0f}};
    const auto [ratio, error] = bf16_errors(Q, K, V, false, nullptr);
    CHECK(error > 0.5);
    CHECK(ratio < 1.0);
}

TEST_CASE("bf16 fused attention with score terms is within the same bound, on every instruction set", "[bf16][terms]") {
    std::mt19937 rng(77);
    const std::string before = attn::simd::isa();
    double largest_change = 0.0;
    for (const std::string& isa : attn::simd::supported_isas()) {
        attn::simd::set_isa(isa);
        for (const bool causal : {false, true})
            for (const auto& [n, m] : {std::pair<std::size_t, std::size_t>{37, 300}, {300, 37}, {129, 129}})
                for (const bool boolean : {false, true})
                    for (const auto layout : {masked_reference::Layout::full, masked_reference::Layout::per_key}) {
                        INFO(isa << (boolean ? ", flags" : ", floats") << ", layout " << int(layout));
                        const Matrix Q = random_matrix(n, 40, rng, -2, 2), K = random_matrix(m, 40, rng, -2, 2),
                                     V = random_matrix(m, 24, rng);
                        auto terms = masked_reference::random_terms(n, m, boolean, layout, 0.3, rng);
                        if (layout == masked_reference::Layout::full) terms.mask_row(n / 3, m);
                        largest_change = std::max(largest_change, bf16_errors(Q, K, V, causal, &terms).second);
                    }
    }
    attn::simd::set_isa(before);
    CHECK(largest_change > 1e-4);
}

TEST_CASE(
    "bf16 fused attention with finite terms near ±FLT_MAX and rows of float32's lowest value gives naive's answer, "
    "to bfloat16's rounding, on every instruction set",
    "[bf16][terms]") {
    // Rows whose terms decide everything: a row of float32's lowest value (naive: the mean of the
    // values it sees), 2.4e38 on one key (that key's value), ±3e38 (the mean of the keys at +3e38), and
    // a first tile at −3e38 before a key at +3e38. bfloat16 rounds each value by at most 2⁻⁸ of itself;
    // the other rows are held to the bound above (its term for the terms is per row).
    std::mt19937 rng(78);
    const std::size_t tile = attn::simd::blocking().panel_kc, n = tile + 77;
    const Matrix Q = random_matrix(n, 24, rng, -2, 2), K = random_matrix(n, 24, rng, -2, 2),
                 V = random_matrix(n, 16, rng);
    const float lowest = std::numeric_limits<float>::lowest();
    auto terms = masked_reference::random_terms(n, n, false, masked_reference::Layout::full, 0.1, rng);
    const auto set = [&](std::size_t i, std::size_t from, std::size_t to, float value) {
        for (std::size_t j = from; j < to; ++j) terms.floats[i * n + j] = value;
    };
    set(7, 0, n, lowest);
    set(tile + 3, 0, n, lowest);
    set(tile + 4, tile + 1, tile + 2, 2.4e38f);
    set(tile + 5, 0, n, -3e38f);
    set(tile + 5, 2, 3, 3e38f);
    set(tile + 5, tile, tile + 1, 3e38f);
    set(tile + 6, 0, tile, -3e38f);
    set(tile + 6, tile + 2, tile + 3, 3e38f);
    const std::string before = attn::simd::isa();
    for (const std::string& isa : attn::simd::supported_isas()) {
        attn::simd::set_isa(isa);
        for (const bool causal : {false, true}) {
            INFO(isa << (causal ? ", causal" : ""));
            bf16_errors(Q, K, V, causal, &terms);  // every row within its bound (the extreme ones' is loose)
            const attn::ScoreMask mask{
                attn::ScoreMask::Kind::additive, terms.floats.data(), 0, 0, std::ptrdiff_t(n), 1};
            const Matrix got =
                attn::scaled_dot_product_attention(
                    Q, K, V,
                    {.causal = causal, .mask = &mask, .backend = attn::Backend::fused, .dtype = attn::Dtype::bf16})
                    .output;
            const Matrix want = attn::scaled_dot_product_attention(Q, K, V, {.causal = causal, .mask = &mask}).output;
            for (const std::size_t i : {std::size_t{7}, tile + 3, tile + 4, tile + 5, tile + 6})
                for (std::size_t c = 0; c < V.cols(); ++c) {
                    INFO("O[" << i << "][" << c << "] = " << got(i, c) << ", naive " << want(i, c));
                    CHECK(std::isfinite(got(i, c)));
                    CHECK(std::fabs(got(i, c) - want(i, c)) <= 0x1p-8 + 1e-6);  // u·max|v| (|v| ≤ 1), and the float sums
                }
        }
    }
    attn::simd::set_isa(before);
}

TEST_CASE("bf16 fused attention gives the same bits for 1 and 2 threads", "[bf16][parallel]") {
    std::mt19937 rng(76);
    const Matrix Q = random_matrix(700, 64, rng), K = random_matrix(700, 64, rng), V = random_matrix(700, 64, rng);
    const auto mask = masked_reference::random_terms(700, 700, true, masked_reference::Layout::full, 0.3, rng);
    const attn::simd::ScoreTerms terms = mask.view();
    for (const bool causal : {false, true})
        for (const attn::simd::ScoreTerms* given : {static_cast<const attn::simd::ScoreTerms*>(nullptr), &terms}) {
            attn::simd::set_max_threads(1);
            const Matrix one = fused_bf16(Q, K, V, causal, attn::simd::Threads::all, given);
            attn::simd::set_max_threads(2);
            const Matrix two = fused_bf16(Q, K, V, causal, attn::simd::Threads::all, given);
            CHECK(same_bits(one, two));
        }
}

TEST_CASE("the bf16 mode refuses a query or key entry that would round past the largest bfloat16", "[bf16][errors]") {
    // Step 3's float32 check allows a query near the largest float32 against small keys (their
    // products are small); rounded to bfloat16 it would be ∞, and O NaN. Just under the midpoint
    // between the largest bfloat16 and 2¹²⁸ an entry rounds down, and the mode runs.
    const float midpoint = std::bit_cast<float>(0x7F7F8000u);  // a tie, to the even pattern 0x7F80: ∞
    const float below = std::nextafter(midpoint, 0.0f);
    REQUIRE(attn::round_to_bfloat16(below) == attn::largest_bfloat16);
    REQUIRE(std::isinf(attn::round_to_bfloat16(midpoint)));
    const Matrix small{{1e-3f, 0.0f}, {0.0f, 1e-3f}}, V{{1.0f, 2.0f}, {3.0f, 4.0f}};
    const attn::AttentionOptions bf16{.backend = attn::Backend::fused, .dtype = attn::Dtype::bf16};
    // q·k_0 ≈ 2.4·10³⁵ against q·k_1 = 0: the weights are (1, 0) and O is V's first row, exactly.
    const Matrix kept = attn::scaled_dot_product_attention(Matrix{{below, 0.0f}}, small, V, bf16).output;
    CHECK(kept(0, 0) == 1.0f);
    CHECK(kept(0, 1) == 2.0f);
    for (const float x : {midpoint, FLT_MAX, -FLT_MAX}) {
        const Matrix big{{0.0f, 0.0f}, {0.0f, x}};
        CHECK_NOTHROW(attn::scaled_dot_product_attention(big, small, V));  // float32 takes it as it is
        CHECK_THROWS_AS(attn::scaled_dot_product_attention(big, small, V, bf16), std::overflow_error);
        CHECK_THROWS_WITH(
            attn::scaled_dot_product_attention(big, small, V, bf16),
            Contains("dtype bf16: Q (2×2) holds " + std::string(x < 0 ? "-" : "")) &&
                Contains("e+38 at row 1, column 1, which rounds to ±∞ in bfloat16 (the largest is 3.38953e+38)"));
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(small, big, small, bf16),
                          Contains("dtype bf16: K (2×2) holds") && Contains("at row 1, column 1"));
    }
}
