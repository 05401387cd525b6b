// lesson/sections.hpp — the walk's sections in the one order every surface shows them: `attn walk`
// (cli/walk.cpp), the pages' worked example (docs/site/worked_example.js) and the notebooks
// (scripts/make_notebooks.py) each go down this list, section by section, and draw each in their
// own way; the walk's JSON carries it as "sections". A section names its sentences, the formula it
// computes, the walk's matrices it shows and the lines of code it mirrors; the numbers are the walk's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attention/options.hpp"
#include "lesson/sentences.hpp"

namespace attn::lesson {

// A marked line of the code: the comment of `file` that carries [name].
struct Marker {
    const char* file;  // "attention/attention.cpp"
    const char* name;  // "step 3"
};

struct Section {
    const char* key;                    // its name on every surface: "step.3", "confusion.1", "fused"
    Sentence title;                     // its heading
    std::optional<Sentence> note;       // what it says under the heading
    bool aside = false;                 // a remark beside the chain (a confusion, an exercise), not a step
    std::string formula;                // what it computes, in the walk's notation ("" for nothing): a
                                        // step's stands in its heading, an aside's in its body
    std::vector<const char*> matrices;  // the walk's matrices it shows, by their names in the JSON
    std::vector<Marker> markers;        // the lines of code it mirrors
};

// The walk's sections under `options`, in order (step 4½, the causal mask, only under the mask).
std::vector<Section> sections(const AttentionOptions& options);

// What the scores are divided by under `scale`, in the walk's notation: "√d_k", "d_k", "1".
const char* scale_divisor(Scale scale);

// The whole chain in one line, as the walk's options make it: "O = softmax(Q·Kᵀ/√d_k + M)·V".
std::string chain_formula(const AttentionOptions& options);

}  // namespace attn::lesson
