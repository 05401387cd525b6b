// cli/walk_json.hpp — the lesson's JSON helpers (lesson/json.hpp), as `attn learn --format json`
// writes its matrices and strings with them.
#pragma once

#include "lesson/json.hpp"

namespace attn::cli {

using lesson::json_matrix;
using lesson::json_string;

}  // namespace attn::cli
