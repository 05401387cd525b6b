// lesson/sections.cpp — the walk's sections, in order (lesson/sections.hpp).
#include "lesson/sections.hpp"

namespace attn::lesson {

namespace {

constexpr const char* chain = "attention/attention.cpp";

// Step 4's formula: "S' = S/√d_k", "S' = S/d_k", or, unscaled, "S' = S".
std::string scaling_formula(Scale scale) {
    return scale == Scale::none ? "S' = S" : std::string("S' = S/") + scale_divisor(scale);
}

}  // namespace

const char* scale_divisor(Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk: return "√d_k";
        case Scale::dk: return "d_k";
        case Scale::none: return "1";
    }
    return "√d_k";
}

std::string chain_formula(const AttentionOptions& options) {
    const std::string divisor = options.scale == Scale::none ? "" : std::string("/") + scale_divisor(options.scale);
    return "O = softmax(Q·Kᵀ" + divisor + (options.causal ? " + M" : "") + ")·V";
}

std::vector<Section> sections(const AttentionOptions& options) {
    using S = Sentence;
    std::vector<Section> list = {
        {"step.1", S::title_1, S::note_1, false, "X", {"X"}, {{chain, "step 1"}}},
        {"step.2",
         S::title_2,
         S::note_2,
         false,
         "Q = X·W_Q, K = X·W_K, V = X·W_V",
         {"W_Q", "W_K", "W_V", "Q", "K", "V"},
         {{chain, "step 2.Q"}, {chain, "step 2.K"}, {chain, "step 2.V"}}},
        {"step.3", S::title_3, S::note_3, false, "S = Q·Kᵀ", {"S"}, {{chain, "step 3"}}},
        {"transpose", S::transpose, S::transpose_note, true, "", {"Q_times_K", "S"}, {}},
        {"confusion.1", S::confusion1, S::confusion1_note, true, "", {"cosines", "S_with_W_K_as_W_Q"}, {}},
        {"step.4",
         S::title_4,
         scaling_note(options.scale),
         false,
         scaling_formula(options.scale),
         {"S_scaled"},
         {{chain, "step 4"}}},
    };
    if (options.causal)
        list.push_back(
            {"step.4.mask", S::title_mask, S::note_mask, false, "S' + M", {"softmax_input"}, {{chain, "step 4.mask"}}});
    const std::vector<Section> rest = {
        {"step.5", S::title_5, S::note_5, false, "α = softmax_row(S')", {"weights"}, {{chain, "step 5"}}},
        {"confusion.2", S::confusion2, S::confusion2_note, true, "", {"softmax_by_column"}, {}},
        {"step.6", S::title_6, S::note_6, false, "O = α·V", {"output"}, {{chain, "step 6"}}},
        {"confusion.3", S::confusion3, S::confusion3_note, true, "", {}, {}},
        {"exercise.2", S::exercise2, S::exercise2_note, true, "", {}, {}},
        {"exercise.5", S::exercise5, S::exercise5_note, true, "", {}, {}},
        {"shapes", S::shapes_flowed, std::nullopt, false, "", {}, {}},
        {"confusion.4", S::confusion4, S::confusion4_note, true, "d_k = d_model / h", {}, {}},
        {"fused",
         S::title_fused,
         S::note_fused,
         false,
         "",
         {},
         {{"simd/fused.cpp", "fused scores"},
          {"simd/fused.cpp", "fused softmax"},
          {"simd/fused.cpp", "fused values"},
          {"simd/decode.cpp", "decode merge"}}},
    };
    list.insert(list.end(), rest.begin(), rest.end());
    return list;
}

}  // namespace attn::lesson
