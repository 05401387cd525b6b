// lesson/sentences_exercises.cpp — what `attn exercise N` and `attn variance` say around their tables,
// in English and Chinese; each {} is a number the table gives (lesson/sentences.hpp, Exercise). The
// terminal alone prints these: they carry no $…$ marks, and their line breaks are the terminal's.
#include "lesson/sentence_table.hpp"
#include "lesson/sentences.hpp"

namespace attn::lesson {

namespace {

using E = Exercise;
constexpr table::Table<Exercise> exercises{{
    // ---- exercise 1 ---------------------------------------------------------------------------
    {E::e1_title, "Exercise 1 · Dividing by √d_k, by d_k, or not at all", "练习 1 · 除以 √d_k、除以 d_k，还是不缩放"},
    {E::e1_setup,
     "64 queries against 64 keys, every entry N(0, 1); {} draws per d_k, each averaged over its rows;\n"
     "  the table gives the mean over the draws ± their standard deviation.\n"
     "  entropy: ln 64 = 4.16 is uniform, 0 is one-hot. ‖J‖: size of the softmax's Jacobian diag(α) − ααᵀ,\n"
     "  how much α can still move when its scores move (the gradient that reaches the scores).",
     "64 个 Query 对 64 个 Key，每个分量服从 N(0, 1)；每个 d_k 独立抽样 {} 次，每次的结果先对各行取平均；\n"
     "  表中为各次抽样的平均值 ± 标准差。\n"
     "  熵：均匀分布时为 ln 64 = 4.16，one-hot 时为 0。‖J‖：softmax 雅可比矩阵 diag(α) − ααᵀ 的范数，\n"
     "  即分数变化时 α 还能变化多少（也就是能传回分数的梯度有多大）。"},
    {E::e1_scale, "scale", "缩放"},
    {E::e1_entropy, "entropy", "熵"},
    {E::e1_max_weight, "max α", "最大 α"},
    {E::e1_none_one_hot, "entropy {} at d_k = {} → {} at d_k = {}, largest weight → {}: α turns nearly one-hot.",
     "熵 {}（d_k = {}）→ {}（d_k = {}），最大权重 → {}：α 几乎成了 one-hot。"},
    {E::e1_none_sharpens, "entropy {} at d_k = {} → {} at d_k = {}, largest weight → {}: α sharpens.",
     "熵 {}（d_k = {}）→ {}（d_k = {}），最大权重 → {}：α 变得更集中。"},
    {E::e1_jacobian_peak,
     "‖J‖ first grows while the scores spread, to {} at d_k = {},\n           then falls to {} at d_k = {}",
     "‖J‖ 先随分数散开而增大，达到峰值 {}（d_k = {}），\n           然后降到 {}（d_k = {}）"},
    {E::e1_jacobian_falls, "‖J‖ falls to {} at d_k = {}", "‖J‖ 降到 {}（d_k = {}）"},
    {E::e1_saturated, ", {}× that of ÷ √d_k: once α saturates,\n           little gradient reaches the scores.",
     "，为 ÷ √d_k 时的 {} 倍：α 饱和后，\n           传回分数的梯度所剩无几。"},
    {E::e1_not_saturated, ", {}× that of ÷ √d_k: no gradient lost yet at these sizes.",
     "，为 ÷ √d_k 时的 {} 倍：在这些 d_k 下梯度尚未减小。"},
    {E::e1_dk_uniform,
     "entropy → {} at d_k = {}, within 1% of ln 64 = 4.159; largest weight → {}:\n"
     "           α flattens to nearly uniform.",
     "熵 → {}（d_k = {}），与 ln 64 = 4.159 相差不到 1%；最大权重 → {}：\n           α 几乎成了均匀分布。"},
    {E::e1_dk_flatter, "entropy → {} at d_k = {}, short of ln 64 = 4.159; largest weight → {}:\n           α flattens.",
     "熵 → {}（d_k = {}），仍低于 ln 64 = 4.159；最大权重 → {}：\n           α 变得更平。"},
    {E::e1_sqrt_same,
     "mean entropy between {} and {} at every d_k; the two differ by {},\n"
     "           within {} standard errors of that difference ({}): the spread of attention (its entropy)\n"
     "           is about the same at every width.",
     "各 d_k 的平均熵都在 {} 与 {} 之间，两者相差 {}，\n"
     "           不超过这一差值的 {} 倍标准误（{}）：无论 d_k 多大，\n"
     "           注意力的分散程度（熵）都差不多。"},
    {E::e1_sqrt_changes,
     "mean entropy between {} and {} at every d_k; the two differ by {},\n"
     "           more than {} standard errors of that difference ({}): the spread of attention (its entropy)\n"
     "           still changes with d_k.",
     "各 d_k 的平均熵都在 {} 与 {} 之间，两者相差 {}，\n"
     "           超过了这一差值的 {} 倍标准误（{}）：\n"
     "           注意力的分散程度（熵）仍随 d_k 变化。"},
    {E::e1_example,
     "The worked example (d_k = 3), row 1 of α under each scale:", "示例（d_k = 3）中 α 的第 1 行在三种缩放下的值："},
    {E::e1_example_entropy, "entropy {}", "熵 {}"},
    // ---- exercise 2 (its question and what S_ii is: the walk's, Sentence::diagonal_*) ----------------
    {E::e2_in_example, "In the worked example:", "在示例中："},
    {E::e2_row, "S_ii = {}  max = {} ({})  {}", "S_ii = {}  最大值 = {}（{}）  {}"},
    {E::e2_on_diagonal, "diagonal", "在对角线上"},
    {E::e2_off_diagonal, "not the diagonal", "不在对角线上"},
    {E::e2_draws,
     "{} random weight draws (N(0, 1), d_k = 3) on the same X:", "{} 组随机权重（N(0, 1)，d_k = 3），作用于同一个 X："},
    {E::e2_independent, "W_Q, W_K independent: the diagonal is the row maximum in {}% of rows (chance: 33.3%)",
     "W_Q、W_K 相互独立：行最大值落在对角线上的比例为 {}%（若纯属偶然，应为 1/3，即 33.3%）"},
    {E::e2_tied, "W_Q = W_K (S symmetric):   {}%", "W_Q = W_K（S 对称）时，这一比例为 {}%"},
    {E::e2_tied_pairs, "pairs with S_ij > max(S_ii, S_jj) when W_Q = W_K: {}",
     "W_Q = W_K 时满足 S_ij > max(S_ii, S_jj) 的 (i, j) 对的个数：{}"},
    {E::e2_why,
     "Nothing makes S_ii the largest: q_i and k_i come from different matrices, so a token's query may\n"
     "  match another token's key better than its own. Tying W_Q = W_K makes S_ij = (x_i·W)·(x_j·W), a Gram\n"
     "  matrix: S_ii ≥ 0 and 2·S_ij ≤ S_ii + S_jj, so no pair can beat both of its diagonals — yet a token\n"
     "  with a short projection can still score higher with a long, aligned neighbour than with itself.",
     "没有任何机制保证 S_ii 最大：q_i 与 k_i 来自不同的矩阵，某个词的 Query 可能与别的词的 Key 更匹配。\n"
     "  令 W_Q = W_K，则 S_ij = (x_i·W)·(x_j·W) 是 Gram 矩阵：S_ii ≥ 0 且 2·S_ij ≤ S_ii + S_jj，\n"
     "  任何 S_ij 都不会同时大于 S_ii 和 S_jj——但投影较短的词与一个投影更长、方向相近的邻居之间的分数，\n"
     "  仍可能高于它与自身的分数。"},
    // ---- exercise 3 ---------------------------------------------------------------------------
    {E::e3_title, "Exercise 3 · n = 1000: how many scores, and how cost grows",
     "练习 3 · n = 1000：有多少个分数，代价如何增长"},
    {E::e3_count, "n = {} gives {}² = {} scores, {} bytes as float32 ({} MiB), for one head.",
     "n = {} 时有 {}² = {} 个分数，以 float32 存储占 {} 字节（{} MiB），\n  这还只是一个头。"},
    {E::e3_measured,
     "Measured: one call of the core, d = 64, timed at every n in each of {} runs (one untimed call\n"
     "  first); the table gives each n's median of {} repeats:",
     "实测：单次调用注意力的核心计算所用的时间（d = 64）；每轮把所有 n 各计时一次，共 {} 轮（计时前先\n"
     "  不计时地调用一次）；表中是每个 n 在 {} 轮中的中位数："},
    {E::e3_scores, "scores", "分数个数"},
    {E::e3_bytes, "S bytes", "S 字节"},
    {E::e3_fitted, "fitted exponent p in (quantity) ∝ nᵖ:", "拟合指数 p（数量 ∝ nᵖ）："},
    {E::e3_fitted_counts, "scores {}, S bytes {}", "分数个数 {}，S 字节 {}"},
    {E::e3_rule,
     "The counts grow as n² exactly. For the times, p is fitted to each run; below are the median of\n"
     "  the runs and, in parentheses, their range. A verdict is given only when the {} runs' exponents\n"
     "  all lie within {} to {}, all above {} or all below {}, and only on a machine quiet enough to\n"
     "  measure: where the runs at one n scatter so much that the scatter alone could move an exponent\n"
     "  by more than {}, or where the calls spent more than half their time waiting for a core, the\n"
     "  machine was too busy to decide.",
     "分数个数与字节数严格按 n² 增长。时间的 p 按每轮分别拟合：下面先给出各轮的中位数，括号内是各轮的\n"
     "  范围。只有 {} 轮的指数全部在 {}～{} 之间、全部高于 {} 或全部低于 {} 时，才下结论；\n"
     "  此外还需要机器足够空闲：若某个 n 上各轮的时间差异大到单凭这一差异就能让指数变动超过 {}，\n"
     "  或者调用有一半以上的时间在等待处理器核，就说明机器太忙，无法下结论。"},
    {E::e3_close, "close to 2 in all {} runs ({} to {}), as the count of scores.",
     "{} 轮都接近 2（{} 至 {}），与分数个数的增长一致。"},
    {E::e3_below,
     "below 2 in all {} runs ({} to {}): the time grew more slowly than the count\n"
     "      of scores, so at these sizes a part of each call does not grow with n².",
     "{} 轮都低于 2（{} 至 {}）：时间比分数个数增长得慢，说明在这些规模下，\n"
     "      每次调用中有一部分开销不随 n² 增长。"},
    {E::e3_above,
     "above 2 in all {} runs ({} to {}): the time grew faster than the count\n"
     "      of scores, so at these sizes a score costs more at large n than at small n.",
     "{} 轮都高于 2（{} 至 {}）：时间比分数个数增长得快，说明在这些规模下，\n      n 越大，每个分数的代价越高。"},
    {E::e3_undecided, "the {} runs do not decide ({} to {}): their exponents fall in more than one of those ranges.",
     "{} 轮无法给出结论（{} 至 {}）：各轮的指数分属不止一个范围。"},
    {E::e3_scattered,
     "the machine was too busy to decide ({} to {}): at n = {} the {} runs took\n"
     "      {} to {} ms, a scatter that alone could move an exponent by {}.",
     "机器太忙，无法下结论（{} 至 {}）：n = {} 时 {} 轮的时间在 {} 到 {} ms 之间，\n"
     "      单凭这一差异就能让指数变动 {}。"},
    {E::e3_waited,
     "the machine was too busy to decide ({} to {}): at n = {} the calls spent\n"
     "      {}% of their time waiting for a core.",
     "机器太忙，无法下结论（{} 至 {}）：n = {} 时，调用有 {}% 的时间在等待处理器核。"},
    {E::e3_fused_bytes,
     "The fused backend returned {} bytes of S at every n: it computes the same output with no n×n matrix\n"
     "  at all (bench/ measures its memory).",
     "fused 后端在每个 n 下返回的 S 都是 {} 字节：它算出相同的输出，却完全不生成 n×n 矩阵（内存占用的测量见 "
     "bench/）。"},
    // ---- exercise 4 ---------------------------------------------------------------------------
    {E::e4_title, "Exercise 4 · A causal mask: position i sees only j ≤ i",
     "练习 4 · 因果掩码：位置 i 只能看到 j ≤ i 的位置"},
    {E::e4_before, "S/√d_k before the mask:", "掩码前的 S/√d_k："},
    {E::e4_after, "after the mask:", "掩码后："},
    {E::e4_sees_first, "sees only position 1, row sum {}", "只能看到位置 1，该行之和 {}"},
    {E::e4_sees_up_to, "sees positions 1 to {}, row sum {}", "只能看到位置 1 到 {}，该行之和 {}"},
    {E::e4_all_causal, "every row i attends only to j ≤ i", "每一行 i 都只关注 j ≤ i 的位置"},
    {E::e4_future, "a row attends to the future: this is a bug", "有一行关注了未来的位置：这是程序错误"},
    // ---- the variance argument ------------------------------------------------------------------
    {E::variance_intro,
     "Var(q·k) with q, k ~ N(0, I): each of the d_k products q_i·k_i has mean 0 and variance 1, and they\n"
     "are independent, so the variances add up to d_k. Dividing by √d_k divides the variance by d_k.",
     "q, k ~ N(0, I) 时的 Var(q·k)：d_k 个乘积 q_i·k_i 各自均值为 0、方差为 1 且相互独立，\n"
     "方差相加得 d_k；把分数除以 √d_k，方差就缩小为原来的 1/d_k。"},
    {E::variance_samples, "{} samples per d_k, seed {}", "每个 d_k 取 {} 个样本，随机种子 {}"},
    {E::variance_theory, "theory", "理论值"},
}};
static_assert(table::complete(exercises), "lesson/sentences_exercises.cpp: one sentence per Exercise, in its order");

}  // namespace

const char* marked(Lang lang, Exercise id) { return table::in(lang, table::entry(exercises, id)); }

}  // namespace attn::lesson
