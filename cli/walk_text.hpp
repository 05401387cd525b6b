// cli/walk_text.hpp — what `attn walk` says about each step, written once for the terminal and the pages.
//
// Each sentence is kept in both languages (tr) with its formulas between $…$ marks: the terminal prints
// it without them ("S_ij = q_i·k_j: how well …"), and `attn walk --format json` carries it with them,
// so the lesson pages set every marked piece as a formula (docs/site/docs_example.py) and never keep
// sentences of their own. A {} stands for a number the reader of the sentence fills in.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/text.hpp"

namespace attn::cli {

class WalkText {
public:
    // The sentences for `lang`; step 4's note says what `scale` does to the variance.
    WalkText(Lang lang, Scale scale);

    // The sentence `key` as the terminal prints it: the $ marks dropped, each {} replaced by the next
    // of `values`. An unknown key is a bug of the caller: std::logic_error.
    std::string operator()(std::string_view key, std::initializer_list<std::string> values = {}) const;

    // Every sentence with its marks, in the order the walk says them (for --format json).
    const std::vector<std::pair<std::string, std::string>>& marked() const { return sentences_; }

private:
    std::vector<std::pair<std::string, std::string>> sentences_;  // (key, sentence with $…$ and {})
};

}  // namespace attn::cli
