// cli/exercise.cpp — prints the experiments of attention/experiments.hpp, in English or Chinese.
#include "cli/exercise.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "attention/experiments.hpp"
#include "attention/worked_example.hpp"
#include "cli/args.hpp"
#include "cli/text.hpp"
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
        << fixed(none.last.mean.max_weight, 3) << tr(l, ": α turns one-hot.\n", "：α 趋于 one-hot。\n");
    if (none.peak_jacobian.d_k != none.first.d_k)
        out << tr(l, "           ‖J‖ first grows while the scores spread, to ",
                  "           ‖J‖ 先随分数散开而增大，峰值 ")
            << fixed(none.peak_jacobian.mean.jacobian_norm, 4) << at(none.peak_jacobian)
            << tr(l, ",\n           then falls to ", "，\n           然后降到 ");
    else out << tr(l, "           ‖J‖ falls to ", "           ‖J‖ 降到 ");
    const double ratio = none.last.mean.jacobian_norm / sqrt.last.mean.jacobian_norm;
    out << fixed(none.last.mean.jacobian_norm, 4) << at(none.last) << tr(l, ", ", "，为 ÷ √d_k 的 ") << fixed(ratio, 2)
        << tr(l, "× that of ÷ √d_k: ", " 倍：")
        << (ratio < 1 ? tr(l, "once α saturates,\n           little gradient reaches the scores.\n",
                           "α 饱和后，\n           传回分数的梯度所剩无几。\n")
                      : tr(l, "no gradient lost yet at these sizes.\n", "在这些 d_k 下梯度尚未减小。\n"));
    out << tr(l, "  ÷ d_k:   entropy → ", "  ÷ d_k：  熵 → ") << fixed(dk.last.mean.entropy, 3) << at(dk.last)
        << tr(l, ", near ln 64 = 4.159; largest weight → ", "，接近 ln 64 = 4.159；最大权重 → ")
        << fixed(dk.last.mean.max_weight, 3)
        << tr(l, ":\n           α flattens toward uniform.\n", "：\n           α 趋于均匀分布。\n");
    out << tr(l, "  ÷ √d_k:  entropy between ", "  ÷ √d_k： 熵始终在 ") << fixed(sqrt.min_entropy, 3)
        << tr(l, " and ", " 与 ") << fixed(sqrt.max_entropy, 3)
        << tr(l, " at every d_k: the same spread at every width.\n\n",
              " 之间：无论 d_k 多大，分数的离散程度都相同。\n\n");
}

void exercise1(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    out << tr(l, "Exercise 1 · Dividing by √d_k, by d_k, or not at all\n\n",
              "练习 1 · 除以 √d_k、除以 d_k，还是不缩放\n\n")
        << tr(l,
              "  64 queries against 64 keys, every entry N(0, 1); means over the rows.\n"
              "  entropy: ln 64 = 4.16 is uniform, 0 is one-hot. ‖J‖: size of the softmax's Jacobian diag(α) − ααᵀ,\n"
              "  how much α can still move when its scores move (the gradient that reaches the scores).\n\n",
              "  64 个 Query 对 64 个 Key，每个分量服从 N(0, 1)；取各行的平均。\n"
              "  熵：ln 64 = 4.16 为均匀分布，0 为 one-hot。‖J‖：softmax 雅可比矩阵 diag(α) − ααᵀ 的范数，\n"
              "  即分数变化时 α 还能变化多少（传回分数的梯度大小）。\n\n");
    out << "  " << pad_right("d_k", 6) << pad_right(tr(l, "scale", "缩放"), 10) << pad_left(tr(l, "entropy", "熵"), 9)
        << pad_left(tr(l, "max α", "最大 α"), 9) << pad_left("‖J‖", 9) << "\n";
    const auto results = ex::scaling_experiment({4, 16, 64, 256, 1024}, 64, 64, o.seed);
    for (const auto& r : results) {
        out << "  " << pad_right(std::to_string(r.d_k), 6) << pad_right(scale_symbol(r.scale), 10)
            << pad_left(fixed(r.mean.entropy, 3), 9) << pad_left(fixed(r.mean.max_weight, 3), 9)
            << pad_left(fixed(r.mean.jacobian_norm, 4), 9) << "\n";
    }
    out << "\n";
    conclude_scaling(l, results, out);
    out << tr(l, "  The worked example (d_k = 3), row 1 of α under each scale:\n",
              "  示例（d_k = 3）中 α 第 1 行在三种缩放下：\n");
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
    const AttentionTrace example = worked_example::trace();
    const auto tokens = example_tokens(l);
    out << tr(l, "  In the worked example:\n", "  在示例中：\n");
    for (std::size_t i = 0; i < example.S.rows(); ++i) {
        const auto row = example.S.row(i);
        const std::size_t best = ex::row_argmax(row);
        out << "  " << pad_right(tokens[i], 9) << "S_ii = " << format_number(example.S(i, i), 4) << "  "
            << tr(l, "max = ", "最大值 = ") << format_number(example.S(i, best), 4) << tr(l, " (", "（") << tokens[best]
            << tr(l, ")  ", "）  ")
            << (best == i ? tr(l, "diagonal", "在对角线上") : tr(l, "not the diagonal", "不在对角线上")) << "\n";
    }
    const auto r = ex::diagonal_experiment(o.samples, 3, o.seed);
    out << "\n  " << r.draws
        << tr(l, " random weight draws (N(0, 1), d_k = 3) on the same X:\n",
              " 次随机权重（N(0, 1)，d_k = 3），同一个 X：\n")
        << tr(l, "    W_Q, W_K independent: the diagonal is the row maximum in ",
              "    W_Q、W_K 独立：对角线是行最大值的比例 ")
        << fixed(100 * r.independent_fraction, 1) << "%"
        << tr(l, " of rows (chance: 33.3%)\n", "（纯属偶然时约为 1/3，即 33.3%）\n")
        << tr(l, "    W_Q = W_K (S symmetric):   ", "    W_Q = W_K（S 对称）：       ")
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
              "  令 W_Q = W_K 时 S_ij = (x_i·W)·(x_j·W) 是 Gram 矩阵：S_ii ≥ 0 且 2·S_ij ≤ S_ii + S_jj，\n"
              "  任何一对都不能同时超过两个对角元——但投影较短的词仍可能与一个更长、方向相近的邻居得分更高。\n");
}

// What a fitted time exponent says, in words that follow from its value.
// The words are chosen from the value as printed (2 decimals), so that "2.15: close to 2" and
// "2.15: above 2" cannot both be read off the same screen.
std::string describe_exponent(Lang l, const char* name, double exact) {
    const long hundredths = std::lround(exact * 100);  // the value as printed, in hundredths
    std::string s = std::string("    ") + name + " " + fixed(double(hundredths) / 100, 2) + tr(l, ": ", "：");
    if (std::abs(hundredths - 200) <= 15)
        return s + tr(l, "close to 2, as the count of scores.\n", "接近 2，与分数个数一致。\n");
    if (hundredths < 200)
        return s + tr(l, "below 2: fixed costs weigh more at small n than at large n.\n",
                      "低于 2：小 n 时固定开销所占比例更大。\n");
    return s +
           tr(l, "above 2: a score costs more at large n than at small n.\n", "高于 2：n 越大，每个分数的代价越高。\n");
}

void exercise3(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    constexpr std::size_t repeats = 5;
    const Progress progress;
    out << tr(l, "Exercise 3 · n = 1000: how many scores, and how cost grows\n\n",
              "练习 3 · n = 1000：有多少个分数，代价如何增长\n\n")
        << tr(l, "  n = 1000 gives 1000² = 1,000,000 scores, 4,000,000 bytes as float32 (3.8 MiB), for one head.\n\n",
              "  n = 1000 时有 1000² = 1,000,000 个分数，float32 占 4,000,000 字节（3.8 MiB），这只是一个头。\n\n")
        << tr(l, "  Measured: one call of the core, d = 64, median of ", "  实测：单次调用注意力核心，d = 64，取 ")
        << repeats << tr(l, " repeats:\n", " 次重复的中位数：\n") << "  " << pad_right("n", 7)
        << pad_left(tr(l, "scores", "分数个数"), 12) << pad_left(tr(l, "S bytes", "S 字节"), 13)
        << pad_left("naive", 11) << pad_left("simd", 10) << pad_left(tr(l, "fused: S bytes", "fused：S 字节"), 16)
        << "\n";
    const std::vector<std::size_t> ns = {o.largest / 16, o.largest / 8, o.largest / 4, o.largest / 2, o.largest};
    const auto tell = [&](const char* backend) {
        return [&, backend](std::size_t n) { progress(std::string(backend) + " n = " + std::to_string(n)); };
    };
    const auto naive = ex::growth_experiment(ns, Backend::naive, repeats, tell("naive"));
    const auto simd = ex::growth_experiment(ns, Backend::simd, repeats, tell("simd"));
    const auto fused = ex::growth_experiment(ns, Backend::fused, repeats, tell("fused"));
    std::vector<double> x, scores, bytes, t_naive, t_simd;
    for (std::size_t k = 0; k < ns.size(); ++k) {
        out << "  " << pad_right(std::to_string(ns[k]), 7) << pad_left(std::to_string(naive[k].scores), 12)
            << pad_left(std::to_string(naive[k].score_bytes), 13)
            << pad_left(fixed(naive[k].seconds * 1e3, 1) + " ms", 11)
            << pad_left(fixed(simd[k].seconds * 1e3, 2) + " ms", 10)
            << pad_left(std::to_string(fused[k].score_bytes), 16) << "\n";
        x.push_back(double(ns[k]));
        scores.push_back(double(naive[k].scores));
        bytes.push_back(double(naive[k].score_bytes));
        t_naive.push_back(naive[k].seconds);
        t_simd.push_back(simd[k].seconds);
    }
    out << "\n  " << tr(l, "fitted exponent p in (quantity) ∝ nᵖ:", "拟合指数 p（数量 ∝ nᵖ）：") << "\n    "
        << tr(l, "scores ", "分数个数 ") << fixed(ex::fitted_exponent(x, scores), 3) << tr(l, ", ", "，")
        << tr(l, "S bytes ", "S 字节 ") << fixed(ex::fitted_exponent(x, bytes), 3) << "\n\n"
        << tr(l, "  The counts grow as n² exactly. The measured times:\n",
              "  分数个数与字节数严格按 n² 增长。实测时间：\n")
        << describe_exponent(l, "naive", ex::fitted_exponent(x, t_naive))
        << describe_exponent(l, "simd", ex::fitted_exponent(x, t_simd))
        << tr(l,
              "  The fused backend computes the same output with no n×n matrix at all (bench/ measures its memory).\n",
              "  fused 后端算出相同的输出，但完全不保存 n×n 矩阵（内存见 bench/）。\n");
}

void exercise4(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    const AttentionTrace t = worked_example::trace({.causal = true});
    PrintOptions p;
    p.row_labels = example_tokens(l);
    p.col_labels = p.row_labels;
    out << tr(l, "Exercise 4 · A causal mask: position i sees only j ≤ i\n\n",
              "练习 4 · 因果掩码：位置 i 只能看到 j ≤ i\n\n")
        << tr(l, "  S/√d_k before the mask:\n", "  掩码前的 S/√d_k：\n") << format_matrix(t.S_scaled, p)
        << tr(l, "\n  after: S'_ij = −∞ for j > i\n", "\n  掩码后：j > i 时 S'_ij = −∞\n")
        << format_matrix(t.S_masked, p)
        << tr(l, "\n  α: e^−∞ = 0, so the future gets no weight\n", "\n  α：e^−∞ = 0，未来位置得不到权重\n")
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
        out << "  " << pad_right(p.row_labels[i], 9) << tr(l, "sees positions 1..", "看到位置 1..") << last_seen + 1
            << tr(l, ", row sum ", "，行和 ") << fixed(sum, 4) << "  " << (ok ? "✓" : "✗") << "\n";
    }
    out << "\n  "
        << (all_ok ? tr(l, "every row i attends only to j ≤ i", "每一行 i 都只关注 j ≤ i")
                   : tr(l, "a row attends to the future: this is a bug", "有行关注了未来：这是错误"))
        << "\n";
}

void exercise5(const Options& o, std::ostream& out) {
    const Lang l = o.lang;
    const AttentionTrace t = worked_example::trace();
    const ex::OutputAgainstValue table = ex::output_against_value(t, 0);
    PrintOptions p;
    p.row_labels = {"o₁", "v₁", "o₁ − v₁", "Σ α₁ⱼ(v_j − v₁)"};
    out << tr(l, "Exercise 5 · output[0] against V[0]\n\n", "练习 5 · 比较 output[0] 与 V[0]\n\n")
        << format_matrix(table.rows, p) << "\n  ‖o₁ − v₁‖ = " << fixed(table.distance, 4) << "\n"
        << tr(l,
              "  o₁ = Σ_j α₁ⱼ·v_j and Σ_j α₁ⱼ = 1, so o₁ − v₁ = α₁₂·(v₂ − v₁) + α₁₃·(v₃ − v₁): the difference is\n"
              "  exactly what the other tokens pulled in, each in proportion to its weight (here ",
              "  o₁ = Σ_j α₁ⱼ·v_j 且 Σ_j α₁ⱼ = 1，所以 o₁ − v₁ = α₁₂·(v₂ − v₁) + α₁₃·(v₃ − v₁)：差值恰好是\n"
              "  其他词按各自权重带来的信息（此处 ")
        << "α₁₂ = " << format_number(t.weights(0, 1), 4) << tr(l, ", ", "，")
        << "α₁₃ = " << format_number(t.weights(0, 2), 4) << tr(l, ").\n", "）。\n");
}

}  // namespace

int exercise_command(std::span<const std::string> args) {
    const Options o = parse(args, true);
    if (o.help) {
        std::cout << tr(
            o.lang,
            "Usage: attn exercise N [--lang en|zh] [--seed S] [--samples K] [--largest N]\n\n"
            "  1  √d_k vs d_k vs no scaling: entropy, max weight, softmax Jacobian, for d_k = 4 … 1024\n"
            "  2  is S_ii the row maximum? the worked example, K random draws, and W_Q = W_K\n"
            "  3  n = 1000 and O(n²): scores, memory, measured time for n = 250 … 4000 (--largest N:\n"
            "     N/16 … N instead), fitted exponents\n"
            "  4  the causal mask on the worked example, with the check that row i sees only j ≤ i\n"
            "  5  output[0] against V[0] and what their difference is made of\n",
            "用法：attn exercise N [--lang en|zh] [--seed S] [--samples K] [--largest N]\n\n"
            "  1  √d_k、d_k 与不缩放：d_k = 4 … 1024 时的熵、最大权重、softmax 雅可比\n"
            "  2  S_ii 是否为行最大值？依次看示例、K 组随机权重，以及 W_Q = W_K 的情形\n"
            "  3  n = 1000 与 O(n²)：分数个数、内存、n = 250 … 4000（--largest N：改为 N/16 … N）的实测时间与拟合指数\n"
            "  4  示例上的因果掩码，并检查第 i 行只看到 j ≤ i\n"
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
                        "蒙特卡洛估计 q, k ~ N(0, I) 时 Var(q·k)，d_k = 1 … 1024，缩放前后对比。\n");
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
        << "  " << o.samples << tr(l, " samples per d_k, seed ", " 个样本（每个 d_k），随机种子 ") << o.seed << "\n\n"
        << "  " << pad_right("d_k", 7) << pad_left("Var(q·k)", 12) << pad_left(tr(l, "theory", "理论"), 9)
        << pad_left("Var(q·k/√d_k)", 16) << pad_left(tr(l, "theory", "理论"), 9) << "\n";
    for (const auto& r : results) {
        std::cout << "  " << pad_right(std::to_string(r.d_k), 7) << pad_left(fixed(r.raw, 3), 12)
                  << pad_left(std::to_string(r.d_k), 9) << pad_left(fixed(r.scaled, 4), 16) << pad_left("1", 9) << "\n";
    }
    return 0;
}

}  // namespace attn::cli
