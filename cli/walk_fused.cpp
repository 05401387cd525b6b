// cli/walk_fused.cpp — prints lesson/fused_walk.hpp's walk: every number comes from it; this file only
// lays them out, one line per step.
#include "cli/walk_fused.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "lesson/sentences.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

using lesson::Sentence;

class FusedText {
public:
    FusedText(Lang l, const lesson::ForwardWalk& walk, int precision, const std::vector<std::string>& tokens)
        : l_(l), w_(walk.fused), precision_(precision), tokens_(tokens) {}

    std::string render() {
        const std::size_t i = w_.row;
        out_ << "  " << say(Sentence::fused_why_m) << "\n\n  "
             << say(Sentence::fused_row, {std::to_string(i + 1), tokens_[i], std::to_string(w_.moves)}) << "\n";
        for (const lesson::KeyStep& step : w_.one_at_a_time) line(step);
        PrintOptions p;
        p.precision = precision_;
        p.row_labels = tokens_;
        out_ << "\n  " << say(Sentence::fused_end, {difference(w_.largest_difference)}) << "\n"
             << format_matrix(w_.output, p) << "\n  " << say(Sentence::fused_tiles) << "\n";
        for (const lesson::KeyStep& step : w_.in_tiles) line(step);
        halves();
        return out_.str();
    }

private:
    const Lang l_;
    const lesson::FusedWalk& w_;
    const int precision_;
    const std::vector<std::string>& tokens_;
    std::ostringstream out_;

    std::string say(Sentence id, std::initializer_list<std::string> values = {}) const {
        return lesson::say(l_, id, values);
    }
    std::string num(float v) const { return format_number(v, precision_); }
    // A difference of float32 rounding, in two significant digits: "6e-08"; 0 as "0".
    static std::string difference(double d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2g", d);
        return buf;
    }
    std::string vector(const std::vector<float>& v) const {
        std::string s = "[";
        for (const float x : v) s.append(" ").append(num(x));  // appended: GCC 12 warns falsely on " " + string
        return s + " ]";
    }
    std::string keys(const std::vector<std::size_t>& list) const {
        std::string s;
        for (std::size_t k = 0; k < list.size(); ++k) s.append(k ? tr(l_, ", ", "、") : "").append(tokens_[list[k]]);
        return s;
    }
    const char* separator() const { return tr(l_, ";  ", "；"); }

    // "+ 坐:  s = 0.7293;  m = 0.7293;  e^(m_old − m) = 0.2127;  ℓ = 1.2127;  o = [ … ];  o/ℓ = [ … ]"
    void line(const lesson::KeyStep& step) {
        std::string scores;
        for (std::size_t k = 0; k < step.scores.size(); ++k) scores.append(k ? ", " : "").append(num(step.scores[k]));
        out_ << "  + " << keys(step.keys) << tr(l_, ":  ", "：") << "s = " << scores << separator()
             << "m = " << num(step.after.m) << separator() << "e^(m_old − m) = " << num(step.rescale) << separator()
             << "ℓ = " << num(step.after.l) << separator() << "o = " << vector(step.after.o) << separator()
             << "o/ℓ = " << vector(step.output) << "\n";
    }

    void halves() {
        const lesson::Merge& h = w_.halves;
        out_ << "\n  " << say(Sentence::fused_halves) << "\n";
        const std::pair<const std::vector<std::size_t>*, const lesson::OnlineState*> parts[] = {
            {&h.first_keys, &h.first}, {&h.second_keys, &h.second}};
        for (std::size_t k = 0; k < 2; ++k) {
            const auto& [list, state] = parts[k];
            const std::string index = k ? "₂" : "₁";
            out_ << "  " << say(k ? Sentence::fused_second_half : Sentence::fused_first_half) << tr(l_, " (", "（")
                 << keys(*list) << tr(l_, "): ", "）：") << "m" << index << " = " << num(state->m) << separator() << "ℓ"
                 << index << " = " << num(state->l) << separator() << "o" << index << " = " << vector(state->o) << "\n";
        }
        out_ << "  " << say(Sentence::fused_merge) << tr(l_, ": ", "：") << "m = " << num(h.merged.m) << separator()
             << "e^(m₁ − m) = " << num(h.first_factor) << tr(l_, ", ", "，") << "e^(m₂ − m) = " << num(h.second_factor)
             << separator() << "ℓ = " << num(h.merged.l) << separator() << "o = " << vector(h.merged.o) << separator()
             << "o/ℓ = " << vector(h.output) << "\n  "
             << say(Sentence::fused_merged, {difference(h.largest_difference), std::to_string(w_.row + 1)}) << "\n";
    }
};

}  // namespace

std::string fused_walk_text(Lang lang, const lesson::ForwardWalk& walk, int precision,
                            const std::vector<std::string>& tokens) {
    return FusedText(lang, walk, precision, tokens).render();
}

}  // namespace attn::cli
