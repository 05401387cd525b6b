// lesson/language.hpp — the lesson's two languages, and the worked example's tokens in each.
#pragma once

#include <string>
#include <vector>

#include "lesson/worked_example.hpp"

namespace attn::lesson {

enum class Lang { en, zh };

// Each text is written in both languages; tr picks one.
inline const char* tr(Lang lang, const char* en, const char* zh) { return lang == Lang::zh ? zh : en; }

// The worked example's tokens as row labels: 猫 坐 地毯, with the English words beside them in English.
inline std::vector<std::string> example_tokens(Lang lang) {
    return lang == Lang::zh ? worked_example::tokens_zh() : worked_example::tokens_en();
}

}  // namespace attn::lesson
