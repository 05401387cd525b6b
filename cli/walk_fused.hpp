// cli/walk_fused.hpp — the walk's last part: steps 3–6 as the fused kernel does them, key by key,
// in tiles of two and in two merged halves, as lesson/fused_walk.hpp computes them.
#pragma once

#include <string>
#include <vector>

#include "cli/text.hpp"
#include "lesson/walk.hpp"

namespace attn::cli {

// The text under the part's heading: why m is subtracted, the walked row key by key, O against
// step 6's, the same row in tiles of two, and the two halves with their merge.
std::string fused_walk_text(Lang lang, const lesson::ForwardWalk& walk, int precision,
                            const std::vector<std::string>& tokens);

}  // namespace attn::cli
