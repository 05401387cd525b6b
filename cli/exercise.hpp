// cli/exercise.hpp — `attn exercise N` (the lesson's five exercises) and `attn variance`.
#pragma once

#include <span>
#include <string>

namespace attn::cli {

int run_exercise(std::span<const std::string> args);
int run_variance(std::span<const std::string> args);

}  // namespace attn::cli
