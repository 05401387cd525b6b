// cli/exercise.hpp — `attn exercise N` (the lesson's five exercises) and `attn variance`.
#pragma once

#include <span>
#include <string>

namespace attn::cli {

int exercise_command(std::span<const std::string> args);
int variance_command(std::span<const std::string> args);

}  // namespace attn::cli
