// cli/exercise.cpp — prints the experiments of lesson/experiments.hpp, in English or Chinese.
#include "cli/exercise.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "lesson/experiments.hpp"
#include "lesson/worked_example.hpp"
#include "cli/args.hpp"
#include "cli/text.hpp"
#include "lesson/sentences.hpp"
#include "lesson/walk.hpp"
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

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
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

// The sentences under exercise 1's table, each built from the table's own numbers, so that what is
// said about a trend is what the rows show (‖J‖ without scaling first grows, then collapses: the
// sentence names its peak instead of calling it monotone).
void conclude_scaling(Lang l, const std::vector<ex::ScalingResult>& results, std::ostream& out) {
    const ex::ScalingTrend none = ex::scaling_trend(results, Scale::none),
                           sqrt = ex::scaling_trend(results, Scale::sqrt_dk),
                           dk = ex::scaling_trend(results, Scale::dk);
    const auto at = [l](const ex::ScalingResult& r) {
        return std::string(tr(l, " at d_k = ", "（d_k = ")) + std::to_string(r.d_k) + tr(l, "", "）");
    };
    out << tr(l, "  ÷ 1:     entropy ", "  ÷ 1：    熵 ") << fixed(none.first.mean.entropy, 3) << at(none.first)
        << " → " << fixed(none.last.mean.entropy, 3) << at(none.last) << tr(l, ", largest weight → ", "，最大权重 → ")
        << fixed(none.last.mean.max_weight, 3)
        << (none.last.mean.max_weight > 0.9 ? tr(l, ": α turns nearly one-hot.\n", "：α 几乎成了 one-hot。\n")
                                            : tr(l, ": α sharpens.\n", "：α 变得更集中。\n"));
    if (none.peak_jacobian.d_k != none.first.d_k)
        out << tr(l, "           ‖J‖ first grows while the scores spread, to ",
                  "           ‖J‖ 先随分数散开而增大，达到峰值 ")
            << fixed(none.peak_jacobian.mean.jacobian_norm, 4) << at(none.peak_jacobian)
            << tr(l, ",\n           then falls to ", "，\n           然后降到 ");
    else out << tr(l, "           ‖J‖ falls to ", "           ‖J‖ 降到 ");
    const double ratio = none.last.mean.jacobian_norm / sqrt.last.mean.jacobian_norm;
    out << fixed(none.last.mean.jacobian_norm, 4) << at(none.last) << tr(l, ", ", "，为 ÷ √d_k 时的 ")
        << fixed(ratio, 2) << tr(l, "× that of ÷ √d_k: ", " 倍：")
        << (ratio < 1 ? tr(l, "once α saturates,\n           little gradient reaches the scores.\n",
                           "α 饱和后，\n           传回分数的梯度所剩无几。\n")
                      : tr(l, "no gradient lost yet at these sizes.\n", "在这些 d_k 下梯度尚未减小。\n"));
    const bool flat = dk.last.mean.entropy > 0.99 * std::log(64.0);
    out << tr(l, "  ÷ d_k:   entropy → ", "  ÷ d_k：  熵 → ") << fixed(dk.last.mean.entropy, 3) << at(dk.last)
        << (flat ? tr(l, ", within 1% of ln 64 = 4.159", "，与 ln 64 = 4.159 相差不到 1%")
                 : tr(l, ", short of ln 64 = 4.159", "，仍低于 ln 64 = 4.159"))
        << tr(l, "; largest weight → ", "；最大权重 → ") << fixed(dk.last.mean.max_weight, 3)
        << (flat ? tr(l, ":\n           α flattens to nearly uniform.\n", "：\n           α 几乎成了均匀分布。\n")
                 : tr(l, ":\n           α flattens.\n", "：\n           α 变得更平。\n"));
    // ÷ √d_k: do the means differ by more than their draws leave uncertain (ex::entropy_change_threshold)?
    // Only then is there a trend to name.
    const bool same = !sqrt.entropy_changes();
    const std::string errors = fixed(ex::entropy_change_standard_errors, 0);
    out << tr(l, "  ÷ √d_k:  mean entropy between ", "  ÷ √d_k： 各 d_k 的平均熵都在 ") << fixed(sqrt.min_entropy, 3)
        << tr(l, " and ", " 与 ") << fixed(sqrt.max_entropy, 3)
        << tr(l, " at every d_k; the two differ by ", " 之间，两者相差 ")
        << fixed(sqrt.max_entropy - sqrt.min_entropy, 3)
        << (same ? tr(l, ",\n           within ", "，\n           不超过这一差值的 ")
                 : tr(l, ",\n           more than ", "，\n           超过了这一差值的 "))
        << errors << tr(l, " standard errors of that difference (", " 倍标准误（") << fixed(sqrt.entropy_threshold, 3)
        << (same ? tr(l, "): the spread of attention (its entropy)\n           is about the same at every width.\n\n",
                      "）：无论 d_k 多大，\n           注意力的分散程度（熵）都差不多。\n\n")
                 : tr(l, "): the spread of attention (its entropy)\n           still changes with d_k.\n\n",
                      "）：\n           注意力的分散程度（熵）仍随 d_k 变化。\n\n"));
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
    out << tr(l, "Exercise 1 · Dividing by √d_k, by d_k, or not at all\n\n",
              "练习 1 · 除以 √d_k、除以 d_k，还是不缩放\n\n")
        << tr(l, "  64 queries against 64 keys, every entry N(0, 1); ",
              "  64 个 Query 对 64 个 Key，每个分量服从 N(0, 1)；每个 d_k 独立抽样 ")
        << scaling_draws
        << tr(l,
              " draws per d_k, each averaged over its rows;\n"
              "  the table gives the mean over the draws ± their standard deviation.\n"
              "  entropy: ln 64 = 4.16 is uniform, 0 is one-hot. ‖J‖: size of the softmax's Jacobian diag(α) − ααᵀ,\n"
              "  how much α can still move when its scores move (the gradient that reaches the scores).\n\n",
              " 次，每次先对各行取平均；\n"
              "  表中为各次抽样的平均值 ± 标准差。\n"
              "  熵：均匀分布时为 ln 64 = 4.16，one-hot 时为 0。‖J‖：softmax 雅可比矩阵 diag(α) − ααᵀ 的范数，\n"
              "  即分数变化时 α 还能变化多少（也就是能传回分数的梯度有多大）。\n\n");
    out << "  " << pad_right("d_k", 6) << pad_right(tr(l, "scale", "缩放"), 8) << pad_left(tr(l, "entropy", "熵"), 15)
        << pad_left(tr(l, "max α", "最大 α"), 15) << pad_left("‖J‖", 17) << "\n";
    const auto results = ex::scaling_over_draws({4, 16, 64, 256, 1024}, 64, 64, scaling_draws, o.seed);
    for (const auto& r : results) {
        out << "  " << pad_right(std::to_string(r.d_k), 6) << pad_right(scale_symbol(r.scale), 8)
            << pad_left(mean_spread(r.mean.entropy, r.spread.entropy, 3), 15)
            << pad_left(mean_spread(r.mean.max_weight, r.spread.max_weight, 3), 15)
            << pad_left(mean_spread(r.mean.jacobian_norm, r.spread.jacobian_norm, 4), 17) << "\n";
    }
    out << "\n";
    conclude_scaling(l, results, out);
    out << tr(l, "  The worked example (d_k = 3), row 1 of α under each scale:\n",
              "  示例（d_k = 3）中 α 的第 1 行在三种缩放下的值：\n");
    for (Scale s : {Scale::none, Scale::sqrt_dk, Scale::dk}) {
        const Matrix weights = worked_example::trace({.scale = s}).weights;
        const auto stats = ex::row_stats(weights.row(0));
        out << "  " << pad_right(scale_symbol(s), 10) << "[";
        for (float a : weights.row(0)) out << " " << format_number(a, 4);
        out << " ]  " << tr(l, "entropy ", "熵 ") << fixed(stats.entropy, 3) << "\n";
    }
}

void exercise2(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    out << diagonal_question(l) << "\n\n";  // the lesson's two questions, and what S_ii is, as attn walk says them
    const lesson::ForwardWalk example = lesson::worked_example_walk({});  // its S and each row's largest score
    const Matrix& S = example.trace.S;
    const auto tokens = example_tokens(l);
    out << tr(l, "  In the worked example:\n", "  在示例中：\n");
    for (std::size_t i = 0; i < S.rows(); ++i) {
        const std::size_t best = example.largest_in_S[i];
        out << "  " << pad_right(tokens[i], 9) << "S_ii = " << format_number(S(i, i), 4) << "  "
            << tr(l, "max = ", "最大值 = ") << format_number(S(i, best), 4) << tr(l, " (", "（") << tokens[best]
            << tr(l, ")  ", "）  ")
            << (best == i ? tr(l, "diagonal", "在对角线上") : tr(l, "not the diagonal", "不在对角线上")) << "\n";
    }
    const auto r = ex::diagonal_experiment(o.samples, 3, o.seed);
    out << "\n  " << r.draws
        << tr(l, " random weight draws (N(0, 1), d_k = 3) on the same X:\n",
              " 组随机权重（N(0, 1)，d_k = 3），作用于同一个 X：\n")
        << tr(l, "    W_Q, W_K independent: the diagonal is the row maximum in ",
              "    W_Q、W_K 相互独立：行最大值落在对角线上的比例为 ")
        << fixed(100 * r.independent_fraction, 1) << "%"
        << tr(l, " of rows (chance: 33.3%)\n", "（若纯属偶然，应为 1/3，即 33.3%）\n")
        << tr(l, "    W_Q = W_K (S symmetric):   ", "    W_Q = W_K（S 对称）时，这一比例为 ")
        << fixed(100 * r.tied_fraction, 1) << "%\n"
        << tr(l, "    pairs with S_ij > max(S_ii, S_jj) when W_Q = W_K: ",
              "    W_Q = W_K 时满足 S_ij > max(S_ii, S_jj) 的 (i, j) 对的个数：")
        << r.tied_pair_violations << "\n\n"
        << tr(l,
              "  Nothing makes S_ii the largest: q_i and k_i come from different matrices, so a token's query may\n"
              "  match another token's key better than its own. Tying W_Q = W_K makes S_ij = (x_i·W)·(x_j·W), a Gram\n"
              "  matrix: S_ii ≥ 0 and 2·S_ij ≤ S_ii + S_jj, so no pair can beat both of its diagonals — yet a token\n"
              "  with a short projection can still score higher with a long, aligned neighbour than with itself.\n",
              "  没有任何机制保证 S_ii 最大：q_i 与 k_i 来自不同的矩阵，某个词的 Query 可能与别的词的 Key 更匹配。\n"
              "  令 W_Q = W_K，则 S_ij = (x_i·W)·(x_j·W) 是 Gram 矩阵：S_ii ≥ 0 且 2·S_ij ≤ S_ii + S_jj，\n"
              "  任何 S_ij 都不会同时大于 S_ii 和 S_jj——但投影较短的词与一个投影更长、方向相近的邻居之间的分数，\n"
              "  仍可能高于它与自身的分数。\n");
}

// What the runs' time exponents say, in words chosen by ex::growth_verdict from every run, not from one:
// "close to 2" only when all runs are, "above 2" only when all are above the margin, and the runs
// "do not decide" when they fall on both sides of it.
std::string describe_exponent(Lang l, const char* name, const ex::ExponentSpread& e, std::size_t runs) {
    std::ostringstream out;
    const std::string count = std::to_string(runs), range = tr(l, " (", "（") + fixed(e.lowest, 2) +
                                                            tr(l, " to ", " 至 ") + fixed(e.highest, 2) +
                                                            tr(l, ")", "）");
    const std::string bounds =
        fixed(2 - ex::growth_margin, 2) + tr(l, " and of ", " 和 ") + fixed(2 + ex::growth_margin, 2);
    out << "    " << name << " " << fixed(e.median, 2) << tr(l, ": ", "：");
    switch (ex::growth_verdict(e)) {
        case ex::GrowthVerdict::close_to_2:
            out << tr(l, "close to 2 in all ", "") << count << tr(l, " runs", " 轮都接近 2") << range
                << tr(l, ",\n      as the count of scores.\n", "，与分数个数的增长一致。\n");
            break;
        case ex::GrowthVerdict::below_2:
            out << tr(l, "below 2 in all ", "") << count << tr(l, " runs", " 轮都低于 2") << range
                << tr(l, ",\n      so fixed costs weigh more at small n than at large n.\n",
                      "，说明 n 较小时固定开销所占的比例更大。\n");
            break;
        case ex::GrowthVerdict::above_2:
            out << tr(l, "above 2 in all ", "") << count << tr(l, " runs", " 轮都高于 2") << range
                << tr(l, ",\n      so a score costs more at large n than at small n.\n",
                      "，说明 n 越大，每个分数的代价越高。\n");
            break;
        case ex::GrowthVerdict::undecided:
            out << tr(l, "the ", "") << count << tr(l, " runs do not decide", " 轮无法给出结论") << range
                << tr(l, ",\n      since they do not all lie on one side of ", "，因为各轮相对 ") << bounds
                << tr(l, ".\n", " 并不都分别落在同一侧。\n");
            break;
    }
    return out.str();
}

void exercise3(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    constexpr std::size_t runs = 5;
    const Progress progress;
    constexpr std::size_t n_lesson = 1000, scores = n_lesson * n_lesson, bytes = scores * sizeof(float);
    out << tr(l, "Exercise 3 · n = 1000: how many scores, and how cost grows\n\n",
              "练习 3 · n = 1000：有多少个分数，代价如何增长\n\n")
        << "  n = " << n_lesson << tr(l, " gives ", " 时有 ") << n_lesson << "² = " << grouped(scores)
        << tr(l, " scores, ", " 个分数，以 float32 存储占 ") << grouped(bytes)
        << tr(l, " bytes as float32 (", " 字节（") << fixed(double(bytes) / (1024 * 1024), 1)
        << tr(l, " MiB), for one head.\n\n", " MiB），\n  这还只是一个头。\n\n")
        << tr(l, "  Measured: one call of the core, d = 64, timed at every n in each of ",
              "  实测：单次调用注意力的核心计算所用的时间（d = 64）；每轮把所有 n 各计时一次，共 ")
        << runs << tr(l, " runs;\n  the table gives each n's median of ", " 轮；\n  表中是每个 n 在 ") << runs
        << tr(l, " repeats:\n", " 轮中的中位数：\n") << "  " << pad_right("n", 7)
        << pad_left(tr(l, "scores", "分数个数"), 12) << pad_left(tr(l, "S bytes", "S 字节"), 13)
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
    out << "\n  " << tr(l, "fitted exponent p in (quantity) ∝ nᵖ:", "拟合指数 p（数量 ∝ nᵖ）：") << "\n    "
        << tr(l, "scores ", "分数个数 ") << fixed(ex::fitted_exponent(x, counts), 3) << tr(l, ", ", "，")
        << tr(l, "S bytes ", "S 字节 ") << fixed(ex::fitted_exponent(x, count_bytes), 3) << "\n\n"
        << tr(l,
              "  The counts grow as n² exactly. For the times, p is fitted to each run; below are the median\n"
              "  of the runs, their range in parentheses, and a verdict only where all runs lie on one side\n"
              "  of ",
              "  分数个数与字节数严格按 n² 增长。时间的 p 按每轮分别拟合：下面先给出各轮的中位数，括号内是各轮的\n"
              "  范围；只有各轮相对 ")
        << fixed(2 - ex::growth_margin, 2) << tr(l, " and of ", " 和 ") << fixed(2 + ex::growth_margin, 2)
        << tr(l, ":\n", " 都分别落在同一侧时，才下结论：\n")
        << describe_exponent(l, "naive", ex::time_exponents(naive_runs), runs)
        << describe_exponent(l, "simd", ex::time_exponents(simd_runs), runs)
        << describe_exponent(l, "fused", ex::time_exponents(fused_runs), runs)
        << tr(l, "  The fused backend returned ", "  fused 后端在每个 n 下返回的 S 都是 ") << fused_bytes
        << tr(l,
              " bytes of S at every n: it computes the same output with no n×n matrix\n"
              "  at all (bench/ measures its memory).\n",
              " 字节：它算出相同的输出，却完全不生成 n×n 矩阵（内存占用的测量见 bench/）。\n");
}

void exercise4(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    const AttentionTrace t = lesson::worked_example_walk({.causal = true}).trace;
    PrintOptions p;
    p.row_labels = example_tokens(l);
    p.col_labels = p.row_labels;
    out << tr(l, "Exercise 4 · A causal mask: position i sees only j ≤ i\n\n",
              "练习 4 · 因果掩码：位置 i 只能看到 j ≤ i 的位置\n\n")
        << tr(l, "  S/√d_k before the mask:\n", "  掩码前的 S/√d_k：\n") << format_matrix(t.S_scaled, p)
        << tr(l, "\n  after the mask:\n", "\n  掩码后：\n") << format_matrix(t.S_masked, p) << "\n  "
        << lesson::say(l, lesson::Sentence::note_mask) << "\n\n  α\n"
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
        out << "  " << pad_right(p.row_labels[i], 9);
        if (last_seen == 0) out << tr(l, "sees only position 1", "只能看到位置 1");
        else out << tr(l, "sees positions 1 to ", "只能看到位置 1 到 ") << last_seen + 1;
        out << tr(l, ", row sum ", "，该行之和 ") << fixed(sum, 4) << "  " << (ok ? "✓" : "✗") << "\n";
    }
    out << "\n  "
        << (all_ok ? tr(l, "every row i attends only to j ≤ i", "每一行 i 都只关注 j ≤ i 的位置")
                   : tr(l, "a row attends to the future: this is a bug", "有一行关注了未来的位置：这是程序错误"))
        << "\n";
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
    std::cout
        << tr(l,
              "Var(q·k) with q, k ~ N(0, I): each of the d_k products q_i·k_i has mean 0 and variance 1, and they\n"
              "are independent, so the variances add up to d_k. Dividing by √d_k divides the variance by d_k.\n\n",
              "q, k ~ N(0, I) 时的 Var(q·k)：d_k 个乘积 q_i·k_i 各自均值为 0、方差为 1 且相互独立，\n"
              "方差相加得 d_k；把分数除以 √d_k，方差就缩小为原来的 1/d_k。\n\n")
        << tr(l, "  ", "  每个 d_k 取 ") << o.samples << tr(l, " samples per d_k, seed ", " 个样本，随机种子 ")
        << o.seed << "\n\n"
        << "  " << pad_right("d_k", 7) << pad_left("Var(q·k)", 12) << pad_left(tr(l, "theory", "理论值"), 9)
        << pad_left("Var(q·k/√d_k)", 16) << pad_left(tr(l, "theory", "理论值"), 9) << "\n";
    for (const auto& r : results) {
        std::cout << "  " << pad_right(std::to_string(r.d_k), 7) << pad_left(fixed(r.raw, 3), 12)
                  << pad_left(std::to_string(r.d_k), 9) << pad_left(fixed(r.scaled, 4), 16) << pad_left("1", 9) << "\n";
    }
    return 0;
}

}  // namespace attn::cli
