// examples/consumer.cpp — attention.cpp used from another program, as installed (`meson install`,
// found with pkg-config) or as a Meson subproject (examples/subproject/). Prints O and α for three
// tokens; the first row of O is the lesson's o₁ = [0.7502, 0.2610, 0.5630].
//
// The headers are installed under <includedir>/attention.cpp/ (so their folder names cannot clash with
// another package's), and `pkg-config --cflags attention-cpp` or the Meson dependency puts that
// folder on the include path: the includes below read as they do inside the project.
#include <iostream>

#include "attention/attention.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/print.hpp"

int main() {
    namespace ex = attn::worked_example;
    const attn::AttentionResult r = ex::layer().forward(ex::X(), {.backend = attn::Backend::parallel});
    std::cout << "O =\n" << attn::format_matrix(r.output) << "alpha =\n" << attn::format_matrix(r.weights);
    return 0;
}
