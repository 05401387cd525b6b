// lesson/json.hpp — the one JSON writer of the lesson: `attn walk --format json`, Python's walk() and
// the WebAssembly page's walk() all print what walk_json writes.
#pragma once

#include <string>
#include <vector>

#include "lesson/language.hpp"
#include "lesson/walk.hpp"

namespace attn::lesson {

// One JSON object: settings, tokens, the weights, every matrix of the trace (row-major arrays of rows;
// −∞ is the string "-inf", JSON having no infinity) and every demo of the walk (lesson/walk.hpp).
// The WebAssembly page's walk() returns it.
std::string walk_json(const ForwardWalk& walk, const std::vector<std::string>& tokens);

// The same, and after the numbers "text": every sentence of the walk in `text`'s language with its
// $…$ marks, which the pages typeset; with `backward`, also "backward": the example's gradients, the
// order the walk shows them in ("steps") and their sentences ("text"). `attn walk --format json`
// prints it and Python's walk() returns it (lesson/json_text.cpp).
std::string walk_json(const ForwardWalk& walk, const std::vector<std::string>& tokens, Lang text,
                      const BackwardWalk* backward = nullptr);

// The first, left open after its last number, for the second to go on.
std::string walk_json_open(const ForwardWalk& walk, const std::vector<std::string>& tokens);

// `attn learn`'s defaults (lesson/learn.hpp's Settings{}), for the pages and the Python module:
// {"task": "sentence", "steps": 300, "lr": 0.05, "seed": 1}.
std::string learn_defaults_json();

// A matrix as JSON: an array of rows, each number at full float precision (−∞ as "-inf").
std::string json_matrix(const Matrix& m);

// A string as JSON: quoted, with quotes, backslashes and control characters escaped.
std::string json_string(const std::string& s);

// A number at full precision (%.9g: every float32 reads back as itself).
std::string json_number(double v);

}  // namespace attn::lesson
