// cli/exercise.cpp — `attn exercise N` and `attn variance`: parses, runs the experiments of
// lesson/experiments.hpp and prints them with their sentences (lesson/sentences.hpp, Exercise).
#include "cli/exercise.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/args.hpp"
#include "cli/text.hpp"
#include "lesson/experiments.hpp"
#include "lesson/sentences.hpp"
#include "lesson/walk.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

namespace ex = attn::experiments;

struct Options {
    Lang lang = lang_from_environment();
    unsigned seed = 1;
    std::size_t samples = 20000;
    std::size_t largest = 4000;  // exercise 3: the largest n timed (then n/2, n/4, n/8, n/16)
    bool help = false;
    int number = 0;
};

// v with `digits` decimals; what rounds to 0 without a sign ("-0.00" reads as a sign that means
// something; it does not here).
std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    const std::string s = buf;
    return s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos ? s.substr(1) : s;
}

// A seed is any 32-bit value, 0 and the default 1 included.
unsigned parse_seed(const std::string& v, const std::string& command) {
    const bool digits = !v.empty() && v.size() <= 10 && v.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoull(v) > 4294967295ull)
        throw UsageError(command + ": --seed takes a whole number from 0 to 4294967295, got '" + v + "'");
    return static_cast<unsigned>(std::stoull(v));
}

std::size_t parse_count(const std::string& v, const std::string& option, const std::string& command) {
    std::size_t value = 0;
    const bool digits = !v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos;
    if (digits) value = std::stoul(v);
    if (!digits || value < 2)
        throw UsageError(command + ": " + option + " takes a whole number from 2 to 999999999, got '" + v + "'");
    return value;
}

// Exercise 3's largest n: from 16 (so that n/16 ≥ 1) to 16384 (the naive core at 16384 takes minutes).
std::size_t parse_largest(const std::string& v) {
    const bool digits = !v.empty() && v.size() <= 5 && v.find_first_not_of("0123456789") == std::string::npos;
    const std::size_t n = digits ? std::stoul(v) : 0;
    if (n < 16 || n > 16384)
        throw UsageError("exercise: --largest takes a whole number from 16 to 16384, got '" + v + "'");
    return n;
}

Options parse(std::span<const std::string> args, bool wants_number) {
    Options o;
    const std::string command = wants_number ? "exercise" : "variance";
    std::set<std::string> seen;
    for (std::size_t i = 0; i < args.size(); ++i) {
        reject_repeated(seen, args[i], command);
        std::string v;
        const bool number = !args[i].empty() && args[i].find_first_not_of("0123456789") == std::string::npos;
        if (args[i] == "-h" || args[i] == "--help") o.help = true;
        else if (option_value(args, i, "--lang", v, command)) o.lang = parse_lang(v, command);
        else if (option_value(args, i, "--seed", v, command)) o.seed = parse_seed(v, command);
        else if (option_value(args, i, "--samples", v, command)) o.samples = parse_count(v, "--samples", command);
        else if (wants_number && option_value(args, i, "--largest", v, command)) o.largest = parse_largest(v);
        else if (wants_number && o.number == 0 && args[i].size() == 1 && args[i][0] >= '1' && args[i][0] <= '5')
            o.number = args[i][0] - '0';
        else if (wants_number && o.number == 0 && number)
            throw UsageError("exercise: the lesson has no exercise " + args[i] + "; give a number from 1 to 5");
        else throw UsageError(command + ": unknown argument '" + args[i] + "' (see attn " + command + " --help)");
    }
    if (wants_number && o.number == 0 && !o.help) throw UsageError("exercise: which one? give a number from 1 to 5");
    return o;
}

// Progress on stderr, only once a run has taken more than a second (quick runs stay quiet).
class Progress {
public:
    void operator()(const std::string& what) const {
        if (std::chrono::steady_clock::now() - start_ > std::chrono::seconds(1))
            std::cerr << "  … " << what << std::endl;
    }

private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Exercise 1's draws per d_k: one draw's averages vary from draw to draw, so a difference between
// d_k is read off the means over several draws, beside their spread, never off one.
constexpr std::size_t scaling_draws = 20;

using lesson::Exercise;

std::string say(Lang l, Exercise id, std::initializer_list<std::string> values = {}) {
    return lesson::say(l, id, values);
}

// "  ÷ 1:     ", "  ÷ √d_k： ": a scale's label before its sentence, in a column of its own.
std::string scale_label(Lang l, Scale scale) { return "  " + pad_right(scale_symbol(scale) + tr(l, ":", "："), 9); }

// The sentences under exercise 1's table, each built from the table's own numbers, so that what is
// said about a trend is what the rows show (‖J‖ without scaling first grows, then collapses: the
// sentence names its peak instead of calling it monotone).
void conclude_scaling(Lang l, const std::vector<ex::ScalingResult>& results, std::ostream& out) {
    const ex::ScalingTrend none = ex::scaling_trend(results, Scale::none),
                           sqrt = ex::scaling_trend(results, Scale::sqrt_dk),
                           dk = ex::scaling_trend(results, Scale::dk);
    const auto d = [](const ex::ScalingResult& r) { return std::to_string(r.d_k); };
    out << scale_label(l, Scale::none)
        << say(l, none.last.mean.max_weight > 0.9 ? Exercise::e1_none_one_hot : Exercise::e1_none_sharpens,
               {fixed(none.first.mean.entropy, 3), d(none.first), fixed(none.last.mean.entropy, 3), d(none.last),
                fixed(none.last.mean.max_weight, 3)})
        << "\n           ";
    const std::string last = fixed(none.last.mean.jacobian_norm, 4);
    if (none.peak_jacobian.d_k != none.first.d_k)
        out << say(l, Exercise::e1_jacobian_peak,
                   {fixed(none.peak_jacobian.mean.jacobian_norm, 4), d(none.peak_jacobian), last, d(none.last)});
    else out << say(l, Exercise::e1_jacobian_falls, {last, d(none.last)});
    const double ratio = none.last.mean.jacobian_norm / sqrt.last.mean.jacobian_norm;
    out << say(l, ratio < 1 ? Exercise::e1_saturated : Exercise::e1_not_saturated, {fixed(ratio, 2)}) << "\n";
    const bool flat = dk.last.mean.entropy > 0.99 * std::log(64.0);
    out << scale_label(l, Scale::dk)
        << say(l, flat ? Exercise::e1_dk_uniform : Exercise::e1_dk_flatter,
               {fixed(dk.last.mean.entropy, 3), d(dk.last), fixed(dk.last.mean.max_weight, 3)})
        << "\n";
    // ÷ √d_k: do the means differ by more than their draws leave uncertain (ex::entropy_change_threshold)?
    // Only then is there a trend to name.
    out << scale_label(l, Scale::sqrt_dk)
        << say(l, sqrt.entropy_changes() ? Exercise::e1_sqrt_changes : Exercise::e1_sqrt_same,
               {fixed(sqrt.min_entropy, 3), fixed(sqrt.max_entropy, 3), fixed(sqrt.max_entropy - sqrt.min_entropy, 3),
                fixed(ex::entropy_change_standard_errors, 0), fixed(sqrt.entropy_threshold, 3)})
        << "\n\n";
}

// A count with its thousands grouped: "1,000,000".
std::string grouped(std::size_t count) {
    const std::string digits = std::to_string(count);
    std::string out;
    for (std::size_t k = 0; k < digits.size(); ++k) {
        if (k > 0 && (digits.size() - k) % 3 == 0) out.push_back(',');
        out.push_back(digits[k]);
    }
    return out;
}

// A mean over the draws and its standard deviation: "3.690 ± 0.021".
std::string mean_spread(double mean, double spread, int digits) {
    return fixed(mean, digits) + " ± " + fixed(spread, digits);
}

void exercise1(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    out << say(l, Exercise::e1_title) << "\n\n  " << say(l, Exercise::e1_setup, {std::to_string(scaling_draws)})
        << "\n\n  " << pad_right("d_k", 6) << pad_right(say(l, Exercise::e1_scale), 8)
        << pad_left(say(l, Exercise::e1_entropy), 15) << pad_left(say(l, Exercise::e1_max_weight), 15)
        << pad_left("‖J‖", 17) << "\n";
    const auto results = ex::scaling_over_draws({4, 16, 64, 256, 1024}, 64, 64, scaling_draws, o.seed);
    for (const auto& r : results) {
        out << "  " << pad_right(std::to_string(r.d_k), 6) << pad_right(scale_symbol(r.scale), 8)
            << pad_left(mean_spread(r.mean.entropy, r.spread.entropy, 3), 15)
            << pad_left(mean_spread(r.mean.max_weight, r.spread.max_weight, 3), 15)
            << pad_left(mean_spread(r.mean.jacobian_norm, r.spread.jacobian_norm, 4), 17) << "\n";
    }
    out << "\n";
    conclude_scaling(l, results, out);
    out << "  " << say(l, Exercise::e1_example) << "\n";
    for (Scale s : {Scale::none, Scale::sqrt_dk, Scale::dk}) {
        const Matrix weights = worked_example::trace({.scale = s}).weights;
        const auto stats = ex::row_stats(weights.row(0));
        out << "  " << pad_right(scale_symbol(s), 10) << "[";
        for (float a : weights.row(0)) out << " " << format_number(a, 4);
        out << " ]  " << say(l, Exercise::e1_example_entropy, {fixed(stats.entropy, 3)}) << "\n";
    }
}

void exercise2(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    // the lesson's two questions, and what S_ii is, as attn walk says them
    out << lesson::say(l, lesson::Sentence::exercise2) << "\n  " << lesson::say(l, lesson::Sentence::exercise2_note)
        << "\n\n";
    const lesson::ForwardWalk example = lesson::worked_example_walk({});  // its S and each row's largest score
    const Matrix& S = example.trace.S;
    const auto tokens = example_tokens(l);
    out << "  " << say(l, Exercise::e2_in_example) << "\n";
    for (std::size_t i = 0; i < S.rows(); ++i) {
        const std::size_t best = example.largest_in_S[i];
        out << "  " << pad_right(tokens[i], 9)
            << say(l, Exercise::e2_row,
                   {format_number(S(i, i), 4), format_number(S(i, best), 4), tokens[best],
                    say(l, best == i ? Exercise::e2_on_diagonal : Exercise::e2_off_diagonal)})
            << "\n";
    }
    const auto r = ex::diagonal_experiment(o.samples, 3, o.seed);
    out << "\n  " << say(l, Exercise::e2_draws, {std::to_string(r.draws)}) << "\n    "
        << say(l, Exercise::e2_independent, {fixed(100 * r.independent_fraction, 1)}) << "\n    "
        << say(l, Exercise::e2_tied, {fixed(100 * r.tied_fraction, 1)}) << "\n    "
        << say(l, Exercise::e2_tied_pairs, {std::to_string(r.tied_pair_violations)}) << "\n\n  "
        << say(l, Exercise::e2_why) << "\n";
}

// What the runs say about one backend's time exponent, in the words ex::growth_verdict chooses from
// every run and from how busy the machine was, never from one run.
std::string describe_exponent(Lang l, const char* name, const std::vector<ex::GrowthRun>& runs) {
    const ex::ExponentSpread e = ex::time_exponents(runs);
    const ex::Busy busy = ex::how_busy(runs);
    // each value as the verdict reads it: to two decimals, a share in whole percent
    const auto hundredths = [](double x) { return fixed(double(std::lround(x * 100)) / 100, 2); };
    const std::string count = std::to_string(runs.size()), lowest = hundredths(e.lowest),
                      highest = hundredths(e.highest);
    std::string verdict;
    switch (ex::growth_verdict(e, busy)) {
        case ex::GrowthVerdict::close_to_2: verdict = say(l, Exercise::e3_close, {count, lowest, highest}); break;
        case ex::GrowthVerdict::below_2: verdict = say(l, Exercise::e3_below, {count, lowest, highest}); break;
        case ex::GrowthVerdict::above_2: verdict = say(l, Exercise::e3_above, {count, lowest, highest}); break;
        case ex::GrowthVerdict::undecided: verdict = say(l, Exercise::e3_undecided, {count, lowest, highest}); break;
        case ex::GrowthVerdict::too_busy:
            verdict = busy.waited > ex::busiest_wait
                          ? say(l, Exercise::e3_waited,
                                {lowest, highest, std::to_string(busy.waited_n),
                                 std::to_string(std::lround(100 * busy.waited))})
                          : say(l, Exercise::e3_scattered,
                                {lowest, highest, std::to_string(busy.n), count, fixed(busy.fastest * 1e3, 2),
                                 fixed(busy.slowest * 1e3, 2), hundredths(busy.exponent_shift)});
            break;
    }
    return "    " + std::string(name) + " " + hundredths(e.median) + tr(l, ": ", "：") + verdict + "\n";
}

void exercise3(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    constexpr std::size_t runs = 5;
    const Progress progress;
    constexpr std::size_t n_lesson = 1000, scores = n_lesson * n_lesson, bytes = scores * sizeof(float);
    const std::string n = std::to_string(n_lesson);
    out << say(l, Exercise::e3_title) << "\n\n  "
        << say(l, Exercise::e3_count, {n, n, grouped(scores), grouped(bytes), fixed(double(bytes) / (1024 * 1024), 1)})
        << "\n\n  " << say(l, Exercise::e3_measured, {std::to_string(runs), std::to_string(runs)}) << "\n  "
        << pad_right("n", 7) << pad_left(say(l, Exercise::e3_scores), 12) << pad_left(say(l, Exercise::e3_bytes), 13)
        << pad_left("naive", 11) << pad_left("simd", 10) << pad_left("fused", 10) << "\n";
    const std::vector<std::size_t> ns = {o.largest / 16, o.largest / 8, o.largest / 4, o.largest / 2, o.largest};
    const auto tell = [&](const char* backend) {
        return [&, backend](std::size_t run, std::size_t n) {
            progress(std::string(backend) + " " + std::to_string(run) + "/" + std::to_string(runs) +
                     " n = " + std::to_string(n));
        };
    };
    const auto naive_runs = ex::growth_runs(ns, Backend::naive, runs, tell("naive"));
    const auto simd_runs = ex::growth_runs(ns, Backend::simd, runs, tell("simd"));
    const auto fused_runs = ex::growth_runs(ns, Backend::fused, runs, tell("fused"));
    const auto naive = ex::median_of_runs(naive_runs), simd = ex::median_of_runs(simd_runs),
               fused = ex::median_of_runs(fused_runs);
    std::vector<double> x, counts, count_bytes;
    std::size_t fused_bytes = 0;  // the most S bytes the fused backend returned at any n
    for (std::size_t k = 0; k < ns.size(); ++k) {
        out << "  " << pad_right(std::to_string(ns[k]), 7) << pad_left(std::to_string(naive[k].scores), 12)
            << pad_left(std::to_string(naive[k].score_bytes), 13)
            << pad_left(fixed(naive[k].seconds * 1e3, 1) + " ms", 11)
            << pad_left(fixed(simd[k].seconds * 1e3, 2) + " ms", 10)
            << pad_left(fixed(fused[k].seconds * 1e3, 2) + " ms", 10) << "\n";
        x.push_back(double(ns[k]));
        counts.push_back(double(naive[k].scores));
        count_bytes.push_back(double(naive[k].score_bytes));
        fused_bytes = std::max(fused_bytes, fused[k].score_bytes);
    }
    const std::string close_low = fixed(2 - ex::growth_margin, 2), close_high = fixed(2 + ex::growth_margin, 2);
    out << "\n  " << say(l, Exercise::e3_fitted) << "\n    "
        << say(l, Exercise::e3_fitted_counts,
               {fixed(ex::fitted_exponent(x, counts), 3), fixed(ex::fitted_exponent(x, count_bytes), 3)})
        << "\n\n  "
        << say(l, Exercise::e3_rule,
               {std::to_string(runs), close_low, close_high, close_high, close_low, fixed(ex::growth_margin, 2)})
        << "\n"
        << describe_exponent(l, "naive", naive_runs) << describe_exponent(l, "simd", simd_runs)
        << describe_exponent(l, "fused", fused_runs) << "  "
        << say(l, Exercise::e3_fused_bytes, {std::to_string(fused_bytes)}) << "\n";
}

void exercise4(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    const AttentionTrace t = lesson::worked_example_walk({.causal = true}).trace;
    PrintOptions p;
    p.row_labels = example_tokens(l);
    p.col_labels = p.row_labels;
    out << say(l, Exercise::e4_title) << "\n\n  " << say(l, Exercise::e4_before) << "\n"
        << format_matrix(t.S_scaled, p) << "\n  " << say(l, Exercise::e4_after) << "\n"
        << format_matrix(t.S_masked, p) << "\n  " << lesson::say(l, lesson::Sentence::note_mask) << "\n\n  α\n"
        << format_matrix(t.weights, p) << "\n";
    bool all_ok = true;
    for (std::size_t i = 0; i < t.weights.rows(); ++i) {
        std::size_t last_seen = 0;
        double sum = 0;
        for (std::size_t j = 0; j < t.weights.cols(); ++j) {
            if (t.weights(i, j) != 0.0f) last_seen = j;
            sum += t.weights(i, j);
        }
        const bool ok = last_seen <= i;
        all_ok = all_ok && ok;
        out << "  " << pad_right(p.row_labels[i], 9)
            << (last_seen == 0 ? say(l, Exercise::e4_sees_first, {fixed(sum, 4)})
                               : say(l, Exercise::e4_sees_up_to, {std::to_string(last_seen + 1), fixed(sum, 4)}))
            << "  " << (ok ? "✓" : "✗") << "\n";
    }
    out << "\n  " << say(l, all_ok ? Exercise::e4_all_causal : Exercise::e4_future) << "\n";
}

// Exercise 5 as the walk computes and words it (lesson::ForwardWalk::exercise5, row 1), with the
// decomposition's row and the two weights it uses.
void exercise5(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    const lesson::ForwardWalk walk = lesson::worked_example_walk({});
    const ex::OutputAgainstValue& table = walk.exercise5.front().table;
    PrintOptions p;
    p.row_labels = {"o₁", "v₁", "o₁ − v₁", "Σ α₁ⱼ(v_j − v₁)"};
    out << lesson::say(l, lesson::Sentence::exercise5) << "\n  " << lesson::say(l, lesson::Sentence::exercise5_note)
        << "\n\n"
        << format_matrix(table.rows, p) << "\n  ‖o₁ − v₁‖ = " << fixed(table.distance, 4)
        << lesson::say(l, lesson::Sentence::length) << "\n  α₁₂ = " << format_number(walk.trace.weights(0, 1), 4)
        << tr(l, ", ", "，") << "α₁₃ = " << format_number(walk.trace.weights(0, 2), 4) << "\n";
}

}  // namespace

int exercise_command(std::span<const std::string> args) {
    const Options o = parse(args, true);
    if (o.help) {
        std::cout << tr(
            o.lang,
            "Usage: attn exercise N [--lang en|zh] [--seed S] [--samples K] [--largest N]\n\n"
            "  1  √d_k vs d_k vs no scaling: entropy, max weight, softmax Jacobian, for d_k = 4 … 1024, averaged over\n"
            "     draws with their spread\n"
            "  2  is S_ii the row maximum? the worked example, K random draws, and W_Q = W_K\n"
            "  3  n = 1000 and O(n²): scores, memory, measured time for n = 250 … 4000 (--largest N:\n"
            "     N/16 … N instead), fitted exponents, and a verdict only where every run agrees\n"
            "  4  the causal mask on the worked example, with the check that row i sees only j ≤ i\n"
            "  5  output[0] against V[0] and what their difference is made of\n",
            "用法：attn exercise N [--lang en|zh] [--seed S] [--samples K] [--largest N]\n\n"
            "  1  除以 √d_k、除以 d_k 与不缩放：d_k = 4 … 1024 时的熵、最大权重与 softmax "
            "雅可比矩阵的范数，\n     取多次抽样的平均值及其标准差\n"
            "  2  S_ii 是否为行最大值？依次看示例、K 组随机权重，以及 W_Q = W_K 的情形\n"
            "  3  n = 1000 与 O(n²)：分数个数、内存、n = 250 … 4000（--largest N：改为 N/16 … "
            "N）的实测时间与拟合指数；\n     只有各轮结果一致时才下结论\n"
            "  4  示例上的因果掩码，并检查第 i 行只关注 j ≤ i 的位置\n"
            "  5  比较 output[0] 与 V[0]，以及差值由什么构成\n");
        return 0;
    }
    std::ostringstream out;
    switch (o.number) {
        case 1: exercise1(o, out); break;
        case 2: exercise2(o, out); break;
        case 3: exercise3(o, out); break;
        case 4: exercise4(o, out); break;
        default: exercise5(o, out); break;
    }
    std::cout << out.str();
    return 0;
}

int variance_command(std::span<const std::string> args) {
    const Options o = parse(args, false);
    const Lang l = o.lang;
    if (o.help) {
        std::cout << tr(l,
                        "Usage: attn variance [--samples K] [--seed S] [--lang en|zh]\n\n"
                        "Monte Carlo of Var(q·k) for q, k ~ N(0, I), d_k = 1 … 1024, before and after ÷√d_k.\n",
                        "用法：attn variance [--samples K] [--seed S] [--lang en|zh]\n\n"
                        "用蒙特卡洛方法估计 q, k ~ N(0, I) 时的 Var(q·k)（d_k = 1 … 1024），并对比缩放前后。\n");
        return 0;
    }
    const Progress progress;
    const auto results = ex::variance_experiment({1, 4, 16, 64, 256, 1024}, o.samples, o.seed,
                                                 [&](std::size_t d) { progress("d_k = " + std::to_string(d)); });
    std::cout << say(l, Exercise::variance_intro) << "\n\n  "
              << say(l, Exercise::variance_samples, {std::to_string(o.samples), std::to_string(o.seed)}) << "\n\n  "
              << pad_right("d_k", 7) << pad_left("Var(q·k)", 12) << pad_left(say(l, Exercise::variance_theory), 9)
              << pad_left("Var(q·k/√d_k)", 16) << pad_left(say(l, Exercise::variance_theory), 9) << "\n";
    for (const auto& r : results) {
        std::cout << "  " << pad_right(std::to_string(r.d_k), 7) << pad_left(fixed(r.raw, 3), 12)
                  << pad_left(std::to_string(r.d_k), 9) << pad_left(fixed(r.scaled, 4), 16) << pad_left("1", 9) << "\n";
    }
    return 0;
}

}  // namespace attn::cli
