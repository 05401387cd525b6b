// lesson/sentence_keys.cpp — each walk sentence's name in the JSON ("title.3", "note.fused"), the name
// the pages and the notebooks look it up by; apart from the sentences themselves (lesson/sentences.cpp)
// so that what names the walk's sections (lesson/sections.hpp) does not carry their words, which the
// WebAssembly module, whose page has them already, leaves out.
#include "lesson/sentence_table.hpp"
#include "lesson/sentences.hpp"

namespace attn::lesson {

namespace {

using S = Sentence;
constexpr table::Names<Sentence> names{{
    {S::indices, "indices"},
    {S::expanded, "expanded"},
    {S::expanded_row, "expanded_row"},
    {S::title_1, "title.1"},
    {S::note_1, "note.1"},
    {S::title_2, "title.2"},
    {S::note_2, "note.2"},
    {S::weights, "weights"},
    {S::column1, "column1"},
    {S::title_3, "title.3"},
    {S::note_3, "note.3"},
    {S::transpose, "transpose"},
    {S::transpose_note, "transpose_note"},
    {S::transpose_square, "transpose_square"},
    {S::transpose_refused, "transpose_refused"},
    {S::same_in_S, "same_in_S"},
    {S::confusion1, "confusion1"},
    {S::confusion1_note, "confusion1_note"},
    {S::cosines, "cosines"},
    {S::other_keys, "other_keys"},
    {S::row_largest, "row_largest"},
    {S::with_example_keys, "with_example_keys"},
    {S::title_4, "title.4"},
    {S::note_4_sqrt_dk, "note.4"},
    {S::note_4_dk, "note.4"},
    {S::note_4_none, "note.4"},
    {S::title_mask, "title.mask"},
    {S::note_mask, "note.mask"},
    {S::title_5, "title.5"},
    {S::note_5, "note.5"},
    {S::row_max, "row_max"},
    {S::sum, "sum"},
    {S::row_sums, "row_sums"},
    {S::heat, "heat"},
    {S::confusion2, "confusion2"},
    {S::confusion2_note, "confusion2_note"},
    {S::by_column, "by_column"},
    {S::column_sums, "column_sums"},
    {S::row_sums_short, "row_sums_short"},
    {S::title_6, "title.6"},
    {S::note_6, "note.6"},
    {S::confusion3, "confusion3"},
    {S::confusion3_note, "confusion3_note"},
    {S::exercise2, "exercise2"},
    {S::exercise2_note, "exercise2_note"},
    {S::diagonal_yes, "diagonal_yes"},
    {S::diagonal_no, "diagonal_no"},
    {S::exercise5, "exercise5"},
    {S::exercise5_note, "exercise5_note"},
    {S::exercise5_causal, "exercise5_causal"},
    {S::length, "length"},
    {S::written_in_step_6, "written_in_step_6"},
    {S::shapes_flowed, "shapes_flowed"},
    {S::confusion4, "confusion4"},
    {S::confusion4_note, "confusion4_note"},
    {S::heads_cost, "heads_cost"},
    {S::title_fused, "title.fused"},
    {S::note_fused, "note.fused"},
    {S::fused_why_m, "fused_why_m"},
    {S::fused_row, "fused_row"},
    {S::fused_keys, "fused_keys"},
    {S::fused_end, "fused_end"},
    {S::fused_tiles, "fused_tiles"},
    {S::fused_halves, "fused_halves"},
    {S::fused_first_half, "fused_first_half"},
    {S::fused_second_half, "fused_second_half"},
    {S::fused_merge, "fused_merge"},
    {S::fused_merged, "fused_merged"},
}};
static_assert(table::complete(names), "lesson/sentence_keys.cpp: one name per Sentence, in its order");

}  // namespace

const char* key(Sentence id) { return table::entry(names, id).key; }

}  // namespace attn::lesson
