// cli/text.cpp — which language to use, and what `attn walk` and `attn exercise` say alike.
#include "cli/text.hpp"

#include <cstdlib>
#include <string_view>

#include "attention/worked_example.hpp"

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

const char* diagonal_question(Lang lang) {
    return tr(lang,
              "Exercise 2 · What is the diagonal S_ii, and is it the largest score in its row?\n"
              "  S_ii = q_i·k_i: token i's query scored against its own key, the raw score it gives itself before the "
              "softmax",
              "练习 2 · 对角线上的 S_ii 是什么含义？它总是该行最大的分数吗？\n"
              "  S_ii = q_i·k_i：第 i 个词的 Query 与它自己的 Key 的点积，也就是 softmax 之前它给自己的原始分数");
}

std::vector<std::string> example_tokens(Lang lang) {
    return lang == Lang::zh ? worked_example::tokens_zh() : worked_example::tokens_en();
}

}  // namespace attn::cli
