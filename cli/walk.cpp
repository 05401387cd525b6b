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
#include "cli/walk_bf16.hpp"
#include "cli/walk_grad.hpp"
#include "cli/walk_json.hpp"
#include "cli/walk_text.hpp"
#include "matrix/norms.hpp"
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
    bool json = false;         // --format json: the numbers for programs instead of the text
    bool grad = false;         // --grad: the backward too, for L = ½‖O − T‖² (cli/walk_grad.cpp)
    Dtype dtype = Dtype::f32;  // --dtype bf16: O once more in bfloat16, after the walk (cli/walk_bf16.cpp)
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
        } else if (args[i] == "--grad") {
            o.grad = true;
        } else if (option_value(args, i, "--lang", v, "walk")) {
            o.lang = parse_lang(v, "walk");
        } else if (option_value(args, i, "--scale", v, "walk")) {
            o.attention.scale = parse_scale(v, "walk");
        } else if (option_value(args, i, "--backend", v, "walk")) {
            o.attention.backend = parse_backend(v, "walk");
            if (o.attention.backend == Backend::fused)
                throw UsageError(
                    "walk: the fused backend computes the output without ever storing S or α, so it has no steps 3–5 "
                    "to show; use --backend naive, simd or parallel");
        } else if (option_value(args, i, "--dtype", v, "walk")) {
            o.dtype = parse_dtype(v, "walk");
        } else if (option_value(args, i, "--precision", v, "walk")) {
            o.precision = parse_precision(v, "walk");
        } else if (option_value(args, i, "--format", v, "walk")) {
            if (v != "text" && v != "json") throw UsageError("walk: --format must be text or json, got '" + v + "'");
            o.json = v == "json";
        } else if (option_value(args, i, "--color", v, "walk")) {
            if (v == "auto") o.color = Color::automatic;
            else if (v == "always") o.color = Color::always;
            else if (v == "never") o.color = Color::never;
            else throw UsageError("walk: --color must be auto, always or never, got '" + v + "'");
        } else {
            throw UsageError("walk: unknown option '" + args[i] + "' (see attn walk --help)");
        }
    }
    if (o.json && o.dtype == Dtype::bf16)  // the JSON is the float32 walk's; bf16's numbers are shown as text
        throw UsageError("walk: --dtype bf16 is shown as text only; drop --format json");
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
    Walk(const WalkOptions& o, bool color)
        : o_(o), l_(o.lang), say_(o.lang, o.attention.scale), color_(color), tokens_(example_tokens(o.lang)) {
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
    const Lang l_;        // words only the terminal says: tr(l_, English, Chinese), where printed
    const WalkText say_;  // the sentences the lesson pages show too (cli/walk_text.cpp)
    // The punctuation between a label and its value, between settings, and between two results.
    const char* const colon_ = tr(l_, ": ", "：");
    const char* const comma_ = tr(l_, ", ", "，");
    const char* const semicolon_ = tr(l_, ";  ", "；");
    const std::string expanded_ = say_("expanded");
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
             << tr(l_, "backend", "后端") << " " << to_string(o_.attention.backend) << "\n  " << say_("indices")
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
        heading(say_("title.1") + " (" + shape_string(trace_.X) + ")", say_("note.1"));
        out_ << labelled(trace_.X);
    }

    void step2() {
        heading(say_("title.2"), say_("note.2"));
        out_ << "  " << tr(l_, "Weights", "权重") << colon_ << say_("weights") << "\n";
        const SingleHeadAttention layer = worked_example::layer();
        for (const auto& [name, w] : {std::pair{"W_Q", &layer.W_Q()}, {"W_K", &layer.W_K()}, {"W_V", &layer.W_V()}})
            out_ << "  " << name << " (" << shape_string(*w) << ")\n" << plain(*w);
        for (const auto& [name, m] : {std::pair{"Q", &trace_.Q}, {"K", &trace_.K}, {"V", &trace_.V}})
            out_ << "\n  " << name << " (" << shape_string(*m) << ")\n" << labelled(*m);
        out_ << "\n  " << expanded_ << colon_ << "Q" << sub(1) << sub(1) << " = x" << sub(1) << "·" << tr(l_, "(", "（")
             << say_("column1") << tr(l_, ")", "）") << " = " << products(trace_.X.row(0), column(layer.W_Q(), 0))
             << " = " << num(trace_.Q(0, 0)) << "\n";
    }

    void step3() {
        heading(say_("title.3") + " (" + shape_string(trace_.S) + ")", say_("note.3"));
        out_ << labelled(trace_.S, true);
        const std::size_t j = std::min<std::size_t>(1, n() - 1);
        out_ << "\n  " << expanded_ << colon_ << "S" << sub(1) << sub(j + 1) << " = q" << sub(1) << "·k" << sub(j + 1)
             << " = " << products(trace_.Q.row(0), trace_.K.row(j)) << " = " << num(trace_.S(0, j)) << "\n";
    }

    // Step 3's remark, with Q·K computed by the library beside S: the entry S₁₂ holds is something else in Q·K.
    // (The lesson's example has n = d_k, so Q·K is defined; the pages' editable example, where it may
    // not be, takes the sentence "transpose_refused" instead.)
    void transpose_remark() {
        out_ << "\n  " << say_("transpose") << " " << say_("transpose_note") << tr(l_, " ", "")
             << say_("transpose_square") << "\n";
        const Matrix QK = experiments::scores_without_transpose(trace_.Q, trace_.K);
        out_ << "  Q·K (" << shape_string(QK) << ", n = d_k = " << n() << ")\n" << plain(QK);
        out_ << "  (Q·K)" << sub(1) << sub(2) << " = " << products(trace_.Q.row(0), column(trace_.K, 1)) << " = "
             << num(QK(0, 1)) << semicolon_ << say_("same_in_S") << colon_ << "S" << sub(1) << sub(2) << " = "
             << num(trace_.S(0, 1)) << "\n";
    }

    // The cosines beside S, then S from other weights: which token each row favours is made by W_Q and W_K.
    void confusion1() {
        heading(say_("confusion1"), say_("confusion1_note"));
        const Matrix cosines = experiments::cosines(trace_.Q, trace_.K);
        out_ << "  " << say_("cosines") << "\n" << labelled(cosines, true);
        const std::size_t j = std::min<std::size_t>(1, n() - 1);
        out_ << "  S" << sub(1) << sub(j + 1) << " = ‖q" << sub(1) << "‖·‖k" << sub(j + 1) << "‖·cos θ" << sub(1)
             << sub(j + 1) << " = " << num(float(norm(trace_.Q.row(0)))) << " × " << num(float(norm(trace_.K.row(j))))
             << " × " << num(cosines(0, j)) << " = " << num(trace_.S(0, j)) << "\n";
        const SingleHeadAttention layer = worked_example::layer();
        const Matrix other = experiments::scores_with_weights(trace_.X, layer.W_Q(), layer.W_Q());
        out_ << "\n  " << say_("other_keys") << "\n"
             << labelled(other, true) << "  " << say_("row_largest") << colon_ << largest_per_row(other) << semicolon_
             << say_("with_example_keys") << colon_ << largest_per_row(trace_.S) << "\n";
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
        heading(say_("title.4") + " S' = S" + scale_text(), say_("note.4"));
        out_ << labelled(trace_.S_scaled, true);
        if (!o_.attention.causal) return;
        heading(say_("title.mask"), say_("note.mask"));
        out_ << labelled(trace_.S_masked, true);
    }

    void step5() {
        heading(say_("title.5") + " (" + shape_string(trace_.weights) + ")", say_("note.5"));
        out_ << labelled(trace_.weights, true);
        // Under the causal mask row 1 sees only itself, so write out the last row, which sees every token.
        const std::size_t r = o_.attention.causal ? n() - 1 : 0;
        const auto w =
            experiments::softmax_written_out((o_.attention.causal ? trace_.S_masked : trace_.S_scaled).row(r));
        const float m = w.max, sum = w.sum;
        const Matrix e = as_row(w.exponentials);
        out_ << "\n  " << expanded_ << colon_ << "α" << sub(r + 1) << " = softmax(S'" << sub(r + 1) << ")\n"
             << "    " << say_("row_max") << colon_ << "m = " << num(m) << "\n"
             << "    e^(S' − m) =" << plain(e, " ") << "    " << say_("sum") << " = " << num(sum) << semicolon_ << "α"
             << sub(r + 1) << " = e^(S' − m) / " << num(sum) << " =" << plain(as_row(trace_.weights.row(r)), " ");
        out_ << "\n  " << say_("row_sums") << colon_ << sums(trace_.weights, false) << "\n";
        if (color_) heat_map();
    }

    // The softmax taken down the columns of the same S', by the library: its column and row sums.
    void confusion2() {
        heading(say_("confusion2"), say_("confusion2_note"));
        const Matrix by_column = experiments::softmax_columns(o_.attention.causal ? trace_.S_masked : trace_.S_scaled);
        out_ << "  " << say_("by_column") << "\n"
             << labelled(by_column, true) << "  " << say_("column_sums") << colon_ << sums(by_column, true) << "\n  "
             << say_("row_sums_short") << colon_ << sums(by_column, false) << "\n";
    }

    // o_i written as the mix of values it is: row 1 (the last row under the causal mask, as in step 5).
    void confusion3() {
        heading(say_("confusion3"), say_("confusion3_note"));
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
        out_ << "\n  " << say_("heat") << "\n";
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
        heading(say_("title.6") + " (" + shape_string(trace_.output) + ")", say_("note.6"));
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
        heading(say_("exercise5"), say_("exercise5_note"));
        output_against_value(0);
        if (!o_.attention.causal) return;
        out_ << "\n  " << say_("exercise5_causal") << "\n";
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
             << say_("length") << "\n";
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
        heading(say_("confusion4"),
                say_("confusion4_note", {std::to_string(trace_.Q.cols()), std::to_string(trace_.X.cols())}));
        const std::size_t d_model = 512, heads = 8;
        out_ << "  d_k = d_model / h = " << d_model << " / " << heads << " = "
             << experiments::head_width(d_model, heads) << "\n  " << say_("heads_cost") << "\n";
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
  --grad                 then run it backwards: every gradient for the loss L = ½‖O − T‖², T = I
  --dtype f32|bf16       bf16: then O once more with the products in bfloat16, and what changed
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
  --grad                 再倒过来算：损失 L = ½‖O − T‖²（T = I）的每个梯度
  --dtype f32|bf16       bf16：再用 bfloat16 乘法算一遍 O，并列出变化
  --format text|json     json：以完整精度输出所有矩阵，供程序读取（文档页面由此生成）
  -h, --help             显示本帮助
)");
        return 0;
    }
    if (o.json) {
        const auto tokens = example_tokens(o.lang);
        const WalkText text(o.lang, o.attention.scale);
        std::cout << walk_json(worked_example::layer(), worked_example::trace(o.attention), o.attention, tokens, &text,
                               o.grad ? backward_walk_json(o.attention) : "");
        return 0;
    }
    std::cout << Walk(o, use_color(o.color)).render();
    if (o.grad) std::cout << backward_walk_text(o.lang, o.attention, o.precision, example_tokens(o.lang));
    if (o.dtype == Dtype::bf16) std::cout << bf16_walk_text(o.lang, o.attention, o.precision, example_tokens(o.lang));
    return 0;
}

}  // namespace attn::cli
