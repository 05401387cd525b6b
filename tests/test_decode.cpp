// Decoding against a key/value cache (attention/heads.hpp's CacheView, simd/decode.cpp): float16
// rounding; the decode kernel's blocks merged against one pass, for any block size, thread count and
// heads at once; grouped heads, causal and masks against a float64 model; the error bound of a 16-bit
// cache; the cache's types and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "attention/attention.hpp"
#include "attention/heads.hpp"
#include "check_close.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/float16.hpp"
#include "matrix/norms.hpp"
#include "matrix/random.hpp"
#include "simd/simd.hpp"
#include "thread_counts.hpp"

using attn::Backend;
using attn::Heads;
using attn::HeadsShape;
using attn::KvDtype;
using attn::Matrix;
using attn::ScoreMask;
using attn::simd::DecodeProblem;

namespace {

Heads random_heads(HeadsShape shape, std::mt19937& rng, float size = 1.0f) {
    return {attn::random_matrix(shape.batch * shape.heads * shape.rows, shape.cols, rng, -size, size), shape};
}

// The cache's values as floats: what every element of a 16-bit cache is read as.
Heads values_of(const attn::Cache& cache) {
    const attn::CacheView view = cache.view();
    Heads out{Matrix(view.shape.batch * view.shape.heads * view.shape.rows, view.shape.cols), view.shape};
    for (std::size_t k = 0; k < out.values.size(); ++k) {
        const std::uint16_t bits = cache.type == KvDtype::f32 ? 0 : cache.halves[k];
        out.values.data()[k] = cache.type == KvDtype::f32    ? cache.floats[k]
                               : cache.type == KvDtype::bf16 ? attn::from_bfloat16_bits(bits)
                                                             : attn::from_float16_bits(bits);
    }
    return out;
}

constexpr double minus_inf = -std::numeric_limits<double>::infinity();

// The term a mask adds to score (i, j) of head (b, h), in double: a boolean mask's false is −∞.
double term(const ScoreMask* mask, std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
    if (!mask) return 0.0;
    const std::ptrdiff_t at = std::ptrdiff_t(b) * mask->batch_stride + std::ptrdiff_t(h) * mask->head_stride +
                              std::ptrdiff_t(i) * mask->row_stride + std::ptrdiff_t(j) * mask->col_stride;
    if (mask->kind == ScoreMask::Kind::boolean)
        return static_cast<const unsigned char*>(mask->data)[at] ? 0.0 : minus_inf;
    return static_cast<const float*>(mask->data)[at];
}

// softmax(scale·Q·Kᵀ + M [causal, top-left])·V in double for every head, written apart from the
// library: O (B·H·L rows of E_v) and each row's log-sum-exp; a row no key may attend is 0, L = −∞.
struct Model {
    std::vector<std::vector<double>> O;
    std::vector<double> log_sum_exp;
};

Model model(const Heads& Q, const Heads& K, const Heads& V, double scale, const ScoreMask* mask, bool causal) {
    const std::size_t B = Q.shape.batch, H = Q.shape.heads, L = Q.shape.rows, G = H / K.shape.heads;
    const std::size_t S = K.shape.rows, E = Q.shape.cols, E_v = V.shape.cols;
    Model out{std::vector<std::vector<double>>(B * H * L, std::vector<double>(E_v, 0.0)),
              std::vector<double>(B * H * L, minus_inf)};
    std::vector<double> s(S);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                const Matrix q = Q.view().head(b, h), k = K.view().head(b, h / G), v = V.view().head(b, h / G);
                double top = minus_inf;
                for (std::size_t j = 0; j < S; ++j) {
                    double dot = 0.0;
                    for (std::size_t p = 0; p < E; ++p) dot += double(q(i, p)) * k(j, p);
                    s[j] = causal && j > i ? minus_inf : scale * dot + term(mask, b, h, i, j);
                    top = std::max(top, s[j]);
                }
                if (top == minus_inf) continue;
                double total = 0.0;
                for (double& x : s) total += (x = std::exp(x - top));
                const std::size_t row = (b * H + h) * L + i;
                out.log_sum_exp[row] = top + std::log(total);
                for (std::size_t j = 0; j < S; ++j)
                    for (std::size_t c = 0; c < E_v; ++c) out.O[row][c] += s[j] / total * v(j, c);
            }
    return out;
}

bool same_bits(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
        if (std::bit_cast<std::uint32_t>(a.data()[k]) != std::bit_cast<std::uint32_t>(b.data()[k])) return false;
    return true;
}

// The decode kernel alone on `groups` key/value heads of a cache: Q is (1, groups, rows, E), K and V
// (1, groups, S, ·) in the cache's type. Returns O (groups·rows × E_v) and, when asked, L.
struct Decoded {
    Matrix O, log_sum_exp;
    std::vector<double> largest_norms;  // per group, max ‖k_j‖ and max ‖v_j‖ as the kernel measured them
};

Decoded decode(const Heads& Q, const attn::Cache& K, const attn::Cache& V, std::size_t positions, bool causal,
               std::size_t block, attn::simd::Threads threads, const attn::simd::ScoreTerms* row_terms = nullptr) {
    const std::size_t groups = Q.shape.heads, rows = Q.shape.rows;
    Decoded out{Matrix(groups * rows, V.shape.cols), Matrix(groups * rows, attn::simd::log_sum_exp_floats),
                std::vector<double>(2 * groups)};
    attn::simd::Blocking blocking = attn::simd::blocking();
    blocking.decode_keys = block;
    const DecodeProblem problem{.Q = Q.values.data(),
                                .K = K.view().data,
                                .V = V.view().data,
                                .type = K.type,
                                .groups = groups,
                                .rows = rows,
                                .positions = positions,
                                .keys = K.shape.rows,
                                .d_k = Q.shape.cols,
                                .d_v = V.shape.cols,
                                .scale = 1.0f / std::sqrt(float(Q.shape.cols)),
                                .causal = causal,
                                .row_terms = row_terms,
                                .O = out.O.data(),
                                .log_sum_exp = out.log_sum_exp.data(),
                                .largest_norms = out.largest_norms.data()};
    attn::simd::decode_attention_into(problem, threads, blocking);
    return out;
}

}  // namespace

TEST_CASE("float16: every pattern survives the round trip, NaNs stay NaN", "[decode][f16]") {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        const float x = attn::from_float16_bits(bits);
        const bool nan = (bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) != 0;
        if (nan) {
            CHECK(std::isnan(x));
            CHECK((attn::float16_bits(x) & 0x7FFFu) > 0x7C00u);
            continue;
        }
        if (attn::float16_bits(x) != bits) FAIL_CHECK("pattern " << h << " came back as " << attn::float16_bits(x));
    }
    CHECK(attn::from_float16_bits(0x3C00) == 1.0f);
    CHECK(attn::from_float16_bits(0x7BFF) == 65504.0f);          // the largest float16
    CHECK(attn::from_float16_bits(0x0400) == 0x1p-14f);          // the smallest normal
    CHECK(attn::from_float16_bits(0x0001) == 0x1p-24f);          // the smallest subnormal
    CHECK(attn::from_float16_bits(0x83FF) == -1023 * 0x1p-24f);  // the largest subnormal, negative
    CHECK(attn::from_float16_bits(0xFC00) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("float16: nearest, ties to even, overflow to ∞, subnormals kept", "[decode][f16]") {
    using attn::float16_bits;
    // 1 + 2⁻¹¹ lies halfway between 1 and 1 + 2⁻¹⁰: ties go to the even one, 1; 1 + 3·2⁻¹¹ lies halfway
    // between 1 + 2⁻¹⁰ (odd) and 1 + 2·2⁻¹⁰ (even): up.
    CHECK(float16_bits(1.0f + 0x1p-11f) == 0x3C00);
    CHECK(float16_bits(1.0f + 3 * 0x1p-11f) == 0x3C02);
    CHECK(float16_bits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);  // just past halfway: up
    CHECK(float16_bits(-2.0f) == 0xC000);
    CHECK(float16_bits(65504.0f) == 0x7BFF);
    CHECK(float16_bits(65519.996f) == 0x7BFF);  // under the midpoint to 2¹⁶: the largest float16
    CHECK(float16_bits(65520.0f) == 0x7C00);    // the midpoint, a tie to the even one: ∞
    CHECK(float16_bits(-1e30f) == 0xFC00);
    CHECK(float16_bits(std::numeric_limits<float>::infinity()) == 0x7C00);
    CHECK(float16_bits(0x1p-24f) == 0x0001);             // the smallest subnormal stays
    CHECK(float16_bits(0x1p-25f) == 0x0000);             // half of it: a tie, to even (0)
    CHECK(float16_bits(0x1p-25f + 0x1p-40f) == 0x0001);  // just past half: up
    CHECK(float16_bits(3 * 0x1p-25f) == 0x0002);         // 1.5 steps: a tie, to even (2)
    CHECK(float16_bits(-0x1p-30f) == 0x8000);            // −0
    CHECK(float16_bits(0x1p-14f - 0x1p-25f) == 0x0400);  // rounds up into the smallest normal
    CHECK(float16_bits(0x1p-130f) == 0x0000);            // a float subnormal: 0
    CHECK(std::isnan(attn::from_float16_bits(float16_bits(std::numeric_limits<float>::quiet_NaN()))));
    // Within 2⁻¹¹ of the value over a million floats of the normal range, and that much is reached.
    std::mt19937 rng(561);
    std::uniform_real_distribution<float> exponent(-14.0f, 15.9f);
    double worst = 0.0;
    for (int k = 0; k < 1000000; ++k) {
        const float x = std::exp2(exponent(rng));
        const double rounded = attn::from_float16_bits(float16_bits(x));
        worst = std::max(worst, std::fabs(rounded - x) / x);
        if (std::fabs(rounded - x) > std::ldexp(1.0, std::ilogb(x) - 11))
            FAIL_CHECK(x << " rounded to " << rounded << ", more than half a step away");
    }
    INFO("largest relative rounding error: " << worst);
    CHECK(worst <= 0x1p-11);
    CHECK(worst > 0x1p-12);
}

TEST_CASE("the cache's type by name, and back", "[decode]") {
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        CHECK(attn::kv_dtype_from_string(attn::to_string(type)) == type);
    CHECK(attn::to_string(KvDtype::f16) == "f16");
    CHECK_THROWS_WITH(attn::kv_dtype_from_string("fp8"),
                      Catch::Contains("fp8") && Catch::Contains("f32, bf16 and f16"));
}

TEST_CASE("a cache made from floats reads back as the floats rounded to its type", "[decode]") {
    std::mt19937 rng(571);
    const Heads X = random_heads({2, 3, 5, 7}, rng, 100.0f);
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16}) {
        const attn::Cache cache = attn::to_cache(X.view(), type);
        CHECK(cache.view().shape.heads == 3);
        CHECK(cache.view().type == type);
        const Heads back = attn::to_floats(cache.view());
        CHECK(back.values == values_of(cache).values);
        if (type == KvDtype::f32) CHECK(back.values == X.values);
        else check_close(back.values, X.values, 0.0, type == KvDtype::bf16 ? 0x1p-8 : 0x1p-11);
    }
    CHECK_THROWS_WITH(attn::to_cache({nullptr, {1, 1, 2, 2}}, KvDtype::bf16, "K"),
                      Catch::Contains("to_cache: K (1×1×2×2) has no data"));
}

TEST_CASE("a finite float that would be stored as ±∞ is refused by name and place; ±∞ itself is kept",
          "[decode][errors]") {
    // 65519 rounds down to the largest float16, 65504; 65520 (the midpoint with 2¹⁶, a tie to the
    // even pattern) up to ∞. Likewise for bfloat16 just under and at its midpoint with 2¹²⁸.
    const float bf16_midpoint = std::bit_cast<float>(0x7F7F8000u);
    for (const auto& [type, below, at] : {std::tuple{KvDtype::f16, 65519.0f, 65520.0f},
                                          {KvDtype::bf16, std::nextafter(bf16_midpoint, 0.0f), bf16_midpoint}}) {
        INFO(attn::to_string(type));
        std::vector<float> floats{1.0f, -below, 2.0f, 3.0f};
        const attn::Cache kept = attn::to_cache({floats.data(), {1, 1, 2, 2}}, type, "K");
        CHECK(attn::to_floats(kept.view()).values(0, 1) ==
              -(type == KvDtype::f16 ? attn::largest_float16 : attn::largest_bfloat16));
        floats[2] = -at;
        CHECK_THROWS_AS(attn::to_cache({floats.data(), {1, 1, 2, 2}}, type, "K"), std::overflow_error);
        CHECK_THROWS_WITH(attn::to_cache({floats.data(), {1, 1, 2, 2}}, type, "K"),
                          Catch::Contains("to_cache: K (1×1×2×2) holds -") &&
                              Catch::Contains(" at [0, 0, 1, 0], which rounds to ±∞ in " + attn::to_string(type)));
        floats[2] = -std::numeric_limits<float>::infinity();  // the caller's own ∞: stored, and refused by the decode
        CHECK((attn::to_cache({floats.data(), {1, 1, 2, 2}}, type, "K").halves[2] & 0x7FFFu) ==
              (type == KvDtype::f16 ? 0x7C00u : 0x7F80u));
    }
}

TEST_CASE("a cache of any type, on every backend, is the naive chain on the values its bits hold", "[decode]") {
    std::mt19937 rng(562);
    const Heads Q = random_heads({2, 4, 3, 16}, rng), K = random_heads({2, 2, 37, 16}, rng),
                V = random_heads({2, 2, 37, 8}, rng);
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        for (const Backend backend : {Backend::naive, Backend::simd, Backend::parallel, Backend::fused}) {
            INFO(attn::to_string(type) << " on " << attn::to_string(backend));
            const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
            const attn::AttentionOptions options{.causal = true, .backend = backend};
            const auto got = attn::scaled_dot_product_attention(Q.view(), Kc.view(), Vc.view(), options);
            const Heads Kw = values_of(Kc), Vw = values_of(Vc);
            const auto want = attn::scaled_dot_product_attention(Q.view(), Kw.view(), Vw.view(),
                                                                 {.causal = true, .backend = Backend::naive});
            check_close(got.output.values, want.output.values, 1e-6, 1e-5);
        }
}

TEST_CASE("a cache whose keys and values differ in type, or that holds NaN, is refused", "[decode][errors]") {
    std::mt19937 rng(563);
    const Heads Q = random_heads({1, 2, 1, 8}, rng), K = random_heads({1, 1, 5, 8}, rng);
    const attn::Cache bf16 = attn::to_cache(K.view(), KvDtype::bf16), f16 = attn::to_cache(K.view(), KvDtype::f16);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), bf16.view(), f16.view()),
                      Catch::Contains("K (1×1×5×8) is bf16 and V (1×1×5×8) is f16"));
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), K.view(), f16.view()),
                      Catch::Contains("is f32") && Catch::Contains("is f16"));
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), f16.view(), f16.view(),
                                                         {.backend = Backend::fused, .keep_for_backward = true}),
                      Catch::Contains("f16 cache has no backward"));
    for (const Backend backend : {Backend::naive, Backend::fused}) {
        attn::Cache bad = attn::to_cache(K.view(), KvDtype::f16);
        bad.halves[13] = 0x7E00;  // a NaN
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), bad.view(), f16.view(), {.backend = backend}),
                          Catch::Contains("K (") && Catch::Contains("NaN or ±inf"));
        bad.halves[13] = 0x7C00;  // ∞
        CHECK_THROWS_AS(attn::scaled_dot_product_attention(Q.view(), f16.view(), bad.view(), {.backend = backend}),
                        std::invalid_argument);
    }
    const attn::CacheView short_V(f16.halves.data(), {1, 1, 4, 8}, KvDtype::f16);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), f16.view(), short_V),
                      Catch::Contains("K (1×1×5×8) and V (1×1×4×8) must have the same number of keys S"));
}

TEST_CASE("the decode kernel's blocks merged equal one pass over the keys, for any block size", "[decode][blocks]") {
    // One block of every key is the online softmax's single pass; more blocks only change the order of
    // the float sums, so every split stays within float32 rounding of it (and of the float64 model).
    std::mt19937 rng(564);
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        for (const std::size_t S : {1, 5, 300, 1031})
            for (const bool causal : {false, true}) {
                const std::size_t L = 3;  // 2 query heads of 3 positions per group
                const Heads Q = random_heads({1, 2, 2 * L, 37}, rng, 2.0f), K = random_heads({1, 2, S, 37}, rng, 2.0f),
                            V = random_heads({1, 2, S, 19}, rng);
                const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                const Decoded one_pass = decode(Q, Kc, Vc, L, causal, S, attn::simd::Threads::one);
                for (const std::size_t block : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64},
                                                std::size_t{256}, S - S / 3, S + 1}) {
                    INFO(attn::to_string(type) << ", S = " << S << ", causal " << causal << ", block " << block);
                    const Decoded split = decode(Q, Kc, Vc, L, causal, block, attn::simd::Threads::one);
                    check_close(split.O, one_pass.O, 1e-6, 1e-5);
                    check_close(split.log_sum_exp, one_pass.log_sum_exp, 1e-6, 1e-6);
                }
            }
}

TEST_CASE("the decode kernel measures the largest row norms of the cache it reads, every row once", "[decode][norms]") {
    // The caller checks the cache with these norms (NaN and ±∞ refused, the float range bounded), so
    // every row counts: the first, those at tile and block edges, the last, the rows of blocks no
    // query may see (causal), the tails after the last full step, and squares past the float range.
    std::mt19937 rng(573);
    const std::size_t S = 300, groups = 2;
    const float big_value = 1e20f;  // squared: past FLT_MAX, measured in double
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        for (const std::size_t E : {8, 37, 128})
            for (const std::size_t rows : {1, 4, 5})
                for (const std::size_t row : {0, 15, 16, 96, 97, 299}) {
                    const bool causal = row % 2 == 1;
                    INFO(attn::to_string(type)
                         << ", E = " << E << ", " << rows << " rows, row " << row << (causal ? ", causal" : ""));
                    const Heads Q = random_heads({1, groups, rows, E}, rng);
                    Heads K = random_heads({1, groups, S, E}, rng), V = random_heads({1, groups, S, E}, rng);
                    const float big = type == KvDtype::f16 ? 6e4f : big_value;
                    K.values(S + row, E - 1) = big;  // group 1
                    V.values(row, E / 2) = -big;     // group 0
                    const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                    const Heads Kw = values_of(Kc), Vw = values_of(Vc);
                    const Decoded got = decode(Q, Kc, Vc, 1, causal, 97, attn::simd::Threads::one);
                    for (std::size_t g = 0; g < groups; ++g) {
                        const Matrix k = Kw.view().head(0, g), v = Vw.view().head(0, g);
                        CHECK(got.largest_norms[2 * g] == Approx(attn::max_row_norm(k)).epsilon(1e-5));
                        CHECK(got.largest_norms[2 * g + 1] == Approx(attn::max_row_norm(v)).epsilon(1e-5));
                    }
                    for (const float bad : {NAN, INFINITY, -INFINITY}) {
                        attn::Cache Kb = Kc, Vb = Vc;
                        if (type == KvDtype::f32) Kb.floats[S * E + row * E + 1] = Vb.floats[row * E + E - 1] = bad;
                        else
                            Kb.halves[S * E + row * E + 1] = Vb.halves[row * E + E - 1] =
                                type == KvDtype::bf16 ? attn::bfloat16_bits(bad) : attn::float16_bits(bad);
                        const Decoded with_bad = decode(Q, Kb, Vb, 1, causal, 97, attn::simd::Threads::one);
                        CHECK(!std::isfinite(with_bad.largest_norms[2]));  // group 1's keys
                        CHECK(!std::isfinite(with_bad.largest_norms[1]));  // group 0's values
                        CHECK(std::isfinite(with_bad.largest_norms[0]));
                    }
                }
}

TEST_CASE("the decode kernel gives the same bits for 1 and 2 threads and for heads at once or one at a time",
          "[decode][parallel]") {
    std::mt19937 rng(565);
    const std::size_t groups = 3, rows = 4, S = 3000;  // 2·3·4·3000·(64 + 64) flops: enough for a team
    const Heads Q = random_heads({1, groups, rows, 64}, rng), K = random_heads({1, groups, S, 64}, rng),
                V = random_heads({1, groups, S, 64}, rng);
    std::vector<unsigned char> keep(groups * rows * S);
    for (auto& flag : keep) flag = rng() % 4 != 0;
    std::fill(keep.begin() + 5 * S, keep.begin() + 6 * S, 0);  // one row no key may attend
    std::vector<attn::simd::ScoreTerms> terms;
    for (std::size_t row = 0; row < groups * rows; ++row) terms.push_back({keep.data() + row * S, true, 0, 1});
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        for (const std::size_t block : {std::size_t{1}, std::size_t{97}, std::size_t{256}})
            for (const bool masked : {false, true}) {
                INFO(attn::to_string(type) << ", block " << block << (masked ? ", masked" : ""));
                const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                const attn::simd::ScoreTerms* given = masked ? terms.data() : nullptr;
                const Decoded alone = decode(Q, Kc, Vc, 2, true, block, attn::simd::Threads::one, given);
                if (masked) {
                    CHECK(alone.O(5, 0) == 0.0f);
                    CHECK(alone.log_sum_exp(5, 0) == -std::numeric_limits<float>::infinity());
                }
                if (several_thread_counts()) {
                    const int before = attn::simd::max_threads();
                    attn::simd::set_max_threads(2);
                    const Decoded team = decode(Q, Kc, Vc, 2, true, block, attn::simd::Threads::all, given);
                    attn::simd::set_max_threads(before);
                    CHECK(attn::simd::last_team_size() == 2);
                    CHECK(same_bits(team.O, alone.O));
                    CHECK(same_bits(team.log_sum_exp, alone.log_sum_exp));
                }
                for (std::size_t g = 0; g < groups; ++g) {  // group g alone: a cache of one head
                    const Heads Qg{Matrix::borrow(Q.values.data() + g * rows * 64, rows, 64), {1, 1, rows, 64}};
                    const Heads Kg{Matrix::borrow(K.values.data() + g * S * 64, S, 64), {1, 1, S, 64}},
                        Vg{Matrix::borrow(V.values.data() + g * S * 64, S, 64), {1, 1, S, 64}};
                    const Decoded one =
                        decode(Qg, attn::to_cache(Kg.view(), type), attn::to_cache(Vg.view(), type), 2, true, block,
                               attn::simd::Threads::one, masked ? terms.data() + g * rows : nullptr);
                    Matrix rows_of_g(rows, 64);
                    for (std::size_t r = 0; r < rows; ++r)
                        for (std::size_t c = 0; c < 64; ++c) rows_of_g(r, c) = alone.O(g * rows + r, c);
                    CHECK(same_bits(one.O, rows_of_g));
                }
            }
}

TEST_CASE("decoded heads are refused as every backend refuses them: the first failing head's first error",
          "[decode][errors][gqa]") {
    // Two query heads share one cached head. The other backends check head by head (Q, K, V, then the
    // float32 bounds on that head's own queries); the decode kernel reads the group at once, but must
    // refuse with the same message: a NaN in query head 1 comes after the ∞ in the key head 0 reads,
    // and the bound names head 0's queries, not the larger ones of head 1.
    std::mt19937 rng(568);
    const auto message = [](const Heads& Q, const Heads& K, const Heads& V, Backend backend) -> std::string {
        try {
            (void)attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), {.backend = backend});
        } catch (const std::exception& e) {
            return e.what();
        }
        return "no refusal";
    };
    Heads Q = random_heads({1, 2, 1, 8}, rng), K = random_heads({1, 1, 5, 8}, rng);
    const Heads V = random_heads({1, 1, 5, 4}, rng);
    Q.values.data()[8 + 3] = std::numeric_limits<float>::quiet_NaN();  // query head 1
    K.values.data()[2] = std::numeric_limits<float>::infinity();
    CHECK_THAT(message(Q, K, V, Backend::naive), Catch::Contains("K (5×8) holds NaN or ±inf"));
    CHECK(message(Q, K, V, Backend::fused) == message(Q, K, V, Backend::naive));
    for (std::size_t i = 0; i < 16; ++i) Q.values.data()[i] = i < 8 ? 1e19f : 3e19f;  // head 1's rows larger
    for (std::size_t i = 0; i < 40; ++i) K.values.data()[i] = 1e19f;
    CHECK_THAT(message(Q, K, V, Backend::naive), Catch::Contains("step 3 (S = Q·Kᵀ) could leave the float32 range"));
    CHECK(message(Q, K, V, Backend::fused) == message(Q, K, V, Backend::naive));
    // Head 0's scores near 1e38 without a term, head 1's near 1 with a term of 3.3e38: each head within
    // the bound (scale·max‖q_i‖·max‖k_j‖ + ½·term ≤ 1.7e38), so every backend computes them; the group's
    // largest queries together with its largest term would not be.
    const auto column = [](std::vector<float> x, HeadsShape shape) {  // heads of width 1
        Heads h{Matrix(x.size(), 1), shape};
        std::copy(x.begin(), x.end(), h.values.data());
        return h;
    };
    const Heads q = column({1e19f, 1.0f}, {1, 2, 1, 1}), k = column({1e19f, 1e19f}, {1, 1, 2, 1}),
                v = column({1.0f, 1.0f}, {1, 1, 2, 1});
    const std::vector<float> terms = {0.0f, 0.0f, 3.3e38f, 3.3e38f};
    const ScoreMask mask{ScoreMask::Kind::additive, terms.data(), 0, 2, 2, 1};
    for (const Backend backend : {Backend::naive, Backend::fused}) {
        INFO(attn::to_string(backend));
        const auto got = attn::scaled_dot_product_attention(
            q.view(), k.view(), v.view(), {.mask = &mask, .scale = attn::Scale::none, .backend = backend});
        CHECK(got.output.values(0, 0) == 1.0f);
        CHECK(got.output.values(1, 0) == 1.0f);
    }
    // The forward of a backward call is checked by the forward's checks on every backend, decoded or not.
    const Matrix q1(1, 4, 0.5f), k1(3, 4, 0.25f), v1(3, 2, 1.0f), dO(1, 2, 1.0f);
    const std::vector<float> plus_infinity = {0.0f, std::numeric_limits<float>::infinity(), 0.0f};
    const ScoreMask bad_term{ScoreMask::Kind::additive, plus_infinity.data(), 0, 0, 3, 1};
    std::vector<std::string> refusals;
    for (const Backend backend : {Backend::naive, Backend::fused}) try {
            (void)attn::attention_forward_backward(q1, k1, v1, dO, {.mask = &bad_term, .backend = backend});
            refusals.emplace_back("no refusal");
        } catch (const std::invalid_argument& e) {
            refusals.emplace_back(e.what());
        }
    CHECK_THAT(refusals[0], Catch::Contains("the mask's term for query 0, key 1 is +∞"));
    CHECK(refusals[1] == refusals[0]);
}

TEST_CASE("grouped and multi-query heads, L = 1 to 4, causal and any S, match the float64 model", "[decode][gqa]") {
    // Backend::fused decodes every 16-bit cache and float caches of 1 or 2 rows per query head (the
    // others run the fused kernel); each is checked against the model on the values the cache holds.
    std::mt19937 rng(566);
    struct Heads_ {
        std::size_t H, H_kv;
    };
    for (const Heads_ heads : {Heads_{1, 1}, Heads_{4, 1}, Heads_{8, 8}, Heads_{8, 2}, Heads_{16, 2}})
        for (const std::size_t L : {1, 2, 3, 4})
            for (const std::size_t S : {1, 3, 257, 2600}) {
                const std::size_t E = std::vector<std::size_t>{64, 128, 7, 33}[(L + S) % 4], E_v = L == 2 ? 40 : E;
                const bool causal = S % 2 == 1;
                const KvDtype type = std::vector<KvDtype>{KvDtype::f32, KvDtype::bf16, KvDtype::f16}[(S + L) % 3];
                INFO("H = " << heads.H << ", H_kv = " << heads.H_kv << ", L = " << L << ", S = " << S << ", E = " << E
                            << ", E_v = " << E_v << ", " << attn::to_string(type) << (causal ? ", causal" : ""));
                const Heads Q = random_heads({2, heads.H, L, E}, rng, 2.0f),
                            K = random_heads({2, heads.H_kv, S, E}, rng),
                            V = random_heads({2, heads.H_kv, S, E_v}, rng);
                const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                const auto got = attn::scaled_dot_product_attention(Q.view(), Kc.view(), Vc.view(),
                                                                    {.causal = causal, .backend = Backend::fused});
                const Model want = model(Q, values_of(Kc), values_of(Vc), 1.0 / std::sqrt(double(E)), nullptr, causal);
                check_close(got.output.values, want.O, 2e-6, 2e-5);
            }
}

TEST_CASE("masks on decoded heads: boolean with rows no key may attend, additive, broadcast", "[decode][mask]") {
    std::mt19937 rng(567);
    const std::size_t B = 2, H = 8, H_kv = 2, L = 2, S = 700, E = 24;
    const Heads Q = random_heads({B, H, L, E}, rng, 2.0f), K = random_heads({B, H_kv, S, E}, rng),
                V = random_heads({B, H_kv, S, E}, rng);
    std::vector<unsigned char> keep(B * H * L * S);
    std::vector<float> bias(B * H * L * S);
    for (std::size_t k = 0; k < keep.size(); ++k) {
        keep[k] = rng() % 3 != 0;
        bias[k] = rng() % 5 == 0 ? -std::numeric_limits<float>::infinity() : float(rng() % 1000) / 250.0f - 2.0f;
    }
    std::fill(keep.begin() + 3 * S, keep.begin() + 4 * S, 0);  // head (0, 1), row 1: no key at all
    const std::ptrdiff_t bs = std::ptrdiff_t(H * L * S), hs = std::ptrdiff_t(L * S), rs = std::ptrdiff_t(S);
    const ScoreMask masks[] = {{ScoreMask::Kind::boolean, keep.data(), bs, hs, rs, 1},
                               {ScoreMask::Kind::additive, bias.data(), bs, hs, rs, 1},
                               {ScoreMask::Kind::boolean, keep.data(), 0, 0, 0, 1},  // one padding row for all
                               {ScoreMask::Kind::additive, bias.data(), 0, hs, rs, 1}};
    for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
        for (const ScoreMask& mask : masks)
            for (const bool causal : {false, true}) {
                INFO(attn::to_string(type) << ", mask strides " << mask.batch_stride << "/" << mask.head_stride << "/"
                                           << mask.row_stride << (causal ? ", causal" : ""));
                const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                const bool keep_L = type == KvDtype::f32;
                const auto got = attn::scaled_dot_product_attention(
                    Q.view(), Kc.view(), Vc.view(),
                    {.causal = causal, .mask = &mask, .backend = Backend::fused, .keep_for_backward = keep_L});
                const Model want = model(Q, values_of(Kc), values_of(Vc), 1.0 / std::sqrt(double(E)), &mask, causal);
                check_close(got.output.values, want.O, 2e-6, 2e-5);
                CHECK(std::all_of(got.output.values.data(), got.output.values.data() + got.output.values.size(),
                                  [](float x) { return std::isfinite(x); }));
                if (!keep_L) continue;
                for (std::size_t row = 0; row < B * H * L; ++row) {
                    const double l = got.log_sum_exp.values(row, 0), w = want.log_sum_exp[row];
                    if (!(l == w || std::fabs(l - w) <= 1e-5 * (1 + std::fabs(w))))
                        FAIL_CHECK("row " << row << ": L = " << l << ", want " << w);
                }
            }
}

TEST_CASE(
    "finite mask terms near float32's largest, rows of its lowest, and scores near the float range give "
    "naive's answer on every cache type",
    "[decode][mask][extreme]") {
    // Naive adds s_j = scale·q·k_j + term_j in float and exponentiates s_j − max: every finite term is
    // allowed (2.4e38 included), and a row of float32's lowest value (PyTorch's finfo.min, a common
    // "masked") is finite too: its scores are all equal, and the output is the mean of the values.
    std::mt19937 rng(572);
    const std::size_t H = 4, H_kv = 2, S = 2600, E = 24;  // S: three blocks of 1024 keys, merged
    const float lowest = std::numeric_limits<float>::lowest(), big = 2.4e38f,
                inf = std::numeric_limits<float>::infinity();
    for (const std::size_t L : {1, 2}) {
        // Each query row a different edge of the additive mask (row = h·L + i).
        std::vector<float> bias(H * L * S);
        for (std::size_t row = 0; row < H * L; ++row) {
            float* t = bias.data() + row * S;
            for (std::size_t j = 0; j < S; ++j) t[j] = float(rng() % 1000) / 250.0f - 2.0f;
            switch (row % 8) {
                case 0: std::fill(t, t + S, lowest); break;  // the mean of every value
                case 1: t[1500] = big; break;                // that key alone, whatever else
                case 2: t[10] = t[2500] = big; break;        // two equal scores in different blocks: their mean
                case 3:  // lowest, and −∞ at every third key: the mean of the rest
                    for (std::size_t j = 0; j < S; ++j) t[j] = j % 3 == 0 ? -inf : lowest;
                    break;
                case 4:  // lowest everywhere but one key at 0 (in the last block)
                    std::fill(t, t + S, lowest);
                    t[2100] = 0.0f;
                    break;
                case 5:  // −∞ everywhere but one key at lowest
                    std::fill(t, t + S, -inf);
                    t[700] = lowest;
                    break;
                case 6: t[0] = big, t[1] = -big; break;  // the first key (the causal rows see it)
                default: t[S - 1] = lowest; break;       // one term at lowest among ordinary ones
            }
        }
        const std::ptrdiff_t hs = std::ptrdiff_t(L * S), rs = std::ptrdiff_t(S);
        const ScoreMask additive{ScoreMask::Kind::additive, bias.data(), 0, hs, rs, 1};
        // Scores near the float range, the most the checks allow (‖q‖·‖k‖ ≤ FLT_MAX/2, scale 1), under a
        // boolean mask: the largest visible score takes the weight.
        std::vector<unsigned char> keep(H * L * S);
        for (auto& flag : keep) flag = rng() % 3 != 0;
        const ScoreMask boolean{ScoreMask::Kind::boolean, keep.data(), 0, hs, rs, 1};
        const Heads Q = random_heads({1, H, L, E}, rng, 2.0f), K = random_heads({1, H_kv, S, E}, rng),
                    V = random_heads({1, H_kv, S, E}, rng);
        Heads Q_big = Q;
        for (std::size_t k = 0; k < Q_big.values.size(); ++k)
            Q_big.values.data()[k] *= 5e36f;  // ‖q‖·‖k‖ up to about 1.2e38
        for (const KvDtype type : {KvDtype::f32, KvDtype::bf16, KvDtype::f16})
            for (const bool causal : {false, true})
                for (const ScoreMask* mask : {&additive, &boolean}) {
                    INFO(attn::to_string(type) << ", L = " << L << (causal ? ", causal" : "")
                                               << (mask == &additive ? ", additive" : ", boolean, scores near 1e38"));
                    const Heads& q = mask == &additive ? Q : Q_big;
                    const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                    attn::AttentionOptions options{.causal = causal, .mask = mask, .backend = Backend::fused};
                    if (mask == &boolean) options.explicit_scale = 1.0f;
                    const auto got = attn::scaled_dot_product_attention(q.view(), Kc.view(), Vc.view(), options);
                    options.backend = Backend::naive;
                    const Heads Kw = values_of(Kc), Vw = values_of(Vc);
                    const auto want = attn::scaled_dot_product_attention(q.view(), Kw.view(), Vw.view(), options);
                    check_close(got.output.values, want.output.values, 1e-6, 1e-5);
                }
    }
}

TEST_CASE("a float cache decoded keeps the log-sum-exp the fused backward needs", "[decode][backward]") {
    std::mt19937 rng(568);
    const Heads Q = random_heads({1, 4, 1, 16}, rng), K = random_heads({1, 2, 300, 16}, rng),
                V = random_heads({1, 2, 300, 8}, rng), dO = random_heads({1, 4, 1, 8}, rng);
    const attn::AttentionOptions fused{.backend = Backend::fused, .keep_for_backward = true};
    const auto forward = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), fused);  // L = 1: decoded
    const auto grads =
        attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), forward, dO.view(), fused);
    const attn::AttentionOptions naive{.backend = Backend::naive, .keep_for_backward = true};
    const auto reference = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), naive);
    const auto want =
        attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), reference, dO.view(), naive);
    check_close(grads.dQ.values, want.dQ.values, 1e-6, 1e-4);
    check_close(grads.dK.values, want.dK.values, 1e-6, 1e-4);
    check_close(grads.dV.values, want.dV.values, 1e-6, 1e-4);
}

namespace {

// The error a 16-bit cache allows, against the float64 chain on the unrounded cache.
//
// Each cached number x is stored as x̂ with |x̂ − x| ≤ u·|x| + η: rounding to nearest moves it by at
// most half a step, u = 2⁻⁸ of its size for bfloat16 (8 significant bits) and 2⁻¹¹ for float16 (11);
// η covers the numbers below the normal range, where the steps stop shrinking: float16's subnormal
// step is 2⁻²⁴, so η = 2⁻²⁵; bfloat16 flushes a float below 2⁻¹²⁶ to 0, so η = 2⁻¹²⁶.
//
// Scores. ŝ_j − s_j = c·Σ_p q_p·(k̂_jp − k_jp), so |ŝ_j − s_j| ≤ ε_j = c·Σ_p |q_p|·(u·|k_jp| + η), and
// ε = max_j ε_j over the keys the row sees (c: the scale).
// Softmax. α̂_j = e^(ŝ_j) / Σ_t e^(ŝ_t): the numerator moves by a factor within [e^(−ε), e^(ε)] and so
// does the denominator, so α̂_j / α_j lies within [e^(−2ε), e^(2ε)] and |α̂_j − α_j| ≤ (e^(2ε) − 1)·α_j.
// Weighted sum. ô − o = Σ_j (α̂_j − α_j)·v̂_j + Σ_j α_j·(v̂_j − v_j), so for each column c
//     |ô_c − o_c| ≤ (e^(2ε) − 1)·Σ_j α_j·|v̂_jc| + Σ_j α_j·(u·|v_jc| + η).
// The kernel's own float32 rounding comes on top; it is what the tight check against the chain on
// the rounded cache (the values the cache holds) allows.
struct Rounding {
    double u, eta;
};
Rounding rounding_of(KvDtype type) {
    return type == KvDtype::bf16 ? Rounding{0x1p-8, 0x1p-126} : Rounding{0x1p-11, 0x1p-25};
}

// That bound for every output element of a one-batch, one-group problem without mask (Q: H heads of
// L rows, K and V: one key/value head), computed in double from the exact α.
std::vector<std::vector<double>> rounding_bound(const Heads& Q, const Heads& K, const Heads& V, const Heads& V_held,
                                                bool causal, Rounding r) {
    const std::size_t rows = Q.shape.heads * Q.shape.rows, L = Q.shape.rows, S = K.shape.rows, E = Q.shape.cols;
    const double c = 1.0 / std::sqrt(double(E));
    const Model exact = model(Q, K, V, c, nullptr, causal);
    std::vector<std::vector<double>> bound(rows, std::vector<double>(V.shape.cols, 0.0));
    for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t seen = causal ? std::min(S, row % L + 1) : S;
        double eps = 0.0;
        std::vector<double> alpha(seen);
        for (std::size_t j = 0; j < seen; ++j) {
            double e = 0.0, s = 0.0;
            for (std::size_t p = 0; p < E; ++p) {
                const double q = Q.values(row, p), k = K.values(j, p);
                e += std::fabs(q) * (r.u * std::fabs(k) + r.eta);
                s += q * k;
            }
            eps = std::max(eps, c * e);
            alpha[j] = std::exp(c * s - exact.log_sum_exp[row]);
        }
        for (std::size_t col = 0; col < V.shape.cols; ++col)
            for (std::size_t j = 0; j < seen; ++j)
                bound[row][col] += std::expm1(2 * eps) * alpha[j] * std::fabs(V_held.values(j, col)) +
                                   alpha[j] * (r.u * std::fabs(V.values(j, col)) + r.eta);
    }
    return bound;
}

// The largest |got − want| / bound over the elements, after checking each against bound + slack.
double used_of_bound(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want,
                     const std::vector<std::vector<double>>& bound, double slack_abs, double slack_rel) {
    double used = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i)
        for (std::size_t c = 0; c < got[i].size(); ++c) {
            const double error = std::fabs(got[i][c] - want[i][c]);
            if (error > bound[i][c] + slack_abs + slack_rel * std::fabs(want[i][c]))
                FAIL_CHECK("element (" << i << ", " << c << "): error " << error << " over the bound " << bound[i][c]);
            if (bound[i][c] > 0) used = std::max(used, error / bound[i][c]);
        }
    return used;
}

std::vector<std::vector<double>> rows_of(const Matrix& M) {
    std::vector<std::vector<double>> out(M.rows(), std::vector<double>(M.cols()));
    for (std::size_t i = 0; i < M.rows(); ++i)
        for (std::size_t c = 0; c < M.cols(); ++c) out[i][c] = M(i, c);
    return out;
}

}  // namespace

TEST_CASE("a 16-bit cache is within the bound its rounding allows of the float64 chain", "[decode][bound]") {
    std::mt19937 rng(569);
    for (const KvDtype type : {KvDtype::bf16, KvDtype::f16}) {
        double worst = 0.0;
        for (const std::size_t S : {1, 40, 1000})
            for (const std::size_t E : {8, 64, 129})
                for (const bool causal : {false, true}) {
                    INFO(attn::to_string(type) << ", S = " << S << ", E = " << E << (causal ? ", causal" : ""));
                    const Heads Q = random_heads({1, 4, 2, E}, rng, 3.0f), K = random_heads({1, 1, S, E}, rng, 2.0f),
                                V = random_heads({1, 1, S, 24}, rng);
                    const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
                    const Heads K_held = values_of(Kc), V_held = values_of(Vc);
                    const Matrix got = attn::scaled_dot_product_attention(Q.view(), Kc.view(), Vc.view(),
                                                                          {.causal = causal, .backend = Backend::fused})
                                           .output.values;
                    const double c = 1.0 / std::sqrt(double(E));
                    const Model held = model(Q, K_held, V_held, c, nullptr, causal);  // the values the cache holds
                    check_close(got, held.O, 2e-6, 2e-5);                             // float32 rounding only
                    const Model exact = model(Q, K, V, c, nullptr, causal);
                    const auto bound = rounding_bound(Q, K, V, V_held, causal, rounding_of(type));
                    used_of_bound(rows_of(got), exact.O, bound, 2e-6, 2e-5);
                    worst = std::max(worst, used_of_bound(held.O, exact.O, bound, 0.0, 0.0));  // rounding alone
                }
        // Not vacuous: the rounding alone uses a sizeable part of the bound on random inputs.
        WARN(attn::to_string(type) << " cache: the rounding used " << worst * 100 << "% of its bound at most");
        CHECK(worst > 0.05);
    }
}

TEST_CASE("the bound's value term is reached: values that all round down by almost half a step", "[decode][bound]") {
    // q = 0 gives every key the same score (ε = 0, α_j = 1/S), and every value x = 1 + u − 2⁻²³ rounds
    // down to 1: the output moves by u − 2⁻²³ against a bound of u·x + η, all of it but 0.4%.
    for (const KvDtype type : {KvDtype::bf16, KvDtype::f16}) {
        const Rounding r = rounding_of(type);
        const Heads Q{Matrix(2, 16), {1, 2, 1, 16}}, K{Matrix(50, 16), {1, 1, 50, 16}};
        Heads V{Matrix(50, 8), {1, 1, 50, 8}};
        for (std::size_t k = 0; k < V.values.size(); ++k) V.values.data()[k] = float(1.0 + r.u - 0x1p-23);
        const attn::Cache Kc = attn::to_cache(K.view(), type), Vc = attn::to_cache(V.view(), type);
        const Matrix got =
            attn::scaled_dot_product_attention(Q.view(), Kc.view(), Vc.view(), {.backend = Backend::fused})
                .output.values;
        const Model exact = model(Q, K, V, 0.25, nullptr, false);
        const double used =
            used_of_bound(rows_of(got), exact.O, rounding_bound(Q, K, V, values_of(Vc), false, r), 0, 0);
        INFO(attn::to_string(type) << ": " << used * 100 << "% of the bound");
        CHECK(used > 0.99);
        CHECK(used <= 1.0);
    }
}

TEST_CASE("the decode kernel reads every finite 16-bit pattern as the value it holds", "[decode][f16]") {
    // One key: its weight is 2⁰ = 1 and ℓ = 1, so the output row is the value row itself (−0 comes out
    // as +0: the sum starts at +0): the kernel's lane conversion against matrix/'s, chunks and tail.
    for (const KvDtype type : {KvDtype::bf16, KvDtype::f16}) {
        std::vector<std::uint16_t> values;
        for (std::uint32_t h = 0; h < 65536; ++h) {
            const auto bits = static_cast<std::uint16_t>(h);
            const float x = type == KvDtype::f16 ? attn::from_float16_bits(bits) : attn::from_bfloat16_bits(bits);
            if (std::isfinite(x) && std::fabs(x) < 0x1p40f) values.push_back(bits);  // bfloat16: within range checks
        }
        values.push_back(0x3C00);  // an odd count: the row ends in a tail
        const std::size_t E_v = values.size();
        const std::vector<std::uint16_t> key(8, 0);
        const Heads Q{Matrix(1, 8), {1, 1, 1, 8}};
        const attn::CacheView K(key.data(), {1, 1, 1, 8}, type), V(values.data(), {1, 1, 1, E_v}, type);
        const Matrix O = attn::scaled_dot_product_attention(Q.view(), K, V, {.backend = Backend::fused}).output.values;
        std::size_t wrong = 0;
        for (std::size_t c = 0; c < E_v; ++c) {
            const float want =
                type == KvDtype::f16 ? attn::from_float16_bits(values[c]) : attn::from_bfloat16_bits(values[c]);
            if (O(0, c) != want && wrong++ < 5)
                FAIL_CHECK(attn::to_string(type)
                           << " pattern " << values[c] << ": got " << O(0, c) << ", want " << want);
        }
        CHECK(wrong == 0);
    }
}

TEST_CASE("the decode path charges its scratch to a budget before any work, and refuses a block of 0 keys",
          "[decode][budget][errors]") {
    std::mt19937 rng(570);
    const Heads Q = random_heads({1, 8, 1, 64}, rng), K = random_heads({1, 2, 4000, 64}, rng);
    const attn::Cache Kc = attn::to_cache(K.view(), KvDtype::bf16);
    // the partial results alone: 2 heads × 16 blocks × 4 rows × (64 + 2) floats, over 33 KB
    attn::MemoryBudget tight(2 * 8 * 64 * sizeof(float) + 1000, "the test's budget");
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), Kc.view(), Kc.view(),
                                                         {.backend = Backend::fused, .budget = &tight}),
                      Catch::Contains("the decode kernel's") && Catch::Contains("the test's budget"));
    attn::MemoryBudget roomy(std::uint64_t{1} << 26, "the test's budget");
    (void)attn::scaled_dot_product_attention(Q.view(), Kc.view(), Kc.view(),
                                             {.backend = Backend::fused, .budget = &roomy});
    CHECK(roomy.charges().front().what.starts_with("O (1×8×1×64)"));
    CHECK(roomy.charges().size() == 3);  // O, the kernel's scratch, the blocks' partial results
    attn::simd::Blocking none = attn::simd::blocking();
    none.decode_keys = 0;
    const DecodeProblem problem{.Q = Q.values.data(),
                                .K = K.values.data(),
                                .V = K.values.data(),
                                .groups = 1,
                                .rows = 1,
                                .keys = 4000,
                                .d_k = 64,
                                .d_v = 64};
    CHECK_THROWS_WITH(attn::simd::decode_attention_into(problem, attn::simd::Threads::one, none),
                      Catch::Contains("decode_keys must be at least 1"));
}
