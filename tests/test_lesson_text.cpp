// What `attn walk` and `attn exercise` say, checked against what they print: notes that follow
// --scale and --causal, the confusions' demos, the JSON the pages are built from, claims built from
// their tables, and Chinese text without half-width punctuation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "attention/attention.hpp"
#include "lesson/experiments.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/norms.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"
#include "run_attn.hpp"
#include "walk_output.hpp"

using Catch::Contains;
namespace ex = attn::experiments;

namespace {

const char* const scales[] = {"sqrt", "dk", "none"};

// The step-4 note of each scale, by a phrase only that note has.
const char* const scale_notes[] = {"brings it back to 1", "dividing by d_k instead",
                                   "unscaled scores have Var(S_ij) = d_k"};

// A float as the JSON writes it: the shortest decimal that reads back to it.
std::string number(float v) { return attn::shortest_decimal(v); }

}  // namespace

TEST_CASE("walk: the step-4 note and the formula follow --scale, under either mask", "[cli][walk][lesson]") {
    for (bool causal : {false, true}) {
        for (int k = 0; k < 3; ++k) {
            const std::string args = std::string("walk --scale ") + scales[k] + (causal ? " --causal" : "");
            INFO("attn " << args);
            const RunResult r = run_attn(args);
            REQUIRE(r.status == 0);
            for (int other = 0; other < 3; ++other) {
                if (other == k) CHECK_THAT(r.out, Contains(scale_notes[other]));
                else CHECK_THAT(r.out, !Contains(scale_notes[other]));
            }
            const std::string divisor = k == 0 ? "/√d_k" : k == 1 ? "/d_k" : "";
            CHECK_THAT(r.out, Contains("O = softmax(Q·Kᵀ" + divisor + (causal ? " + M)·V" : ")·V")));
            CHECK((r.out.find("the lesson divides by √d_k") != std::string::npos) == (k != 0));
            CHECK_THAT(r.out, Contains("this project's choice") && Contains("output[0]") &&
                                  Contains("x₁·(column 1 of W_Q) = "));
            CHECK_THAT(r.out, !Contains("W_Q[:, 1]"));
        }
    }
}

TEST_CASE("walk --causal: exercise 5 says why o₁ = v₁ and shows the last token", "[cli][walk][lesson]") {
    const RunResult plain = run_attn("walk"), masked = run_attn("walk --causal");
    CHECK_THAT(plain.out, !Contains("sees only itself"));
    CHECK_THAT(masked.out, Contains("token 1 sees only itself: α₁₁ = 1, so o₁ = v₁") && Contains("‖o₁ − v₁‖ = 0.0000"));
    const attn::AttentionTrace tr = attn::worked_example::trace({.causal = true});
    const auto last = ex::output_against_value(tr, 2);
    char want[64];
    std::snprintf(want, sizeof want, "‖o₃ − v₃‖ = %.4f", last.distance);
    CHECK_THAT(masked.out, Contains(want));
    CHECK(tr.weights(0, 0) == 1.0f);
}

TEST_CASE("walk asks the lesson's four confusions, in its order; Q·K against Q·Kᵀ stays a remark of step 3",
          "[cli][walk][lesson]") {
    // The lesson's questions: why Q·Kᵀ is the table of relations between words; why the softmax goes
    // along rows; why the output is still one vector per word; how d_k and d_model relate.
    const std::vector<std::vector<std::string>> headings = {
        {"Confusion 1 · Why does Q·Kᵀ tell how the tokens relate?",
         "Confusion 2 · Why softmax along rows and not down columns?",
         "Confusion 3 · Why is the output still one vector per token?", "Confusion 4 · How do d_k and d_model relate?"},
        {"容易搞混的问题 1 · Q·Kᵀ 为什么是词与词的关系矩阵？", "容易搞混的问题 2 · softmax 为什么按行做，而不是按列？",
         "容易搞混的问题 3 · 为什么输出仍然是一个词一个向量？", "容易搞混的问题 4 · d_k 与 d_model 是什么关系？"}};
    for (const bool zh : {false, true}) {
        const RunResult r = run_attn(zh ? "walk --lang zh" : "walk");
        REQUIRE(r.status == 0);
        std::size_t at = 0;
        for (const std::string& heading : headings[zh]) {
            INFO(heading);
            const std::size_t found = r.out.find("\n" + heading + "\n");
            REQUIRE(found != std::string::npos);
            CHECK(found > at);  // in the lesson's order
            at = found;
        }
        const std::size_t step3 = r.out.find(zh ? "第 3 步 · " : "Step 3 · "),
                          step4 = r.out.find(zh ? "第 4 步 · " : "Step 4 · ");
        const std::size_t remark = r.out.find(zh ? "第 3 步为什么用 Kᵀ 而不是 K？" : "Why Kᵀ and not K?");
        CHECK((step3 < remark && remark < step4));
        CHECK(remark < r.out.find(headings[zh][0]));
        // confusion 2 says what a column would then mean
        CHECK_THAT(r.out, Contains(zh ? "所有 Query 争夺位置 j 的程度"
                                      : "how strongly all the queries compete for position j"));
    }
}

TEST_CASE("walk shows the confusions and step 3's remark with the library's numbers", "[cli][walk][lesson]") {
    const RunResult r = run_attn("walk");
    REQUIRE(r.status == 0);
    const attn::AttentionTrace tr = attn::worked_example::trace();
    check_matches(matrix_after(r.out, "  Q·K ("), attn::matmul(tr.Q, tr.K), 5e-5);
    // confusion 1: S_ij = ‖q_i‖·‖k_j‖·cos θ_ij, and S from other weights (W_K = W_Q) favours other tokens
    const attn::Matrix cosines = ex::cosines(tr.Q, tr.K);
    check_matches(matrix_after(r.out, "  cos θ_ij = "), cosines, 5e-5);
    for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t j = 0; j < 3; ++j) {
            double qq = 0, kk = 0;
            for (std::size_t p = 0; p < 3; ++p)
                qq += double(tr.Q(i, p)) * tr.Q(i, p), kk += double(tr.K(j, p)) * tr.K(j, p);
            CHECK(cosines(i, j) * std::sqrt(qq * kk) == Approx(tr.S(i, j)).margin(1e-5));
        }
    }
    const attn::Matrix tied = ex::scores_with_weights(tr.X, attn::worked_example::W_Q(), attn::worked_example::W_Q());
    check_matches(matrix_after(r.out, "  The same X with another W_K"), tied, 5e-5);
    CHECK_THAT(r.out, Contains("each row's highest-scoring key: 猫 cat → 猫 cat, 坐 sat → 坐 sat, 地毯 mat → 猫 cat;  "
                               "with the example's W_K: 猫 cat → 猫 cat, 坐 sat → 地毯 mat, 地毯 mat → 猫 cat"));
    CHECK(ex::row_argmax(tied.row(1)) == 1);  // the line above follows from the matrices
    CHECK(ex::row_argmax(tr.S.row(1)) == 2);
    // confusion 3: o₁ as the mix of values, with row 1 of α
    char mix[128];
    std::snprintf(mix, sizeof mix, "o₁ = %.4f·v₁ + %.4f·v₂ + %.4f·v₃", tr.weights(0, 0), tr.weights(0, 1),
                  tr.weights(0, 2));
    CHECK_THAT(r.out, Contains(mix));
    const attn::Matrix by_column = ex::softmax_columns(tr.S_scaled);
    check_matches(matrix_after(r.out, "Confusion 2"), by_column, 5e-5);
    for (std::size_t j = 0; j < 3; ++j) {
        double sum = 0;
        for (std::size_t i = 0; i < 3; ++i) sum += by_column(i, j);
        CHECK(sum == Approx(1.0).margin(1e-6));
    }
    CHECK_THAT(r.out, Contains("d_k = d_model / h = 512 / 8 = 64"));
}

TEST_CASE("the confusions' helpers: Q·K refused unless n = d_k, columns sum to 1, head widths", "[experiments]") {
    const attn::Matrix c1 = ex::cosines({{3.0f, 4.0f}, {0.0f, 0.0f}}, {{6.0f, 8.0f}, {-4.0f, 3.0f}});
    CHECK(c1(0, 0) == Approx(1.0));               // same direction
    CHECK(c1(0, 1) == Approx(0.0).margin(1e-7));  // perpendicular
    CHECK(c1(1, 0) == 0.0f);                      // a zero vector has no direction
    CHECK(ex::scores_with_weights({{1.0f, 2.0f}}, {{1.0f}, {1.0f}}, {{2.0f}, {0.0f}})(0, 0) == 6.0f);  // 3·2
    CHECK_THROWS_AS(ex::scores_without_transpose(attn::Matrix(4, 3), attn::Matrix(4, 3)), std::invalid_argument);
    CHECK(ex::scores_without_transpose(attn::Matrix(3, 3, 1.0f), attn::Matrix(3, 3, 2.0f))(1, 2) == 6.0f);
    const attn::Matrix c = ex::softmax_columns({{0.0f, 5.0f}, {0.0f, 5.0f}, {0.0f, -5.0f}});
    CHECK(c(0, 0) == Approx(1.0 / 3));
    CHECK(c(0, 1) + c(1, 1) + c(2, 1) == Approx(1.0));
    CHECK(ex::head_width(512, 8) == 64);
    CHECK(ex::head_width(768, 12) == 64);
    CHECK_THROWS_AS(ex::head_width(512, 0), std::invalid_argument);
    CHECK_THROWS_AS(ex::head_width(512, 3), std::invalid_argument);
}

TEST_CASE("walk --format json holds the library's numbers, each the shortest decimal of its float",
          "[cli][walk][lesson]") {
    for (bool causal : {false, true}) {
        const RunResult r = run_attn(std::string("walk --format json --scale dk") + (causal ? " --causal" : ""));
        REQUIRE(r.status == 0);
        const attn::AttentionTrace tr = attn::worked_example::trace({.causal = causal, .scale = attn::Scale::dk});
        CHECK_THAT(r.out, Contains("\"scale\": \"dk\"") && Contains(causal ? "\"causal\": true" : "\"causal\": false"));
        // Every entry of α and O, in order, after its key.
        for (const auto& [key, m] : {std::pair{"\"weights\"", &tr.weights}, {"\"output\"", &tr.output}}) {
            std::size_t at = r.out.find(key);
            REQUIRE(at != std::string::npos);
            for (std::size_t i = 0; i < m->size(); ++i) {
                at = r.out.find(number(m->data()[i]), at);
                CHECK(at != std::string::npos);
            }
        }
        // the masked scores above the diagonal; nothing else of the chain is infinite (the fused walk's
        // part starts from m = −∞ before its first key)
        const std::string chain = r.out.substr(0, r.out.find("\"fused\""));
        std::size_t infinities = 0;
        for (std::size_t at = 0; (at = chain.find("\"-inf\"", at)) != std::string::npos; ++at) ++infinities;
        CHECK(infinities == (causal ? 3u : 0u));
    }
    CHECK(run_attn("walk --format yaml").status == 2);
}

TEST_CASE("exercise 1: each sentence under the table states what the table shows", "[cli][experiments][lesson]") {
    const RunResult r = run_attn("exercise 1");
    REQUIRE(r.status == 0);
    const auto results = ex::scaling_over_draws({4, 16, 64, 256, 1024}, 64, 64, 20, 1);
    const auto none = ex::scaling_trend(results, attn::Scale::none);
    char peak[32], last[32];
    std::snprintf(peak, sizeof peak, "%.4f at d_k = %zu", none.peak_jacobian.mean.jacobian_norm,
                  none.peak_jacobian.d_k);
    std::snprintf(last, sizeof last, "%.4f at d_k = %zu", none.last.mean.jacobian_norm, none.last.d_k);
    // ‖J‖ without scaling rises before it falls: the sentence must name the peak, not call it monotone.
    REQUIRE(none.peak_jacobian.d_k != none.first.d_k);
    CHECK_THAT(r.out, Contains(std::string("first grows while the scores spread, to ") + peak));
    CHECK_THAT(r.out, Contains(std::string("then falls to ") + last));
    CHECK_THAT(r.out, !Contains("‖J‖ → 0"));
    const auto sqrt = ex::scaling_trend(results, attn::Scale::sqrt_dk);
    char spread[48];
    std::snprintf(spread, sizeof spread, "entropy between %.3f and %.3f", sqrt.min_entropy, sqrt.max_entropy);
    CHECK_THAT(r.out, Contains(spread));
}

// The default sizes (up to n = 4000) take seconds in a release build and minutes under the
// sanitizers; up to 640 the same code runs in well under a second. ([slow]: skipped under qemu.)
TEST_CASE("exercise 3 times the median of 5 repeats", "[cli][experiments][lesson][slow]") {
    const RunResult r = run_attn("exercise 3 --largest 640");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("median of 5 repeats"));
    // 1000² scores of sizeof(float) bytes each, 4,000,000 / 2²⁰ = 3.81 MiB; every backend timed is judged
    CHECK_THAT(r.out, Contains("n = 1000 gives 1000² = 1,000,000 scores, 4,000,000 bytes as float32 (3.8 MiB)") &&
                          Contains("    naive ") && Contains("    simd ") && Contains("    fused ") &&
                          Contains("The fused backend returned 0 bytes of S at every n"));
    // Each verdict against the runs' range it prints: tests/test_cli_learn.cpp.
    CHECK_THROWS_AS(ex::growth_experiment({8}, attn::Backend::simd, 0), std::invalid_argument);
}

TEST_CASE("Chinese output: full-width punctuation after Chinese text, no English left", "[cli][lesson]") {
    // The mistakes this catches, in every Chinese output (walk in each mode, the five exercises, the
    // variance experiment, the help texts):
    //  - a half-width ':', ',' or ';' right after a multi-byte character ("句子: "; this also refuses
    //    "α:", stricter than needed, and the output passes it);
    //  - half-width parentheses of prose: around Chinese ("1.3378 (地毯)"), or giving a value after
    //    Chinese ("属于 地毯 (S₂₃ = 1.3378)"); a formula's own ("(Q·K)_ij", "的 (i, j) 对") are left alone;
    //  - a half-width ',' inside full-width parentheses ("（α₁₂ = 0.2844, α₁₃ = 0.2317）").
    const auto chinese_at = [](const std::string& line, std::size_t end) {  // the character ending at end
        if (end < 3) return false;
        const auto b = [&](std::size_t k) { return static_cast<unsigned char>(line[k]); };
        const unsigned code = (b(end - 3) & 0x0Fu) << 12 | (b(end - 2) & 0x3Fu) << 6 | (b(end - 1) & 0x3Fu);
        return (b(end - 3) & 0xF0u) == 0xE0u && ((code >= 0x3000 && code <= 0x9FFF) || code >= 0xFF00);
    };
    const auto problem = [&](const std::string& line) -> std::string {
        int inside_full_width = 0, inside_half_width = 0;  // "（N(0, 1)，…）": a formula's comma is fine
        for (std::size_t k = 1; k < line.size(); ++k) {
            if (line.compare(k, 3, "（") == 0) ++inside_full_width;
            if (line.compare(k, 3, "）") == 0) --inside_full_width;
            const char c = line[k];
            inside_half_width += c == '(' ? 1 : c == ')' ? -1 : 0;
            // (a formula's comma after a subscript, "max(m₁, m₂)", is the formula's own)
            const bool after_subscript = k >= 3 && line.compare(k - 3, 2, "\xE2\x82") == 0 &&
                                         static_cast<unsigned char>(line[k - 1]) >= 0x80 &&
                                         static_cast<unsigned char>(line[k - 1]) <= 0x89;
            if ((c == ':' || c == ',' || c == ';') && static_cast<unsigned char>(line[k - 1]) >= 0x80 &&
                !after_subscript)
                return std::string("half-width '") + c + "' after a multi-byte character";
            if (c == ',' && inside_full_width > 0 && inside_half_width == 0)
                return "half-width ',' inside full-width parentheses";
            if (c == '(') {  // a parenthesis of prose, not of a formula: "(Q·K)_ij" and "(n×n)·(n×d_v)" are math
                const std::size_t close = line.find(')', k);
                const std::string after = close == std::string::npos ? "" : line.substr(close + 1, 2);
                if (after.rfind("_", 0) == 0 || after.rfind("·", 0) == 0) continue;
                std::size_t before = k;
                while (before > 0 && line[before - 1] == ' ') --before;
                const std::string inside = line.substr(k + 1, close == std::string::npos ? 0 : close - k - 1);
                bool chinese_inside = false;
                for (std::size_t end = k + 4; end <= std::min(close, line.size()); ++end)
                    chinese_inside = chinese_inside || chinese_at(line, end);
                // a remark in Chinese, or a value given in passing after Chinese: "地毯 (S₂₃ = 1.3378)"
                if (chinese_inside || (chinese_at(line, before) && inside.find(" = ") != std::string::npos))
                    return "half-width parentheses in Chinese text";
            }
        }
        return "";
    };
    for (const std::string args :
         {"walk", "walk --causal", "walk --scale dk", "walk --causal --scale none", "walk --help", "exercise 1",
          "exercise 2 --samples 300", "exercise 3 --largest 256", "exercise 4", "exercise 5", "exercise --help",
          "variance --samples 300", "variance --help"}) {
        INFO("attn " << args << " --lang zh");
        const RunResult r = run_attn(args + " --lang zh");
        REQUIRE(r.status == 0);
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            INFO(line);
            CHECK(problem(line) == "");
        }
        if (args.rfind("walk", 0) == 0 && args.find("--help") == std::string::npos)  // a token follows 属于 directly
            CHECK_THAT(r.out, Contains("否，该行最大的分数在“地毯”这一列（S₂₃ = ") && !Contains("属于"));
        if (args.find("--help") == std::string::npos)  // (a help text names the options, in English)
            CHECK_THAT(r.out, !Contains("backend ") && !Contains("max =") && !Contains("的对数") &&
                                  !Contains("Step ") && !Contains("the "));
        // The lesson's own terms: its confusions are 容易搞混的问题, and it writes Query, Key and Value
        // in Latin letters; the project says the same everywhere, never 误区 or 容易混淆, 查询 or 键.
        CHECK_THAT(r.out, !Contains("误区") && !Contains("容易混淆") && !Contains("查询") && !Contains("键") &&
                              !Contains("值向量") && !Contains(" query ") && !Contains(" key "));
    }
    // The check itself, on the three mistakes it was written for and on their corrections.
    CHECK(problem("  坐    S₂₂ = 1.2631  否，该行最大的分数属于 地毯 (S₂₃ = 1.3378)") != "");
    CHECK(problem("  最大值 = 1.3378 (地毯)") != "");
    CHECK(problem("  α·V 的形状是 (n×n)·(n×d_v) = n×d_v") == "");
    CHECK(problem("  满足 S_ij > max(S_ii, S_jj) 的 (i, j) 对的个数：0") == "");
    CHECK(problem("  其他词（此处 α₁₂ = 0.2844, α₁₃ = 0.2317）。") != "");
    CHECK(problem("句子: 猫") != "");
    CHECK(problem("  否，该行最大的分数属于地毯（S₂₃ = 1.3378）") == "");
    CHECK(problem("  X (3×4) → Q (3×3), K (3×3)") == "");
}

TEST_CASE("exercise 2 first says what S_ii is, then asks whether it is the largest", "[cli][lesson]") {
    for (const std::string args : {"walk", "exercise 2 --samples 300"}) {
        for (const bool zh : {false, true}) {
            INFO("attn " << args << (zh ? " --lang zh" : ""));
            const RunResult r = run_attn(args + (zh ? " --lang zh" : ""));
            REQUIRE(r.status == 0);
            const std::size_t question = r.out.find(zh ? "对角线上的 S_ii 是什么含义？它总是该行最大的分数吗？"
                                                       : "What is the diagonal S_ii, and is it the largest score");
            const std::size_t meaning = r.out.find(zh ? "S_ii = q_i·k_i：第 i 个词的 Query 与它自己的 Key 的点积"
                                                      : "S_ii = q_i·k_i: token i's query scored against its own key");
            const std::size_t first_row = r.out.find(zh ? "S₁₁ = " : "S₁₁ = ", question);
            REQUIRE(question != std::string::npos);
            REQUIRE(meaning != std::string::npos);
            CHECK(question < meaning);
            if (args == "walk") CHECK(meaning < first_row);  // said before the rows are compared
        }
    }
}

TEST_CASE("the README's excerpt of attn walk is what attn walk prints", "[cli][walk][lesson]") {
    std::ifstream in(std::string(TESTS_DIR) + "/../README.md");
    std::stringstream readme;
    readme << in.rdbuf();
    const std::string text = readme.str();
    const std::size_t start = text.find("The walk\nbegins like this");
    REQUIRE(start != std::string::npos);
    const RunResult r = run_attn("walk");
    REQUIRE(r.status == 0);
    // The indented block after that sentence, line by line ("…" stands for the lines left out).
    std::istringstream lines(text.substr(text.find("\n\n", start) + 2));
    std::size_t checked = 0;
    for (std::string line; std::getline(lines, line) && (line.empty() || line.rfind("    ", 0) == 0);) {
        if (line.empty() || line == "    …") continue;
        INFO(line);
        CHECK_THAT(r.out, Contains(line.substr(4)));
        ++checked;
    }
    CHECK(checked >= 8);
}

namespace {

// The "text" object of `attn walk --format json`: one "key": "sentence" per line, each backslash
// escape (the sentences hold only quotes) undone.
std::vector<std::pair<std::string, std::string>> walk_sentences(const std::string& json) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(json.substr(json.find("\"text\": {")));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line) && line.find("\": \"") != std::string::npos) {
        std::string key, value;
        bool in_value = false;
        for (std::size_t k = line.find('"') + 1, end = line.rfind('"'); k < end; ++k) {
            if (!in_value && line.compare(k, 4, "\": \"") == 0) {
                in_value = true;
                k += 3;
            } else {
                if (line[k] == '\\') ++k;
                (in_value ? value : key) += line[k];
            }
        }
        out.emplace_back(key, value);
    }
    return out;
}

// The sentence as the terminal prints it: no marks, each {} replaced by the next of `values`.
std::string as_printed(const std::string& sentence, std::vector<std::string> values = {}) {
    std::string out;
    std::size_t next = 0;
    for (std::size_t k = 0; k < sentence.size(); ++k) {
        if (sentence[k] == '$') continue;
        if (sentence[k] == '{' && k + 1 < sentence.size() && sentence[k + 1] == '}' && next < values.size()) {
            out += values[next++];
            ++k;
        } else {
            out += sentence[k];
        }
    }
    return out;
}

}  // namespace

TEST_CASE("the pages' sentences are the walk's own: printed by it, formulas marked for typesetting",
          "[cli][walk][lesson]") {
    for (const std::string lang : {"en", "zh"}) {
        for (const std::string scale : scales) {
            const std::string options = " --lang " + lang + " --scale " + scale;
            const RunResult json = run_attn("walk --format json" + options);
            const RunResult masked = run_attn("walk --color always --causal" + options),
                            unmasked = run_attn("walk --color always" + options);
            REQUIRE(json.status == 0);
            REQUIRE((masked.status == 0 && unmasked.status == 0));
            const std::string printed = masked.out + unmasked.out;
            const auto sentences = walk_sentences(json.out);
            CHECK(sentences.size() == 66);
            for (const auto& [key, sentence] : sentences) {
                INFO(lang << " " << scale << " " << key << ": " << sentence);
                CHECK(std::count(sentence.begin(), sentence.end(), '$') % 2 == 0);
                // Outside the marks, no piece of a formula: the pages would show it as plain words.
                // (" · " after a step's number and the file named in the weights' note are words.)
                std::string words;
                for (std::size_t k = 0, open = 0; k < sentence.size(); ++k) {
                    if (sentence[k] == '$') open ^= 1;
                    else if (!open) words += sentence[k];
                }
                for (const std::string prose : {" · ", "worked_example"})
                    if (const std::size_t at = words.find(prose); at != std::string::npos)
                        words.erase(at, prose.size());
                for (const char* piece : {"_", "·", "ᵀ", "√", "Σ", "‖", "∞", "²", "₁", "θ"})
                    CHECK(words.find(piece) == std::string::npos);
                // The terminal says it too, every piece between its {} (the heat map's caption needs
                // colours on; o₁ written out once more is said without the mask, the last row's mix
                // with it). Only the sentence for n ≠ d_k, which the pages' editable example needs,
                // is never reached by the lesson's example.
                if (key == "transpose_refused") continue;
                const std::string said = as_printed(sentence);
                for (std::size_t from = 0, to; from <= said.size(); from = to + 2) {
                    to = std::min(said.find("{}", from), said.size());
                    if (to > from) CHECK_THAT(printed, Contains(said.substr(from, to - from)));
                }
            }
        }
    }
}

// Step 4's main reason, as the lesson gives it: the scaling is needed for numerical stability, since
// unscaled scores make the softmax nearly one-hot and its gradients vanish; said at step 4 itself,
// in both languages, with the exercise that shows it. And step 5 says what the softmax does to each
// row (exponentiate, divide the row's exponentials by their sum), which "made positive" did not.
TEST_CASE("walk: step 4 gives the scaling's main reason, step 5 the softmax in words", "[cli][walk][lesson]") {
    for (const bool zh : {false, true}) {
        const RunResult r = run_attn(zh ? "walk --lang zh" : "walk");
        REQUIRE(r.status == 0);
        const std::size_t step4 = r.out.find(zh ? "第 4 步 · " : "Step 4 · "),
                          step5 = r.out.find(zh ? "第 5 步 · " : "Step 5 · "),
                          step6 = r.out.find(zh ? "第 6 步 · " : "Step 6 · ");
        REQUIRE((step4 < step5 && step5 < step6 && step6 != std::string::npos));
        const std::string at4 = r.out.substr(step4, step5 - step4), at5 = r.out.substr(step5, step6 - step5);
        for (const char* phrase :
             zh ? std::vector<const char*>{"数值稳定", "必要", "one-hot", "梯度几乎消失", "attn exercise 1"}
                : std::vector<const char*>{"numerical stability", "not as an optional trick", "one-hot",
                                           "gradients all but vanish", "attn exercise 1"}) {
            INFO(phrase);
            CHECK_THAT(at4, Contains(phrase));
        }
        CHECK_THAT(at5, Contains(zh ? "每个缩放后的分数取指数，再除以该行所有指数之和"
                                    : "each row's exponentials are divided by their sum"));
        CHECK_THAT(r.out, !Contains("made positive"));
    }
    // under the other scales, the same consequence is what their notes point at
    CHECK_THAT(run_attn("walk --scale none").out, Contains("attn exercise 1"));
}

// What the pages draw is decided once, in lesson/: which row step 5 writes out, and where each row's
// largest score is (confusion 1 and exercise 2), from the library's numbers.
TEST_CASE("walk --format json says which row is written out and which cells hold each row's largest score",
          "[cli][walk][lesson]") {
    for (const bool causal : {false, true}) {
        INFO((causal ? "causal" : "no mask"));
        const RunResult r = run_attn(std::string("walk --format json") + (causal ? " --causal" : ""));
        REQUIRE(r.status == 0);
        const attn::AttentionTrace tr = attn::worked_example::trace({.causal = causal});
        CHECK_THAT(r.out, Contains(std::string("\"softmax_row\": {\"row\": ") + (causal ? "2" : "0") + ", "));
        const attn::Matrix tied =
            ex::scores_with_weights(tr.X, attn::worked_example::W_Q(), attn::worked_example::W_Q());
        const auto argmax = [](const attn::Matrix& S) {
            std::string out;
            for (std::size_t i = 0; i < S.rows(); ++i)
                out += (i ? ", " : "") + std::to_string(ex::row_argmax(S.row(i)));
            return out;
        };
        CHECK_THAT(r.out, Contains("\"largest_per_row\": {\"S\": [" + argmax(tr.S) + "], \"S_with_W_K_as_W_Q\": [" +
                                   argmax(tied) + "]}"));
        CHECK_THAT(r.out,
                   Contains("\"written_out\": {\"column\": 1, \"q_norm\": " + number(float(attn::norm(tr.Q.row(0)))) +
                            ", \"k_norm\": " + number(float(attn::norm(tr.K.row(1)))) + "}"));
    }
}

// The backward walk's sentences travel with its numbers: every gradient's note, under the gradient's
// own name, and the terminal prints each of them.
TEST_CASE("walk --grad --format json carries every gradient's note, which the text walk prints",
          "[cli][walk][backward][lesson]") {
    for (const std::string lang : {"en", "zh"}) {
        const RunResult json = run_attn("walk --grad --format json --lang " + lang);
        const RunResult text = run_attn("walk --grad --lang " + lang);
        REQUIRE((json.status == 0 && text.status == 0));
        const std::string backward = json.out.substr(json.out.find("\"backward\": {"));
        for (const char* name : {"dV", "d_weights", "dS_prime", "dS", "dQ", "dK", "dW_Q", "dW_K", "dW_V", "dX"}) {
            INFO(lang << " " << name);
            CHECK_THAT(backward, Contains("\"name\": \"" + std::string(name) + "\"}"));
            const std::size_t at = backward.find("\n      \"" + std::string(name) + "\": \"");
            REQUIRE(at != std::string::npos);
            const std::size_t start = backward.find(": \"", at) + 3;
            CHECK_THAT(text.out, Contains(as_printed(backward.substr(start, backward.find('"', start) - start))));
        }
    }
}

TEST_CASE("walk --grad: dW_Q is the gradient, one step subtracts η·dW_Q, and dW_K, dW_V refer to it",
          "[cli][walk][backward][lesson]") {
    const RunResult en = run_attn("walk --grad"), zh = run_attn("walk --grad --lang zh");
    REQUIRE((en.status == 0 && zh.status == 0));
    CHECK_THAT(en.out, Contains("the gradient of L for W_Q: each token's query error carried back through its "
                                "embedding and summed over the tokens, Σ_i x_iᵀ·dq_i; one step of gradient descent "
                                "subtracts η·dW_Q from W_Q") &&
                           Contains("the same for W_K, with each token's key error in place of its query error") &&
                           Contains("the same for W_V, with each token's value error in place of its query error") &&
                           !Contains("what training subtracts"));
    CHECK_THAT(zh.out, Contains("L 对 W_Q 的梯度") && Contains("梯度下降每一步从 W_Q 减去 η·dW_Q") &&
                           Contains("只是把 Query 上的误差换成每个词 Key 上的误差"));
    // η as the shortest decimal that reads back to the float the step used
    CHECK_THAT(en.out, Contains("W ← W − η·dW with η = 0.1, on W_Q"));
}

TEST_CASE("the mask note says what row i gives later tokens, in walk --causal and exercise 4 alike", "[cli][lesson]") {
    const char* const note[2] = {
        "S'_ij = −∞ for j > i: e^−∞ = 0, so row i gives later tokens no weight and o_i takes nothing from them.",
        "j > i 时 S'_ij = −∞：e^−∞ = 0，所以第 i 行分给后面各词的权重都是 0，o_i 不含它们的任何成分。"};
    for (const bool zh : {false, true}) {
        const std::string lang = zh ? " --lang zh" : "";
        const RunResult walk = run_attn("walk --causal" + lang), exercise = run_attn("exercise 4" + lang);
        CHECK_THAT(walk.out, Contains(note[zh]));
        CHECK_THAT(exercise.out, Contains(note[zh]) && !Contains("future gets no weight") && !Contains("未来位置"));
    }
}

TEST_CASE("exercise 5 is the walk's: its title and note, and the same numbers", "[cli][lesson]") {
    const RunResult walk = run_attn("walk"), exercise = run_attn("exercise 5");
    const std::string title =
        "Exercise 5 · output[0] against V[0]\n  since Σ_j α₁ⱼ = 1, o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁): "
        "the difference is what the other tokens contributed, each in proportion to its weight.";
    CHECK_THAT(walk.out, Contains(title));
    CHECK_THAT(exercise.out, Contains(title) && Contains("‖o₁ − v₁‖ = 0.9338 (length)"));
    const attn::AttentionTrace t = attn::worked_example::trace();
    CHECK_THAT(exercise.out, Contains("α₁₂ = " + attn::format_number(t.weights(0, 1), 4) +
                                      ", α₁₃ = " + attn::format_number(t.weights(0, 2), 4)));
    const auto table = ex::output_against_value(t, 0);
    attn::PrintOptions p;
    p.row_labels = {"o₁", "v₁", "o₁ − v₁", "Σ α₁ⱼ(v_j − v₁)"};
    CHECK_THAT(exercise.out, Contains(attn::format_matrix(table.rows, p)));
}

TEST_CASE("exercise 2's rows are the walk's: each row's largest score, the same in both", "[cli][lesson]") {
    const attn::AttentionTrace t = attn::worked_example::trace();
    const RunResult walk = run_attn("walk"), exercise = run_attn("exercise 2 --samples 300");
    const char* const tokens[] = {"猫 cat", "坐 sat", "地毯 mat"};
    const char* const subscripts[] = {"₁", "₂", "₃"};
    for (std::size_t i = 0; i < 3; ++i) {
        const std::size_t best = ex::row_argmax(t.S.row(i));
        INFO("row " << i + 1);
        CHECK_THAT(exercise.out, Contains("max = " + attn::format_number(t.S(i, best), 4) + " (" + tokens[best] + ")"));
        // the walk's rows line up: "  地毯 mat S₃₃", "  猫 cat   S₁₁" (the widest token, then one space)
        const std::string row = std::string("  ") + tokens[i] + std::string(8 - attn::display_width(tokens[i]), ' ') +
                                " S" + subscripts[i] + subscripts[i] + " = ";
        CHECK_THAT(walk.out, Contains(row));
    }
}

TEST_CASE("walk in Chinese: shapes after titles in full-width parentheses, no space after a full stop or ？",
          "[cli][walk][lesson]") {
    const RunResult r = run_attn("walk --lang zh");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("第 1 步 · 输入 X（3×4）") && Contains("第 3 步 · 注意力分数 S = Q·Kᵀ（3×3）") &&
                          Contains("第 6 步 · 输出 O = α·V（3×3）") && !Contains("？ ") && !Contains("。 "));
}

TEST_CASE("walk writes o₁ out once; confusion 3 points to it, or under the mask writes out its own row",
          "[cli][walk][lesson]") {
    const RunResult plain = run_attn("walk"), masked = run_attn("walk --causal");
    const attn::AttentionTrace t = attn::worked_example::trace(), m = attn::worked_example::trace({.causal = true});
    const auto mix = [](const attn::AttentionTrace& tr, std::size_t r, const char* o) {
        std::string s = o;
        const char* const v[] = {"·v₁", "·v₂", "·v₃"};
        for (std::size_t j = 0; j < 3; ++j) s += (j ? " + " : " ") + attn::format_number(tr.weights(r, j), 4) + v[j];
        return s;
    };
    const std::string o1 = mix(t, 0, "o₁ =");
    const std::size_t first = plain.out.find(o1);
    REQUIRE(first != std::string::npos);
    CHECK(plain.out.find(o1, first + 1) == std::string::npos);
    CHECK_THAT(plain.out, Contains("o₁ as step 6 wrote it out above."));
    CHECK_THAT(masked.out, Contains(mix(m, 2, "o₃ =")) && !Contains("as step 6 wrote it out"));
}
