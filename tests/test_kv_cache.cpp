// The key/value cache that grows a token at a time (attention/kv_cache.hpp): its attention against
// the slice-passing call (the same keys and values given as a view of an array's first tokens, the
// same cache type) bit for bit on every backend, for several sizes, grouped heads, causal blocks and
// masks; its refusals; and the norms it keeps standing in for the guards' measurement.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/kv_cache.hpp"
#include "attention/run.hpp"
#include "matrix/random.hpp"

using attn::Backend;
using attn::KvDtype;
using attn::View;

namespace {

constexpr std::size_t B = 2, H = 4, H_kv = 2, E = 8, E_v = 6, capacity = 40;

// (B, H_kv, capacity, cols) floats: every token the test will append, in one array.
struct Tokens {
    std::size_t shape[4];
    attn::Matrix values;
    Tokens(std::size_t cols, std::mt19937& rng)
        : shape{B, H_kv, capacity, cols}, values(attn::random_matrix(B * H_kv * capacity, cols, rng, -2.0f, 2.0f)) {}
    // tokens [first, first + count) of every head: a strided view into the array
    struct Slice {
        std::size_t shape[4];
        std::ptrdiff_t strides[4];
        View view;
    };
    Slice slice(std::size_t first, std::size_t count) const {
        const std::size_t cols = shape[3];
        Slice s{{B, H_kv, count, cols},
                {std::ptrdiff_t(H_kv * capacity * cols), std::ptrdiff_t(capacity * cols), std::ptrdiff_t(cols), 1},
                {}};
        s.view = {values.data() + first * cols, s.shape, s.strides};
        return s;
    }
};

// Queries (B, H, L, E) and a mask over their scores, or none.
struct Queries {
    std::size_t shape[4];
    attn::Matrix values;
    Queries(std::size_t L, std::mt19937& rng) : shape{B, H, L, E}, values(attn::random_matrix(B * H * L, E, rng)) {}
    View view() const { return {values.data(), shape}; }
};

struct Mask {
    std::size_t shape[2];
    std::vector<float> terms;         // additive
    std::vector<unsigned char> keep;  // boolean
    View view;
};

// An additive mask (L, S) of random terms, some −∞.
Mask additive_mask(std::size_t L, std::size_t S, std::mt19937& rng) {
    Mask m{{L, S}, std::vector<float>(L * S), {}, {}};
    std::uniform_real_distribution<float> term(-3.0f, 1.0f);
    for (float& t : m.terms) t = term(rng) < -2.5f ? -std::numeric_limits<float>::infinity() : term(rng);
    m.view = {m.terms.data(), m.shape, {}, attn::Element::f32};
    return m;
}

// The causal triangle aligned at the bottom-right, as a user would write it for the slice call:
// query i is the (S − L + i)-th token and sees the keys j ≤ S − L + i.
Mask newest_causal(std::size_t L, std::size_t S) {
    Mask m{{L, S}, {}, std::vector<unsigned char>(L * S), {}};
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j) m.keep[i * S + j] = j + L <= S + i;
    m.view = {m.keep.data(), m.shape, {}, attn::Element::boolean};
    return m;
}

attn::Result slice_call(const Queries& q, const Tokens& K, const Tokens& V, std::size_t size, KvDtype type,
                        Backend backend, bool causal, const Mask* mask) {
    const auto k = K.slice(0, size), v = V.slice(0, size);
    attn::Call call{.Q = q.view(), .K = k.view, .V = v.view, .kv_dtype = type};
    call.options.backend = backend, call.options.causal = causal;
    if (mask) call.mask = mask->view;
    attn::Results r;
    attn::run(call, r);
    return std::move(r.output);
}

attn::Result cache_call(const attn::KvCache& cache, const Queries& q, Backend backend, bool causal, const Mask* mask) {
    attn::Call call{.Q = q.view()};
    call.options.backend = backend, call.options.causal = causal;
    if (mask) call.mask = mask->view;
    attn::Results r;
    cache.run(call, r);
    return std::move(r.output);
}

bool same_bits(const attn::Result& a, const attn::Result& b) {
    return a.shape == b.shape && a.values.size() == b.values.size() &&
           std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("a cache's attention is the slice-passing call's, bit for bit, on every backend", "[kv_cache]") {
    std::mt19937 rng(74);
    const Tokens K(E, rng), V(E_v, rng);
    for (const KvDtype type : attn::all_kv_dtypes)
        for (const Backend backend : attn::all_backends) {
            attn::KvCache cache(B, H_kv, capacity, E, E_v, type);
            // tokens appended in blocks of 3, then 1 at a time (a prompt, then decoding)
            for (const std::size_t t : {3u, 3u, 1u, 1u, 1u, 5u, 1u, 1u, 16u}) {
                const auto k = K.slice(cache.size(), t), v = V.slice(cache.size(), t);
                cache.append(k.view, v.view);
                for (const std::size_t L : {std::size_t(1), std::size_t(3), cache.size()}) {
                    INFO("cache type " << attn::to_string(type) << ", backend " << attn::to_string(backend) << ", size "
                                       << cache.size() << ", L = " << L);
                    const Queries q(L, rng);
                    CHECK(same_bits(cache_call(cache, q, backend, false, nullptr),
                                    slice_call(q, K, V, cache.size(), type, backend, false, nullptr)));
                    // causal: the L queries are the newest tokens (L = size: is_causal's own triangle)
                    const Mask newest = newest_causal(L, cache.size());
                    CHECK(same_bits(cache_call(cache, q, backend, true, nullptr),
                                    slice_call(q, K, V, cache.size(), type, backend, L == cache.size(),
                                               L == cache.size() ? nullptr : &newest)));
                    const Mask mask = additive_mask(L, cache.size(), rng);
                    CHECK(same_bits(cache_call(cache, q, backend, false, &mask),
                                    slice_call(q, K, V, cache.size(), type, backend, false, &mask)));
                }
            }
            CHECK(cache.size() == 32);
        }
}

TEST_CASE("a cache of one head is read where it lies, of more heads gathered, and an empty one gives 0", "[kv_cache]") {
    std::mt19937 rng(7);
    attn::KvCache one(1, 1, 8, 4, 4);
    const attn::Matrix q = attn::random_matrix(2, 4, rng);
    const attn::HeadsResult none = one.attention({q.data(), {1, 2, 1, 4}}, {.backend = Backend::fused});
    REQUIRE(none.output.values.size() == 2 * 4);
    for (std::size_t k = 0; k < none.output.values.size(); ++k) CHECK(none.output.values.data()[k] == 0.0f);
    const attn::Matrix k = attn::random_matrix(3, 4, rng), v = attn::random_matrix(3, 4, rng);
    one.append(attn::HeadsView{k.data(), {1, 1, 3, 4}}, attn::HeadsView{v.data(), {1, 1, 3, 4}});
    const std::size_t q_shape[4] = {1, 2, 1, 4};
    attn::Call call{.Q = View{q.data(), q_shape}};
    call.options.backend = Backend::fused;
    const auto gathers = [](const std::vector<attn::Buffer>& plan) {
        for (const attn::Buffer& buffer : plan)
            if (buffer.name.rfind("K (", 0) == 0) return true;
        return false;
    };
    CHECK_FALSE(gathers(one.plan(call)));
    attn::KvCache two(1, 2, 8, 4, 4);  // its heads' filled rows are 8 rows apart: gathered for the call
    const attn::Matrix k2 = attn::random_matrix(2, 4, rng);
    two.append(attn::HeadsView{k2.data(), {1, 2, 1, 4}}, attn::HeadsView{k2.data(), {1, 2, 1, 4}});
    CHECK(gathers(two.plan(call)));
}

TEST_CASE("a cache refuses what does not fit it, naming both shapes, and keeps what it held", "[kv_cache]") {
    std::mt19937 rng(3);
    attn::KvCache cache(2, 2, 4, 8, 6, KvDtype::bf16);
    const auto tokens = [&](std::size_t t, std::size_t cols) {
        return attn::Heads{attn::random_matrix(2 * 2 * t, cols, rng), {2, 2, t, cols}};
    };
    const attn::Heads k3 = tokens(3, 8), v3 = tokens(3, 6);
    cache.append(k3.view(), v3.view());
    const auto refused = [&](const attn::Heads& k, const attn::Heads& v) {
        try {
            cache.append(k.view(), v.view());
        } catch (const std::invalid_argument& e) {
            CHECK(cache.size() == 3);
            return std::string(e.what());
        }
        FAIL("not refused");
        return std::string();
    };
    const attn::Heads k2 = tokens(2, 8), v2 = tokens(2, 6);
    const std::string over = refused(k2, v2);  // 3 + 2 > 4
    CHECK_THAT(over, Catch::Contains("K_new (2×2×2×8) and V_new (2×2×2×6)") && Catch::Contains("capacity of 4") &&
                         Catch::Contains("3 held"));
    const attn::Heads k1 = tokens(1, 8), v1 = tokens(1, 6), wide = tokens(1, 5), narrow = tokens(1, 7);
    CHECK_THAT(refused(k1, wide), Catch::Contains("K_new (2×2×1×8) and V_new (2×2×1×5)") &&
                                      Catch::Contains("the cache (2×2×4×8, E_v = 6)"));
    CHECK_THAT(refused(narrow, v1), Catch::Contains("K_new (2×2×1×7) and V_new (2×2×1×6)"));
    CHECK_THAT(refused(k1, tokens(2, 6)), Catch::Contains("K_new (2×2×1×8) and V_new (2×2×2×6)"));
    attn::Heads bad = tokens(1, 8);
    bad.values(1 * 2 + 0, 5) = std::numeric_limits<float>::quiet_NaN();  // batch 1, head 0
    CHECK_THAT(refused(bad, v1), Catch::Contains("K_new (2×2×1×8) holds NaN in token 0 (position 3 of the cache), "
                                                 "batch 1, head 0"));
    attn::Heads inf = tokens(1, 6);
    inf.values(1, 0) = -std::numeric_limits<float>::infinity();  // batch 0, head 1
    CHECK_THAT(refused(k1, inf),
               Catch::Contains("V_new (2×2×1×6) holds ±inf in token 0") && Catch::Contains("batch 0, head 1"));
    attn::Heads huge = tokens(1, 8);
    huge.values(0, 0) = std::numeric_limits<float>::max();  // finite, but ±∞ in bfloat16
    CHECK_THROWS_AS(cache.append(huge.view(), v1.view()), std::overflow_error);
    CHECK(cache.size() == 3);
    cache.append(k1.view(), v1.view());
    CHECK(cache.size() == cache.capacity());
    const attn::Call own{.Q = View{}, .K = View{}};
    attn::Results r;
    CHECK_THROWS_WITH(cache.run(own, r), Catch::Contains("takes its keys and values from the cache"));
}

TEST_CASE("a call given the keys' and values' norms checks those, measuring neither again", "[kv_cache]") {
    // Norms the call is given stand in for the measurement: false ones far past float32's range are
    // refused although the keys themselves are small, on the path that measures in the guards
    // (naive) and on the decode kernel's (fused, a 16-bit cache), which would otherwise report its own.
    std::mt19937 rng(5);
    const attn::Heads q{attn::random_matrix(1, 4, rng), {1, 1, 1, 4}}, k{attn::random_matrix(6, 4, rng), {1, 1, 6, 4}};
    const double claimed[2] = {1e300, 1.0};
    for (const Backend backend : {Backend::naive, Backend::fused}) {
        const attn::Cache cache = attn::to_cache(k.view(), KvDtype::f16);
        CHECK_NOTHROW(attn::scaled_dot_product_attention(q.view(), cache.view(), cache.view(), {.backend = backend}));
        attn::AttentionOptions options{.backend = backend};
        options.kv_norms = claimed;
        CHECK_THROWS_AS(attn::scaled_dot_product_attention(q.view(), cache.view(), cache.view(), options),
                        std::overflow_error);
    }
    // and a cache's own: appending a token, then attending, is the call on every token so far
    attn::KvCache grown(1, 1, 6, 4, 4);
    for (std::size_t t = 0; t < 6; ++t) {
        const attn::Matrix k_t = attn::Matrix::borrow(k.values.data() + 4 * t, 1, 4);
        grown.append(attn::HeadsView{k_t.data(), {1, 1, 1, 4}}, attn::HeadsView{k_t.data(), {1, 1, 1, 4}});
        const attn::HeadsView prefix{k.values.data(), {1, 1, t + 1, 4}};
        const attn::HeadsResult want = attn::scaled_dot_product_attention(q.view(), prefix, prefix, {});
        const attn::HeadsResult got = grown.attention(q.view(), {});
        CHECK(std::memcmp(want.output.values.data(), got.output.values.data(), 4 * sizeof(float)) == 0);
    }
}
