// cli/walk_bf16.cpp — `attn walk --dtype bf16`: prints lesson/walk.hpp's bfloat16 walk. Both outputs
// come from the library: the float32 one from the walk's trace, the bf16 one from the fused backend.
#include "cli/walk_bf16.hpp"

#include <sstream>

#include "lesson/sentences.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

std::string bf16_walk_text(Lang l, const lesson::Bf16Walk& walk, int precision,
                           const std::vector<std::string>& tokens) {
    using lesson::Bf16;
    using lesson::say;
    PrintOptions p;
    p.precision = precision;
    p.row_labels = tokens;
    std::ostringstream out;
    out << "\n" << say(l, Bf16::title) << "\n  " << say(l, Bf16::note) << "\n\n  " << say(l, Bf16::rounded) << "\n";
    for (const auto& [name, M] : {std::pair{"Q", &walk.Q}, {"K", &walk.K}, {"V", &walk.V}})
        out << "  " << name << "\n" << format_matrix(*M, p);
    out << "\n  O (bf16)\n"
        << format_matrix(walk.output, p) << "\n  "
        << say(l, Bf16::changed,
               {std::to_string(walk.output.size()), std::to_string(lesson::changed_at(walk, precision)),
                format_number(static_cast<float>(walk.largest_change), precision + 2)})
        << "\n";
    return out.str();
}

}  // namespace attn::cli
