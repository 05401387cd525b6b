// cli/walk_json.hpp — `attn walk --format json`: the worked example's numbers for programs (the
// docs pages are built from it), the same numbers the text walk prints, at full float precision.
#pragma once

#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "cli/walk_text.hpp"

namespace attn::cli {

// One JSON object: settings, tokens, the weights of `layer`, every matrix of its trace (row-major
// arrays of rows; −∞ is the string "-inf", JSON having no infinity), and the demos of step 3's remark
// (Q·K, null unless n = d_k, the only case where it is defined) and of confusions 1, 2 and 4; with
// `text`, also "text": every sentence of the walk with its $…$ marks, which the pages typeset; with
// `backward` (a JSON object, cli/walk_grad.cpp), also "backward": the example's gradients.
std::string walk_json(const SingleHeadAttention& layer, const AttentionTrace& trace, const AttentionOptions& options,
                      const std::vector<std::string>& tokens, const WalkText* text = nullptr,
                      const std::string& backward = "");

// A matrix as JSON: an array of rows, each number at full float precision (−∞ as "-inf").
std::string json_matrix(const Matrix& m);

// A string as JSON: quoted, with quotes, backslashes and control characters escaped.
std::string json_string(const std::string& s);

}  // namespace attn::cli
