// web/walk.cpp — `attn walk --format json` as one WebAssembly call, for the pages' live worked
// example (built by cross/wasm32-emscripten.ini; docs/lesson-03.md): the page passes X, W_Q, W_K and
// W_V as CSV text, the scale and the mask, and gets back the JSON the pages are drawn from, computed
// and written by lesson/ (naive backend) as for `attn walk`. Bad input gets what it gets from
// `attn run`: the CSV reader's or the library's message, here as {"error": "…"}, and for a refused
// value also {"cell": {"matrix", "row", "column", "problem", "text"}}, so that the page marks the
// cell and words the problem in its own language without reading the message.
#include <emscripten/bind.h>

#include <sstream>
#include <string>
#include <vector>

#include "attention/attention.hpp"
#include "io/io.hpp"
#include "lesson/json.hpp"
#include "lesson/walk.hpp"

namespace attn::web {

using lesson::json_string;

namespace {

// "猫\n坐\n地毯" → one label per line.
std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

}  // namespace

// scale: "sqrt", "dk" or "none" (any other is refused, naming them); tokens: one label per row of X.
std::string walk(const std::string& x, const std::string& w_q, const std::string& w_k, const std::string& w_v,
                 const std::string& scale, bool causal, const std::string& tokens) {
    try {
        const Matrix X = parse_csv(x, "X");
        SingleHeadAttention layer(parse_csv(w_q, "W_Q"), parse_csv(w_k, "W_K"), parse_csv(w_v, "W_V"));
        const AttentionOptions options{.causal = causal, .scale = scale_from_string(scale), .backend = Backend::naive};
        std::vector<std::string> labels = lines(tokens);
        labels.resize(X.rows());
        return lesson::walk_json(lesson::forward_walk(layer, X, options), labels);
    } catch (const CellError& e) {  // where the refused value is and what is wrong with it, for the page
        return "{\"error\": " + json_string(e.what()) + ", \"cell\": {\"matrix\": " + json_string(e.file) +
               ", \"row\": " + std::to_string(e.row) + ", \"column\": " + std::to_string(e.column) +
               ", \"problem\": " + json_string(to_string(e.problem)) + ", \"text\": " + json_string(printable(e.text)) +
               "}}\n";
    } catch (const std::exception& e) {
        return "{\"error\": " + json_string(e.what()) + "}\n";
    }
}

}  // namespace attn::web

EMSCRIPTEN_BINDINGS(attention_cpp) { emscripten::function("walk", &attn::web::walk); }
