// cli/walk.cpp — `attn walk`: prints the lesson's worked example (lesson/walk.hpp) step by step, each
// intermediate with the formula that made it and the lesson's sentences (lesson/sentences.hpp), or,
// with --format json, what lesson/json.hpp writes. Every number it prints comes from lesson/; this
// file only lays them out. The tests check the printed matrices against the library.
#include "cli/walk.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "attention/attention.hpp"
#include "cli/args.hpp"
#include "cli/text.hpp"
#include "cli/walk_bf16.hpp"
#include "cli/walk_fused.hpp"
#include "cli/walk_grad.hpp"
#include "lesson/json.hpp"
#include "lesson/sections.hpp"
#include "lesson/sentences.hpp"
#include "lesson/walk.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

using lesson::Label;
using lesson::Sentence;

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
                    "to show; the walk's last part walks steps 3–6 as it does them, key by key. Use --backend "
                    "naive, simd or parallel");
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

// Column j of m, to show it as the factors of a dot product.
std::vector<float> column(const Matrix& m, std::size_t j) {
    std::vector<float> c;
    for (std::size_t p = 0; p < m.rows(); ++p) c.push_back(m(p, j));
    return c;
}

// Prints a lesson::ForwardWalk section by section, in the order of lesson::sections: every number
// comes from the walk, every sentence from lesson/; this class only lays them out.
class Walk {
public:
    Walk(const WalkOptions& o, const lesson::ForwardWalk& walk, bool color)
        : o_(o), l_(o.lang), w_(walk), t_(walk.trace), color_(color), tokens_(example_tokens(o.lang)) {}

    std::string render() {
        header();
        shapes();
        using Body = void (Walk::*)(const lesson::Section&);
        static const std::map<std::string_view, Body> bodies = {
            {"step.1", &Walk::step1},           {"step.2", &Walk::step2},
            {"step.3", &Walk::step3},           {"transpose", &Walk::transpose_remark},
            {"confusion.1", &Walk::confusion1}, {"step.4", &Walk::step4},
            {"step.4.mask", &Walk::mask},       {"step.5", &Walk::step5},
            {"confusion.2", &Walk::confusion2}, {"step.6", &Walk::step6},
            {"confusion.3", &Walk::confusion3}, {"exercise.2", &Walk::diagonal},
            {"exercise.5", &Walk::exercise5},   {"shapes", &Walk::summary},
            {"confusion.4", &Walk::confusion4}, {"fused", &Walk::fused}};
        for (const lesson::Section& s : lesson::sections(o_.attention)) (this->*bodies.at(s.key))(s);
        return out_.str();
    }

private:
    const WalkOptions& o_;
    const Lang l_;
    const lesson::ForwardWalk& w_;
    const AttentionTrace& t_;
    // The punctuation between a label and its value, between settings, and between two results.
    const char* const colon_ = tr(l_, ": ", "：");
    const char* const comma_ = tr(l_, ", ", "，");
    const char* const semicolon_ = tr(l_, ";  ", "；");
    bool color_;
    std::vector<std::string> tokens_;
    std::ostringstream out_;

    std::string say(Sentence id, std::initializer_list<std::string> values = {}) const {
        return lesson::say(l_, id, values);
    }
    std::string say(Label id, std::initializer_list<std::string> values = {}) const {
        return lesson::say(l_, id, values);
    }
    std::size_t n() const { return t_.X.rows(); }
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
    // A section's heading: its title, a step's formula and the shape of the one matrix it shows; then
    // its note (its {} filled from `values`) and the lines of code it mirrors.
    void heading(const lesson::Section& s, std::initializer_list<std::string> values = {}) {
        out_ << "\n" << say(s.title);
        if (!s.aside && !s.formula.empty()) out_ << " " << s.formula;
        if (!s.aside && s.matrices.size() == 1) out_ << shape_in_title(matrix(s.matrices.front()));
        out_ << "\n";
        if (s.note) out_ << "  " << say(*s.note, values) << "\n";
        if (!s.markers.empty()) out_ << "  " << say(Label::code) << colon_ << markers(s.markers, semicolon_) << "\n";
        out_ << "\n";
    }
    // "attention/attention.cpp [step 2.Q] [step 2.K];  simd/decode.cpp [decode merge]", the files apart
    // as the language sets two results apart ("；" in Chinese)
    static std::string markers(const std::vector<lesson::Marker>& list, const char* between) {
        std::string text;
        for (std::size_t k = 0; k < list.size(); ++k) {
            if (k == 0 || std::string_view(list[k].file) != list[k - 1].file)
                text.append(k ? between : "").append(list[k].file);
            text += std::string(" [") + list[k].name + "]";
        }
        return text;
    }
    // A walk's matrix by its name in the JSON (lesson/json.cpp), for a section's heading.
    const Matrix& matrix(std::string_view name) const {
        const std::pair<std::string_view, const Matrix*> named[] = {{"X", &t_.X},
                                                                    {"S", &t_.S},
                                                                    {"S_scaled", &t_.S_scaled},
                                                                    {"softmax_input", &w_.softmax_input},
                                                                    {"weights", &t_.weights},
                                                                    {"output", &t_.output}};
        for (const auto& [key, m] : named)
            if (key == name) return *m;
        return t_.X;
    }
    // A matrix's shape after a title: " (3×4)", in Chinese "（3×4）".
    std::string shape_in_title(const Matrix& m) const {
        return std::string(tr(l_, " (", "（")).append(shape_string(m)).append(tr(l_, ")", "）"));
    }
    std::string expanded(Sentence which = Sentence::expanded) const { return say(which) + colon_; }
    // "a₁×b₁ + a₂×b₂ + … = value": an entry of the trace, shown as the dot product that made it.
    std::string products(std::span<const float> a, std::span<const float> b, float value) const {
        std::string s;
        for (std::size_t k = 0; k < a.size(); ++k)
            s += (k ? " + " : "") + term(a[k], o_.precision) + "×" + term(b[k], o_.precision);
        return s + " = " + num(value);
    }

    void header() {
        const char* comma = comma_;
        std::string formula = lesson::chain_formula(o_.attention);
        if (o_.attention.causal) formula += "   " + say(Label::mask_formula);
        if (o_.attention.scale != Scale::sqrt_dk) formula += "   " + say(Label::lesson_divides);
        out_ << say(Label::walk_title) << "\n\n  " << say(Label::whole_chain) << colon_ << formula << "\n  "
             << say(Label::sentence) << colon_ << "[";
        for (std::size_t i = 0; i < n(); ++i) out_ << (i ? comma : "") << tokens_[i];
        out_ << "]\n  " << say(Label::settings) << colon_ << "n = " << n() << comma << "d_model = " << t_.X.cols()
             << comma << "d_k = " << t_.Q.cols() << comma << "d_v = " << t_.V.cols() << comma << "S "
             << scale_symbol(o_.attention.scale) << comma
             << say(o_.attention.causal ? Label::causal_mask : Label::no_mask) << comma << say(Label::backend) << " "
             << to_string(o_.attention.backend) << "\n  " << say(Sentence::indices) << "\n";
    }

    void shapes() {
        const std::size_t dm = t_.X.cols(), dk = t_.Q.cols(), dv = t_.V.cols();
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
        out_ << "\n" << say(Label::shapes) << "\n";
        for (const auto& r : rows) out_ << "  " << pad_right(r[0], 17) << pad_right(r[1], 13) << r[2] << "\n";
        out_ << "  " << say(Label::shapes_note) << "\n";
    }

    void step1(const lesson::Section& s) {
        heading(s);
        out_ << labelled(t_.X);
    }

    void step2(const lesson::Section& s) {
        heading(s);
        out_ << "  " << say(Label::weights) << colon_ << say(Sentence::weights) << "\n";
        for (const auto& [name, w] : {std::pair{"W_Q", &w_.W_Q}, {"W_K", &w_.W_K}, {"W_V", &w_.W_V}})
            out_ << "  " << name << " (" << shape_string(*w) << ")\n" << plain(*w);
        for (const auto& [name, m] : {std::pair{"Q", &t_.Q}, {"K", &t_.K}, {"V", &t_.V}})
            out_ << "\n  " << name << " (" << shape_string(*m) << ")\n" << labelled(*m);
        out_ << "\n  " << expanded() << "Q" << sub(1) << sub(1) << " = x" << sub(1) << "·" << tr(l_, "(", "（")
             << say(Sentence::column1) << tr(l_, ")", "）") << " = "
             << products(t_.X.row(0), column(w_.W_Q, 0), t_.Q(0, 0)) << "\n";
    }

    void step3(const lesson::Section& s) {
        heading(s);
        out_ << labelled(t_.S, true);
        const std::size_t j = w_.column + 1;
        out_ << "\n  " << expanded() << "S" << sub(1) << sub(j) << " = q" << sub(1) << "·k" << sub(j) << " = "
             << products(t_.Q.row(0), t_.K.row(w_.column), t_.S(0, w_.column)) << "\n";
    }

    // Step 3's remark, Q·K beside S: the entry S₁ⱼ holds is something else in Q·K. (The lesson's
    // example has n = d_k, so Q·K is defined; where it is not, the pages say "transpose_refused".)
    void transpose_remark(const lesson::Section& s) {
        out_ << "\n  " << say(s.title) << tr(l_, " ", "") << say(*s.note) << tr(l_, " ", "")
             << say(Sentence::transpose_square) << "\n";
        if (!w_.Q_times_K) return;
        const std::size_t j = w_.column + 1;
        out_ << "  Q·K (" << shape_string(*w_.Q_times_K) << ", n = d_k = " << n() << ")\n" << plain(*w_.Q_times_K);
        out_ << "  (Q·K)" << sub(1) << sub(j) << " = "
             << products(t_.Q.row(0), column(t_.K, w_.column), (*w_.Q_times_K)(0, w_.column)) << semicolon_
             << say(Sentence::same_in_S) << colon_ << "S" << sub(1) << sub(j) << " = " << num(t_.S(0, w_.column))
             << "\n";
    }

    // The cosines beside S, then S from other weights: which token each row favours is made by W_Q and W_K.
    void confusion1(const lesson::Section& s) {
        heading(s);
        out_ << "  " << say(Sentence::cosines) << "\n" << labelled(w_.cosines, true);
        const std::size_t j = w_.column;
        out_ << "  S" << sub(1) << sub(j + 1) << " = ‖q" << sub(1) << "‖·‖k" << sub(j + 1) << "‖·cos θ" << sub(1)
             << sub(j + 1) << " = " << num(w_.q_norm) << " × " << num(w_.k_norm) << " × " << num(w_.cosines(0, j))
             << " = " << num(t_.S(0, w_.column)) << "\n";
        out_ << "\n  " << say(Sentence::other_keys) << "\n"
             << labelled(w_.S_with_W_K_as_W_Q, true) << "  " << say(Sentence::row_largest) << colon_
             << largest_per_row(w_.largest_with_W_K_as_W_Q) << semicolon_ << say(Sentence::with_example_keys) << colon_
             << largest_per_row(w_.largest_in_S) << "\n";
    }

    // "猫 → 地毯, 坐 → 地毯, …": the token whose key each row's query scores highest.
    std::string largest_per_row(const std::vector<std::size_t>& best) const {
        std::string s;
        for (std::size_t i = 0; i < best.size(); ++i) s += (i ? comma_ : "") + tokens_[i] + " → " + tokens_[best[i]];
        return s;
    }

    // The divisor worked out for this d_k: "S' = S/√3 = S/1.7321", "S' = S/3"; unscaled, nothing.
    void step4(const lesson::Section& s) {
        heading(s);
        const std::size_t d_k = t_.Q.cols();
        const std::string k = std::to_string(d_k);
        if (o_.attention.scale == Scale::sqrt_dk)
            out_ << "  S' = S/√" << k << " = S/" << num(std::sqrt(float(d_k))) << "\n\n";
        else if (o_.attention.scale == Scale::dk) out_ << "  S' = S/" << k << "\n\n";
        out_ << labelled(t_.S_scaled, true);
    }

    void mask(const lesson::Section& s) {
        heading(s);
        out_ << labelled(t_.S_masked, true);
    }

    void step5(const lesson::Section& s) {
        heading(s);
        out_ << labelled(t_.weights, true);
        const std::size_t r = w_.softmax_row.row;
        const auto& w = w_.softmax_row.written_out;
        out_ << "\n  " << expanded(Sentence::expanded_row) << "α" << sub(r + 1) << " = softmax(S'" << sub(r + 1)
             << ")\n"
             << "    " << say(Sentence::row_max) << colon_ << "m = " << num(w.max) << "\n"
             << "    e^(S' − m) =" << plain(as_row(w.exponentials), " ") << "    " << say(Sentence::sum) << " = "
             << num(w.sum) << semicolon_ << "α" << sub(r + 1) << " = e^(S' − m) / " << num(w.sum) << " ="
             << plain(as_row(t_.weights.row(r)), " ");
        out_ << "\n  " << say(Sentence::row_sums) << colon_ << sums(w_.weights_row_sums) << "\n";
        if (color_) heat_map();
    }

    // The softmax taken down the columns of the same S': its column and row sums.
    void confusion2(const lesson::Section& s) {
        heading(s);
        out_ << "  " << say(Sentence::by_column) << "\n"
             << labelled(w_.softmax_by_column, true) << "  " << say(Sentence::column_sums) << colon_
             << sums(w_.by_column_column_sums) << "\n  " << say(Sentence::row_sums_short) << colon_
             << sums(w_.by_column_row_sums) << "\n";
    }

    // o_i written as the mix of values it is, for the row step 5 wrote out: row 1, which step 6 has
    // already written out (then it points there), or under the causal mask the last row.
    void confusion3(const lesson::Section& s) {
        heading(s);
        const std::size_t r = w_.softmax_row.row;
        if (r == 0) out_ << "  " << say(Sentence::written_in_step_6, {std::string("o").append(sub(1))}) << "\n";
        else out_ << "  " << mix(r) << "\n";
    }

    // "o₁ = 0.4839·v₁ + 0.2844·v₂ + 0.2317·v₃": row r of O as the mix of values it is.
    std::string mix(std::size_t r) const {
        std::ostringstream s;  // streamed: GCC 12 warns falsely on "literal" + std::string chains
        s << "o" << sub(r + 1) << " =";
        for (std::size_t j = 0; j < n(); ++j) s << (j ? " + " : " ") << num(t_.weights(r, j)) << "·v" << sub(j + 1);
        return s.str();
    }

    // "  猫 1.0000  坐 1.0000  地毯 1.0000": the sums of an n×n matrix's rows (or columns), by token.
    std::string sums(const std::vector<float>& sums) const {
        std::string out;
        for (std::size_t k = 0; k < sums.size(); ++k) out += "  " + tokens_[k] + " " + num(sums[k]);
        return out;
    }

    void heat_map() {
        out_ << "\n  " << say(Sentence::heat) << "\n";
        std::size_t w = 0;
        for (const auto& tok : tokens_) w = std::max(w, display_width(tok));
        out_ << "  " << std::string(w, ' ');
        for (const auto& tok : tokens_) out_ << " " << pad_left(tok, 8);
        out_ << "\n";
        for (std::size_t i = 0; i < n(); ++i) {
            out_ << "  " << pad_right(tokens_[i], w);
            for (float a : t_.weights.row(i)) {
                const int shade = 255 - static_cast<int>(std::lround(a * 23.0f));  // 255 light … 232 dark
                const int fg = shade > 243 ? 16 : 231;                             // black on light, white on dark
                out_ << " \x1b[48;5;" << shade << "m\x1b[38;5;" << fg << "m" << pad_left(format_number(a, 2), 7)
                     << " \x1b[0m";
            }
            out_ << "\n";
        }
    }

    void step6(const lesson::Section& s) {
        heading(s);
        out_ << labelled(t_.output);
        out_ << "\n  " << expanded(Sentence::expanded_row) << mix(0) << "\n";
    }

    void diagonal(const lesson::Section& s) {
        out_ << "\n" << say(s.title) << "\n  " << say(*s.note) << "\n";
        std::size_t token_width = 0;  // the widest token's columns, so that the rows line up
        for (const auto& tok : tokens_) token_width = std::max(token_width, display_width(tok));
        for (std::size_t i = 0; i < n(); ++i) {
            const std::size_t best = w_.largest_in_S[i];
            out_ << "  " << pad_right(tokens_[i], token_width) << " S" << sub(i + 1) << sub(i + 1) << " = "
                 << num(t_.S(i, i)) << "  ";
            if (best == i) out_ << say(Sentence::diagonal_yes) << "\n";
            else
                out_ << say(Sentence::diagonal_no, {tokens_[best]}) << tr(l_, " (", "（") << "S" << sub(i + 1)
                     << sub(best + 1) << " = " << num(t_.S(i, best)) << tr(l_, ")", "）") << "\n";
        }
    }

    // Exercise 5 for row 1; under the causal mask row 1 sees only itself (o₁ = v₁), so the last row,
    // which sees every token, is shown too.
    void exercise5(const lesson::Section& s) {
        heading(s);
        for (std::size_t k = 0; k < w_.exercise5.size(); ++k) {
            if (k) out_ << "\n  " << say(Sentence::exercise5_causal) << "\n";
            output_against_value(w_.exercise5[k]);
        }
    }

    void output_against_value(const lesson::OutputAgainstValue& e) {
        Matrix rows(3, e.table.rows.cols());  // o_i, v_i, o_i − v_i (exercise 5 adds the decomposition)
        std::copy(e.table.rows.data(), e.table.rows.data() + rows.size(), rows.data());
        PrintOptions p;
        p.precision = o_.precision;
        const std::string o = std::string("o") + sub(e.row + 1), v = std::string("v") + sub(e.row + 1);
        p.row_labels = {o, v, o + " − " + v};
        out_ << format_matrix(rows, p) << "  ‖" << o << " − " << v
             << "‖ = " << num(static_cast<float>(e.table.distance)) << say(Sentence::length) << "\n";
    }

    void summary(const lesson::Section& s) {
        out_ << "\n"
             << say(s.title) << "\n  X (" << shape_string(t_.X) << ") → Q (" << shape_string(t_.Q) << "), K ("
             << shape_string(t_.K) << "), V (" << shape_string(t_.V) << ") → S (" << shape_string(t_.S) << ") → S' ("
             << shape_string(t_.S_scaled) << ") → α (" << shape_string(t_.weights) << ") → O ("
             << shape_string(t_.output) << ")\n";
    }

    void confusion4(const lesson::Section& s) {
        const lesson::Heads& h = w_.heads;
        heading(s, {std::to_string(t_.Q.cols()), std::to_string(t_.X.cols()), std::to_string(h.d_model),
                    std::to_string(h.h)});
        out_ << "  " << s.formula << " = " << h.d_model << " / " << h.h << " = " << h.d_k << "\n  "
             << say(Sentence::heads_cost) << "\n";
    }

    void fused(const lesson::Section& s) {
        heading(s);
        out_ << fused_walk_text(l_, w_, o_.precision, tokens_);
    }
};

}  // namespace

int walk_command(std::span<const std::string> args) {
    const WalkOptions o = parse(args);
    if (o.help) {
        std::cout << tr(o.lang, R"(Usage: attn walk [options]

Computes the lesson's worked example (猫 坐 地毯, d_model = 4, d_k = d_v = 3) and prints every
intermediate: shapes, X, the weights, Q, K, V, the scores S, the scaled scores S', the softmax
weights α, the output, exercises 2 and 5, and steps 3–6 once more as the fused kernel does them.

Options:
  --lang en|zh           language (default: from LANG)
  --causal               apply the causal mask (exercise 4)
  --scale sqrt|dk|none   divide the scores by √d_k (default), by d_k, or not at all (exercise 1)
  --backend naive|simd|parallel
                         which kernels compute each step (default naive: the textbook loops;
                         fused stores no α: the walk's last part walks steps 3–6 as it does them)
  --precision N          digits after the decimal point, 0 to 8 (default 4)
  --color auto|always|never
                         heat map colours (default auto: only on a terminal, never with NO_COLOR)
  --grad                 then run it backwards: every gradient for the loss L = ½‖O − T‖², T = I
  --dtype f32|bf16       bf16: then O once more with the products in bfloat16, and what changed
  --format text|json     json: every matrix at full precision, for programs (the docs pages use it)
  -h, --help             this text
)",
                        R"(用法：attn walk [选项]

计算课程中的示例（猫 坐 地毯，d_model = 4，d_k = d_v = 3），打印每个中间结果：形状、X、权重矩阵、
Q、K、V、注意力分数 S、缩放后的分数 S'、注意力权重 α、输出 O、练习 2 和练习 5，最后再按融合内核的方式
逐步演示第 3–6 步。

选项：
  --lang en|zh           语言（默认取自 LANG）
  --causal               使用因果掩码（练习 4）
  --scale sqrt|dk|none   分数除以 √d_k（默认）、除以 d_k，或不缩放（练习 1）
  --backend naive|simd|parallel
                         计算每一步所用的内核（默认 naive：教科书式循环；
                         fused 不保存 α：walk 的最后一部分按它的方式逐步演示第 3–6 步）
  --precision N          小数位数，0 到 8（默认 4）
  --color auto|always|never
                         热力图颜色（默认 auto：仅在终端中显示，设置 NO_COLOR 时不显示）
  --grad                 再反向计算：损失 L = ½‖O − T‖²（T = I）的每个梯度
  --dtype f32|bf16       bf16：再用 bfloat16 乘法算一遍 O，并列出变化
  --format text|json     json：以完整精度输出所有矩阵，供程序读取（文档页面由此生成）
  -h, --help             显示本帮助
)");
        return 0;
    }
    const lesson::ForwardWalk walk = lesson::worked_example_walk(o.attention);
    const std::vector<std::string> tokens = example_tokens(o.lang);
    if (o.json) {
        const std::optional<lesson::BackwardWalk> backward =
            o.grad ? std::optional(lesson::backward_walk(o.attention)) : std::nullopt;
        std::cout << lesson::walk_json(walk, tokens, o.lang, backward ? &*backward : nullptr);
        return 0;
    }
    std::cout << Walk(o, walk, use_color(o.color)).render();
    if (o.grad) std::cout << backward_walk_text(o.lang, lesson::backward_walk(o.attention), o.precision, tokens);
    if (o.dtype == Dtype::bf16)
        std::cout << bf16_walk_text(o.lang, lesson::bf16_walk(o.attention), o.precision, tokens);
    return 0;
}

}  // namespace attn::cli
