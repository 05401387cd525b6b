// cli/learn.hpp — `attn learn`: W_Q and W_K (and W_V with --train-values) trained on a task whose right
// attention is known, with α printed at the start, half-way and at the end (lesson/learn.cpp trains).
#pragma once

#include <span>
#include <string>

namespace attn::cli {

int learn_command(std::span<const std::string> args);

}  // namespace attn::cli
