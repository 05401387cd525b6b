// cli/text.cpp — which language to use, and what `attn walk` and `attn exercise` say alike.
#include "cli/text.hpp"

#include <cstdlib>
#include <string_view>

#include "lesson/sentences.hpp"

namespace attn::cli {

std::string scale_symbol(Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk: return "÷ √d_k";
        case Scale::dk: return "÷ d_k";
        case Scale::none: return "÷ 1";
    }
    return "";
}

Lang lang_from_environment() {
    for (const char* name : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
        const char* value = std::getenv(name);
        if (value && *value) return std::string_view(value).starts_with("zh") ? Lang::zh : Lang::en;
    }
    return Lang::en;
}

const char* diagonal_question(Lang lang) { return lesson::marked(lang, lesson::Label::diagonal_question); }

}  // namespace attn::cli
