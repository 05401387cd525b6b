// cli/walk_grad.hpp — `attn walk --grad`: the worked example run backwards, one gradient at a time,
// for the loss L = ½‖O − T‖² with T = I, as lesson/walk.hpp computes it.
#pragma once

#include <string>
#include <vector>

#include "cli/text.hpp"
#include "lesson/walk.hpp"

namespace attn::cli {

// The text: the target, L, dO, then each gradient with its marker, formula, shape and note, and L
// after one step of gradient descent.
std::string backward_walk_text(Lang lang, const lesson::BackwardWalk& walk, int precision,
                               const std::vector<std::string>& tokens);

}  // namespace attn::cli
