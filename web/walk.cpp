// web/walk.cpp — `attn walk --format json` as one WebAssembly call, for the pages' live worked
// example (built by cross/wasm32-emscripten.ini; docs/lesson-03.md). The page passes what the reader
// typed, cell by cell, as it stands in the editor: {X, W_Q, W_K, W_V: arrays of rows of strings,
// tokens: strings}; each matrix is read by the library's reader of typed cells (io/io.hpp,
// parse_cells), the walk is computed and written by lesson/ (naive backend) as for `attn walk`, and
// what is refused comes back as lesson/json.hpp's refusal. tableNumber() is the library's rule for a
// number in a table (matrix/print.hpp), so that the page writes each number as the library does.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "io/io.hpp"
#include "lesson/json.hpp"
#include "lesson/walk.hpp"
#include "matrix/print.hpp"

namespace attn::web {

namespace {

using emscripten::val;

std::vector<std::string> strings(const val& list) { return emscripten::vecFromJSArray<std::string>(list); }

// state[name] (rows of strings, as typed) as the library reads them.
Matrix matrix(const val& state, const char* name) {
    std::vector<std::vector<std::string>> cells;
    const val rows = state[name];
    for (unsigned i = 0, n = rows["length"].as<unsigned>(); i < n; ++i) cells.push_back(strings(rows[i]));
    return parse_cells(cells, name);
}

}  // namespace

// scale: "sqrt", "dk" or "none" (any other is refused, naming them).
std::string walk(const val& state, const std::string& scale, bool causal) {
    try {
        const Matrix X = matrix(state, "X");
        const SingleHeadAttention layer(matrix(state, "W_Q"), matrix(state, "W_K"), matrix(state, "W_V"));
        std::vector<std::string> tokens = strings(state["tokens"]);
        tokens.resize(X.rows());
        const AttentionOptions options{.causal = causal, .scale = scale_from_string(scale), .backend = Backend::naive};
        return lesson::walk_json(lesson::forward_walk(layer, X, options), tokens);
    } catch (const std::exception& e) {
        return lesson::refusal_json(e);
    }
}

std::string table_number_of(float value) { return table_number(value, 4); }

}  // namespace attn::web

EMSCRIPTEN_BINDINGS(attention_cpp) {
    emscripten::function("walk", &attn::web::walk);
    emscripten::function("tableNumber", &attn::web::table_number_of);
}
