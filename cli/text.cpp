// cli/text.cpp — which language to use, and what `attn walk` and `attn exercise` say alike.
#include "cli/text.hpp"

#include <cstdlib>
#include <string_view>

#include "lesson/sections.hpp"

namespace attn::cli {

std::string scale_symbol(Scale scale) { return std::string("÷ ") + lesson::scale_divisor(scale); }

Lang lang_from_environment() {
    for (const char* name : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
        const char* value = std::getenv(name);
        if (value && *value) return std::string_view(value).starts_with("zh") ? Lang::zh : Lang::en;
    }
    return Lang::en;
}

}  // namespace attn::cli
