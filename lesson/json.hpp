// lesson/json.hpp — the one JSON writer of the lesson: `attn walk --format json`, Python's walk() and
// the WebAssembly page's walk() all print what walk_json writes; `attn learn --format json`, the
// page's Learner and the module's refusals are written here too.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "lesson/language.hpp"
#include "lesson/learn.hpp"
#include "lesson/walk.hpp"

namespace attn::lesson {

// One JSON object: settings, tokens, the weights, every matrix of the trace (row-major arrays of rows;
// −∞ is the string "-inf", JSON having no infinity) and every demo of the walk (lesson/walk.hpp).
// The WebAssembly page's walk() returns it.
std::string walk_json(const ForwardWalk& walk, const std::vector<std::string>& tokens);

// The same, and after the numbers "sections", the walk's sections in order (lesson/sections.hpp: each
// one's key, the keys of its title and note, whether it is an aside, its formula, the matrices it
// shows and its markers), and "text": every sentence of the walk in `text`'s language with its $…$
// marks, which the pages typeset; with `backward`, also "backward": the example's gradients, the
// order the walk shows them in ("steps") and their sentences ("text"). `attn walk --format json`
// prints it and Python's walk() returns it (lesson/json_text.cpp).
std::string walk_json(const ForwardWalk& walk, const std::vector<std::string>& tokens, Lang text,
                      const BackwardWalk* backward = nullptr);

// The first, left open after its last number, for the second to go on.
std::string walk_json_open(const ForwardWalk& walk, const std::vector<std::string>& tokens);

// `attn learn`'s defaults (lesson/learn.hpp's Settings{}), for the pages and the Python module:
// {"task": "sentence", "steps": 300, "lr": 0.05, "seed": 1}.
std::string learn_defaults_json();

// A run of `attn learn --format json`: its settings, the sizes, which matrices were trained, the
// tokens, the cell each row of α should choose, the loss before every step and after the last, α at
// the start, half-way and at the end, α's weight on the wanted cells at the end, and W_V at the end.
std::string learn_run_json(learn::Task task, const learn::Settings& settings, const learn::Problem& problem,
                           const learn::Run& run, const std::vector<std::string>& tokens);

// What the pages' Learner reports after some steps: "losses" (L before each of them), "step" (steps
// taken so far), "loss" (L at the weights now), "wanted", and X, W_Q, W_K, W_V now.
std::string learner_json(const learn::Trainer& trainer, const std::vector<double>& losses);

// What the WebAssembly module returns for input it refuses: {"error": message}, and for a refused
// value (CellError) also {"cell": {"matrix", "row", "column", "problem", "text"}}, so that the page
// marks that cell and words the problem in its own language without reading the message.
std::string refusal_json(const std::exception& e);

// A matrix as JSON: an array of rows, each number the shortest decimal that reads back to its float
// (−∞ as "-inf").
std::string json_matrix(const Matrix& m);

// A string as JSON: quoted, with quotes, backslashes and control characters escaped.
std::string json_string(const std::string& s);

// A float as the shortest decimal that reads back to it (matrix/print.hpp's shortest_decimal); a
// double, which the walk keeps only for sums over many floats (the losses), at 9 significant digits.
// ±∞ and NaN, which JSON has no word for, as the strings "inf", "-inf" and "nan".
std::string json_number(float v);
std::string json_number(double v);

}  // namespace attn::lesson
