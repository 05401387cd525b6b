// lesson/json_text.cpp — the walk's JSON with its sections and its sentences, and the backward walk:
// what `attn walk --format json [--grad]` prints and Python's walk() returns. Apart from
// lesson/json.cpp so that the WebAssembly module, whose page has the sections and the sentences
// already (built with them), does not carry them.
#include <sstream>

#include "lesson/json.hpp"
#include "lesson/sections.hpp"
#include "lesson/sentences.hpp"

namespace attn::lesson {

namespace {

template <class Id>
void sentences(std::ostringstream& out, Lang lang, const std::vector<Id>& ids, const char* indent) {
    out << "{";
    for (std::size_t k = 0; k < ids.size(); ++k)
        out << (k ? ",\n" : "\n") << indent << json_string(key(ids[k])) << ": " << json_string(marked(lang, ids[k]));
    out << "}";
}

// The walk's sections in order (lesson/sections.hpp): what each surface goes down.
void section_list(std::ostringstream& out, const ForwardWalk& w) {
    const auto names = [](const auto& list, auto name) {
        std::string text = "[";
        for (std::size_t k = 0; k < list.size(); ++k) text += (k ? ", " : "") + name(list[k]);
        return text + "]";
    };
    const std::vector<Section> list = sections(w.options);
    out << ",\n  \"sections\": [";
    for (std::size_t k = 0; k < list.size(); ++k) {
        const Section& s = list[k];
        out << (k ? ",\n    " : "\n    ") << "{\"key\": " << json_string(s.key)
            << ", \"title\": " << json_string(key(s.title))
            << ", \"note\": " << (s.note ? json_string(key(*s.note)) : "null")
            << ", \"aside\": " << (s.aside ? "true" : "false") << ", \"formula\": " << json_string(s.formula)
            << ", \"matrices\": " << names(s.matrices, [](const char* m) { return json_string(m); })
            << ", \"markers\": "
            << names(s.markers,
                     [](const Marker& m) {
                         return "{\"file\": " + json_string(m.file) + ", \"name\": " + json_string(m.name) + "}";
                     })
            << "}";
    }
    out << "]";
}

void backward_json(std::ostringstream& out, const BackwardWalk& b, Lang text) {
    out << ",\n  \"backward\": {\n    \"target\": " << json_matrix(b.target)
        << ",\n    \"loss\": " << json_number(b.loss) << ",\n    \"dO\": " << json_matrix(b.gradients.dO);
    const std::vector<Gradient> gradients = b.in_order();
    for (const Gradient& g : gradients) out << ",\n    " << json_string(key(g.note)) << ": " << json_matrix(*g.value);
    out << ",\n    \"step_size\": " << json_number(b.step_size)
        << ",\n    \"loss_after_step\": " << json_number(b.loss_after_step) << ",\n    \"steps\": [";
    for (std::size_t k = 0; k < gradients.size(); ++k)
        out << (k ? ",\n      " : "\n      ") << "{\"marker\": " << json_string(gradients[k].marker)
            << ", \"formula\": " << json_string(gradients[k].formula)
            << ", \"name\": " << json_string(key(gradients[k].note)) << "}";
    out << "]";
    std::vector<Backward> all;
    for (std::size_t k = 0; k < static_cast<std::size_t>(Backward::count); ++k) all.push_back(static_cast<Backward>(k));
    out << ",\n    \"text\": ";
    sentences(out, text, all, "      ");
    out << "\n  }";
}

}  // namespace

std::string walk_json(const ForwardWalk& walk, const std::vector<std::string>& tokens, Lang text,
                      const BackwardWalk* backward) {
    std::ostringstream out;
    out << walk_json_open(walk, tokens);
    section_list(out, walk);
    out << ",\n  \"text\": ";
    sentences(out, text, said_under(walk.options.scale), "    ");
    if (backward) backward_json(out, *backward, text);
    out << "\n}\n";
    return out.str();
}

}  // namespace attn::lesson
