// Many heads at once (attention/heads.hpp): each head equals the single head run alone, grouped
// key/value heads equal their repetition, masks and causal L ≠ S against a double-precision model,
// rows no key may attend, the backward, thread counts, the budget and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "attention/heads.hpp"
#include "attention/shapes.hpp"
#include "check_close.hpp"
#include "matrix/ops.hpp"
#include "matrix/random.hpp"
#include "matrix/size.hpp"
#include "thread_counts.hpp"

using attn::Backend;
using attn::Heads;
using attn::HeadsShape;
using attn::Matrix;
using attn::ScoreMask;

namespace {

constexpr Backend all_backends[] = {Backend::naive, Backend::simd, Backend::parallel, Backend::fused};

Heads random_heads(HeadsShape shape, std::mt19937& rng) {
    return {attn::random_matrix(shape.batch * shape.heads * shape.rows, shape.cols, rng), shape};
}

// K or V with each key/value head repeated G times: what grouped-query attention reads, spelled out.
Heads repeated(const Heads& kv, std::size_t group) {
    const HeadsShape s = kv.shape;
    Heads out{Matrix(s.batch * s.heads * group * s.rows, s.cols), {s.batch, s.heads * group, s.rows, s.cols}};
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads * group; ++h) {
            const Matrix from = kv.view().head(b, h / group);
            for (std::size_t i = 0; i < s.rows; ++i)
                for (std::size_t j = 0; j < s.cols; ++j)
                    out.values((b * s.heads * group + h) * s.rows + i, j) = from(i, j);
        }
    return out;
}

// Head (b, h) of a stack, copied into a matrix of its own.
Matrix head(const Heads& stack, std::size_t b, std::size_t h) {
    Matrix copy;
    copy = stack.view().head(b, h);
    return copy;
}

// The term a mask adds to score (i, j) of head (b, h), in double: a boolean mask's false is −∞.
double term(const ScoreMask* mask, std::size_t b, std::size_t h, std::size_t i, std::size_t j) {
    if (!mask) return 0.0;
    const std::ptrdiff_t at = std::ptrdiff_t(b) * mask->batch_stride + std::ptrdiff_t(h) * mask->head_stride +
                              std::ptrdiff_t(i) * mask->row_stride + std::ptrdiff_t(j) * mask->col_stride;
    if (mask->kind == ScoreMask::Kind::boolean)
        return static_cast<const unsigned char*>(mask->data)[at] ? 0.0 : -std::numeric_limits<double>::infinity();
    return static_cast<const float*>(mask->data)[at];
}

// softmax(scale·Q·Kᵀ + M [causal, top-left])·V in double for head (b, h); a row no key may attend is 0.
std::vector<std::vector<double>> model(const Matrix& Q, const Matrix& K, const Matrix& V, double scale,
                                       const ScoreMask* mask, bool causal, std::size_t b, std::size_t h) {
    std::vector<std::vector<double>> O(Q.rows(), std::vector<double>(V.cols(), 0.0));
    for (std::size_t i = 0; i < Q.rows(); ++i) {
        std::vector<double> s(K.rows());
        double top = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < K.rows(); ++j) {
            double dot = 0.0;
            for (std::size_t p = 0; p < Q.cols(); ++p) dot += double(Q(i, p)) * K(j, p);
            s[j] = (causal && j > i) ? -std::numeric_limits<double>::infinity() : scale * dot + term(mask, b, h, i, j);
            top = std::max(top, s[j]);
        }
        if (top == -std::numeric_limits<double>::infinity()) continue;
        double total = 0.0;
        for (double& v : s) total += (v = std::exp(v - top));
        for (std::size_t j = 0; j < K.rows(); ++j)
            for (std::size_t k = 0; k < V.cols(); ++k) O[i][k] += s[j] / total * V(j, k);
    }
    return O;
}

bool all_finite(const Matrix& M) {
    for (std::size_t i = 0; i < M.size(); ++i)
        if (!std::isfinite(M.data()[i])) return false;
    return true;
}

}  // namespace

TEST_CASE("every head equals the single head run alone, bit for bit, on every backend", "[heads]") {
    std::mt19937 rng(541);
    const Heads Q = random_heads({2, 4, 5, 8}, rng), K = random_heads({2, 2, 7, 8}, rng),
                V = random_heads({2, 2, 7, 6}, rng);
    for (const Backend b : all_backends) {
        INFO(attn::to_string(b));
        const attn::AttentionOptions options{.backend = b};
        const attn::HeadsResult r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
        CHECK(r.output.shape.batch == 2);
        CHECK(r.output.shape.heads == 4);
        CHECK(r.output.shape.rows == 5);
        CHECK(r.output.shape.cols == 6);
        CHECK(r.weights.values.empty() == (b == Backend::fused));
        for (std::size_t batch = 0; batch < 2; ++batch)
            for (std::size_t h = 0; h < 4; ++h) {
                const auto one = attn::scaled_dot_product_attention(head(Q, batch, h), head(K, batch, h / 2),
                                                                    head(V, batch, h / 2), options);
                CHECK(head(r.output, batch, h) == one.output);
                if (b != Backend::fused) CHECK(head(r.weights, batch, h) == one.weights);
            }
    }
}

TEST_CASE("grouped and multi-query heads equal their key/value heads repeated, bit for bit", "[heads][gqa]") {
    std::mt19937 rng(542);
    const std::size_t kv_heads = GENERATE(1, 2, 4);  // 1: multi-query attention; 4: one per query head
    const Heads Q = random_heads({2, 4, 6, 8}, rng), K = random_heads({2, kv_heads, 9, 8}, rng),
                V = random_heads({2, kv_heads, 9, 5}, rng);
    const Heads K4 = repeated(K, 4 / kv_heads), V4 = repeated(V, 4 / kv_heads);
    for (const Backend b : all_backends) {
        INFO(attn::to_string(b) << ", H_kv = " << kv_heads);
        const auto grouped = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), {.backend = b});
        const auto spelled = attn::scaled_dot_product_attention(Q.view(), K4.view(), V4.view(), {.backend = b});
        CHECK(grouped.output.values == spelled.output.values);
    }
}

TEST_CASE("masks broadcast along batch, head and row, boolean and additive, match the model", "[heads][mask]") {
    std::mt19937 rng(543);
    const std::size_t B = 2, H = 3, L = 4, S = 6;
    const Heads Q = random_heads({B, H, L, 8}, rng), K = random_heads({B, H, S, 8}, rng),
                V = random_heads({B, H, S, 5}, rng);
    // one L×S additive bias for every head; a (B, 1, 1, S) padding mask; a (1, H, L, S) boolean one
    const Matrix bias = attn::random_matrix(L, S, rng, -2.0f, 2.0f);
    std::vector<unsigned char> padding(B * S, 1), per_head(H * L * S);
    padding[0 * S + 5] = padding[1 * S + 0] = padding[1 * S + 3] = 0;
    for (std::size_t k = 0; k < per_head.size(); ++k) per_head[k] = (k * 7 + 3) % 5 != 0;
    std::vector<float> minus_inf(L * S, 0.0f);
    minus_inf[1 * S + 2] = -std::numeric_limits<float>::infinity();
    const ScoreMask masks[] = {
        {ScoreMask::Kind::additive, bias.data(), 0, 0, std::ptrdiff_t(S), 1},
        {ScoreMask::Kind::boolean, padding.data(), std::ptrdiff_t(S), 0, 0, 1},
        {ScoreMask::Kind::boolean, per_head.data(), 0, std::ptrdiff_t(L * S), std::ptrdiff_t(S), 1},
        {ScoreMask::Kind::additive, minus_inf.data(), 0, 0, std::ptrdiff_t(S), 1},
    };
    for (const ScoreMask& mask : masks)
        for (const Backend b : all_backends) {
            INFO(attn::to_string(b) << ", mask strides " << mask.batch_stride << ", " << mask.head_stride << ", "
                                    << mask.row_stride);
            const attn::AttentionOptions options{.mask = &mask, .backend = b};
            const auto r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
            for (std::size_t batch = 0; batch < B; ++batch)
                for (std::size_t h = 0; h < H; ++h) {
                    check_close(head(r.output, batch, h),
                                model(head(Q, batch, h), head(K, batch, h), head(V, batch, h), 1.0 / std::sqrt(8.0),
                                      &mask, false, batch, h),
                                1e-5, 1e-4);
                    const ScoreMask own = mask.for_head(batch, h);  // the single head given its slice
                    const attn::AttentionOptions single{.mask = &own, .backend = b};
                    CHECK(head(r.output, batch, h) == attn::scaled_dot_product_attention(head(Q, batch, h),
                                                                                         head(K, batch, h),
                                                                                         head(V, batch, h), single)
                                                          .output);
                }
        }
}

TEST_CASE("a mask's strides as the scores read it: NumPy's broadcast, or none", "[heads][mask]") {
    using Strides = std::vector<std::ptrdiff_t>;
    const std::vector<std::size_t> scores{2, 3, 4, 5};  // (B, H, L, S)
    const auto strides_of = [&](std::vector<std::size_t> shape) {
        return attn::broadcast(attn::View{.data = nullptr, .shape = shape}, scores);
    };
    CHECK(strides_of({4, 5}) == Strides{0, 0, 5, 1});          // one (L, S) for every head
    CHECK(strides_of({2, 1, 1, 5}) == Strides{5, 0, 0, 1});    // padding keys per batch
    CHECK(strides_of({3, 1, 5}) == Strides{0, 5, 0, 1});       // per head, every query
    CHECK(strides_of({2, 3, 4, 5}) == Strides{60, 20, 5, 1});  // C order itself
    CHECK(strides_of({}) == Strides{0, 0, 0, 0});              // a scalar
    CHECK(strides_of({1, 1, 1, 1, 5}).empty());                // more dimensions
    CHECK(strides_of({3, 5}).empty());                         // 3 against L = 4
    CHECK(strides_of({2, 3, 1, 4}).empty());                   // 4 against S = 5
}

TEST_CASE("causal with fewer or more queries than keys is the lower triangle aligned top-left", "[heads][causal]") {
    std::mt19937 rng(544);
    const std::size_t L = GENERATE(3, 9), S = 6;
    const Heads Q = random_heads({1, 2, L, 8}, rng), K = random_heads({1, 1, S, 8}, rng),
                V = random_heads({1, 1, S, 4}, rng);
    for (const Backend b : all_backends) {
        INFO(attn::to_string(b) << ", L = " << L << ", S = " << S);
        const auto r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), {.causal = true, .backend = b});
        for (std::size_t h = 0; h < 2; ++h)
            check_close(head(r.output, 0, h),
                        model(head(Q, 0, h), head(K, 0, 0), head(V, 0, 0), 1.0 / std::sqrt(8.0), nullptr, true, 0, h),
                        1e-5, 1e-4);
    }
}

TEST_CASE("explicit_scale replaces the scale of the Scale enum", "[heads][scale]") {
    std::mt19937 rng(545);
    const Heads Q = random_heads({1, 2, 5, 4}, rng), K = random_heads({1, 2, 5, 4}, rng),
                V = random_heads({1, 2, 5, 3}, rng);
    for (const Backend b : all_backends) {
        INFO(attn::to_string(b));
        const auto r =
            attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), {.explicit_scale = 0.8f, .backend = b});
        for (std::size_t h = 0; h < 2; ++h)
            check_close(head(r.output, 0, h),
                        model(head(Q, 0, h), head(K, 0, h), head(V, 0, h), 0.8, nullptr, false, 0, h), 1e-5, 1e-4);
    }
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), {.explicit_scale = -1.0f}),
                      Catch::Contains("explicit_scale") && Catch::Contains("positive and finite"));
}

TEST_CASE("a row no key may attend gives output 0 and gradient 0 on every backend, never NaN", "[heads][mask]") {
    std::mt19937 rng(546);
    const std::size_t L = 4, S = 5;
    const Heads Q = random_heads({1, 2, L, 8}, rng), K = random_heads({1, 1, S, 8}, rng),
                V = random_heads({1, 1, S, 3}, rng), dO = random_heads({1, 2, L, 3}, rng);
    std::vector<unsigned char> keep(L * S, 1);
    for (std::size_t j = 0; j < S; ++j) keep[2 * S + j] = 0;  // query 2 may attend no key
    const ScoreMask mask{ScoreMask::Kind::boolean, keep.data(), 0, 0, std::ptrdiff_t(S), 1};
    for (const Backend b : all_backends) {
        INFO(attn::to_string(b));
        const attn::AttentionOptions options{.mask = &mask, .backend = b, .keep_for_backward = true};
        const auto r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
        const auto g = attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), r, dO.view(), options);
        CHECK(all_finite(r.output.values));
        CHECK(all_finite(g.dQ.values));
        CHECK(all_finite(g.dK.values));
        CHECK(all_finite(g.dV.values));
        for (std::size_t h = 0; h < 2; ++h) {
            const Matrix O = head(r.output, 0, h), dQ = head(g.dQ, 0, h);
            for (std::size_t k = 0; k < 3; ++k) CHECK(O(2, k) == 0.0f);
            for (std::size_t k = 0; k < 8; ++k) CHECK(dQ(2, k) == 0.0f);
            if (b != Backend::fused)
                for (std::size_t j = 0; j < S; ++j) CHECK(head(r.weights, 0, h)(2, j) == 0.0f);
        }
        // the other rows still attend: their outputs are not all zero
        CHECK(head(r.output, 0, 0)(0, 0) != 0.0f);
    }
}

TEST_CASE("the heads' backward: each head's dQ alone, dK and dV of a shared head summed in order",
          "[heads][backward]") {
    std::mt19937 rng(547);
    const Heads Q = random_heads({2, 4, 5, 6}, rng), K = random_heads({2, 2, 7, 6}, rng),
                V = random_heads({2, 2, 7, 3}, rng), dO = random_heads({2, 4, 5, 3}, rng);
    const Heads K4 = repeated(K, 2), V4 = repeated(V, 2);
    std::vector<unsigned char> keep(5 * 7, 1);
    keep[3] = keep[9] = 0;
    const ScoreMask mask{ScoreMask::Kind::boolean, keep.data(), 0, 0, 7, 1};
    for (const Backend b : all_backends)
        for (const bool causal : {false, true}) {
            INFO(attn::to_string(b) << (causal ? ", causal" : ""));
            const attn::AttentionOptions options{
                .causal = causal, .mask = &mask, .backend = b, .keep_for_backward = true};
            const auto r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
            const auto g =
                attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), r, dO.view(), options);
            const auto r4 = attn::scaled_dot_product_attention(Q.view(), K4.view(), V4.view(), options);
            const auto g4 =
                attn::scaled_dot_product_attention_backward(Q.view(), K4.view(), V4.view(), r4, dO.view(), options);
            CHECK(g.dQ.values == g4.dQ.values);
            for (std::size_t batch = 0; batch < 2; ++batch)
                for (std::size_t kv = 0; kv < 2; ++kv) {
                    Matrix dK = head(g4.dK, batch, 2 * kv), dV = head(g4.dV, batch, 2 * kv);
                    attn::add_in_place(dK, head(g4.dK, batch, 2 * kv + 1));
                    attn::add_in_place(dV, head(g4.dV, batch, 2 * kv + 1));
                    CHECK(head(g.dK, batch, kv) == dK);
                    CHECK(head(g.dV, batch, kv) == dV);
                    // and each query head's gradients are the single head's
                    const ScoreMask own = mask.for_head(batch, 2 * kv);
                    attn::AttentionOptions single = options;
                    single.mask = &own;
                    const auto one = attn::scaled_dot_product_attention_backward(
                        head(Q, batch, 2 * kv), head(K, batch, kv), head(V, batch, kv),
                        attn::scaled_dot_product_attention(head(Q, batch, 2 * kv), head(K, batch, kv),
                                                           head(V, batch, kv), single),
                        head(dO, batch, 2 * kv), single);
                    CHECK(head(g.dQ, batch, 2 * kv) == one.dQ);
                }
        }
}

TEST_CASE("one thread and two give the same bits, with heads at once or one at a time", "[heads][parallel]") {
    if (!several_thread_counts()) return;
    std::mt19937 rng(548);
    const std::size_t heads = GENERATE(2, 32);  // 32: heads shared out over the team; 2: one after another
    const Heads Q = random_heads({1, heads, 40, 16}, rng), K = random_heads({1, heads / 2, 40, 16}, rng),
                V = random_heads({1, heads / 2, 40, 16}, rng), dO = random_heads({1, heads, 40, 16}, rng);
    for (const Backend b : {Backend::parallel, Backend::fused}) {
        INFO(attn::to_string(b) << ", " << heads << " heads");
        attn::HeadsResult r[2];
        attn::HeadsGradients g[2];
        for (const int threads : {1, 2}) {
            const attn::AttentionOptions options{
                .causal = true, .threads = threads, .backend = b, .keep_for_backward = true};
            r[threads - 1] = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
            // the forward's team: its heads' kernels, each on one thread inside it, do not count
            CHECK(attn::simd::last_team_size() == (heads == 32 ? threads : 1));
            g[threads - 1] = attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), r[threads - 1],
                                                                         dO.view(), options);
        }
        CHECK(attn::simd::last_team_size() == (heads == 32 ? 2 : 1));  // the last call's: 16 key/value heads at once
        CHECK(r[0].output.values == r[1].output.values);
        CHECK(g[0].dQ.values == g[1].dQ.values);
        CHECK(g[0].dK.values == g[1].dK.values);
        CHECK(g[0].dV.values == g[1].dV.values);
    }
}

TEST_CASE("options.threads holds for the call and is restored after it", "[heads][parallel]") {
    if (!several_thread_counts()) return;
    std::mt19937 rng(549);
    const Heads Q = random_heads({1, 2, 8, 4}, rng);
    const int before = attn::simd::max_threads();
    (void)attn::scaled_dot_product_attention(Q.view(), Q.view(), Q.view(),
                                             {.threads = 3, .backend = Backend::parallel});
    CHECK(attn::simd::max_threads() == before);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), Q.view(), Q.view(), {.threads = -1}),
                      Catch::Contains("threads = -1"));
}

TEST_CASE("a budget too small for the heads refuses before any head runs, naming the stack", "[heads][budget]") {
    std::mt19937 rng(550);
    const Heads Q = random_heads({2, 4, 30, 8}, rng), K = random_heads({2, 2, 40, 8}, rng);
    attn::MemoryBudget budget(20000, "the test's budget");  // α of every head is 2·4·30·40·4 = 38400 bytes
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), K.view(), K.view(),
                                                         {.backend = Backend::parallel, .budget = &budget}),
                      Catch::Contains("S/α (2×4×30×40)") && Catch::Contains("the test's budget"));
    attn::MemoryBudget roomy(std::uint64_t{1} << 26, "the test's budget");
    (void)attn::scaled_dot_product_attention(Q.view(), K.view(), K.view(),
                                             {.backend = Backend::fused, .budget = &roomy});
    CHECK(roomy.charges().front().what.starts_with("O (2×4×30×8)"));
    CHECK(roomy.charges().front().bytes == 2 * 4 * 30 * 8 * sizeof(float));
}

TEST_CASE("shapes that do not fit are refused naming both operands' shapes", "[heads][errors]") {
    std::mt19937 rng(551);
    const Heads Q = random_heads({2, 4, 5, 8}, rng), K = random_heads({2, 3, 7, 8}, rng),
                V = random_heads({2, 3, 7, 6}, rng), narrow = random_heads({2, 2, 7, 4}, rng),
                other_batch = random_heads({1, 2, 7, 8}, rng), short_V = random_heads({2, 2, 6, 6}, rng),
                K2 = random_heads({2, 2, 7, 8}, rng);
    using attn::scaled_dot_product_attention;
    CHECK_THROWS_WITH(scaled_dot_product_attention(Q.view(), K.view(), V.view()),
                      "scaled_dot_product_attention: Q (2×4×5×8) and K (2×3×7×8): the query heads H must be a multiple "
                      "of the key/value heads H_kv");
    CHECK_THROWS_WITH(scaled_dot_product_attention(Q.view(), narrow.view(), narrow.view()),
                      Catch::Contains("Q (2×4×5×8) and K (2×2×7×4) must have the same width E"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(Q.view(), other_batch.view(), other_batch.view()),
                      Catch::Contains("Q (2×4×5×8), K (1×2×7×8) and V (1×2×7×8)") &&
                          Catch::Contains("same leading dimensions (the batch B)"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(Q.view(), K2.view(), short_V.view()),
                      Catch::Contains("K (2×2×7×8) and V (2×2×6×6) must have the same number of keys S"));
    const auto r = scaled_dot_product_attention(Q.view(), K2.view(), K2.view());
    const Heads wrong_dO = random_heads({2, 4, 5, 7}, rng);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention_backward(Q.view(), K2.view(), K2.view(), r, wrong_dO.view()),
                      Catch::Contains("scaled_dot_product_attention_backward: dO (2×4×5×7) must be 2×4×5×8"));
}

TEST_CASE("an additive mask with NaN or +inf is refused", "[heads][mask][errors]") {
    std::mt19937 rng(552);
    const Heads Q = random_heads({1, 2, 3, 4}, rng);
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        std::vector<float> terms(9, 0.0f);
        terms[4] = bad;
        const ScoreMask mask{ScoreMask::Kind::additive, terms.data(), 0, 0, 3, 1};
        for (const Backend b : all_backends)
            CHECK_THROWS_AS(
                attn::scaled_dot_product_attention(Q.view(), Q.view(), Q.view(), {.mask = &mask, .backend = b}),
                std::invalid_argument);
        CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), Q.view(), Q.view(), {.mask = &mask}),
                          Catch::StartsWith("scaled_dot_product_attention: the mask's term for query 1, key 1 is"));
    }
}

TEST_CASE("with bad values in several heads, the lowest head's error is the call's, for any thread count",
          "[heads][errors][parallel]") {
    // 32 heads of 8 rows (not the decode kernel's few): with two threads they run at once, and a later
    // head may fail first.
    std::mt19937 rng(557);
    const Heads Q = random_heads({1, 32, 8, 8}, rng), K = random_heads({1, 8, 8, 8}, rng);
    std::vector<float> terms(32 * 8 * 8, 0.0f);
    terms[25 * 64 + 0 * 8 + 3] = NAN;      // head 25, query 0, key 3
    terms[9 * 64 + 2 * 8 + 1] = INFINITY;  // head 9, query 2, key 1
    const ScoreMask mask{ScoreMask::Kind::additive, terms.data(), 0, 64, 8, 1};
    for (const Backend b : all_backends)
        for (const int threads : {1, 2}) {
            INFO(attn::to_string(b) << ", " << threads << " threads");
            CHECK_THROWS_WITH(
                attn::scaled_dot_product_attention(Q.view(), K.view(), K.view(),
                                                   {.mask = &mask, .threads = threads, .backend = b}),
                Catch::StartsWith("scaled_dot_product_attention: the mask's term for query 2, key 1 is +∞"));
        }
}

TEST_CASE("bf16 runs on the heads, on the fused backend", "[heads][bf16]") {
    std::mt19937 rng(553);
    const Heads Q = random_heads({1, 4, 6, 8}, rng), K = random_heads({1, 2, 6, 8}, rng),
                V = random_heads({1, 2, 6, 8}, rng);
    const attn::AttentionOptions options{.causal = true, .backend = Backend::fused, .dtype = attn::Dtype::bf16};
    const auto r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
    for (std::size_t h = 0; h < 4; ++h)
        CHECK(head(r.output, 0, h) ==
              attn::scaled_dot_product_attention(head(Q, 0, h), head(K, 0, h / 2), head(V, 0, h / 2), options).output);
    CHECK_THROWS_WITH(attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(),
                                                         {.backend = Backend::naive, .dtype = attn::Dtype::bf16}),
                      Catch::Contains("bf16 runs on the fused backend only"));
}

TEST_CASE("masked gradients agree across backends with the naive loops", "[heads][backward][mask]") {
    std::mt19937 rng(554);
    const Heads Q = random_heads({1, 4, 9, 8}, rng), K = random_heads({1, 2, 11, 8}, rng),
                V = random_heads({1, 2, 11, 5}, rng), dO = random_heads({1, 4, 9, 5}, rng);
    const Matrix bias = attn::random_matrix(9, 11, rng, -3.0f, 3.0f);
    const ScoreMask mask{ScoreMask::Kind::additive, bias.data(), 0, 0, 11, 1};
    const auto gradients = [&](Backend b) {
        const attn::AttentionOptions options{.causal = true, .mask = &mask, .backend = b, .keep_for_backward = true};
        const auto r = attn::scaled_dot_product_attention(Q.view(), K.view(), V.view(), options);
        return attn::scaled_dot_product_attention_backward(Q.view(), K.view(), V.view(), r, dO.view(), options);
    };
    const attn::HeadsGradients want = gradients(Backend::naive);
    for (const Backend b : {Backend::simd, Backend::parallel, Backend::fused}) {
        INFO(attn::to_string(b));
        const attn::HeadsGradients got = gradients(b);
        check_close(got.dQ.values, want.dQ.values, 1e-5, 1e-4);
        check_close(got.dK.values, want.dK.values, 1e-5, 1e-4);
        check_close(got.dV.values, want.dV.values, 1e-5, 1e-4);
    }
}

TEST_CASE("a call with no output still checks every input; no heads at all give empty results", "[heads][edge]") {
    std::mt19937 rng(552);
    const Heads K = random_heads({1, 2, 5, 4}, rng);
    Heads bad = K;
    bad.values(7, 2) = NAN;  // key/value head 1, key 2
    for (const Backend b : all_backends)
        for (const attn::KvDtype type : {attn::KvDtype::f32, attn::KvDtype::bf16, attn::KvDtype::f16}) {
            INFO(attn::to_string(b) << ", a " << attn::to_string(type) << " cache");
            const attn::Cache k = attn::to_cache(bad.view(), type), v = attn::to_cache(K.view(), type);
            const attn::AttentionOptions o{.backend = b};
            // no query rows (L = 0), no query heads (H = 0), values of no width (E_v = 0): nothing to compute,
            // and the NaN is refused all the same
            const Heads no_rows = random_heads({1, 2, 0, 4}, rng), no_heads = random_heads({1, 0, 3, 4}, rng);
            CHECK_THROWS_WITH(attn::scaled_dot_product_attention(no_rows.view(), k.view(), v.view(), o),
                              Catch::Contains("K (5×4) holds NaN or ±inf"));
            CHECK_THROWS_WITH(attn::scaled_dot_product_attention(no_heads.view(), k.view(), v.view(), o),
                              Catch::Contains("K (5×4) holds NaN or ±inf"));
            const attn::Cache narrow = attn::to_cache({nullptr, {1, 2, 5, 0}}, type);
            CHECK_THROWS_WITH(
                attn::scaled_dot_product_attention(random_heads({1, 2, 1, 4}, rng).view(), k.view(), narrow.view(), o),
                Catch::Contains("K (5×4) holds NaN or ±inf"));
        }
    // PyTorch's formula for H = 0 heads: an empty (B, 0, L, E_v); gradients of their shapes, dK and dV 0
    const Heads Q = random_heads({2, 0, 3, 4}, rng), K0 = random_heads({2, 0, 5, 4}, rng),
                V0 = random_heads({2, 0, 5, 3}, rng), dO = random_heads({2, 0, 3, 3}, rng);
    const Heads Kq = random_heads({2, 2, 5, 4}, rng), Vq = random_heads({2, 2, 5, 3}, rng);
    for (const Backend b : all_backends) {
        const attn::AttentionOptions o{.backend = b, .keep_for_backward = true};
        const attn::HeadsResult r = attn::scaled_dot_product_attention(Q.view(), K0.view(), V0.view(), o);
        CHECK((r.output.shape.batch == 2 && r.output.shape.heads == 0 && r.output.shape.cols == 3));
        const attn::HeadsGradients g =
            attn::scaled_dot_product_attention_backward(Q.view(), K0.view(), V0.view(), r, dO.view(), o);
        CHECK((g.dK.shape.heads == 0 && g.dV.shape.cols == 3));
        // key/value heads that no query head reads get no gradient
        const attn::HeadsResult unread = attn::scaled_dot_product_attention(Q.view(), Kq.view(), Vq.view(), o);
        const attn::HeadsGradients zero =
            attn::scaled_dot_product_attention_backward(Q.view(), Kq.view(), Vq.view(), unread, dO.view(), o);
        CHECK(zero.dK.values == Matrix(2 * 2 * 5, 4, 0.0f));
        CHECK(zero.dV.values == Matrix(2 * 2 * 5, 3, 0.0f));
    }
}
