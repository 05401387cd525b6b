// cli/walk_grad.cpp — `attn walk --grad`: prints lesson/walk.hpp's backward walk. Every matrix comes
// from the library's backward (attention/backward.cpp, traced by attention/trace.cpp).
#include "cli/walk_grad.hpp"

#include <cstdio>
#include <sstream>

#include "lesson/sentences.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

std::string loss_number(double L, int precision) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", precision, L);
    return buf;
}

std::string shape(const Matrix& m) { return " (" + shape_string(m) + ")"; }

}  // namespace

std::string backward_walk_text(Lang l, const lesson::BackwardWalk& walk, int precision,
                               const std::vector<std::string>& tokens) {
    using lesson::Backward;
    using lesson::say;
    PrintOptions p;
    p.precision = precision;
    p.row_labels = tokens;
    PrintOptions plain;
    plain.precision = precision;
    const std::string loss = loss_number(walk.loss, precision);
    std::ostringstream out;
    out << "\n"
        << say(l, Backward::title) << "\n  " << say(l, Backward::intro) << "\n\n  T" << shape(walk.target) << "\n"
        << format_matrix(walk.target, p) << "\n  L = ½‖O − T‖² = " << loss << "\n\n  dO = ∂L/∂O = O − T"
        << shape(walk.gradients.dO) << "\n"
        << format_matrix(walk.gradients.dO, p);
    for (const lesson::Gradient& g : walk.in_order()) {
        out << "\n  [" << g.marker << "] " << g.formula << shape(*g.value) << tr(l, ":  ", "：") << say(l, g.note)
            << "\n"
            << format_matrix(*g.value, g.value->rows() == tokens.size() ? p : plain);
        if (walk.options.causal && g.note == Backward::dS_prime)
            out << "  [grad 4.mask] " << say(l, Backward::mask) << "\n";
    }
    out << "\n  "
        << say(l, Backward::descent,
               {shortest_decimal(walk.step_size), loss, loss_number(walk.loss_after_step, precision)})
        << "\n";
    return out.str();
}

}  // namespace attn::cli
