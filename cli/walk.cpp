// cli/walk.cpp — `attn walk`. Runs SingleHeadAttention::forward on the lesson's example with a trace,
// then prints each intermediate with the formula that made it. Every matrix it prints comes from the
// library. A few numbers are computed here only to show one entry worked out by hand beside the
// library's result: the products of one S_ij, the e^(S'−m) of row 1 and their sum, the row sums
// of α, and ‖o₁ − v₁‖ for exercise 5. The tests check the printed matrices against the library.
#include "cli/walk.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "attention/attention.hpp"
#include "attention/experiments.hpp"
#include "attention/worked_example.hpp"
#include "cli/args.hpp"
#include "cli/text.hpp"
#include "cli/walk_json.hpp"
#include "matrix/ops.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

enum class Color { automatic, always, never };

struct WalkOptions {
    Lang lang = lang_from_environment();
    AttentionOptions attention;
    int precision = 4;
    Color color = Color::automatic;
    bool json = false;  // --format json: the numbers for programs instead of the text
    bool help = false;
};

WalkOptions parse(std::span<const std::string> args) {
    WalkOptions o;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < args.size(); ++i) {
        reject_repeated(seen, args[i], "walk");
        std::string v;
        if (args[i] == "-h" || args[i] == "--help") {
            o.help = true;
        } else if (args[i] == "--causal") {
            o.attention.causal = true;
        } else if (option_value(args, i, "--lang", v)) {
            o.lang = parse_lang(v, "walk");
        } else if (option_value(args, i, "--scale", v)) {
            o.attention.scale = parse_scale(v, "walk");
        } else if (option_value(args, i, "--backend", v)) {
            o.attention.backend = parse_backend(v, "walk");
            if (o.attention.backend == Backend::fused)
                throw UsageError(
                    "walk: the fused backend computes the output without ever storing S or α, so it has no steps 3–5 "
                    "to show; use --backend naive, simd or parallel");
        } else if (option_value(args, i, "--precision", v)) {
            o.precision = parse_precision(v, "walk");
        } else if (option_value(args, i, "--format", v)) {
            if (v != "text" && v != "json") throw UsageError("walk: --format must be text or json, got '" + v + "'");
            o.json = v == "json";
        } else if (option_value(args, i, "--color", v)) {
            if (v == "auto") o.color = Color::automatic;
            else if (v == "always") o.color = Color::always;
            else if (v == "never") o.color = Color::never;
            else throw UsageError("walk: --color must be auto, always or never, got '" + v + "'");
        } else {
            throw UsageError("walk: unknown option '" + args[i] + "' (see attn walk --help)");
        }
    }
    return o;
}

bool use_color(Color c) {
    if (c != Color::automatic) return c == Color::always;
    const char* no_color = std::getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

// 1 → "₁", 12 → "₁₂": the lesson's 1-based indices.
std::string sub(std::size_t k) {
    static const char* const digits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
    const std::string s = std::to_string(k);
    std::string out;
    for (char ch : s) out += digits[ch - '0'];
    return out;
}

// A vector shown as a 1×k matrix, so it prints like the matrices around it.
Matrix as_row(std::span<const float> v) {
    Matrix m(1, v.size());
    std::copy(v.begin(), v.end(), m.data());
    return m;
}

// A number for a written-out sum: trailing zeros dropped, negatives in parentheses.
std::string term(float v, int precision) {
    std::string s = format_number(v, precision);
    if (s.find('.') != std::string::npos) {
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
    }
    return v < 0 ? "(" + s + ")" : s;
}

class Walk {
public:
    Walk(const WalkOptions& o, bool color) : o_(o), l_(o.lang), color_(color), tokens_(example_tokens(o.lang)) {
        trace_ = worked_example::trace(o.attention);
    }

    std::string render() {
        header();
        shapes();
        step1();
        step2();
        step3();
        transpose_remark();
        confusion1();
        step4();
        step5();
        confusion2();
        step6();
        confusion3();
        diagonal();
        exercise5();
        summary();
        confusion4();
        return out_.str();
    }

private:
    const WalkOptions& o_;
    const Lang l_;  // every sentence is tr(l_, English, Chinese), where it is printed
    // The punctuation between a label and its value, between settings, between two results, and
    // the label of a written-out entry: the few words printed in many places.
    const char* const colon_ = tr(l_, ": ", "：");
    const char* const comma_ = tr(l_, ", ", "，");
    const char* const semicolon_ = tr(l_, ";  ", "；");
    const char* const expanded_ = tr(l_, "One entry written out", "展开其中一项");
    bool color_;
    std::vector<std::string> tokens_;
    AttentionTrace trace_;
    std::ostringstream out_;

    std::size_t n() const { return trace_.X.rows(); }
    std::string num(float v) const { return format_number(v, o_.precision); }
    std::string labelled(const Matrix& m, bool token_columns = false) const {
        PrintOptions p;
        p.precision = o_.precision;
        p.row_labels = tokens_;
        if (token_columns) p.col_labels = tokens_;
        return format_matrix(m, p);
    }
    std::string plain(const Matrix& m, const std::string& indent = "  ") const {
        PrintOptions p;
        p.precision = o_.precision;
        p.indent = indent;
        return format_matrix(m, p);
    }
    void heading(const std::string& title, const std::string& note) {
        out_ << "\n" << title << "\n  " << note << "\n\n";
    }
    // "a₁×b₁ + a₂×b₂ + …" for two rows, with the value it sums to printed by the caller.
    std::string products(std::span<const float> a, std::span<const float> b) const {
        std::string s;
        for (std::size_t k = 0; k < a.size(); ++k) {
            s += (k ? " + " : "") + term(a[k], o_.precision) + "×" + term(b[k], o_.precision);
        }
        return s;
    }
    std::string scale_text() const {
        const std::size_t d_k = trace_.Q.cols();
        // the symbol, then the divisor worked out (appended, not "+": GCC 12 warns falsely on " " + string)
        const std::string symbol = std::string(" ").append(scale_symbol(o_.attention.scale));
        switch (o_.attention.scale) {
            case Scale::sqrt_dk:
                return symbol + " = S ÷ √" + std::to_string(d_k) + " = S ÷ " + num(std::sqrt(float(d_k)));
            case Scale::dk: return symbol + " = S ÷ " + std::to_string(d_k);
            case Scale::none: return symbol;
        }
        return "";
    }

    // The formula of this run: the lesson's softmax(Q·Kᵀ/√d_k)·V, or what --scale and --causal make of it.
    std::string formula() const {
        const Scale scale = o_.attention.scale;
        const char* divisor = scale == Scale::sqrt_dk ? "/√d_k" : scale == Scale::dk ? "/d_k" : "";
        std::string f = std::string("O = softmax(Q·Kᵀ") + divisor + (o_.attention.causal ? " + M" : "") + ")·V";
        if (o_.attention.causal)
            f += std::string("   ").append(tr(l_, "(M_ij = −∞ for j > i, else 0)", "（j > i 时 M_ij = −∞，否则为 0）"));
        if (scale != Scale::sqrt_dk)
            f += std::string("   ").append(
                tr(l_, "(the lesson divides by √d_k; this run does not)", "（课程中除以 √d_k；本次运行没有）"));
        return f;
    }

    void header() {
        const char* comma = comma_;
        out_ << tr(l_, "Single-head scaled dot-product attention, one step at a time", "单头缩放点积注意力，逐步计算")
             << "\n\n  " << tr(l_, "The whole chain in one line", "整条计算链写成一行") << colon_ << formula() << "\n  "
             << tr(l_, "Sentence", "句子") << colon_ << "[";
        for (std::size_t i = 0; i < n(); ++i) out_ << (i ? comma : "") << tokens_[i];
        out_ << "]\n  " << tr(l_, "Settings", "设置") << colon_ << "n = " << n() << comma
             << "d_model = " << trace_.X.cols() << comma << "d_k = " << trace_.Q.cols() << comma
             << "d_v = " << trace_.V.cols() << comma << "S" << scale_text() << comma
             << (o_.attention.causal ? tr(l_, "causal mask", "因果掩码") : tr(l_, "no mask", "无掩码")) << comma
             << tr(l_, "backend", "后端") << " " << to_string(o_.attention.backend) << "\n  "
             << tr(l_,
                   "Indices count from 1, as in the lesson: x₁ is row 1 of X and o₁ is row 1 of O, the row that "
                   "0-based code (C++, NumPy, PyTorch) calls output[0].",
                   "下标与课程一致，从 1 开始：x₁ 是 X 的第 1 行，o₁ 是 O 的第 1 行，即从 0 "
                   "计数的代码（C++、NumPy、PyTorch）中的 output[0]。")
             << "\n";
    }

    void shapes() {
        const std::size_t dm = trace_.X.cols(), dk = trace_.Q.cols(), dv = trace_.V.cols();
        const std::vector<std::array<std::string, 3>> rows = {
            {"X", "n×d_model", shape_string(n(), dm)},
            {"W_Q, W_K", "d_model×d_k", shape_string(dm, dk)},
            {"W_V", "d_model×d_v", shape_string(dm, dv)},
            {"Q, K", "n×d_k", shape_string(n(), dk)},
            {"V", "n×d_v", shape_string(n(), dv)},
            {"S = Q·Kᵀ", "n×n", shape_string(n(), n())},
            {"α = softmax(S')", "n×n", shape_string(n(), n())},
            {"O = α·V", "n×d_v", shape_string(n(), dv)},
        };
        out_ << "\n" << tr(l_, "Shapes", "形状") << "\n";
        for (const auto& r : rows) out_ << "  " << pad_right(r[0], 17) << pad_right(r[1], 13) << r[2] << "\n";
        out_ << "  "
             << tr(l_, "S and α are n×n whatever d_k is: that square is where attention's O(n²) cost comes from.",
                   "无论 d_k 多大，S 和 α 都是 n×n：注意力 O(n²) 的开销正来自这个方阵。")
             << "\n";
    }

    void step1() {
        heading(tr(l_, "Step 1 · Input X", "第 1 步 · 输入 X") + (" (" + shape_string(trace_.X) + ")"),
                tr(l_, "each row is one token's embedding; no token knows its neighbours yet.",
                   "每一行是一个词的嵌入向量；此时每个词还不了解上下文。"));
        out_ << labelled(trace_.X);
    }

    void step2() {
        heading(tr(l_, "Step 2 · Projections Q = X·W_Q, K = X·W_K, V = X·W_V",
                   "第 2 步 · 线性投影 Q = X·W_Q，K = X·W_K，V = X·W_V"),
                tr(l_, "three learned matrices give each token a query, a key and a value.",
                   "三个可学习的矩阵为每个词分别生成查询、键和值。"));
        out_ << "  " << tr(l_, "Weights", "权重") << colon_
             << tr(l_,
                   "W_Q, W_K and W_V are this project's choice (attention/worked_example.hpp): the lesson uses them "
                   "but never prints them. X is the lesson's own; every number after it follows from these weights.",
                   "W_Q、W_K、W_V 由本项目选定（attention/worked_example.hpp）：课程用到它们，但没有给出数值。X "
                   "取自课程；其后的每个数都由这些权重算出。")
             << "\n";
        const SingleHeadAttention layer = worked_example::layer();
        for (const auto& [name, w] : {std::pair{"W_Q", &layer.W_Q()}, {"W_K", &layer.W_K()}, {"W_V", &layer.W_V()}})
            out_ << "  " << name << " (" << shape_string(*w) << ")\n" << plain(*w);
        for (const auto& [name, m] : {std::pair{"Q", &trace_.Q}, {"K", &trace_.K}, {"V", &trace_.V}})
            out_ << "\n  " << name << " (" << shape_string(*m) << ")\n" << labelled(*m);
        out_ << "\n  " << expanded_ << colon_ << "Q" << sub(1) << sub(1) << " = x" << sub(1) << "·"
             << tr(l_, "(column 1 of W_Q)", "（W_Q 的第 1 列）") << " = "
             << products(trace_.X.row(0), column(layer.W_Q(), 0)) << " = " << num(trace_.Q(0, 0)) << "\n";
    }

    void step3() {
        heading(
            tr(l_, "Step 3 · Scores S = Q·Kᵀ", "第 3 步 · 注意力分数 S = Q·Kᵀ") + (" (" + shape_string(trace_.S) + ")"),
            tr(l_,
               "S_ij = q_i·k_j: how well query i matches key j. Kᵀ turns the rows of K into columns, so that row i "
               "times column j is that dot product.",
               "S_ij = q_i·k_j：查询 i 与键 j 的匹配程度。转置把 K 的行变成列，第 i 行乘第 j 列恰好是这个点积。"));
        out_ << labelled(trace_.S, true);
        const std::size_t j = std::min<std::size_t>(1, n() - 1);
        out_ << "\n  " << expanded_ << colon_ << "S" << sub(1) << sub(j + 1) << " = q" << sub(1) << "·k" << sub(j + 1)
             << " = " << products(trace_.Q.row(0), trace_.K.row(j)) << " = " << num(trace_.S(0, j)) << "\n";
    }

    // Step 3's remark, with Q·K computed by the library beside S: the entry S₁₂ holds is something else in Q·K.
    void transpose_remark() {
        out_ << "\n  " << tr(l_, "Why Kᵀ and not K?", "第 3 步为什么用 Kᵀ 而不是 K？") << " "
             << tr(l_,
                   "(Q·K)_ij = Σ_p Q_ip·K_pj multiplies the features of query i with feature j of every key: it "
                   "compares no query with any key. It is shape-valid here only because n = d_k; otherwise the product "
                   "is refused.",
                   "(Q·K)_ij = Σ_p Q_ip·K_pj 把查询 i 的各个特征与所有键的第 j "
                   "个特征相乘：它没有拿任何查询去比较任何键。这里能相乘只是因为恰好 n = "
                   "d_k；形状不同时，矩阵乘法会报错。")
             << "\n";
        const Matrix QK = experiments::scores_without_transpose(trace_.Q, trace_.K);
        out_ << "  Q·K (" << shape_string(QK) << ", n = d_k = " << n() << ")\n" << plain(QK);
        out_ << "  (Q·K)" << sub(1) << sub(2) << " = " << products(trace_.Q.row(0), column(trace_.K, 1)) << " = "
             << num(QK(0, 1)) << semicolon_ << tr(l_, "the same position in S", "S 中同一位置") << colon_ << "S"
             << sub(1) << sub(2) << " = " << num(trace_.S(0, 1)) << "\n";
    }

    // The cosines beside S, then S from other weights: which token each row favours is made by W_Q and W_K.
    void confusion1() {
        heading(tr(l_, "Confusion 1 · Why does Q·Kᵀ tell how the tokens relate?",
                   "容易混淆的问题 1 · Q·Kᵀ 为什么能表示词与词之间的关系？"),
                tr(l_,
                   "S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij grows as query i and key j point the same way. Which "
                   "directions count as related is no fixed rule of grammar: W_Q and W_K are learned, so \"related\" "
                   "means whatever training found useful.",
                   "S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij：查询 i 与键 j "
                   "的方向越一致，分数越高。哪些方向算“相关”，并不是语法上定好的标签：W_Q 和 W_K "
                   "都是学出来的，所谓相关，就是训练中发现有用的那种关系。"));
        const Matrix cosines = experiments::cosines(trace_.Q, trace_.K);
        out_ << "  " << tr(l_, "cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)", "cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)") << "\n"
             << labelled(cosines, true);
        const std::size_t j = std::min<std::size_t>(1, n() - 1);
        out_ << "  S" << sub(1) << sub(j + 1) << " = ‖q" << sub(1) << "‖·‖k" << sub(j + 1) << "‖·cos θ" << sub(1)
             << sub(j + 1) << " = " << num(float(norm(trace_.Q.row(0)))) << " × " << num(float(norm(trace_.K.row(j))))
             << " × " << num(cosines(0, j)) << " = " << num(trace_.S(0, j)) << "\n";
        const SingleHeadAttention layer = worked_example::layer();
        const Matrix other = experiments::scores_with_weights(trace_.X, layer.W_Q(), layer.W_Q());
        out_ << "\n  "
             << tr(l_, "The same X with another W_K (here W_K = W_Q, standing in for a model trained differently)",
                   "同一个 X，换一个 W_K（这里取 W_K = W_Q，代表另一种训练结果）")
             << "\n"
             << labelled(other, true) << "  " << tr(l_, "largest score of each row", "每行最大的分数") << colon_
             << largest_per_row(other) << semicolon_ << tr(l_, "with the example's W_K", "示例中的 W_K") << colon_
             << largest_per_row(trace_.S) << "\n";
    }

    // "猫 → 地毯, 坐 → 地毯, …": the token whose key each row's query scores highest.
    std::string largest_per_row(const Matrix& S) const {
        std::string s;
        for (std::size_t i = 0; i < S.rows(); ++i)
            s += (i ? comma_ : "") + tokens_[i] + " → " + tokens_[experiments::row_argmax(S.row(i))];
        return s;
    }

    static std::vector<float> column(const Matrix& m, std::size_t j) {
        std::vector<float> c;
        for (std::size_t p = 0; p < m.rows(); ++p) c.push_back(m(p, j));
        return c;
    }

    void step4() {
        const char* note =
            o_.attention.scale == Scale::sqrt_dk
                ? tr(l_,
                     "if q and k have d_k independent unit-variance entries, Var(q·k) = d_k; dividing by √d_k brings "
                     "it back to 1, so the softmax does not saturate as d_k grows.",
                     "若 q、k 各有 d_k 个独立的单位方差分量，则 Var(q·k) = d_k；除以 √d_k 使方差回到 1，softmax 不会随 "
                     "d_k 增大而饱和。")
            : o_.attention.scale == Scale::dk
                ? tr(l_,
                     "dividing by d_k instead leaves Var(S'_ij) = d_k/d_k² = 1/d_k: the larger d_k, the closer the "
                     "scores sit to 0 and the flatter α becomes (attn exercise 1 measures it).",
                     "改为除以 d_k 时 Var(S'_ij) = d_k/d_k² = 1/d_k：d_k 越大，分数越贴近 0，α 越平坦（attn exercise 1 "
                     "有实测）。")
                : tr(l_,
                     "unscaled, Var(S_ij) = d_k: the larger d_k, the wider the scores spread and the closer the "
                     "softmax comes to picking one token (attn exercise 1 measures it).",
                     "不缩放时 Var(S_ij) = d_k：d_k 越大，分数越分散，softmax 越接近只选一个词（attn exercise 1 "
                     "有实测）。");
        heading(tr(l_, "Step 4 · Scaling S' = S", "第 4 步 · 缩放 S' = S") + scale_text(), note);
        out_ << labelled(trace_.S_scaled, true);
        if (!o_.attention.causal) return;
        heading(tr(l_, "Step 4½ · Causal mask", "第 4½ 步 · 因果掩码"),
                tr(l_, "S'_ij = −∞ for j > i: e^−∞ = 0, so token i gets no weight from later tokens.",
                   "j > i 时 S'_ij = −∞：e^−∞ = 0，词 i 得不到后面词的任何权重。"));
        out_ << labelled(trace_.S_masked, true);
    }

    void step5() {
        heading(tr(l_, "Step 5 · Attention weights α = softmax_row(S')", "第 5 步 · 注意力权重 α = softmax_row(S')") +
                    (" (" + shape_string(trace_.weights) + ")"),
                tr(l_, "each row is made positive and divided by its sum: a probability distribution over the tokens.",
                   "每一行取指数后除以该行之和，成为对所有词的概率分布。"));
        out_ << labelled(trace_.weights, true);
        // Under the causal mask row 1 sees only itself, so write out the last row, which sees every token.
        const std::size_t r = o_.attention.causal ? n() - 1 : 0;
        const auto w =
            experiments::softmax_written_out((o_.attention.causal ? trace_.S_masked : trace_.S_scaled).row(r));
        const float m = w.max, sum = w.sum;
        const Matrix e = as_row(w.exponentials);
        out_ << "\n  " << expanded_ << colon_ << "α" << sub(r + 1) << " = softmax(S'" << sub(r + 1) << ")\n"
             << "    "
             << tr(l_, "subtract the row maximum m (changes nothing, keeps e^x from overflowing)",
                   "先减去该行最大值 m（结果不变，且 e^x 不会溢出）")
             << colon_ << "m = " << num(m) << "\n"
             << "    " << tr(l_, "e^(S' − m)", "e^(S' − m)") << " =" << plain(e, " ") << "    " << tr(l_, "sum", "求和")
             << " = " << num(sum) << semicolon_ << "α" << sub(r + 1) << " = e^(S' − m) / " << num(sum) << " ="
             << plain(as_row(trace_.weights.row(r)), " ");
        out_ << "\n  " << tr(l_, "Every row of α sums to 1", "α 每一行之和都是 1") << colon_
             << sums(trace_.weights, false) << "\n";
        if (color_) heat_map();
    }

    // The softmax taken down the columns of the same S', by the library: its column and row sums.
    void confusion2() {
        heading(
            tr(l_, "Confusion 2 · Why softmax along rows and not down columns?",
               "容易混淆的问题 2 · softmax 为什么按行做，而不是按列？"),
            tr(l_,
               "row i shares out the attention of query i over every position. Taken down each column instead, every "
               "column sums to 1 and the rows do not: column j would say how strongly all the queries compete for "
               "position j, another question, and o_i = Σ_j α_ij·v_j would no longer be an average of the values.",
               "第 i 行是查询 i 把注意力分给所有位置的方式。若按列做 softmax，每一列之和为 1，各行之和却不是 1：第 j "
               "列表示的是所有查询争夺位置 j 的程度，回答的是另一个问题；o_i = Σ_j α_ij·v_j "
               "也不再是值向量的加权平均。"));
        const Matrix by_column = experiments::softmax_columns(o_.attention.causal ? trace_.S_masked : trace_.S_scaled);
        out_ << labelled(by_column, true) << "  " << tr(l_, "column sums", "各列之和") << colon_
             << sums(by_column, true) << "\n  " << tr(l_, "row sums", "各行之和") << colon_ << sums(by_column, false)
             << "\n";
    }

    // o_i written as the mix of values it is: row 1 (the last row under the causal mask, as in step 5).
    void confusion3() {
        heading(tr(l_, "Confusion 3 · Why is the output still one vector per token?",
                   "容易混淆的问题 3 · 为什么输出仍然是一个词一个向量？"),
                tr(l_,
                   "α·V is (n×n)·(n×d_v) = n×d_v: one row per token, as in X. The form is the same, the content is "
                   "not: x_i was token i's embedding alone, blind to its neighbours; o_i mixes every token's value, in "
                   "the shares of row i of α:",
                   "α·V 的形状是 (n×n)·(n×d_v) = n×d_v：和 X 一样，每个词一行。形式相同，内容却不同：x_i 只是词 i "
                   "自己的嵌入，看不到上下文；o_i 则按 α 第 i 行的比例，把所有词的值向量混合在一起："));
        const std::size_t r = o_.attention.causal ? n() - 1 : 0;
        out_ << "  o" << sub(r + 1) << " =";
        for (std::size_t j = 0; j < n(); ++j)
            out_ << (j ? " + " : " ") << num(trace_.weights(r, j)) << "·v" << sub(j + 1);
        out_ << "\n";
    }

    // "  猫 1.0000  坐 1.0000  地毯 1.0000": the sum of each row (or column) of an n×n matrix, by token.
    std::string sums(const Matrix& m, bool columns) const {
        const std::vector<float> sums = columns ? experiments::column_sums(m) : experiments::row_sums(m);
        std::string out;
        for (std::size_t k = 0; k < n(); ++k) out += "  " + tokens_[k] + " " + num(sums[k]);
        return out;
    }

    void heat_map() {
        out_ << "\n  " << tr(l_, "α as a heat map (darker = more attention)", "α 热力图（颜色越深，注意力越多）")
             << "\n";
        std::size_t w = 0;
        for (const auto& tok : tokens_) w = std::max(w, display_width(tok));
        out_ << "  " << std::string(w, ' ');
        for (const auto& tok : tokens_) out_ << " " << pad_left(tok, 8);
        out_ << "\n";
        for (std::size_t i = 0; i < n(); ++i) {
            out_ << "  " << pad_right(tokens_[i], w);
            for (float a : trace_.weights.row(i)) {
                const int shade = 255 - static_cast<int>(std::lround(a * 23.0f));  // 255 light … 232 dark
                const int fg = shade > 243 ? 16 : 231;                             // black on light, white on dark
                out_ << " \x1b[48;5;" << shade << "m\x1b[38;5;" << fg << "m" << pad_left(format_number(a, 2), 7)
                     << " \x1b[0m";
            }
            out_ << "\n";
        }
    }

    void step6() {
        heading(
            tr(l_, "Step 6 · Output O = α·V", "第 6 步 · 输出 O = α·V") + (" (" + shape_string(trace_.output) + ")"),
            tr(l_, "row i is the α-weighted average of all value vectors: token i's new, context-aware representation.",
               "第 i 行是所有值向量按 α 第 i 行加权的平均：词 i 融合上下文后的新表示。"));
        out_ << labelled(trace_.output);
        out_ << "\n  " << expanded_ << colon_ << "o" << sub(1) << " =";
        for (std::size_t j = 0; j < n(); ++j)
            out_ << (j ? " +" : "") << " " << num(trace_.weights(0, j)) << "·v" << sub(j + 1);
        out_ << "\n";
    }

    void diagonal() {
        out_ << "\n" << diagonal_question(l_) << "\n";
        for (std::size_t i = 0; i < n(); ++i) {
            const auto r = trace_.S.row(i);
            const std::size_t best = experiments::row_argmax(r);
            out_ << "  " << pad_right(tokens_[i], 5) << " S" << sub(i + 1) << sub(i + 1) << " = "
                 << num(trace_.S(i, i));
            if (best == i) out_ << "  " << tr(l_, "yes", "是") << "\n";
            else
                out_ << "  " << tr(l_, "no, the row's largest score is with", "否，该行最大的分数属于") << " "
                     << tokens_[best] << tr(l_, " (", "（") << "S" << sub(i + 1) << sub(best + 1) << " = "
                     << num(trace_.S(i, best)) << tr(l_, ")", "）") << "\n";
        }
    }

    // Exercise 5 for row 1; under the causal mask row 1 sees only itself (o₁ = v₁), so the last row,
    // which sees every token, is shown too.
    void exercise5() {
        heading(tr(l_, "Exercise 5 · output[0] against V[0]", "练习 5 · 比较 output[0] 与 V[0]"),
                tr(l_, "the difference is what the other tokens contributed: o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁).",
                   "差值就是其他词贡献的信息：o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)。"));
        output_against_value(0);
        if (!o_.attention.causal) return;
        out_ << "\n  "
             << tr(l_,
                   "under the causal mask token 1 sees only itself: α₁₁ = 1, so o₁ = v₁. The last token sees every "
                   "token:",
                   "使用因果掩码时，第 1 个词只能看到自己：α₁₁ = 1，所以 o₁ = v₁。最后一个词能看到所有词：")
             << "\n";
        output_against_value(n() - 1);
    }

    void output_against_value(std::size_t row) {
        const experiments::OutputAgainstValue table = experiments::output_against_value(trace_, row);
        Matrix rows(3, table.rows.cols());  // o_i, v_i, o_i − v_i (exercise 5 adds the decomposition)
        std::copy(table.rows.data(), table.rows.data() + rows.size(), rows.data());
        PrintOptions p;
        p.precision = o_.precision;
        const std::string o = std::string("o") + sub(row + 1), v = std::string("v") + sub(row + 1);
        p.row_labels = {o, v, o + " − " + v};
        out_ << format_matrix(rows, p) << "  ‖" << o << " − " << v << "‖ = " << num(static_cast<float>(table.distance))
             << tr(l_, " (length)", "（长度）") << "\n";
    }

    void summary() {
        out_ << "\n"
             << tr(l_, "How the shapes flowed", "各步的形状") << "\n  X (" << shape_string(trace_.X) << ") → Q ("
             << shape_string(trace_.Q) << "), K (" << shape_string(trace_.K) << "), V (" << shape_string(trace_.V)
             << ") → S (" << shape_string(trace_.S) << ") → S' (" << shape_string(trace_.S_scaled) << ") → α ("
             << shape_string(trace_.weights) << ") → O (" << shape_string(trace_.output) << ")\n";
    }

    // d_k = d_model / h for the original Transformer, computed by the library's head_width.
    void confusion4() {
        heading(
            tr(l_, "Confusion 4 · How do d_k and d_model relate?", "容易混淆的问题 4 · d_k 与 d_model 是什么关系？"),
            tr(l_,
               "one head may choose d_k freely (here 3, with d_model = 4). With h heads each gets d_k = d_model / h; "
               "the original Transformer:",
               "单头时 d_k 可以自由选择（这里是 3，d_model = 4）。h 个头时每个头的宽度为 d_k = d_model / h；原始 "
               "Transformer："));
        const std::size_t d_model = 512, heads = 8;
        out_ << "  d_k = d_model / h = " << d_model << " / " << heads << " = "
             << experiments::head_width(d_model, heads) << "\n  "
             << tr(l_, "so the h heads together cost what one head of width d_model would: h·n²·d_k = n²·d_model",
                   "所以 h 个头合起来的开销与一个宽度为 d_model 的头相同：h·n²·d_k = n²·d_model")
             << "\n";
    }
};

}  // namespace

int walk_command(std::span<const std::string> args) {
    const WalkOptions o = parse(args);
    if (o.help) {
        std::cout << tr(o.lang, R"(Usage: attn walk [options]

Computes the lesson's worked example (猫 坐 地毯, d_model = 4, d_k = d_v = 3) and prints every
intermediate: shapes, X, the weights, Q, K, V, the scores S, S scaled, the softmax weights α, the
output, and exercises 2 and 5.

Options:
  --lang en|zh           language (default: from LANG)
  --causal               apply the causal mask (exercise 4)
  --scale sqrt|dk|none   divide the scores by √d_k (default), by d_k, or not at all (exercise 1)
  --backend naive|simd|parallel
                         which kernels compute each step (default naive: the textbook loops;
                         fused has no α to show, so walk does not offer it)
  --precision N          digits after the decimal point, 0 to 8 (default 4)
  --color auto|always|never
                         heat map colours (default auto: only on a terminal, never with NO_COLOR)
  --format text|json     json: every matrix at full precision, for programs (the docs pages use it)
  -h, --help             this text
)",
                        R"(用法：attn walk [选项]

计算课程中的示例（猫 坐 地毯，d_model = 4，d_k = d_v = 3），打印每个中间结果：形状、X、权重、
Q、K、V、分数 S、缩放后的分数、softmax 权重 α、输出，以及练习 2 和练习 5。

选项：
  --lang en|zh           语言（默认取自 LANG）
  --causal               使用因果掩码（练习 4）
  --scale sqrt|dk|none   分数除以 √d_k（默认）、除以 d_k，或不缩放（练习 1）
  --backend naive|simd|parallel
                         计算每一步所用的内核（默认 naive：教科书式循环）
  --precision N          小数位数，0 到 8（默认 4）
  --color auto|always|never
                         热力图颜色（默认 auto：仅在终端中显示，设置 NO_COLOR 时不显示）
  --format text|json     json：以完整精度输出所有矩阵，供程序读取（文档页面由此生成）
  -h, --help             显示本帮助
)");
        return 0;
    }
    if (o.json) {
        const auto tokens = example_tokens(o.lang);
        std::cout << walk_json(worked_example::layer(), worked_example::trace(o.attention), o.attention, tokens);
        return 0;
    }
    std::cout << Walk(o, use_color(o.color)).render();
    return 0;
}

}  // namespace attn::cli
