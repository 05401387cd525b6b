// cli/text.hpp — the language choice, and what `attn walk` and `attn exercise` say alike. (`attn run`,
// the top-level help and error messages are English only: they are the tool's interface.)
#pragma once

#include <string>
#include <vector>

#include "attention/attention.hpp"

namespace attn::cli {

enum class Lang { en, zh };

// What the scores are divided by, as both `walk` and `exercise` label it: "÷ √d_k", "÷ d_k", "÷ 1".
std::string scale_symbol(Scale scale);

// --lang wins; otherwise LC_ALL, LC_MESSAGES, LANG (first one set) starting with "zh" means Chinese.
Lang lang_from_environment();

// The program's one way to speak two languages: each sentence is written in both, and tr picks one.
// It is written where it is printed (cli/exercise.cpp, the terminal's own words in cli/walk.cpp), or,
// when the lesson pages show it too, in cli/walk_text.cpp, which the walk and its JSON share.
inline const char* tr(Lang lang, const char* en, const char* zh) { return lang == Lang::zh ? zh : en; }

// Exercise 2's two questions and what S_ii is, said alike by `attn walk` and `attn exercise 2`.
const char* diagonal_question(Lang lang);

// The worked example's tokens as row labels: 猫 坐 地毯, with the English words beside them in English.
std::vector<std::string> example_tokens(Lang lang);

}  // namespace attn::cli
