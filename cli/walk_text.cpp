// cli/walk_text.cpp — the sentences of `attn walk`, in English and Chinese, formulas marked with $…$.
#include "cli/walk_text.hpp"

#include <stdexcept>

namespace attn::cli {

namespace {

const char* scaling_note(Lang l, Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk:
            return tr(l,
                      "if $q$ and $k$ have $d_k$ independent unit-variance entries, $Var(q·k) = d_k$; dividing by "
                      "$√d_k$ brings it back to 1, so the softmax does not saturate as $d_k$ grows. The lesson counts "
                      "this as required for numerical stability, not as an optional trick: left unscaled, the scores "
                      "grow with $d_k$, the softmax comes close to one-hot, its gradients all but vanish, and "
                      "training can hardly teach a row to spread its attention (attn exercise 1 shows it).",
                      "若 $q$、$k$ 各有 $d_k$ 个独立的单位方差分量，则 $Var(q·k) = d_k$；除以 $√d_k$ 使方差回到 "
                      "1，softmax 不会随 $d_k$ 增大而饱和。课程把这一步视为保证数值稳定的必要措施，而不是可有可无的"
                      "技巧：若不缩放，分数随 $d_k$ 变大，softmax 的输出接近 one-hot，梯度几乎消失，训练很难让一个"
                      "词的注意力分散到多个词上（attn exercise 1 有实测）。");
        case Scale::dk:
            return tr(l,
                      "dividing by $d_k$ instead leaves $Var(S'_ij) = d_k/d_k² = 1/d_k$: the larger $d_k$, the closer "
                      "the scores sit to 0 and the flatter $α$ becomes (attn exercise 1 measures it).",
                      "改为除以 $d_k$ 时 $Var(S'_ij) = d_k/d_k² = 1/d_k$：$d_k$ 越大，分数越贴近 0，$α$ 越平坦（attn "
                      "exercise 1 有实测）。");
        case Scale::none:
            return tr(l,
                      "unscaled, $Var(S_ij) = d_k$: the larger $d_k$, the wider the scores spread and the closer the "
                      "softmax comes to picking one token (attn exercise 1 measures it).",
                      "不缩放时 $Var(S_ij) = d_k$：$d_k$ 越大，分数越分散，softmax 越接近只选一个词（attn exercise 1 "
                      "有实测）。");
    }
    return "";
}

}  // namespace

WalkText::WalkText(Lang l, Scale scale)
    : sentences_{
          {"indices",
           tr(l,
              "Indices count from 1, as in the lesson: $x₁$ is row 1 of $X$ and $o₁$ is row 1 of $O$, the row that "
              "0-based code (C++, NumPy, PyTorch) calls output[0].",
              "下标与课程一致，从 1 开始：$x₁$ 是 $X$ 的第 1 行，$o₁$ 是 $O$ 的第 1 行，即从 0 "
              "计数的代码（C++、NumPy、PyTorch）中的 output[0]。")},
          {"expanded", tr(l, "One entry written out", "展开其中一项")},
          {"title.1", tr(l, "Step 1 · Input $X$", "第 1 步 · 输入 $X$")},
          {"note.1", tr(l, "each row is one token's embedding; no token knows its neighbours yet.",
                        "每一行是一个词的嵌入向量；此时每个词还不了解上下文。")},
          {"title.2", tr(l, "Step 2 · Projections $Q = X·W_Q$, $K = X·W_K$, $V = X·W_V$",
                         "第 2 步 · 线性投影 $Q = X·W_Q$，$K = X·W_K$，$V = X·W_V$")},
          {"note.2", tr(l, "three learned matrices give each token a query, a key and a value.",
                        "三个可学习的矩阵为每个词分别生成 Query、Key 和 Value。")},
          {"weights",
           tr(l,
              "$W_Q$, $W_K$ and $W_V$ are this project's choice (attention/worked_example.hpp): the lesson uses them "
              "but never prints them. $X$ is the lesson's own; every number after it follows from these weights.",
              "$W_Q$、$W_K$、$W_V$ 由本项目选定（attention/worked_example.hpp）：课程用到它们，但没有给出数值。$X$ "
              "取自课程；其后的每个数都由这些权重算出。")},
          {"column1", tr(l, "column 1 of $W_Q$", "$W_Q$ 的第 1 列")},
          {"title.3", tr(l, "Step 3 · Scores $S = Q·Kᵀ$", "第 3 步 · 注意力分数 $S = Q·Kᵀ$")},
          {"note.3", tr(l,
                        "$S_ij = q_i·k_j$: how well query $i$ matches key $j$. $Kᵀ$ turns the rows of $K$ into "
                        "columns, so that row $i$ times column $j$ is that dot product.",
                        "$S_ij = q_i·k_j$：Query $i$ 与 Key $j$ 的匹配程度。转置把 $K$ 的行变成列，第 $i$ 行乘第 $j$ "
                        "列恰好是这个点积。")},
          {"transpose", tr(l, "Why $Kᵀ$ and not $K$?", "第 3 步为什么用 $Kᵀ$ 而不是 $K$？")},
          {"transpose_note", tr(l,
                                "$(Q·K)_ij = Σ_p Q_ip·K_pj$ multiplies the features of query $i$ with feature $j$ "
                                "of every key: it compares no query with any key.",
                                "$(Q·K)_ij = Σ_p Q_ip·K_pj$ 把 Query $i$ 的各个特征与所有 Key 的第 $j$ "
                                "个特征相乘：它没有拿任何 Query 去比较任何 Key。")},
          {"transpose_square", tr(l, "It is shape-valid here only because $n = d_k$; otherwise the product is refused.",
                                  "这里能相乘只是因为恰好 $n = d_k$；形状不同时，矩阵乘法会报错。")},
          {"transpose_refused", tr(l, "Here $n = {}$ and $d_k = {}$: $Q·K$ is not defined, and the product is refused.",
                                   "这里 $n = {}$、$d_k = {}$：$Q·K$ 无法相乘，矩阵乘法会报错。")},
          {"same_in_S", tr(l, "the same position in $S$", "$S$ 中同一位置")},
          {"confusion1", tr(l, "Confusion 1 · Why does $Q·Kᵀ$ tell how the tokens relate?",
                            "容易搞混的问题 1 · $Q·Kᵀ$ 为什么是词与词的关系矩阵？")},
          {"confusion1_note",
           tr(l,
              "$S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij$ grows as query $i$ and key $j$ point the same way. Which "
              "directions count as related is no fixed rule of grammar: $W_Q$ and $W_K$ are learned, so \"related\" "
              "means whatever training found useful.",
              "$S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij$：Query $i$ 与 Key $j$ "
              "的方向越一致，分数越高。哪些方向算“相关”，并不是语法上定好的标签：$W_Q$ 和 $W_K$ "
              "都是学出来的，所谓相关，就是训练中发现有用的那种关系。")},
          {"cosines", "$cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)$"},
          {"other_keys",
           tr(l, "The same $X$ with another $W_K$ (here $W_K = W_Q$, standing in for a model trained differently)",
              "同一个 $X$，换一个 $W_K$（这里取 $W_K = W_Q$，代表另一种训练结果）")},
          {"row_largest", tr(l, "largest score of each row", "每行最大的分数")},
          {"with_example_keys", tr(l, "with the example's $W_K$", "示例中的 $W_K$")},
          {"title.4", tr(l, "Step 4 · Scaling", "第 4 步 · 缩放")},
          {"note.4", scaling_note(l, scale)},
          {"title.mask", tr(l, "Step 4½ · Causal mask", "第 4½ 步 · 因果掩码")},
          {"note.mask", tr(l, "$S'_ij = −∞$ for $j > i$: $e^−∞ = 0$, so token $i$ gets no weight from later tokens.",
                           "$j > i$ 时 $S'_ij = −∞$：$e^−∞ = 0$，词 $i$ 得不到后面词的任何权重。")},
          {"title.5",
           tr(l, "Step 5 · Attention weights $α = softmax_row(S')$", "第 5 步 · 注意力权重 $α = softmax_row(S')$")},
          {"note.5", tr(l,
                        "each entry is exponentiated and divided by its row's sum: each row becomes a probability "
                        "distribution over the tokens.",
                        "每一行取指数后除以该行之和，成为对所有词的概率分布。")},
          {"row_max", tr(l, "subtract the row maximum $m$ (changes nothing, keeps $e^x$ from overflowing)",
                         "先减去该行最大值 $m$（结果不变，且 $e^x$ 不会溢出）")},
          {"sum", tr(l, "sum", "求和")},
          {"row_sums", tr(l, "Every row of $α$ sums to 1", "$α$ 每一行之和都是 1")},
          {"heat", tr(l, "$α$ as a heat map (darker = more attention)", "$α$ 热力图（颜色越深，注意力越多）")},
          {"confusion2", tr(l, "Confusion 2 · Why softmax along rows and not down columns?",
                            "容易搞混的问题 2 · softmax 为什么按行做，而不是按列？")},
          {"confusion2_note",
           tr(l,
              "row $i$ shares out the attention of query $i$ over every position. Taken down each column instead, "
              "every column sums to 1 and the rows do not: column $j$ would say how strongly all the queries compete "
              "for position $j$, another question, and $o_i = Σ_j α_ij·v_j$ would no longer be an average of the "
              "values.",
              "第 $i$ 行是 Query $i$ 把注意力分给所有位置的方式。若按列做 softmax，每一列之和为 1，各行之和却不是 "
              "1：第 $j$ 列表示的是所有 Query 争夺位置 $j$ 的程度，回答的是另一个问题；$o_i = Σ_j α_ij·v_j$ "
              "也不再是 Value 向量的加权平均。")},
          {"by_column", tr(l, "softmax down each column of $S'$", "对 $S'$ 的每一列做 softmax")},
          {"column_sums", tr(l, "column sums", "各列之和")},
          {"row_sums_short", tr(l, "row sums", "各行之和")},
          {"title.6", tr(l, "Step 6 · Output $O = α·V$", "第 6 步 · 输出 $O = α·V$")},
          {"note.6", tr(l,
                        "row $i$ is the $α$-weighted average of all value vectors: token $i$'s new, context-aware "
                        "representation.",
                        "第 $i$ 行是所有 Value 向量按 $α$ 第 $i$ 行加权的平均：词 $i$ 融合上下文后的新表示。")},
          {"confusion3", tr(l, "Confusion 3 · Why is the output still one vector per token?",
                            "容易搞混的问题 3 · 为什么输出仍然是一个词一个向量？")},
          {"confusion3_note",
           tr(l,
              "$α·V$ is $(n×n)·(n×d_v) = n×d_v$: one row per token, as in $X$. The form is the same, the content is "
              "not: $x_i$ was token $i$'s embedding alone, blind to its neighbours; $o_i$ mixes every token's value, "
              "in the shares of row $i$ of $α$:",
              "$α·V$ 的形状是 $(n×n)·(n×d_v) = n×d_v$：和 $X$ 一样，每个词一行。形式相同，内容却不同：$x_i$ 只是词 "
              "$i$ 自己的嵌入，看不到上下文；$o_i$ 则按 $α$ 第 $i$ 行的比例，把所有词的 Value 向量混合在一起：")},
          {"exercise5", tr(l, "Exercise 5 · output[0] against V[0]", "练习 5 · 比较 output[0] 与 V[0]")},
          {"exercise5_note",
           tr(l, "the difference is what the other tokens contributed: $o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)$.",
              "差值就是其他词贡献的信息：$o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)$。")},
          {"exercise5_causal",
           tr(l,
              "under the causal mask token 1 sees only itself: $α₁₁ = 1$, so $o₁ = v₁$. The last token sees every "
              "token:",
              "使用因果掩码时，第 1 个词只能看到自己：$α₁₁ = 1$，所以 $o₁ = v₁$。最后一个词能看到所有词：")},
          {"length", tr(l, " (length)", "（长度）")},
          {"confusion4", tr(l, "Confusion 4 · How do $d_k$ and $d_model$ relate?",
                            "容易搞混的问题 4 · $d_k$ 与 $d_model$ 是什么关系？")},
          {"confusion4_note", tr(l,
                                 "one head may choose $d_k$ freely (here {}, with $d_model = {}$). With $h$ heads each "
                                 "gets $d_k = d_model / h$; the original Transformer:",
                                 "单头时 $d_k$ 可以自由选择（这里是 {}，$d_model = {}$）。$h$ 个头时每个头的宽度为 "
                                 "$d_k = d_model / h$；原始 Transformer：")},
          {"heads_cost",
           tr(l, "so the $h$ heads together cost what one head of width $d_model$ would: $h·n²·d_k = n²·d_model$",
              "所以 $h$ 个头合起来的开销与一个宽度为 $d_model$ 的头相同：$h·n²·d_k = n²·d_model$")},
      } {}

std::string WalkText::operator()(std::string_view key, std::initializer_list<std::string> values) const {
    for (const auto& [name, marked] : sentences_) {
        if (name != key) continue;
        std::string text;
        const std::string* value = values.begin();
        for (std::size_t k = 0; k < marked.size(); ++k) {
            if (marked[k] == '$') continue;
            if (marked.compare(k, 2, "{}") == 0 && value != values.end()) {
                text += *value++;
                ++k;
                continue;
            }
            text += marked[k];
        }
        return text;
    }
    throw std::logic_error("WalkText: no sentence '" + std::string(key) + "'");
}

}  // namespace attn::cli
