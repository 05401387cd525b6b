// The fused pass, walked (lesson/fused_walk.hpp): the softmax taken key by key ends at step 6's O, tiles
// of two and two merged halves end at the state of the single pass, and every surface shows the walk's
// sections in one order (lesson/sections.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <string_view>

#include "lesson/fused_walk.hpp"
#include "lesson/json.hpp"
#include "lesson/sections.hpp"
#include "lesson/walk.hpp"
#include "lesson/worked_example.hpp"
#include "run_attn.hpp"

namespace lesson = attn::lesson;
using attn::Matrix;

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// The largest |v| of V: what a row of O, an average of V's rows, is measured against.
double largest(const Matrix& V) {
    double m = 0;
    for (std::size_t k = 0; k < V.size(); ++k) m = std::max(m, std::fabs(double(V.data()[k])));
    return m;
}

// float32 rounding of a sum of n weighted terms, taken in two orders, then divided: a few units of the
// last place for every term, against the largest value averaged.
double rounding(std::size_t n, double scale) { return double(4 * n + 8) * FLT_EPSILON * std::max(scale, 1e-30); }

// Every state the walk shows, against the one pass: m exactly (a maximum is exact in any order), ℓ and
// o to float32 rounding.
void check_same_state(const lesson::OnlineState& got, const lesson::OnlineState& want, std::size_t n) {
    CHECK(got.m == want.m);
    CHECK(std::fabs(double(got.l) - want.l) <= rounding(n, want.l));
    double size = 0;
    for (const float o : want.o) size = std::max(size, std::fabs(double(o)));
    REQUIRE(got.o.size() == want.o.size());
    for (std::size_t k = 0; k < want.o.size(); ++k)
        CHECK(std::fabs(double(got.o[k]) - want.o[k]) <= rounding(n, size + want.l));
}

void check_walk(const lesson::ForwardWalk& w) {
    const lesson::FusedWalk& f = w.fused;
    const Matrix& V = w.trace.V;
    const std::size_t n = w.softmax_input.rows();
    // O, every row taken key by key, is step 6's O to float32 rounding, and the walk says how far off
    REQUIRE((f.output.rows() == w.trace.output.rows() && f.output.cols() == w.trace.output.cols()));
    double largest_difference = 0;
    for (std::size_t k = 0; k < f.output.size(); ++k)
        largest_difference =
            std::max(largest_difference, std::fabs(double(f.output.data()[k]) - w.trace.output.data()[k]));
    CHECK(f.largest_difference == largest_difference);
    CHECK(largest_difference <= rounding(n, largest(V)));
    // the walked row: key by key its output ends at that row of O, and so do its tiles of two
    REQUIRE(!f.one_at_a_time.empty());
    const lesson::KeyStep& last = f.one_at_a_time.back();
    for (std::size_t k = 0; k < V.cols(); ++k) CHECK(last.output[k] == f.output(f.row, k));
    check_same_state(f.in_tiles.back().after, last.after, n);
    CHECK(f.in_tiles.size() == (f.one_at_a_time.size() + 1) / 2);
    // each step's rescale is e^(m_before − m), 0 before the first key
    CHECK(f.one_at_a_time.front().rescale == 0.0f);
    for (const lesson::KeyStep& step : f.one_at_a_time)
        if (step.m_before != neg_inf) CHECK(step.rescale == std::exp(step.m_before - step.after.m));
    // the two halves merge to the one-pass state
    const lesson::Merge& h = f.halves;
    CHECK(h.first_keys.size() + h.second_keys.size() == f.one_at_a_time.size());
    check_same_state(h.merged, last.after, n);
    for (std::size_t k = 0; k < V.cols(); ++k)
        CHECK(std::fabs(double(h.output[k]) - f.output(f.row, k)) <= rounding(n, largest(V)));
    // the walked row is the first of those whose running maximum moves most often
    std::size_t most = 0, row = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t moves = 0;
        float m = neg_inf;
        for (const float s : w.softmax_input.row(i)) {
            if (s == neg_inf) continue;
            moves += m != neg_inf && s > m;
            m = std::max(m, s);
        }
        if (i == 0 || moves > most) most = moves, row = i;
    }
    CHECK((f.row == row && f.moves == most));
}

}  // namespace

TEST_CASE("the fused walk of the worked example ends at step 6's O, and its halves merge to the one pass",
          "[lesson][fused_walk]") {
    for (const attn::Scale scale : {attn::Scale::sqrt_dk, attn::Scale::dk, attn::Scale::none})
        for (const bool causal : {false, true}) {
            INFO(attn::to_string(scale) << (causal ? " causal" : ""));
            const lesson::ForwardWalk w = lesson::worked_example_walk({.causal = causal, .scale = scale});
            check_walk(w);
            CHECK(w.fused.one_at_a_time.size() == (causal ? w.fused.row + 1 : 3));  // only the keys the row sees
        }
    // The lesson's example: row 2 (坐), whose maximum moves at both later keys; 3 keys split 2 + 1.
    const lesson::FusedWalk f = lesson::worked_example_walk({}).fused;
    CHECK((f.row == 1 && f.moves == 2));
    CHECK(
        (f.halves.first_keys == std::vector<std::size_t>{0, 1} && f.halves.second_keys == std::vector<std::size_t>{2}));
    CHECK((f.halves.first_factor < 1.0f && f.halves.second_factor == 1.0f));  // the second half holds the maximum
}

TEST_CASE("the fused walk on other inputs: random sizes, a single token, scores far from 0", "[lesson][fused_walk]") {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto random = [&](std::size_t rows, std::size_t cols, float size) {
        Matrix m(rows, cols);
        for (std::size_t k = 0; k < m.size(); ++k) m.data()[k] = size * normal(rng);
        return m;
    };
    for (const std::size_t n : {1u, 2u, 5u, 8u})
        for (const float size : {0.5f, 4.0f, 30.0f})  // at 30 the scores reach the hundreds: e^s would overflow
            for (const bool causal : {false, true}) {
                INFO("n = " << n << ", entries × " << size << (causal ? ", causal" : ""));
                const attn::SingleHeadAttention layer(random(4, 3, 1.0f), random(4, 3, 1.0f), random(4, 2, 1.0f));
                check_walk(lesson::forward_walk(layer, random(n, 4, size), {.causal = causal}));
            }
    // One token: the second half has no key, and merges as nothing (its factor 0).
    const attn::SingleHeadAttention layer(random(4, 3, 1.0f), random(4, 3, 1.0f), random(4, 2, 1.0f));
    const lesson::FusedWalk one = lesson::forward_walk(layer, random(1, 4, 1.0f), {}).fused;
    CHECK((one.halves.second_keys.empty() && one.halves.second.m == neg_inf && one.halves.second_factor == 0.0f));
    CHECK((one.halves.first_factor == 1.0f && one.halves.merged.l == 1.0f));
}

TEST_CASE("take_in: a tile of keys is one step, one new maximum and one rescale", "[lesson][fused_walk]") {
    const Matrix V = {{1.0f, 0.0f}, {0.0f, 1.0f}, {2.0f, 2.0f}};
    const float scores[] = {0.5f, 2.0f, 1.0f};
    const lesson::KeyStep first = lesson::take_in({neg_inf, 0.0f, {0.0f, 0.0f}}, scores, V, {0});
    CHECK((first.after.m == 0.5f && first.after.l == 1.0f && first.rescale == 0.0f));
    CHECK((first.after.o == std::vector<float>{1.0f, 0.0f} && first.output == std::vector<float>{1.0f, 0.0f}));
    const lesson::KeyStep tile = lesson::take_in(first.after, scores, V, {1, 2});
    CHECK(tile.after.m == 2.0f);
    CHECK(tile.rescale == std::exp(0.5f - 2.0f));
    CHECK(tile.after.l == Approx(std::exp(-1.5) + 1.0 + std::exp(-1.0)).epsilon(1e-6));
    CHECK(tile.after.o[1] == Approx(1.0 + 2 * std::exp(-1.0)).epsilon(1e-6));
    // a masked key (score −∞) adds nothing, and a step of masked keys only changes nothing
    const float masked[] = {0.5f, neg_inf, neg_inf};
    const lesson::KeyStep none = lesson::take_in(first.after, masked, V, {1, 2});
    CHECK((none.after.m == first.after.m && none.after.l == first.after.l && none.after.o == first.after.o));
}

TEST_CASE("one list of sections: the terminal shows them in the order the JSON gives the page and notebooks",
          "[lesson][sections][cli]") {
    for (const bool causal : {false, true}) {
        const attn::AttentionOptions options{.causal = causal};
        const std::vector<lesson::Section> list = lesson::sections(options);
        CHECK(std::count_if(list.begin(), list.end(),
                            [](const auto& s) { return s.key == std::string("step.4.mask"); }) == (causal ? 1 : 0));
        CHECK(std::string(list.back().key) == "fused");
        // the JSON names the same keys in the same order
        const std::string json =
            lesson::walk_json(lesson::worked_example_walk(options), {"a", "b", "c"}, lesson::Lang::en);
        std::size_t at = json.find("\"sections\": [");
        REQUIRE(at != std::string::npos);
        for (const lesson::Section& s : list) {
            const std::size_t next = json.find("{\"key\": \"" + std::string(s.key) + "\"", at);
            CHECK(next != std::string::npos);
            at = next;
        }
        // and the terminal prints each section's title in that order
        const RunResult r = run_attn(causal ? "walk --causal --color never" : "walk --color never");
        REQUIRE(r.status == 0);
        std::size_t printed = 0;
        for (const lesson::Section& s : list) {
            const std::string title = lesson::say(attn::lesson::Lang::en, s.title);
            INFO(s.key << ": " << title);
            const std::size_t next = r.out.find(title, printed);
            CHECK(next != std::string::npos);
            printed = next == std::string::npos ? printed : next + 1;
        }
    }
    CHECK(lesson::chain_formula({.causal = true, .scale = attn::Scale::dk}) == "O = softmax(Q·Kᵀ/d_k + M)·V");
    CHECK(lesson::chain_formula({.scale = attn::Scale::none}) == "O = softmax(Q·Kᵀ)·V");
}

TEST_CASE("every section's marker stands on exactly one line of the file it names", "[lesson][sections]") {
    // The walk prints "code: simd/fused.cpp [fused scores] …" under a section, the page links it and the
    // notebook names it: each must lead a reader to one real line of that file.
    const std::filesystem::path root = std::filesystem::path(TESTS_DIR).parent_path();
    std::size_t fused_markers = 0;
    for (const bool causal : {false, true})
        for (const lesson::Section& s : lesson::sections({.causal = causal}))
            for (const lesson::Marker& m : s.markers) {
                INFO(s.key << ": " << m.file << " [" << m.name << "]");
                std::ifstream in(root / m.file);
                REQUIRE(in);
                const std::string marker = std::string("[").append(m.name).append("]");  // GCC 12 warns on "[" + s
                std::size_t lines = 0;
                for (std::string line; std::getline(in, line);) lines += line.find(marker) != std::string::npos;
                CHECK(lines == 1);
                fused_markers += std::string_view(s.key) == "fused";
            }
    // the fused walk mirrors the three steps of simd/fused.cpp and the decode kernel's merge
    CHECK(fused_markers == 2 * 4);
}
