// cli/walk.hpp — `attn walk`: the lesson's worked example, printed step by step.
#pragma once

#include <span>
#include <string>

namespace attn::cli {

int walk_command(std::span<const std::string> args);

}  // namespace attn::cli
