// cli/run.hpp — `attn run`: the chain on the user's own matrices, from .npy or .csv files.
#pragma once

#include <span>
#include <string>

namespace attn::cli {

int run_command(std::span<const std::string> args);

}  // namespace attn::cli
