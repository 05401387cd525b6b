// cli/text.cpp — the sentences of `attn walk` in English and Chinese, and which language to use.
#include "cli/text.hpp"

#include <cstdlib>
#include <string_view>

#include "attention/worked_example.hpp"

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
    .colon = ": ",
    .comma = ", ",
    .semicolon = ";  ",
    .open = " (",
    .close = ")",
    .title = "Single-head scaled dot-product attention, one step at a time",
    .formula = "The whole chain in one line",
    .formula_lesson = "(the lesson divides by √d_k; this run does not)",
    .mask_term = "(M_ij = −∞ for j > i, else 0)",
    .conventions =
        "Indices count from 1, as in the lesson: x₁ is row 1 of X and o₁ is row 1 of O, the row that 0-based code "
        "(C++, NumPy, PyTorch) calls output[0].",
    .sentence = "Sentence",
    .settings = "Settings",
    .no_mask = "no mask",
    .causal_mask = "causal mask",
    .backend = "backend",
    .shapes_title = "Shapes",
    .shapes_note = "S and α are n×n whatever d_k is: that square is where attention's O(n²) cost comes from.",
    .step1 = "Step 1 · Input X",
    .step1_note = "each row is one token's embedding; no token knows its neighbours yet.",
    .step2 = "Step 2 · Projections Q = X·W_Q, K = X·W_K, V = X·W_V",
    .step2_note = "three learned matrices give each token a query, a key and a value.",
    .weights = "Weights",
    .weights_note =
        "W_Q, W_K and W_V are this project's choice (attention/worked_example.hpp): the lesson uses them but never "
        "prints them. X is the lesson's own; every number after it follows from these weights.",
    .column1_of_W_Q = "(column 1 of W_Q)",
    .step3 = "Step 3 · Scores S = Q·Kᵀ",
    .step3_note =
        "S_ij = q_i·k_j: how well query i matches key j. Kᵀ turns the rows of K into columns, so that row i times "
        "column j is that dot product.",
    .expanded = "One entry written out",
    .transpose = "Why Kᵀ and not K?",
    .transpose_note =
        "(Q·K)_ij = Σ_p Q_ip·K_pj multiplies the features of query i with feature j of every key: it compares no "
        "query with any key. It is shape-valid here only because n = d_k; otherwise the product is refused.",
    .transpose_compare = "the same position in S",
    .confusion1 = "Confusion 1 · Why does Q·Kᵀ tell how the tokens relate?",
    .confusion1_note =
        "S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij grows as query i and key j point the same way. Which directions count "
        "as related is no fixed rule of grammar: W_Q and W_K are learned, so \"related\" means whatever training "
        "found useful.",
    .cosines = "cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)",
    .other_keys = "The same X with another W_K (here W_K = W_Q, standing in for a model trained differently)",
    .row_largest = "largest score of each row",
    .with_example_keys = "with the example's W_K",
    .step4 = "Step 4 · Scaling S' = S",
    .step4_note_sqrt =
        "if q and k have d_k independent unit-variance entries, Var(q·k) = d_k; dividing by √d_k brings it back to 1, "
        "so the softmax does not saturate as d_k grows.",
    .step4_note_dk =
        "dividing by d_k instead leaves Var(S'_ij) = d_k/d_k² = 1/d_k: the larger d_k, the closer the scores sit to "
        "0 and the flatter α becomes (attn exercise 1 measures it).",
    .step4_note_none =
        "unscaled, Var(S_ij) = d_k: the larger d_k, the wider the scores spread and the closer the softmax comes to "
        "picking one token (attn exercise 1 measures it).",
    .step4_mask = "Step 4½ · Causal mask",
    .step4_mask_note = "S'_ij = −∞ for j > i: e^−∞ = 0, so token i gets no weight from later tokens.",
    .step5 = "Step 5 · Attention weights α = softmax_row(S')",
    .step5_note = "each row is made positive and divided by its sum: a probability distribution over the tokens.",
    .row_max = "subtract the row maximum m (changes nothing, keeps e^x from overflowing)",
    .exponentials = "e^(S' − m)",
    .row_sum = "sum",
    .row_sums = "Every row of α sums to 1",
    .heat_map = "α as a heat map (darker = more attention)",
    .confusion2 = "Confusion 2 · Why softmax along rows and not down columns?",
    .confusion2_note =
        "row i shares out the attention of query i over every position. Taken down each column instead, every column "
        "sums to 1 and the rows do not: column j would say how strongly all the queries compete for position j, "
        "another question, and o_i = Σ_j α_ij·v_j would no longer be an average of the values.",
    .column_sums = "column sums",
    .row_sums_now = "row sums",
    .step6 = "Step 6 · Output O = α·V",
    .step6_note = "row i is the α-weighted average of all value vectors: token i's new, context-aware representation.",
    .confusion3 = "Confusion 3 · Why is the output still one vector per token?",
    .confusion3_note =
        "α·V is (n×n)·(n×d_v) = n×d_v: one row per token, as in X. The form is the same, the content is not: x_i was "
        "token i's embedding alone, blind to its neighbours; o_i mixes every token's value, in the shares of row i "
        "of α:",
    .diagonal =
        "Exercise 2 · What is the diagonal S_ii, and is it the largest score in its row?\n"
        "  S_ii = q_i·k_i: token i's query scored against its own key, the raw score it gives itself before the "
        "softmax",
    .diagonal_yes = "yes",
    .diagonal_no = "no, the row's largest score is with",
    .exercise5 = "Exercise 5 · output[0] against V[0]",
    .exercise5_note = "the difference is what the other tokens contributed: o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁).",
    .exercise5_causal =
        "under the causal mask token 1 sees only itself: α₁₁ = 1, so o₁ = v₁. The last token sees every token:",
    .norm = " (length)",
    .summary = "How the shapes flowed",
    .confusion4 = "Confusion 4 · How do d_k and d_model relate?",
    .confusion4_note =
        "one head may choose d_k freely (here 3, with d_model = 4). With h heads each gets d_k = d_model / h; the "
        "original Transformer:",
    .confusion4_cost = "so the h heads together cost what one head of width d_model would: h·n²·d_k = n²·d_model",
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
  --format text|json     json: every matrix at full precision, for programs (the docs pages use it)
  -h, --help             this text
)",
};

const Text chinese{
    .colon = "：",
    .comma = "，",
    .semicolon = "；",
    .open = "（",
    .close = "）",
    .title = "单头缩放点积注意力，逐步计算",
    .formula = "整条计算链写成一行",
    .formula_lesson = "（课程中除以 √d_k；本次运行没有）",
    .mask_term = "（j > i 时 M_ij = −∞，否则为 0）",
    .conventions =
        "下标与课程一致，从 1 开始：x₁ 是 X 的第 1 行，o₁ 是 O 的第 1 行，即从 0 计数的代码（C++、NumPy、PyTorch）中的 "
        "output[0]。",
    .sentence = "句子",
    .settings = "设置",
    .no_mask = "无掩码",
    .causal_mask = "因果掩码",
    .backend = "后端",
    .shapes_title = "形状",
    .shapes_note = "无论 d_k 多大，S 和 α 都是 n×n：注意力 O(n²) 的开销正来自这个方阵。",
    .step1 = "第 1 步 · 输入 X",
    .step1_note = "每一行是一个词的嵌入向量；此时每个词还不了解上下文。",
    .step2 = "第 2 步 · 线性投影 Q = X·W_Q，K = X·W_K，V = X·W_V",
    .step2_note = "三个可学习的矩阵为每个词分别生成查询、键和值。",
    .weights = "权重",
    .weights_note =
        "W_Q、W_K、W_V 由本项目选定（attention/worked_example.hpp）：课程用到它们，但没有给出数值。X "
        "取自课程；其后的每个数都由这些权重算出。",
    .column1_of_W_Q = "（W_Q 的第 1 列）",
    .step3 = "第 3 步 · 注意力分数 S = Q·Kᵀ",
    .step3_note = "S_ij = q_i·k_j：查询 i 与键 j 的匹配程度。转置把 K 的行变成列，第 i 行乘第 j 列恰好是这个点积。",
    .expanded = "展开其中一项",
    .transpose = "第 3 步为什么用 Kᵀ 而不是 K？",
    .transpose_note =
        "(Q·K)_ij = Σ_p Q_ip·K_pj 把查询 i 的各个特征与所有键的第 j 个特征相乘：它没有拿任何查询去比较任何键。"
        "这里能相乘只是因为恰好 n = d_k；形状不同时，矩阵乘法会报错。",
    .transpose_compare = "S 中同一位置",
    .confusion1 = "容易混淆的问题 1 · Q·Kᵀ 为什么能表示词与词之间的关系？",
    .confusion1_note =
        "S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij：查询 i 与键 j 的方向越一致，分数越高。哪些方向算“相关”，"
        "并不是语法上定好的标签：W_Q 和 W_K 都是学出来的，所谓相关，就是训练中发现有用的那种关系。",
    .cosines = "cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)",
    .other_keys = "同一个 X，换一个 W_K（这里取 W_K = W_Q，代表另一种训练结果）",
    .row_largest = "每行最大的分数",
    .with_example_keys = "示例中的 W_K",
    .step4 = "第 4 步 · 缩放 S' = S",
    .step4_note_sqrt =
        "若 q、k 各有 d_k 个独立的单位方差分量，则 Var(q·k) = d_k；除以 √d_k 使方差回到 1，softmax 不会随 d_k "
        "增大而饱和。",
    .step4_note_dk =
        "改为除以 d_k 时 Var(S'_ij) = d_k/d_k² = 1/d_k：d_k 越大，分数越贴近 0，α 越平坦（attn exercise 1 有实测）。",
    .step4_note_none =
        "不缩放时 Var(S_ij) = d_k：d_k 越大，分数越分散，softmax 越接近只选一个词（attn exercise 1 有实测）。",
    .step4_mask = "第 4½ 步 · 因果掩码",
    .step4_mask_note = "j > i 时 S'_ij = −∞：e^−∞ = 0，词 i 得不到后面词的任何权重。",
    .step5 = "第 5 步 · 注意力权重 α = softmax_row(S')",
    .step5_note = "每一行取指数后除以该行之和，成为对所有词的概率分布。",
    .row_max = "先减去该行最大值 m（结果不变，且 e^x 不会溢出）",
    .exponentials = "e^(S' − m)",
    .row_sum = "求和",
    .row_sums = "α 每一行之和都是 1",
    .heat_map = "α 热力图（颜色越深，注意力越多）",
    .confusion2 = "容易混淆的问题 2 · softmax 为什么按行做，而不是按列？",
    .confusion2_note =
        "第 i 行是查询 i 把注意力分给所有位置的方式。若按列做 softmax，每一列之和为 1，各行之和却不是 1：第 j "
        "列表示的是所有查询争夺位置 j 的程度，回答的是另一个问题；o_i = Σ_j α_ij·v_j 也不再是值向量的加权平均。",
    .column_sums = "各列之和",
    .row_sums_now = "各行之和",
    .step6 = "第 6 步 · 输出 O = α·V",
    .step6_note = "第 i 行是所有值向量按 α 第 i 行加权的平均：词 i 融合上下文后的新表示。",
    .confusion3 = "容易混淆的问题 3 · 为什么输出仍然是一个词一个向量？",
    .confusion3_note =
        "α·V 的形状是 (n×n)·(n×d_v) = n×d_v：和 X 一样，每个词一行。形式相同，内容却不同：x_i 只是词 i "
        "自己的嵌入，看不到上下文；o_i 则按 α 第 i 行的比例，把所有词的值向量混合在一起：",
    .diagonal =
        "练习 2 · 对角线上的 S_ii 是什么含义？它总是该行最大的分数吗？\n"
        "  S_ii = q_i·k_i：第 i 个词的 query 与它自己的 key 的点积，也就是 softmax 之前它给自己的原始分数",
    .diagonal_yes = "是",
    .diagonal_no = "否，该行最大的分数属于",
    .exercise5 = "练习 5 · 比较 output[0] 与 V[0]",
    .exercise5_note = "差值就是其他词贡献的信息：o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)。",
    .exercise5_causal = "使用因果掩码时，第 1 个词只能看到自己：α₁₁ = 1，所以 o₁ = v₁。最后一个词能看到所有词：",
    .norm = "（长度）",
    .summary = "各步的形状",
    .confusion4 = "容易混淆的问题 4 · d_k 与 d_model 是什么关系？",
    .confusion4_note =
        "单头时 d_k 可以自由选择（这里是 3，d_model = 4）。h 个头时每个头的宽度为 d_k = d_model / h；原始 "
        "Transformer：",
    .confusion4_cost = "所以 h 个头合起来的开销与一个宽度为 d_model 的头相同：h·n²·d_k = n²·d_model",
    .walk_help = R"(用法：attn walk [选项]

计算课程中的示例（猫 坐 地毯，d_model = 4，d_k = d_v = 3），打印每个中间结果：形状、X、权重、
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
  --format text|json     json：以完整精度输出所有矩阵，供程序读取（文档页面由此生成）
  -h, --help             显示本帮助
)",
};

}  // namespace

const Text& text(Lang lang) { return lang == Lang::zh ? chinese : english; }

std::vector<std::string> example_tokens(Lang lang) {
    return lang == Lang::zh ? worked_example::tokens_zh() : worked_example::tokens_en();
}

}  // namespace attn::cli
