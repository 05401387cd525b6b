// cli/text.hpp — the sentences of `attn walk`, in English and Chinese, and the language choice.
// (`attn exercise` and `attn variance` keep their two-language sentences beside the code that
// prints them; `attn run`, the top-level help and error messages are English only.)
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

struct Text {
    const char* colon;      // ": " or "：", after a label
    const char* comma;      // ", " or "，", between settings
    const char* semicolon;  // ";  " or "；", between two results
    const char* open;       // " (" or "（", before a parenthesis
    const char* close;      // ")" or "）"
    const char* title;
    const char* formula;
    const char* formula_lesson;
    const char* mask_term;
    const char* conventions;
    const char* sentence;
    const char* settings;
    const char* no_mask;
    const char* causal_mask;
    const char* backend;
    const char* shapes_title;
    const char* shapes_note;
    const char* step1;
    const char* step1_note;
    const char* step2;
    const char* step2_note;
    const char* weights;
    const char* weights_note;
    const char* column1_of_W_Q;
    const char* step3;
    const char* step3_note;
    const char* expanded;
    const char* transpose;  // step 3's remark: why Kᵀ and not K
    const char* transpose_note;
    const char* transpose_compare;
    const char* confusion1;  // the lesson's four confusions, in its order and asking its questions
    const char* confusion1_note;
    const char* cosines;
    const char* other_keys;
    const char* row_largest;
    const char* with_example_keys;
    const char* step4;
    const char* step4_note_sqrt;
    const char* step4_note_dk;
    const char* step4_note_none;
    const char* step4_mask;
    const char* step4_mask_note;
    const char* step5;
    const char* step5_note;
    const char* row_max;
    const char* exponentials;
    const char* row_sum;
    const char* row_sums;
    const char* heat_map;
    const char* confusion2;
    const char* confusion2_note;
    const char* column_sums;
    const char* row_sums_now;
    const char* step6;
    const char* step6_note;
    const char* confusion3;
    const char* confusion3_note;
    const char* diagonal;
    const char* diagonal_yes;
    const char* diagonal_no;
    const char* exercise5;
    const char* exercise5_note;
    const char* exercise5_causal;
    const char* norm;
    const char* summary;
    const char* confusion4;
    const char* confusion4_note;
    const char* confusion4_cost;
    const char* walk_help;
};

const Text& text(Lang lang);

// The worked example's tokens as row labels: 猫 坐 地毯, with the English words beside them in English.
std::vector<std::string> example_tokens(Lang lang);

}  // namespace attn::cli
