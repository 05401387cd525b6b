// cli/text.hpp — the language choice, and what `attn walk` and `attn exercise` say alike. (`attn run`,
// the top-level help and error messages are English only: they are the tool's interface.)
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "lesson/language.hpp"

namespace attn::cli {

// The lesson's two languages, its way to pick one (each text is written in both: every sentence of
// the walk, the exercises and the learning task in lesson/sentences*.cpp; the help texts, which
// describe the command line, here in cli/), and the example's tokens.
using lesson::example_tokens;
using lesson::Lang;
using lesson::tr;

// What the scores are divided by, as both `walk` and `exercise` label it: "÷ √d_k", "÷ d_k", "÷ 1".
std::string scale_symbol(Scale scale);

// --lang wins; otherwise LC_ALL, LC_MESSAGES, LANG (first one set) starting with "zh" means Chinese.
Lang lang_from_environment();

}  // namespace attn::cli
