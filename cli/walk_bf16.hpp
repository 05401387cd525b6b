// cli/walk_bf16.hpp — `attn walk --dtype bf16`: the worked example's O once more, with the products
// on bfloat16 (the fused kernel's bf16 mode), beside the float32 O of the walk (lesson/walk.hpp).
#pragma once

#include <string>
#include <vector>

#include "cli/text.hpp"
#include "lesson/walk.hpp"

namespace attn::cli {

// The text: Q, K and V rounded to bfloat16, O so computed, and which of O's numbers at `precision`
// digits differ from the float32 walk's, by how much.
std::string bf16_walk_text(Lang lang, const lesson::Bf16Walk& walk, int precision,
                           const std::vector<std::string>& tokens);

}  // namespace attn::cli
