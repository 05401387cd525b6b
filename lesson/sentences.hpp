// lesson/sentences.hpp — every sentence the walk says, in English and Chinese, each named by an
// identifier the compiler checks (lesson/sentences.cpp holds them; a sentence missing there, or out
// of order, stops the build).
//
// A sentence keeps its formulas between $…$ marks: the terminal prints it without them, and the
// JSON carries it with them, so the lesson pages set every marked piece as a formula. A {} stands
// for a number the reader of the sentence fills in.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "attention/options.hpp"
#include "lesson/language.hpp"

namespace attn::lesson {

// The forward walk's sentences, which the pages show too: the JSON's "text", under key(id).
enum class Sentence {
    indices,
    expanded,      // an entry written out (Q₁₁, S₁₂)
    expanded_row,  // a row written out (α₁, o₁)
    title_1,
    note_1,
    title_2,
    note_2,
    weights,
    column1,
    title_3,
    note_3,
    transpose,
    transpose_note,
    transpose_square,
    transpose_refused,
    same_in_S,
    confusion1,
    confusion1_note,
    cosines,
    other_keys,
    row_largest,
    with_example_keys,
    title_4,
    note_4_sqrt_dk,
    note_4_dk,
    note_4_none,  // one of the three notes, by the scale (scaling_note)
    title_mask,
    note_mask,
    title_5,
    note_5,
    row_max,
    sum,
    row_sums,
    heat,
    confusion2,
    confusion2_note,
    by_column,
    column_sums,
    row_sums_short,
    title_6,
    note_6,
    confusion3,
    confusion3_note,
    exercise2,
    exercise2_note,
    diagonal_yes,
    diagonal_no,
    exercise5,
    exercise5_note,
    exercise5_causal,
    length,
    written_in_step_6,
    shapes_flowed,
    confusion4,
    confusion4_note,
    heads_cost,
    title_fused,
    note_fused,
    fused_why_m,
    fused_row,
    fused_keys,
    fused_end,
    fused_tiles,
    fused_halves,
    fused_first_half,
    fused_second_half,
    fused_merge,
    fused_merged,
    count
};

// What only the terminal says around them: its header and labels.
enum class Label {
    walk_title,
    whole_chain,
    mask_formula,
    lesson_divides,
    sentence,
    settings,
    causal_mask,
    no_mask,
    backend,
    shapes,
    shapes_note,
    weights,
    code,
    count
};

// The backward walk's sentences: the JSON's "backward" → "text", under key(id).
enum class Backward { title, intro, dV, d_weights, dS_prime, dS, dQ, dK, dW_Q, dW_K, dW_V, dX, mask, descent, count };

// The bfloat16 walk's sentences (text only).
enum class Bf16 { title, note, rounded, changed, count };

// What `attn exercise N` and `attn variance` say around their tables (lesson/sentences_exercises.cpp;
// exercise 2's question and exercise 5 are the walk's own).
enum class Exercise {
    e1_title,
    e1_setup,
    e1_scale,
    e1_entropy,
    e1_max_weight,
    e1_none_one_hot,
    e1_none_sharpens,
    e1_jacobian_peak,
    e1_jacobian_falls,
    e1_saturated,
    e1_not_saturated,
    e1_dk_uniform,
    e1_dk_flatter,
    e1_sqrt_same,
    e1_sqrt_changes,
    e1_example,
    e1_example_entropy,
    e2_in_example,
    e2_row,
    e2_on_diagonal,
    e2_off_diagonal,
    e2_draws,
    e2_independent,
    e2_tied,
    e2_tied_pairs,
    e2_why,
    e3_title,
    e3_count,
    e3_measured,
    e3_scores,
    e3_bytes,
    e3_fitted,
    e3_fitted_counts,
    e3_rule,
    e3_close,
    e3_below,
    e3_above,
    e3_undecided,
    e3_scattered,
    e3_waited,
    e3_fused_bytes,
    e4_title,
    e4_before,
    e4_after,
    e4_sees_first,
    e4_sees_up_to,
    e4_all_causal,
    e4_future,
    variance_intro,
    variance_samples,
    variance_theory,
    count
};

// What `attn learn` says about its run (lesson/sentences_learn.cpp).
enum class Learning {
    title_sentence,
    title_retrieval,
    sizes_sentence,
    sizes_retrieval,
    trained_two,
    trained_three,
    story_fixed,
    story_values,
    settings,
    alpha_start,
    loss,
    step,
    alpha_middle,
    alpha_end,
    reads_most,
    wanted,
    fell,
    range,
    reached,
    with_fixed,
    means,
    moved_less,
    moved_as_far,
    moved_further,
    count
};

// The sentence in `lang`, with its marks and {} places.
const char* marked(Lang lang, Sentence id);
const char* marked(Lang lang, Label id);
const char* marked(Lang lang, Backward id);
const char* marked(Lang lang, Bf16 id);
const char* marked(Lang lang, Exercise id);
const char* marked(Lang lang, Learning id);

// Its name in the JSON.
const char* key(Sentence id);
const char* key(Backward id);

// A marked sentence as the terminal prints it: the $ marks dropped, each {} replaced by the next of
// `values`.
std::string printed(std::string_view marked, std::initializer_list<std::string> values = {});

template <class Id>
std::string say(Lang lang, Id id, std::initializer_list<std::string> values = {}) {
    return printed(marked(lang, id), values);
}

// Step 4's note: what `scale` does to the variance.
Sentence scaling_note(Scale scale);

// The forward walk's sentences under `scale`, in the order the walk says them: every Sentence but
// the step-4 notes of the other two scales.
std::vector<Sentence> said_under(Scale scale);

}  // namespace attn::lesson
