// `attn learn` and the words of `attn exercise 1, 3, 4`: every setting echoed so that it reads back,
// the sizes and the trained matrices stated, the defaults printed from learn::Settings{}, and each
// claim under a table chosen from what the table (or every run) shows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "lesson/experiments.hpp"
#include "lesson/learn.hpp"
#include "matrix/print.hpp"
#include "run_attn.hpp"

using Catch::Contains;
namespace ex = attn::experiments;
namespace learn = attn::learn;

namespace {

// The text after `key` up to the next ',' or newline: a JSON field's value as written.
std::string field(const std::string& json, const std::string& key) {
    const std::size_t at = json.find("\"" + key + "\": ");
    if (at == std::string::npos) return "";
    const std::size_t start = at + key.size() + 4;
    return json.substr(start, json.find_first_of(",\n", start) - start);
}

std::string range(const std::vector<float>& w) {
    const auto [lo, hi] = std::minmax_element(w.begin(), w.end());
    return attn::format_number(*lo, 4) + "–" + attn::format_number(*hi, 4);
}

}  // namespace

TEST_CASE("attn learn echoes --lr as the shortest decimal that reads back to the float it used", "[cli][learn]") {
    for (const char* lr : {"1e-7", "4e-4", "0.05", "0.123456789", "1"}) {
        INFO("--lr " << lr);
        const RunResult json = run_attn(std::string("learn --steps 2 --format json --lr ") + lr);
        REQUIRE(json.status == 0);
        const std::string echoed = field(json.out, "lr");
        CHECK(std::strtof(echoed.c_str(), nullptr) == std::strtof(lr, nullptr));
        const RunResult text = run_attn(std::string("learn --steps 2 --lr ") + lr);
        CHECK_THAT(text.out, Contains("lr = " + echoed + ","));
    }
    CHECK(field(run_attn("learn --steps 2 --format json --lr 1e-7").out, "lr") == "1e-07");
    CHECK_THAT(run_attn("learn --steps 2 --lr 4e-4").out, Contains("lr = 0.0004,"));
}

TEST_CASE("attn learn states the sizes and which matrices it trains, in text and JSON", "[cli][learn]") {
    const RunResult plain = run_attn("learn --format json"), values = run_attn("learn --format json --train-values");
    REQUIRE((plain.status == 0 && values.status == 0));
    for (const auto& [key, want] : std::vector<std::pair<std::string, std::string>>{{"n", "3"},
                                                                                    {"d_model", "4"},
                                                                                    {"d_k", "3"},
                                                                                    {"d_v", "3"},
                                                                                    {"steps", "300"},
                                                                                    {"seed", "1"},
                                                                                    {"backend", "\"naive\""},
                                                                                    {"train_values", "false"},
                                                                                    {"trained", "[\"W_Q\""}}) {
        INFO(key);
        CHECK(field(plain.out, key) == want);
    }
    CHECK_THAT(plain.out, Contains("\"trained\": [\"W_Q\", \"W_K\"],"));
    CHECK_THAT(values.out, Contains("\"trained\": [\"W_Q\", \"W_K\", \"W_V\"],") && Contains("\"train_values\": true"));
    const RunResult retrieval = run_attn("learn --task retrieval --format json");
    CHECK((field(retrieval.out, "d_model") == "8" && field(retrieval.out, "d_k") == "8" &&
           field(retrieval.out, "d_v") == "8"));
    CHECK_THAT(run_attn("learn").out, Contains("n = 3, d_model = 4, d_k = 3, d_v = 3") &&
                                          Contains("Trained: W_Q and W_K.") && Contains("W_V stays fixed"));
    CHECK_THAT(run_attn("learn --lang zh").out, Contains("n = 3，d_model = 4，d_k = 3，d_v = 3") &&
                                                    Contains("训练：W_Q 和 W_K。") && Contains("W_V 固定不变"));
    CHECK_THAT(run_attn("learn --train-values").out, Contains("Trained: W_Q, W_K and W_V."));
}

TEST_CASE("attn learn in Chinese: full-width punctuation after Chinese text, no English sentence", "[cli][learn]") {
    for (const char* args : {"", " --train-values", " --task retrieval", " --help"}) {
        const RunResult r = run_attn(std::string("learn --lang zh") + args);
        REQUIRE(r.status == 0);
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            INFO("attn learn --lang zh" << args << ": " << line);
            for (std::size_t k = 1; k < line.size(); ++k) {
                const char c = line[k];
                CHECK_FALSE(((c == ':' || c == ',' || c == ';') && static_cast<unsigned char>(line[k - 1]) >= 0x80));
            }
        }
        if (std::string(args) != " --help")
            CHECK_THAT(r.out, !Contains("the ") && !Contains("Trained") && !Contains("Settings") && !Contains("读"));
    }
}

TEST_CASE("attn learn --help prints the defaults of learn::Settings", "[cli][learn]") {
    const learn::Settings defaults;
    char lr[32];
    std::snprintf(lr, sizeof lr, "%g", double(defaults.learning_rate));
    for (const char* lang : {"en", "zh"}) {
        INFO(lang);
        const RunResult r = run_attn(std::string("learn --help --lang ") + lang);
        REQUIRE(r.status == 0);
        const std::string open = std::string(lang) == "zh" ? "默认 " : "default ";
        CHECK_THAT(r.out, Contains(open + std::to_string(defaults.steps)) && Contains(open + lr) &&
                              Contains(open + std::to_string(defaults.seed)) && Contains("--train-values"));
    }
}

TEST_CASE("attn learn's last lines are what the run reached, and --train-values compares with W_V fixed",
          "[cli][learn]") {
    for (const char* task : {"sentence", "retrieval"}) {
        INFO(task);
        const learn::Task t = std::string(task) == "sentence" ? learn::Task::sentence : learn::Task::retrieval;
        const learn::Problem p = learn::make_problem(t, 1);
        learn::Settings fixed, values;
        values.train_values = true;
        const auto alone = learn::wanted_weights(learn::train(p, fixed).alpha_end, p);
        const auto shared = learn::wanted_weights(learn::train(p, values).alpha_end, p);
        CHECK_THAT(run_attn(std::string("learn --task ") + task).out,
                   Contains("The wanted cells now hold " + range(alone) + " of their rows' weight."));
        const RunResult r = run_attn(std::string("learn --train-values --task ") + task);
        CHECK_THAT(r.out, Contains("The wanted cells now hold " + range(shared) + " of their rows' weight.") &&
                              Contains("With W_V fixed, the same steps take them to " + range(alone) + "."));
    }
}

TEST_CASE("attn learn --train-values prints the two means its verdict compares, and the margin", "[cli][learn]") {
    const learn::Problem p = learn::make_problem(learn::Task::sentence, 1);
    for (const char* steps : {"5", "300"}) {
        INFO("--steps " << steps);
        learn::Settings fixed, values;
        fixed.steps = values.steps = std::stoul(steps);
        values.train_values = true;
        const double alone = learn::mean_wanted_weight(learn::train(p, fixed).alpha_end, p),
                     shared = learn::mean_wanted_weight(learn::train(p, values).alpha_end, p);
        const RunResult r = run_attn(std::string("learn --train-values --steps ") + steps);
        REQUIRE(r.status == 0);
        CHECK_THAT(r.out, Contains("Mean weight on the wanted cells: " + attn::format_number(float(shared), 4) +
                                   " with W_V trained, " + attn::format_number(float(alone), 4) + " with it fixed."));
        // the verdict, the measured difference of the two means and the margin it was held against
        const char* words[] = {"Here α moved less: its mean is lower by ",
                               "Here α moved about as far: the two means differ by ",
                               "Here α moved further: its mean is higher by "};
        const std::string difference = attn::format_number(float(std::abs(shared - alone)), 4);
        const int verdict = int(learn::compare_reach(shared, alone));
        CHECK_THAT(r.out, Contains(words[verdict] + difference + (verdict == 1 ? ", no more than" : ", more than") +
                                   " the margin of 0.01 within which"));
    }
    // At 300 steps the values take up enough of the error that α stays clearly behind.
    CHECK_THAT(run_attn("learn --train-values").out, Contains("Here α moved less: its mean is lower by 0.1"));
    CHECK_THAT(run_attn("learn --train-values --steps 5").out, Contains("Here α moved about as far: "));
    CHECK_THAT(run_attn("learn --train-values --lang zh").out,
               Contains("这次 α 移动得更少：平均权重低了 0.1") && Contains("超过了 0.01 的容差"));
}

TEST_CASE("attn learn prints L to 4 significant digits, in scientific notation once it is small", "[cli][learn]") {
    const learn::Problem p = learn::make_problem(learn::Task::sentence, 1);
    learn::Settings s;
    s.steps = 2000;
    s.learning_rate = 0.1f;
    const learn::Run run = learn::train(p, s);
    REQUIRE(run.loss.back() < 1e-4);  // small enough that six fixed decimals would print 0.000000 or so
    char first[32], last[32];
    std::snprintf(first, sizeof first, "%.4g", run.loss.front());
    std::snprintf(last, sizeof last, "%.4g", run.loss.back());
    const RunResult r = run_attn("learn --steps 2000 --lr 0.1");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains(std::string("L fell from ") + first + " to " + last + "."));
    CHECK(std::string(last).find('e') != std::string::npos);
    CHECK(std::strtod(last, nullptr) > 0);
}

TEST_CASE("exercise 1 prints means over draws with their spread, and words that follow the means",
          "[cli][experiments][lesson]") {
    const auto results = ex::scaling_over_draws({4, 16, 64, 256, 1024}, 64, 64, 20, 1);
    const auto sqrt = ex::scaling_trend(results, attn::Scale::sqrt_dk);
    const RunResult r = run_attn("exercise 1"), zh = run_attn("exercise 1 --lang zh");
    REQUIRE((r.status == 0 && zh.status == 0));
    char row[64], spread[96], threshold[128];
    std::snprintf(row, sizeof row, "%.3f ± %.3f", results[1].mean.entropy, results[1].spread.entropy);
    std::snprintf(spread, sizeof spread, "mean entropy between %.3f and %.3f", sqrt.min_entropy, sqrt.max_entropy);
    const bool same = !sqrt.entropy_changes();
    std::snprintf(threshold, sizeof threshold, "%s 3 standard errors of that difference (%.3f)",
                  same ? "within" : "more than", sqrt.entropy_threshold);
    CHECK_THAT(r.out, Contains("20 draws per d_k") && Contains(row) && Contains(spread) && Contains(threshold));
    CHECK_THAT(r.out, Contains(same ? "about the same at every width" : "still changes with d_k"));
    CHECK_THAT(zh.out, Contains(same ? "注意力的分散程度（熵）都差不多" : "注意力的分散程度（熵）仍随 d_k 变化"));
    // with the lesson's assumption the means of 20 draws stay within the rule's margin
    CHECK(same);
}

TEST_CASE("exercise 3's verdicts follow every run, and say so when the runs do not decide",
          "[cli][experiments][lesson][slow]") {
    for (const char* lang : {"en", "zh"}) {
        const RunResult r = run_attn(std::string("exercise 3 --largest 256 --lang ") + lang);
        REQUIRE(r.status == 0);
        const bool zh = std::string(lang) == "zh";
        CHECK_THAT(r.out, Contains(zh ? "单次调用注意力的核心计算" : "median of 5 repeats"));
        CHECK_THAT(r.out, !Contains("-0.00 ") && !Contains("(-0.00") && !Contains("（-0.00"));  // 0 has no sign
        for (const std::string name : {"naive", "simd", "fused"}) {
            // "    naive 2.04: close to 2 in all 5 runs (1.98 to 2.10), …"
            const std::size_t at = r.out.find("\n    " + name + " ");
            REQUIRE(at != std::string::npos);
            const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
            INFO(line);
            const std::size_t open = line.find(zh ? "（" : " ("), close = line.find(zh ? " 至 " : " to ", open);
            REQUIRE((open != std::string::npos && close != std::string::npos));
            ex::ExponentSpread e;
            e.lowest = std::stod(line.substr(open + (zh ? 3 : 2)));
            e.highest = std::stod(line.substr(close + (zh ? 5 : 4)));
            if (line.find(zh ? "机器太忙" : "too busy") != std::string::npos) {
                // the reason, measured: a scatter that could move an exponent by more than the margin, or
                // calls that spent more than half their time waiting for a core
                std::size_t end = r.out.find('\n', at + 1);  // the verdict and its lines indented further
                while (r.out.compare(end, 7, "\n      ") == 0) end = r.out.find('\n', end + 1);
                const std::string rest = r.out.substr(at + 1, end - at - 1);
                INFO(rest);
                const std::size_t shift = rest.find(zh ? "让指数变动 " : "move an exponent by "),
                                  waited = rest.find(zh ? "调用有 " : "calls spent");
                if (shift != std::string::npos)
                    CHECK(std::stod(rest.substr(shift + (zh ? 16 : 20))) > ex::growth_margin + 0.005);
                else {
                    REQUIRE(waited != std::string::npos);
                    const std::size_t number = rest.find_first_of("0123456789", waited + (zh ? 10 : 0));
                    CHECK(std::stod(rest.substr(number)) >= 50);  // more than half, printed to a whole percent
                }
                continue;
            }
            // on a machine quiet enough, the words are the rule's for the printed range
            const char* want[2][4] = {{"close to 2 in all 5 runs", "above 2 in all 5 runs", "below 2 in all 5 runs",
                                       "the 5 runs do not decide"},
                                      {"5 轮都接近 2", "5 轮都高于 2", "5 轮都低于 2", "5 轮无法给出结论"}};
            CHECK_THAT(line, Contains(want[zh][int(ex::growth_verdict(e, ex::Busy{}))]));
            CHECK(line.find("：高于 2：") == std::string::npos);
        }
    }
}

TEST_CASE("growth_verdict: a quiet machine first, then every run on one side of the margin", "[experiments]") {
    const ex::Busy quiet{};
    CHECK(ex::growth_verdict({2.0, 1.90, 2.15}, quiet) == ex::GrowthVerdict::close_to_2);
    CHECK(ex::growth_verdict({2.4, 2.16, 2.60}, quiet) == ex::GrowthVerdict::above_2);
    CHECK(ex::growth_verdict({1.5, 1.20, 1.84}, quiet) == ex::GrowthVerdict::below_2);
    CHECK(ex::growth_verdict({2.3, 1.95, 2.60}, quiet) == ex::GrowthVerdict::undecided);
    CHECK(ex::growth_verdict({1.8, 1.60, 1.95}, quiet) == ex::GrowthVerdict::undecided);
    CHECK(ex::growth_verdict({1.5, 1.33, 1.85}, quiet) == ex::GrowthVerdict::undecided);     // 1.85 is close to 2
    CHECK(ex::growth_verdict({2.1, 2.149, 2.151}, quiet) == ex::GrowthVerdict::close_to_2);  // 2.15 as printed
    ex::Busy scattered = quiet, waiting = quiet;
    scattered.exponent_shift = 0.156;  // 0.16 as printed: more than 0.15
    waiting.waited = 0.51;
    CHECK(ex::growth_verdict({2.0, 1.95, 2.05}, scattered) == ex::GrowthVerdict::too_busy);
    CHECK(ex::growth_verdict({2.0, 1.95, 2.05}, waiting) == ex::GrowthVerdict::too_busy);
    scattered.exponent_shift = 0.154;  // 0.15 as printed: not more
    CHECK(ex::growth_verdict({2.0, 1.95, 2.05}, scattered) == ex::GrowthVerdict::close_to_2);
}

TEST_CASE("exercise 4 says what each row can see, in words", "[cli][experiments]") {
    const RunResult zh = run_attn("exercise 4 --lang zh"), en = run_attn("exercise 4");
    CHECK_THAT(zh.out, Contains("只能看到位置 1，") && Contains("只能看到位置 1 到 3，") && !Contains(".."));
    CHECK_THAT(en.out, Contains("sees only position 1,") && Contains("sees positions 1 to 2,"));
}
