// lesson/walk_bf16.cpp — the worked example's O once more in bfloat16 (attn walk --dtype bf16), with
// what changed against the float32 walk.
#include <algorithm>
#include <cmath>

#include "lesson/walk.hpp"
#include "lesson/worked_example.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/print.hpp"

namespace attn::lesson {

Bf16Walk bf16_walk(const AttentionOptions& options) {
    const AttentionTrace walk = worked_example::trace(options);
    AttentionOptions bf16 = options;
    bf16.backend = Backend::fused;
    bf16.dtype = Dtype::bf16;
    Bf16Walk b{rounded_to_bfloat16(walk.Q),
               rounded_to_bfloat16(walk.K),
               rounded_to_bfloat16(walk.V),
               scaled_dot_product_attention(walk.Q, walk.K, walk.V, bf16).output,
               walk.output,
               0.0};
    for (std::size_t k = 0; k < b.output.size(); ++k)
        b.largest_change = std::max(b.largest_change, std::fabs(double(b.output.data()[k]) - b.output_f32.data()[k]));
    return b;
}

std::size_t changed_at(const Bf16Walk& walk, int precision) {
    std::size_t changed = 0;
    for (std::size_t k = 0; k < walk.output.size(); ++k)
        changed +=
            format_number(walk.output.data()[k], precision) != format_number(walk.output_f32.data()[k], precision);
    return changed;
}

}  // namespace attn::lesson
