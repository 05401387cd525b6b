// cli/walk_bf16.cpp — `attn walk --dtype bf16`. Both outputs come from the library: the float32 one
// from the walk's trace, the bf16 one from the fused backend with AttentionOptions::dtype = bf16.
#include "cli/walk_bf16.hpp"

#include <cmath>
#include <sstream>

#include "attention/worked_example.hpp"
#include "matrix/bfloat16.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

std::string bf16_walk_text(Lang l, const AttentionOptions& options, int precision,
                           const std::vector<std::string>& tokens) {
    const AttentionTrace walk = worked_example::trace(options);
    AttentionOptions bf16 = options;
    bf16.backend = Backend::fused;
    bf16.dtype = Dtype::bf16;
    const Matrix O = scaled_dot_product_attention(walk.Q, walk.K, walk.V, bf16).output;
    PrintOptions p;
    p.precision = precision;
    p.row_labels = tokens;
    std::ostringstream out;
    out << "\n"
        << tr(l, "The same attention in bfloat16 (--dtype bf16)", "同一个注意力，用 bfloat16 计算（--dtype bf16）")
        << "\n  "
        << tr(l,
              "bfloat16 keeps a float's 8-bit exponent but only 8 significant bits: rounding moves a number by at "
              "most 2⁻⁸ (0.4%) of itself. The fused kernel rounds Q, K, V and the weights to it, adds the exact "
              "products in float32, and keeps the softmax in float32 (simd/fused.cpp).",
              "bfloat16 保留 float 的 8 位指数，但只有 8 位有效数字：舍入最多让一个数变动它自身的 2⁻⁸（0.4%）。"
              "融合内核把 Q、K、V 和权重舍入成它，用 float32 累加精确的乘积，softmax 仍用 float32（simd/fused.cpp）。")
        << "\n\n  " << tr(l, "Q, K, V rounded to bfloat16", "舍入成 bfloat16 的 Q、K、V") << "\n";
    for (const auto& [name, M] : {std::pair{"Q", &walk.Q}, {"K", &walk.K}, {"V", &walk.V}})
        out << "  " << name << "\n" << format_matrix(rounded_to_bfloat16(*M), p);
    out << "\n  O (bf16)\n" << format_matrix(O, p);
    std::size_t changed = 0;
    double largest = 0.0;
    for (std::size_t i = 0; i < O.rows(); ++i)
        for (std::size_t j = 0; j < O.cols(); ++j) {
            changed += format_number(O(i, j), precision) != format_number(walk.output(i, j), precision);
            largest = std::max(largest, std::fabs(double(O(i, j)) - walk.output(i, j)));
        }
    out << "\n  " << changed << tr(l, " of O's ", " 个（共 ") << O.size()
        << tr(l, " numbers differ from the float32 walk's at this precision; the largest change is ",
              " 个）O 的数字在此精度下与 float32 的结果不同；最大的变化是 ")
        << format_number(static_cast<float>(largest), precision + 2) << tr(l, ".\n", "。\n");
    return out.str();
}

}  // namespace attn::cli
