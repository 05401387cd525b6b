// cli/walk_grad.hpp — `attn walk --grad`: the worked example run backwards, one gradient at a time,
// for the loss L = ½‖O − T‖² with T = I (attention/worked_example.hpp).
#pragma once

#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "cli/text.hpp"

namespace attn::cli {

// The text: the target, L, dO, then each gradient with its marker, formula and shape, and L after one
// step of gradient descent.
std::string backward_walk_text(Lang lang, const AttentionOptions& options, int precision,
                               const std::vector<std::string>& tokens);

// The same numbers as the members of one JSON object ("target", "loss", "dO", …, "dX",
// "step_size", "loss_after_step"), at full precision.
std::string backward_walk_json(const AttentionOptions& options);

}  // namespace attn::cli
