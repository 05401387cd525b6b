// cli/walk_grad.cpp — `attn walk --grad`. Every matrix it prints comes from the library's backward
// (attention/backward.cpp, traced by attention/trace.cpp); the loss and its target are the worked
// example's (attention/worked_example.hpp).
#include "cli/walk_grad.hpp"

#include <cstdio>
#include <sstream>
#include <string>

#include "attention/worked_example.hpp"
#include "cli/walk_json.hpp"
#include "matrix/print.hpp"

namespace attn::cli {

namespace {

constexpr float step_size = 0.1f;  // η of the one step of gradient descent shown at the end

// One gradient: its name in both languages, the marker of its line in attention/backward.cpp, the
// formula, and the matrix.
struct Shown {
    const char* marker;  // "grad 6.V"
    std::string formula;
    const char* en;
    const char* zh;
    const Matrix* value;
};

std::vector<Shown> gradients(const BackwardTrace& g, const std::string& divisor) {
    return {{"grad 6.V", "dV = αᵀ·dO", "each value is credited as much as it was read",
             "每个 Value 被读了多少，就得到多少梯度", &g.dV},
            {"grad 6.α", "dα = dO·Vᵀ", "how L changes with each weight α_ij: do_i·v_j",
             "L 随每个权重 α_ij 的变化：do_i·v_j", &g.d_weights},
            {"grad 5", "dS' = α ⊙ (dα − rowsum(dα ⊙ α))",
             "through the softmax; each row sums to 0, since raising a whole row of scores changes no α",
             "穿过 softmax；每行之和为 0，因为整行分数一起加大不改变 α", &g.dS_prime},
            {"grad 4", "dS = dS' " + divisor, "through the scaling", "穿过缩放", &g.dS},
            {"grad 3.Q", "dQ = dS·K", "", "", &g.dQ},
            {"grad 3.K", "dK = dSᵀ·Q", "", "", &g.dK},
            {"grad 2.Q", "dW_Q = Xᵀ·dQ", "what training subtracts from W_Q, times a step size",
             "训练从 W_Q 中减去的量（再乘以步长）", &g.dW_Q},
            {"grad 2.K", "dW_K = Xᵀ·dK", "", "", &g.dW_K},
            {"grad 2.V", "dW_V = Xᵀ·dV", "", "", &g.dW_V},
            {"grad 1", "dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ", "three paths lead back to X", "三条路径回到 X", &g.dX}};
}

std::string divisor_text(const AttentionOptions& options) {
    switch (options.scale) {
        case Scale::sqrt_dk: return "÷ √d_k";
        case Scale::dk: return "÷ d_k";
        case Scale::none: return "× 1";
    }
    return "";
}

std::string loss_number(double L, int precision) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", precision, L);
    return buf;
}

}  // namespace

std::string backward_walk_text(Lang l, const AttentionOptions& options, int precision,
                               const std::vector<std::string>& tokens) {
    const AttentionTrace forward = worked_example::trace(options);
    const BackwardTrace g = worked_example::backward_trace(options);
    PrintOptions p;
    p.precision = precision;
    p.row_labels = tokens;
    PrintOptions plain;
    plain.precision = precision;
    std::ostringstream out;
    const auto shape = [](const Matrix& m) { return " (" + shape_string(m) + ")"; };
    out << "\n"
        << tr(l, "How the weights learn: the chain run backwards", "权重如何学习：把链条倒过来算") << "\n  "
        << tr(l,
              "A loss L measures how far O is from a target T; here L = ½‖O − T‖² with T = I: token i's output "
              "should be the i-th unit vector. Each dM = ∂L/∂M has the shape of M; the chain rule gives them "
              "last step first (attention/backward.cpp, markers [grad …]).",
              "损失 L 衡量 O 与目标 T 的差距；这里 L = ½‖O − T‖²，T = I：第 i 个词的输出应是第 i 个单位向量。每个 "
              "dM = ∂L/∂M 与 M 形状相同；链式法则从最后一步开始给出它们（attention/backward.cpp，标记 [grad …]）。")
        << "\n\n  T" << shape(worked_example::target()) << "\n"
        << format_matrix(worked_example::target(), p)
        << "\n  L = ½‖O − T‖² = " << loss_number(worked_example::loss(forward.output), precision)
        << "\n\n  dO = ∂L/∂O = O − T" << shape(g.dO) << "\n"
        << format_matrix(g.dO, p);
    for (const Shown& s : gradients(g, divisor_text(options))) {
        out << "\n  [" << s.marker << "] " << s.formula << shape(*s.value);
        if (*s.en) out << tr(l, ":  ", "：") << tr(l, s.en, s.zh);
        out << "\n" << format_matrix(*s.value, s.value->rows() == tokens.size() ? p : plain);
        if (options.causal && std::string(s.marker) == "grad 5")
            out << "  [grad 4.mask] "
                << tr(l, "above the diagonal dS' is already 0: there α_ij = 0",
                      "对角线以上 dS' 本来就是 0：那里 α_ij = 0")
                << "\n";
    }
    out << "\n  " << tr(l, "One step of gradient descent, W ← W − η·dW with η = ", "梯度下降一步，W ← W − η·dW，η = ")
        << format_number(step_size, 1) << tr(l, ", on W_Q, W_K and W_V: L goes from ", "，作用于 W_Q、W_K、W_V：L 从 ")
        << loss_number(worked_example::loss(forward.output), precision) << tr(l, " to ", " 变为 ")
        << loss_number(worked_example::loss_after_step(step_size, options), precision) << tr(l, ".", "。") << "\n";
    return out.str();
}

std::string backward_walk_json(const AttentionOptions& options) {
    const AttentionTrace forward = worked_example::trace(options);
    const BackwardTrace g = worked_example::backward_trace(options);
    const auto number = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return std::string(buf);
    };
    std::string out = "{\n    \"target\": " + json_matrix(worked_example::target()) +
                      ",\n    \"loss\": " + number(worked_example::loss(forward.output)) +
                      ",\n    \"dO\": " + json_matrix(g.dO);
    const std::pair<const char*, const Matrix*> members[] = {
        {"dV", &g.dV}, {"d_weights", &g.d_weights}, {"dS_prime", &g.dS_prime}, {"dS", &g.dS},     {"dQ", &g.dQ},
        {"dK", &g.dK}, {"dW_Q", &g.dW_Q},           {"dW_K", &g.dW_K},         {"dW_V", &g.dW_V}, {"dX", &g.dX}};
    for (const auto& [name, m] : members) out += ",\n    " + json_string(name) + ": " + json_matrix(*m);
    out += ",\n    \"step_size\": " + number(step_size) +
           ",\n    \"loss_after_step\": " + number(worked_example::loss_after_step(step_size, options)) + "\n  }";
    return out;
}

}  // namespace attn::cli
