// Decoding against a key/value cache (attention/heads.hpp's CacheView, simd/decode.cpp): float16
// rounding, the cache's types, the routing between the kernels, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "attention/heads.hpp"
#include "check_close.hpp"
#include "matrix/float16.hpp"
#include "matrix/random.hpp"

using attn::Backend;
using attn::Heads;
using attn::HeadsShape;
using attn::KvDtype;
using attn::Matrix;

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

TEST_CASE("a 16-bit cache on the naive backend is the float chain on the values its bits hold", "[decode]") {
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
