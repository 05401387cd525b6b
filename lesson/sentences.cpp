// lesson/sentences.cpp — the sentences of the walk, in English and Chinese, formulas marked with $…$.
// Each table has one entry per identifier, in the identifiers' order (lesson/sentence_table.hpp).
#include "lesson/sentences.hpp"

#include "lesson/sentence_table.hpp"

namespace attn::lesson {

namespace {

using table::complete;
using table::KeyedTable;
using table::Table;

using S = Sentence;
constexpr Table<Sentence> sentences{{
    {S::indices,
     "Indices count from 1, as in the lesson: $x₁$ is row 1 of $X$ and $o₁$ is row 1 of $O$, the row that 0-based "
     "code (C++, NumPy, PyTorch) calls output[0].",
     "下标与课程一致，从 1 开始：$x₁$ 是 $X$ 的第 1 行，$o₁$ 是 $O$ 的第 1 行，即从 0 "
     "计数的代码（C++、NumPy、PyTorch）中的 output[0]。"},
    {S::expanded, "One entry written out", "展开其中一项"},
    {S::expanded_row, "One row written out", "展开其中一行"},
    {S::title_1, "Step 1 · Input", "第 1 步 · 输入"},
    {S::note_1, "each row is one token's embedding; no token knows its neighbours yet.",
     "每一行是一个词的嵌入向量；此时每个词还不知道上下文。"},
    {S::title_2, "Step 2 · Projections", "第 2 步 · 线性投影"},
    {S::note_2, "three learned matrices give each token a query, a key and a value.",
     "三个可学习的矩阵为每个词分别生成 Query、Key 和 Value。"},
    {S::weights,
     "$W_Q$, $W_K$ and $W_V$ are this project's choice (lesson/worked_example.hpp): the lesson uses them but "
     "never prints them. $X$ is the lesson's own; every number after it follows from these weights.",
     "$W_Q$、$W_K$、$W_V$ 由本项目选定（lesson/worked_example.hpp）。课程用到了它们，但没有给出数值。$X$ "
     "取自课程；之后的每个数都由它和这些权重算出。"},
    {S::column1, "column 1 of $W_Q$", "$W_Q$ 的第 1 列"},
    {S::title_3, "Step 3 · Scores", "第 3 步 · 注意力分数"},
    {S::note_3,
     "$S_ij = q_i·k_j$: how well query $i$ matches key $j$. $Kᵀ$ turns the rows of $K$ into columns, so that row "
     "$i$ times column $j$ is that dot product.",
     "$S_ij = q_i·k_j$ 表示 Query $i$ 与 Key $j$ 的匹配程度。转置把 $K$ 的行变成列，于是 $Q$ 的第 $i$ 行乘 "
     "$Kᵀ$ 的第 $j$ 列恰好就是这个点积。"},
    {S::transpose, "Why $Kᵀ$ and not $K$?", "第 3 步为什么用 $Kᵀ$ 而不是 $K$？"},
    {S::transpose_note,
     "$(Q·K)_ij = Σ_p Q_ip·K_pj$ multiplies the features of query $i$ with feature $j$ of every key: it compares "
     "no query with any key.",
     "$(Q·K)_ij = Σ_p Q_ip·K_pj$ 把 Query $i$ 的各个特征与每个 Key 的第 $j$ "
     "个特征相乘：这并不是在拿某个 Query 与某个 Key 作比较。"},
    {S::transpose_square, "It is shape-valid here only because $n = d_k$; otherwise the product is refused.",
     "这里能相乘只是因为恰好 $n = d_k$；形状不同时，矩阵乘法会报错。"},
    {S::transpose_refused, "Here $n = {}$ and $d_k = {}$: $Q·K$ is not defined, and the product is refused.",
     "这里 $n = {}$、$d_k = {}$：$Q·K$ 的形状不匹配，矩阵乘法会报错。"},
    {S::same_in_S, "the same position in $S$", "$S$ 中同一位置"},
    {S::confusion1, "Confusion 1 · Why does $Q·Kᵀ$ tell how the tokens relate?",
     "容易搞混的问题 1 · $Q·Kᵀ$ 为什么是词与词的关系矩阵？"},
    {S::confusion1_note,
     "$S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij$ grows as query $i$ and key $j$ point the same way. What counts as "
     "related is no fixed linguistic label: $W_Q$ and $W_K$ are learned, so \"related\" means whatever training "
     "found useful.",
     "$S_ij = q_i·k_j = ‖q_i‖·‖k_j‖·cos θ_ij$：Query $i$ 与 Key $j$ "
     "的方向越一致，分数越高。这里的“相关”并不是固定的语言学标签：$W_Q$ 和 $W_K$ "
     "都是训练学到的，所谓相关，就是训练中发现有用的那种关系。"},
    {S::cosines, "$cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)$", "$cos θ_ij = S_ij / (‖q_i‖·‖k_j‖)$"},
    {S::other_keys, "The same $X$ with another $W_K$ (here $W_K = W_Q$, standing in for a model trained differently)",
     "同一个 $X$，换一个 $W_K$（这里取 $W_K = W_Q$，代表另一种训练结果）"},
    {S::row_largest, "each row's highest-scoring key", "每行得分最高的 Key"},
    {S::with_example_keys, "with the example's $W_K$", "用示例中的 $W_K$ 时"},
    {S::title_4, "Step 4 · Scaled scores", "第 4 步 · 缩放后的分数"},
    {S::note_4_sqrt_dk,
     "if $q$ and $k$ have $d_k$ independent entries, each of mean 0 and variance 1, $Var(q·k) = d_k$; dividing by "
     "$√d_k$ brings it back to 1, so the softmax does not saturate as $d_k$ grows. The lesson counts this as "
     "required for numerical stability, not as an optional trick: left unscaled, the scores grow with $d_k$, the "
     "softmax comes close to one-hot, its gradients all but vanish, and training can hardly teach a row to spread "
     "its attention (attn exercise 1 shows it).",
     "若 $q$、$k$ 各有 $d_k$ 个相互独立、均值为 0、方差为 1 的分量，则 $Var(q·k) = d_k$；除以 $√d_k$ "
     "使方差回到 1，softmax 就不会随 $d_k$ 增大而饱和。课程把这一步视为保证数值稳定的必要措施，而不是可有可无的"
     "技巧：若不缩放，分数随 $d_k$ 变大，softmax 的输出接近 one-hot，梯度几乎消失，训练很难让一个"
     "词的注意力分散到多个词上（attn exercise 1 有实测）。"},
    {S::note_4_dk,
     "if $q$ and $k$ have $d_k$ independent entries, each of mean 0 and variance 1 (the worked example's $S$ "
     "comes from chosen weights and meets none of this), dividing by $d_k$ instead leaves "
     "$Var(S'_ij) = d_k/d_k² = 1/d_k$: the larger $d_k$, the closer the scores sit to 0 and the flatter $α$ "
     "becomes (attn exercise 1 measures it on such entries).",
     "若 $q$、$k$ 各有 $d_k$ 个相互独立、均值为 0、方差为 1 的分量（示例中的 $S$ 由选定的权重算出，并不满足这些"
     "假设），改为除以 $d_k$ 时 $Var(S'_ij) = d_k/d_k² = 1/d_k$：$d_k$ 越大，分数越接近 0，$α$ 越接近均匀分布"
     "（attn exercise 1 在满足假设的分量上实测了这一点）。"},
    {S::note_4_none,
     "if $q$ and $k$ have $d_k$ independent entries, each of mean 0 and variance 1 (the worked example's $S$ "
     "comes from chosen weights and meets none of this), unscaled scores have $Var(S_ij) = d_k$: the larger "
     "$d_k$, the wider they spread and the closer the softmax comes to picking one token (attn exercise 1 "
     "measures it on such entries).",
     "若 $q$、$k$ 各有 $d_k$ 个相互独立、均值为 0、方差为 1 的分量（示例中的 $S$ 由选定的权重算出，并不满足这些"
     "假设），不缩放时 $Var(S_ij) = d_k$：$d_k$ 越大，分数越分散，softmax 越接近只选一个词（attn exercise 1 "
     "在满足假设的分量上实测了这一点）。"},
    {S::title_mask, "Step 4½ · Causal mask", "第 4½ 步 · 因果掩码"},
    {S::note_mask,
     "$S'_ij = −∞$ for $j > i$: $e^−∞ = 0$, so row $i$ gives later tokens no weight and $o_i$ takes nothing from "
     "them.",
     "$j > i$ 时 $S'_ij = −∞$：$e^−∞ = 0$，所以第 $i$ 行分给后面各词的权重都是 0，$o_i$ 不含它们的任何成分。"},
    {S::title_5, "Step 5 · Attention weights", "第 5 步 · 注意力权重"},
    {S::note_5,
     "each score is exponentiated, and each row's exponentials are divided by their sum: each row becomes a "
     "probability distribution over the tokens.",
     "每个缩放后的分数取指数，再除以该行所有指数之和，于是每一行都成为所有词上的一个概率分布。"},
    {S::row_max, "subtract the row maximum $m$ (changes nothing, keeps $e^x$ from overflowing)",
     "先减去该行最大值 $m$（结果不变，且 $e^x$ 不会溢出）"},
    {S::sum, "sum", "求和"},
    {S::row_sums, "Every row of $α$ sums to 1", "$α$ 每一行之和都是 1"},
    {S::heat, "$α$ as a heat map (darker = more attention)", "$α$ 热力图（颜色越深，分到的注意力越多）"},
    {S::confusion2, "Confusion 2 · Why softmax along rows and not down columns?",
     "容易搞混的问题 2 · softmax 为什么按行做，而不是按列？"},
    {S::confusion2_note,
     "row $i$ shares out the attention of query $i$ over every position. Taken down each column instead, every "
     "column sums to 1 and the rows do not: column $j$ would say how strongly all the queries compete for position "
     "$j$, another question, and $o_i = Σ_j α_ij·v_j$ would no longer be an average of the values.",
     "第 $i$ 行表示 Query $i$ 如何把注意力分配给所有位置。若按列做 softmax，每一列之和为 1，各行之和却不是 "
     "1：第 $j$ 列表示的是所有 Query 争夺位置 $j$ 的程度，回答的是另一个问题；$o_i = Σ_j α_ij·v_j$ "
     "也不再是 Value 向量的加权平均。"},
    {S::by_column, "softmax down each column of $S'$", "对 $S'$ 的每一列做 softmax"},
    {S::column_sums, "column sums", "各列之和"},
    {S::row_sums_short, "row sums", "各行之和"},
    {S::title_6, "Step 6 · Output", "第 6 步 · 输出"},
    {S::note_6,
     "row $i$ is the $α$-weighted average of all value vectors: token $i$'s new, context-aware representation.",
     "第 $i$ 行是所有 Value 向量的加权平均，权重取自 $α$ 的第 $i$ 行；这就是词 $i$ 融合上下文后的新表示。"},
    {S::confusion3, "Confusion 3 · Why is the output still one vector per token?",
     "容易搞混的问题 3 · 为什么输出仍然是一个词一个向量？"},
    {S::confusion3_note,
     "$α·V$ is $(n×n)·(n×d_v) = n×d_v$: one row per token, as in $X$. The form is the same, the content is not: "
     "$x_i$ is token $i$'s static embedding, blind to its neighbours; $o_i$ is its dynamic representation, which "
     "mixes every token's value in the shares of row $i$ of $α$:",
     "$α·V$ 的形状是 $(n×n)·(n×d_v) = n×d_v$：和 $X$ 一样，每个词一行。形式相同，内容却不同：$x_i$ 是词 $i$ "
     "的静态嵌入，不知道上下文；$o_i$ 是它的动态表示，按 $α$ 第 $i$ 行的比例，把所有词的 Value 向量混合在一起："},
    {S::exercise2, "Exercise 2 · What is the diagonal $S_ii$, and is it the largest score in its row?",
     "练习 2 · 对角线上的 $S_ii$ 是什么含义？它总是该行最大的分数吗？"},
    {S::exercise2_note,
     "$S_ii = q_i·k_i$: token $i$'s query scored against its own key, the raw score it gives itself before the "
     "softmax",
     "$S_ii = q_i·k_i$：第 $i$ 个词的 Query 与它自己的 Key 的点积，也就是 softmax 之前它给自己的原始分数"},
    {S::diagonal_yes, "yes", "是"},
    {S::diagonal_no, "no, the row's largest score is with {}", "否，该行最大的分数在“{}”这一列"},
    {S::exercise5, "Exercise 5 · output[0] against V[0]", "练习 5 · 比较 output[0] 与 V[0]"},
    {S::exercise5_note,
     "since $Σ_j α₁ⱼ = 1$, $o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)$: the difference is what the other tokens contributed, "
     "each in proportion to its weight.",
     "由于 $Σ_j α₁ⱼ = 1$，$o₁ − v₁ = Σ_j α₁ⱼ·(v_j − v₁)$：差值就是其他词按各自权重贡献的信息。"},
    {S::exercise5_causal,
     "under the causal mask token 1 sees only itself: $α₁₁ = 1$, so $o₁ = v₁$. The last token sees every token:",
     "使用因果掩码时，第 1 个词只能看到自己：$α₁₁ = 1$，所以 $o₁ = v₁$。最后一个词能看到所有词："},
    {S::length, " (length)", "（长度）"},
    {S::written_in_step_6, "{} as step 6 wrote it out above.", "{} 已在上文第 6 步展开。"},
    {S::shapes_flowed, "How the shapes flowed", "各步的形状"},
    {S::confusion4, "Confusion 4 · How do $d_k$ and $d_model$ relate?",
     "容易搞混的问题 4 · $d_k$ 与 $d_model$ 是什么关系？"},
    {S::confusion4_note,
     "one head may choose $d_k$ freely (here {}, with $d_model = {}$), under the lesson's one constraint: the larger "
     "$d_k$, the larger the variance of $q·k$, hence the division by $√d_k$ (step 4). With $h$ heads, each "
     "usually gets $d_k = d_model / h$, a convention rather than a rule; for example, the original Transformer "
     "has $d_model = {}$ and $h = {}$:",
     "单头时 $d_k$ 可以自由设定（这里取 {}，而 $d_model = {}$），约束只有一个：$d_k$ 越大，$q·k$ "
     "的方差越大，所以必须除以 $√d_k$（第 4 步）。有 $h$ 个头时，通常每个头的宽度为 $d_k = d_model / h$，例如原始 "
     "Transformer 中 $d_model = {}$、$h = {}$："},
    {S::heads_cost,
     "so the $h$ heads together take as many multiply-adds for their scores as one head of width $d_model$ would: "
     "$h·n²·d_k = n²·d_model$",
     "所以 $h$ 个头计算分数的总乘加次数与一个宽度为 $d_model$ 的头相同：$h·n²·d_k = n²·d_model$"},
    {S::title_fused, "The fused pass, walked: steps 3–6 key by key", "融合计算逐步演示：逐个 Key 完成第 3–6 步"},
    {S::note_fused,
     "the fused kernel never stores $S$ or $α$. It takes a query row's keys in turn and keeps three things: the "
     "largest score $m$ seen so far, the sum $ℓ = Σ_j e^(s_j − m)$ over the keys seen, and the unnormalised output "
     "$o = Σ_j e^(s_j − m)·v_j$. A key that raises the maximum from $m_old$ to $m$ first rescales $ℓ$ and $o$ by "
     "$e^(m_old − m)$, so that every term is taken against the same maximum; after the last key the row of $O$ is $o / "
     "ℓ$, the same "
     "weighted average as step 6 without a single $α_ij$ written down. Many heads and the decode kernel rest on "
     "the same idea.",
     "融合内核从不存储 $S$ 或 $α$。它按顺序处理一个 Query 行的各个 Key，只保留三样东西：目前见过的最大分数 $m$、"
     "已见 Key 的 $ℓ = Σ_j e^(s_j − m)$，以及未归一化的输出 $o = Σ_j e^(s_j − m)·v_j$。若某个 Key 把最大值从 $m_old$ "
     "抬高到 $m$，就先把 $ℓ$ 和 $o$ 乘以 $e^(m_old − m)$，使每一项都相对同一个最大值；最后一个 Key 之后，$O$ 的这一行"
     "就是 $o / ℓ$，与第 6 步的加权平均相同，却没有写下任何一个 $α_ij$。多头注意力和解码内核也都建立在这个思路上。"},
    {S::fused_why_m,
     "Why subtract $m$ at all: $e^x$ overflows float32 once $x$ passes about 88.7, so step 5 already subtracts "
     "its row's maximum, which changes nothing, since $e^(−m)$ cancels between each term and the sum. Here the "
     "maximum is not known before the last key, so the largest score seen so far stands in for it.",
     "为什么要减去 $m$：$x$ 超过约 88.7 时 $e^x$ 就会超出 float32 的范围，所以第 5 步已经先减去该行的最大值；"
     "结果不变，因为 $e^(−m)$ 在每一项和总和之间相互抵消。这里直到最后一个 Key 才知道真正的最大值，"
     "于是用目前见过的最大分数代替它。"},
    {S::fused_row, "Row {} ({}), whose largest score so far changes {} times as its keys arrive, one key at a time:",
     "第 {} 行（{}）：逐个加入 Key 时，它目前的最大分数变化了 {} 次。每次加入一个 Key："},
    {S::fused_keys, "keys", "Key"},
    {S::fused_end,
     "Every row taken key by key in this way gives $O$; its largest difference from step 6's $O$ is {}: float32 "
     "rounding, since the same sums are taken in another order.",
     "每一行都这样逐个加入 Key，就得到 $O$；它与第 6 步的 $O$ 最大相差 {}：这是 float32 的舍入误差，"
     "因为同样的和是按另一种顺序累加的。"},
    {S::fused_tiles,
     "The same row in tiles of two keys, as the kernel takes a whole tile at once: one new maximum, one "
     "rescale per tile.",
     "同一行按每块两个 Key 处理，就像内核一次处理一整块 Key 那样：每块只求一次新的最大值，只做一次重新缩放。"},
    {S::fused_halves,
     "The keys split in two halves, each taken in on its own, as the decode kernel's threads take blocks of "
     "keys (and as systems that spread one sequence over several machines do). Two states merge exactly: "
     "$m = max(m₁, m₂)$, $ℓ = e^(m₁ − m)·ℓ₁ + e^(m₂ − m)·ℓ₂$, $o = e^(m₁ − m)·o₁ + e^(m₂ − m)·o₂$.",
     "把 Key 分成两半，各自独立处理，就像解码内核的各个线程分别处理一块 Key 那样（把一个序列分到多台机器上计算的"
     "系统也是这样做的）。两个状态可以精确合并：$m = max(m₁, m₂)$，$ℓ = e^(m₁ − m)·ℓ₁ + e^(m₂ − m)·ℓ₂$，"
     "$o = e^(m₁ − m)·o₁ + e^(m₂ − m)·o₂$。"},
    {S::fused_first_half, "first half", "前一半"},
    {S::fused_second_half, "second half", "后一半"},
    {S::fused_merge, "merged", "合并后"},
    {S::fused_merged,
     "The merge is the state of the single pass above, up to float32 rounding: the largest difference is {}, and "
     "$o / ℓ$ is row {} of $O$.",
     "合并结果就是上面一次遍历得到的状态（至多相差 float32 的舍入误差）：最大差值为 {}，$o / ℓ$ 就是 $O$ 的第 {} 行。"},
}};
static_assert(complete(sentences), "lesson/sentences.cpp: one sentence per Sentence, in its order");

using L = Label;
constexpr Table<Label> labels{{
    {L::walk_title, "Single-head scaled dot-product attention, one step at a time", "单头缩放点积注意力，逐步计算"},
    {L::whole_chain, "The whole chain in one line", "整条计算链写成一行"},
    {L::mask_formula, "(M_ij = −∞ for j > i, else 0)", "（j > i 时 M_ij = −∞，否则为 0）"},
    {L::lesson_divides, "(the lesson divides by √d_k; this run does not)", "（课程中除以 √d_k；本次运行没有这样做）"},
    {L::sentence, "Sentence", "句子"},
    {L::settings, "Settings", "设置"},
    {L::causal_mask, "causal mask", "因果掩码"},
    {L::no_mask, "no mask", "无掩码"},
    {L::backend, "backend", "后端"},
    {L::shapes, "Shapes", "形状"},
    {L::shapes_note, "S and α are n×n whatever d_k is: that square is where attention's O(n²) cost comes from.",
     "无论 d_k 多大，S 和 α 都是 n×n：注意力 O(n²) 的开销正来自这个方阵。"},
    {L::weights, "Weights", "权重矩阵"},
    {L::code, "code", "代码"},
}};
static_assert(complete(labels), "lesson/sentences.cpp: one label per Label, in its order");

using B = Backward;
constexpr KeyedTable<Backward> backward{{
    {B::title, "title", "How the weights learn: the chain run backwards", "权重如何学习：沿计算链反向计算"},
    {B::intro, "intro",
     "A loss $L$ measures how far $O$ is from a target $T$; here $L = ½‖O − T‖²$ with $T = I$: token $i$'s output "
     "should be the $i$-th unit vector. Each $dM = ∂L/∂M$ has the shape of $M$; the chain rule gives them last step "
     "first (attention/backward.cpp, markers [grad …]).",
     "损失 $L$ 衡量 $O$ 与目标 $T$ 的差距；这里 $L = ½‖O − T‖²$，$T = I$：第 $i$ 个词的输出应是第 $i$ "
     "个单位向量。每个 $dM = ∂L/∂M$ 与 $M$ 形状相同；链式法则从最后一步开始，依次求出它们（attention/backward.cpp，"
     "标记 [grad …]）。"},
    {B::dV, "dV",
     "row $j$ sums the output errors, each weighted by how much its query read $v_j$: $dV_j = Σ_i α_ij·do_i$",
     "第 $j$ 行是各个输出误差的加权和，每个误差的权重是对应 Query 对 $v_j$ 的关注程度：$dV_j = Σ_i α_ij·do_i$"},
    {B::d_weights, "d_weights", "the partial derivative of $L$ with respect to each weight $α_ij$: $do_i·v_j$",
     "$L$ 对每个注意力权重 $α_ij$ 的偏导：$do_i·v_j$"},
    {B::dS_prime, "dS_prime",
     "back through the softmax; each row sums to 0, since raising a whole row of scores by the same amount changes "
     "no $α$",
     "反向经过 softmax；每行之和为 0，因为整行分数同时加上同一个数时 $α$ 不变"},
    {B::dS, "dS", "back through the scaling", "反向经过缩放"},
    {B::dQ, "dQ",
     "row $i$ adds up the keys, each weighted by how $L$ changes with the score $S_ij$: $dq_i = Σ_j dS_ij·k_j$",
     "第 $i$ 行是各个 Key 的加权和，权重是 $L$ 对分数 $S_ij$ 的偏导：$dq_i = Σ_j dS_ij·k_j$"},
    {B::dK, "dK",
     "row $j$ adds up the queries, each weighted by how $L$ changes with the score $S_ij$: $dk_j = Σ_i dS_ij·q_i$",
     "第 $j$ 行是各个 Query 的加权和，权重是 $L$ 对分数 $S_ij$ 的偏导：$dk_j = Σ_i dS_ij·q_i$"},
    {B::dW_Q, "dW_Q",
     "the gradient of $L$ for $W_Q$: each token's query error carried back through its embedding and summed over "
     "the tokens, $Σ_i x_iᵀ·dq_i$; one step of gradient descent subtracts $η·dW_Q$ from $W_Q$",
     "$L$ 对 $W_Q$ 的梯度：每个词 Query 上的误差经该词的嵌入向量传回，再对所有词求和，即 $Σ_i x_iᵀ·dq_i$；"
     "梯度下降每一步从 $W_Q$ 减去 $η·dW_Q$"},
    {B::dW_K, "dW_K", "the same for $W_K$, with each token's key error in place of its query error",
     "$W_K$ 的梯度同理，只是把 Query 上的误差换成每个词 Key 上的误差"},
    {B::dW_V, "dW_V", "the same for $W_V$, with each token's value error in place of its query error",
     "$W_V$ 的梯度同理，只是把 Query 上的误差换成每个词 Value 上的误差"},
    {B::dX, "dX", "three paths lead back to $X$", "梯度沿三条路径回到 $X$"},
    {B::mask, "mask", "above the diagonal $dS'$ is already 0: there $α_ij = 0$",
     "对角线以上的 $dS'$ 本来就是 0，因为那里 $α_ij = 0$"},
    {B::descent, "descent",
     "One step of gradient descent, $W ← W − η·dW$ with $η = {}$, on $W_Q$, $W_K$ and $W_V$: $L$ goes from {} to {}.",
     "对 $W_Q$、$W_K$、$W_V$ 做一步梯度下降 $W ← W − η·dW$（$η = {}$）：$L$ 从 {} 变为 {}。"},
}};
static_assert(complete(backward), "lesson/sentences.cpp: one sentence per Backward, in its order");

constexpr Table<Bf16> bf16{{
    {Bf16::title, "The same attention in bfloat16 (--dtype bf16)", "同样的注意力，改用 bfloat16 计算（--dtype bf16）"},
    {Bf16::note,
     "bfloat16 keeps a float's 8-bit exponent but only 8 significant bits: rounding moves a number by at most 2⁻⁸ "
     "(0.4%) of itself. For its two products the fused kernel rounds Q, K, V and the softmax's unnormalised "
     "exponentials e^(s − m) to it and adds the exact products in float32; the maxima and the sums stay in float32 "
     "(simd/fused.cpp).",
     "bfloat16 保留 float 的 8 位指数，但只有 8 个有效二进制位：每次舍入最多使一个数变动其自身大小的 2⁻⁸（0.4%）。"
     "在两次矩阵乘法中，融合内核把 Q、K、V 和 softmax 中未归一化的指数 e^(s − m) 舍入成 bfloat16，"
     "再用 float32 累加精确的乘积；各行最大值和求和仍用 float32（simd/fused.cpp）。"},
    {Bf16::rounded, "Q, K, V rounded to bfloat16", "舍入成 bfloat16 的 Q、K、V"},
    {Bf16::changed, "Of O's {} numbers, {} differ from the float32 walk's at this precision; the largest change is {}.",
     "按当前显示的小数位数，O 的 {} 个数中有 {} 个与 float32 的结果不同；最大变化为 {}。"},
}};
static_assert(complete(bf16), "lesson/sentences.cpp: one sentence per Bf16, in its order");

}  // namespace

using table::entry;
using table::in;

const char* marked(Lang lang, Sentence id) { return in(lang, entry(sentences, id)); }
const char* marked(Lang lang, Label id) { return in(lang, entry(labels, id)); }
const char* marked(Lang lang, Backward id) { return in(lang, entry(backward, id)); }
const char* marked(Lang lang, Bf16 id) { return in(lang, entry(bf16, id)); }

const char* key(Backward id) { return entry(backward, id).key; }

std::string printed(std::string_view marked, std::initializer_list<std::string> values) {
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

Sentence scaling_note(Scale scale) {
    switch (scale) {
        case Scale::sqrt_dk: return Sentence::note_4_sqrt_dk;
        case Scale::dk: return Sentence::note_4_dk;
        case Scale::none: return Sentence::note_4_none;
    }
    return Sentence::note_4_sqrt_dk;
}

std::vector<Sentence> said_under(Scale scale) {
    std::vector<Sentence> said;
    for (std::size_t k = 0; k < static_cast<std::size_t>(Sentence::count); ++k) {
        const auto id = static_cast<Sentence>(k);
        const bool other_scale =
            (id == Sentence::note_4_sqrt_dk || id == Sentence::note_4_dk || id == Sentence::note_4_none) &&
            id != scaling_note(scale);
        if (!other_scale) said.push_back(id);
    }
    return said;
}

}  // namespace attn::lesson
