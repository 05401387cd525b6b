#include "cli/text.hpp"

#include <cstdlib>
#include <string_view>

namespace attn::cli {

std::string scale_symbol(Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk: return "÷ √d_k";
        case Scale::dk: return "÷ d_k";
        case Scale::none: return "÷ 1";
    }
    return "";
}

Lang lang_from_environment() {
    for (const char* name : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
        const char* value = std::getenv(name);
        if (value && *value) return std::string_view(value).starts_with("zh") ? Lang::zh : Lang::en;
    }
    return Lang::en;
}

namespace {

// The two languages below have the same shape line for line, by design: one field per sentence.
const Text english{
    .title = "Single-head scaled dot-product attention, one step at a time",
    .sentence = "Sentence",
    .settings = "Settings",
    .no_mask = "no mask",
    .causal_mask = "causal mask",
    .shapes_title = "Shapes",
    .shapes_note = "S and α are n×n whatever d_k is: that square is where attention's O(n²) cost comes from.",
    .step1 = "Step 1 · Input X",
    .step1_note = "each row is one token's embedding; no token knows its neighbours yet.",
    .step2 = "Step 2 · Projections Q = X·W_Q, K = X·W_K, V = X·W_V",
    .step2_note = "three learned matrices give each token a query, a key and a value.",
    .weights = "Weights",
    .step3 = "Step 3 · Scores S = Q·Kᵀ",
    .step3_note =
        "S_ij = q_i·k_j: how well query i matches key j. Kᵀ turns the rows of K into columns, so that row i times "
        "column j is that dot product.",
    .expanded = "One entry written out",
    .step4 = "Step 4 · Scaling S' = S",
    .step4_note =
        "if q and k have d_k independent unit-variance entries, Var(q·k) = d_k; dividing by √d_k brings it back to 1, "
        "so the softmax does not saturate as d_k grows.",
    .step4_mask = "Step 4½ · Causal mask",
    .step4_mask_note = "S'_ij = −∞ for j > i: e^−∞ = 0, so token i gets no weight from later tokens.",
    .step5 = "Step 5 · Attention weights α = softmax_row(S')",
    .step5_note = "each row is made positive and divided by its sum: a probability distribution over the tokens.",
    .row_max = "subtract the row maximum m (changes nothing, keeps e^x from overflowing)",
    .exponentials = "e^(S' − m)",
    .row_sum = "sum",
    .row_sums = "Every row of α sums to 1",
    .heat_map = "α as a heat map (darker = more attention)",
    .step6 = "Step 6 · Output O = α·V",
    .step6_note = "row i is the α-weighted average of all value vectors: token i's new, context-aware representation.",
    .diagonal = "Exercise 2 · Is S_ii the largest score in its row?",
    .diagonal_yes = "yes",
    .diagonal_no = "no, the row's largest score is with",
    .exercise5 = "Exercise 5 · output[0] against V[0]",
    .exercise5_note = "the difference is what the other tokens contributed: o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁).",
    .norm = "length",
    .summary = "How the shapes flowed",
    .walk_help = R"(Usage: attn walk [options]

Computes the lesson's worked example (猫 坐 地毯, d_model = 4, d_k = d_v = 3) and prints every
intermediate: shapes, X, the weights, Q, K, V, the scores S, S scaled, the softmax weights α, the
output, and exercises 2 and 5.

Options:
  --lang en|zh           language (default: from LANG)
  --causal               apply the causal mask (exercise 4)
  --scale sqrt|dk|none   divide the scores by √d_k (default), by d_k, or not at all (exercise 1)
  --backend naive|simd|parallel
                         which kernels compute each step (default naive: the textbook loops;
                         fused has no α to show, so walk does not offer it)
  --precision N          digits after the decimal point, 0 to 8 (default 4)
  --color auto|always|never
                         heat map colours (default auto: only on a terminal, never with NO_COLOR)
  -h, --help             this text
)",
};

const Text chinese{
    .title = "单头缩放点积注意力，逐步计算",
    .sentence = "句子",
    .settings = "设置",
    .no_mask = "无掩码",
    .causal_mask = "因果掩码",
    .shapes_title = "维度",
    .shapes_note = "无论 d_k 多大，S 和 α 都是 n×n：注意力 O(n²) 的开销正来自这个方阵。",
    .step1 = "第 1 步 · 输入 X",
    .step1_note = "每一行是一个词的嵌入向量；此时每个词还不了解上下文。",
    .step2 = "第 2 步 · 线性投影 Q = X·W_Q，K = X·W_K，V = X·W_V",
    .step2_note = "三个可学习矩阵为每个词分别生成查询、键和值。",
    .weights = "权重",
    .step3 = "第 3 步 · 注意力分数 S = Q·Kᵀ",
    .step3_note = "S_ij = q_i·k_j：查询 i 与键 j 的匹配程度。转置把 K 的行变成列，第 i 行乘第 j 列恰好是这个点积。",
    .expanded = "展开其中一项",
    .step4 = "第 4 步 · 缩放 S' = S",
    .step4_note =
        "若 q、k 各有 d_k 个独立的单位方差分量，则 Var(q·k) = d_k；除以 √d_k 使方差回到 1，softmax 不会随 d_k "
        "增大而饱和。",
    .step4_mask = "第 4½ 步 · 因果掩码",
    .step4_mask_note = "j > i 时 S'_ij = −∞：e^−∞ = 0，词 i 得不到后面词的任何权重。",
    .step5 = "第 5 步 · 注意力权重 α = softmax_row(S')",
    .step5_note = "每一行取指数后除以该行之和，成为对所有词的概率分布。",
    .row_max = "先减去该行最大值 m（结果不变，且 e^x 不会溢出）",
    .exponentials = "e^(S' − m)",
    .row_sum = "求和",
    .row_sums = "α 每一行之和都是 1",
    .heat_map = "α 热力图（颜色越深，注意力越多）",
    .step6 = "第 6 步 · 输出 O = α·V",
    .step6_note = "第 i 行是所有值向量按 α 第 i 行加权的平均：词 i 融合上下文后的新表示。",
    .diagonal = "练习 2 · 对角线 S_ii 是否是该行最大的分数？",
    .diagonal_yes = "是",
    .diagonal_no = "否，该行最大的分数属于",
    .exercise5 = "练习 5 · 比较 output[0] 与 V[0]",
    .exercise5_note = "差值就是其他词贡献的信息：o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)。",
    .norm = "长度",
    .summary = "维度的流动",
    .walk_help = R"(用法：attn walk [选项]

计算课程中的示例（猫 坐 地毯，d_model = 4，d_k = d_v = 3），打印每个中间结果：维度、X、权重、
Q、K、V、分数 S、缩放后的分数、softmax 权重 α、输出，以及练习 2 和练习 5。

选项：
  --lang en|zh           语言（默认取自 LANG）
  --causal               使用因果掩码（练习 4）
  --scale sqrt|dk|none   分数除以 √d_k（默认）、除以 d_k，或不缩放（练习 1）
  --backend naive|simd|parallel
                         计算每一步所用的内核（默认 naive：教科书式循环）
  --precision N          小数位数，0 到 8（默认 4）
  --color auto|always|never
                         热力图颜色（默认 auto：仅在终端中显示，设置 NO_COLOR 时不显示）
  -h, --help             显示本帮助
)",
};

}  // namespace

const Text& text(Lang lang) { return lang == Lang::zh ? chinese : english; }

}  // namespace attn::cli
