// lesson/sentences_learn.cpp — what `attn learn` says about its run, in English and Chinese: the task,
// what is trained and why the loss falls, and what the run reached; each {} is a value of the run
// (lesson/sentences.hpp, Learning). The terminal alone prints these (no $…$ marks).
#include "lesson/sentence_table.hpp"
#include "lesson/sentences.hpp"

namespace attn::lesson {

namespace {

using L = Learning;
constexpr table::Table<Learning> learning{{
    {L::title_sentence, "Watching attention learn: the lesson's sentence", "观察注意力如何学习：课程中的句子"},
    {L::title_retrieval, "Watching attention learn: finding a partner among 8 tokens",
     "观察注意力如何学习：在 8 个词中找到各自的搭档"},
    {L::sizes_sentence, "n = {}, d_model = {}, d_k = {}, d_v = {} (the worked example's X and W_V).",
     "n = {}，d_model = {}，d_k = {}，d_v = {}（示例中的 X 与 W_V）。"},
    {L::sizes_retrieval,
     "n = {}, d_model = {}, d_k = {}, d_v = {} (random embeddings; W_V = I, so each value starts as its token's "
     "embedding).",
     "n = {}，d_model = {}，d_k = {}，d_v = {}（随机嵌入；W_V = I，所以每个 Value 起初就等于该词自己的嵌入）。"},
    {L::trained_two, "Trained: {} and {}.", "训练：{} 和 {}。"},
    {L::trained_three, "Trained: {}, {} and {}.", "训练：{}、{} 和 {}。"},
    {L::story_fixed,
     " W_V stays fixed, so the values never change.\n"
     "  Token i's target is the value of the token it should read, T_i = v_p(i), and O_i = Σ_j α_ij·v_j\n"
     "  reaches it only when row i of α puts all its weight there: L = ½‖O − T‖² falls as α moves to\n"
     "  those cells. W_Q and W_K start small (α near uniform) and are trained with Adam on the gradients\n"
     "  of attention/backward.cpp.",
     "W_V 固定不变，因此每个词的 Value 也始终不变。\n"
     "  第 i 个词的目标是它应当关注的那个词的 Value，即 T_i = v_p(i)；只有当 α 的第 i 行\n"
     "  把全部权重放在那个词上时，O_i = Σ_j α_ij·v_j 才等于 T_i。所以 α 的权重越是移向这些位置，\n"
     "  L = ½‖O − T‖² 就越小。W_Q、W_K 从很小的值开始（α 接近均匀分布），\n"
     "  再用 Adam 按 attention/backward.cpp 算出的梯度训练。"},
    {L::story_values,
     "\n  Token i's target is the value the token it should read had at the start, T_i = v_p(i). The values\n"
     "  themselves now move toward the targets: part of the error L = ½‖O − T‖² is taken up by W_V, and α\n"
     "  need not move as far. All three are trained with Adam on the gradients of attention/backward.cpp.",
     "\n  第 i 个词的目标是它应当关注的那个词在训练开始时的 Value，即 T_i = v_p(i)。这时 Value 本身\n"
     "  也会向目标靠拢：误差 L = ½‖O − T‖² 中有一部分被 W_V 吸收，α 就不必移动那么远。\n"
     "  三个矩阵都用 Adam 按 attention/backward.cpp 算出的梯度训练。"},
    {L::settings, "Settings: steps = {}, lr = {}, seed = {}, backend = {}",
     "设置：训练步数 steps = {}，学习率 lr = {}，随机种子 seed = {}，后端 backend = {}"},
    {L::alpha_start, "α at the start (step 0)", "开始时的 α（第 0 步）"},
    {L::loss, "Loss", "损失"},
    {L::step, "step {}", "第 {} 步"},
    {L::alpha_middle, "α half-way (step {})", "训练到一半时的 α（第 {} 步）"},
    {L::alpha_end, "α at the end (step {})", "结束时的 α（第 {} 步）"},
    {L::reads_most, "reads most: ", "最关注："},
    {L::wanted, "wanted: ", "目标："},
    {L::fell, "L fell from {} to {}.", "L 从 {} 降到 {}。"},
    {L::range, "{}–{}", "{} 到 {}"},
    {L::reached, "The wanted cells now hold {} of their rows' weight.", "现在每一行分给目标位置的权重在 {} 之间。"},
    {L::with_fixed, "With W_V fixed, the same steps take them to {}.", "若固定 W_V，同样的训练能让这些权重达到 {}。"},
    {L::means, "Mean weight on the wanted cells: {} with W_V trained, {} with it fixed.",
     "目标位置的平均权重：训练 W_V 时为 {}，固定 W_V 时为 {}。"},
    {L::moved_less,
     "Here α moved less: its mean is lower by {}, more than the margin of {} within which\n"
     "  two runs count as moving as far; W_V meanwhile moved by {} of its size (‖ΔW_V‖/‖W_V‖).",
     "这次 α 移动得更少：平均权重低了 {}，超过了 {} 的容差（两次训练相差在此之内才算移动得一样远）；\n"
     "  W_V 则变化了自身大小的 {}（‖ΔW_V‖/‖W_V‖）。"},
    {L::moved_as_far,
     "Here α moved about as far: the two means differ by {}, no more than the margin of {} within which\n"
     "  two runs count as moving as far; W_V moved by {} of its size (‖ΔW_V‖/‖W_V‖).",
     "这次 α 移动得差不多远：两个平均权重相差 {}，不超过 {} 的容差（两次训练相差在此之内即算移动得一样远）；\n"
     "  W_V 也变化了自身大小的 {}（‖ΔW_V‖/‖W_V‖）。"},
    {L::moved_further,
     "Here α moved further: its mean is higher by {}, more than the margin of {} within which\n"
     "  two runs count as moving as far; W_V moved by {} of its size (‖ΔW_V‖/‖W_V‖).",
     "这次 α 移动得更远：平均权重高了 {}，超过了 {} 的容差（两次训练相差在此之内才算移动得一样远）；\n"
     "  W_V 也变化了自身大小的 {}（‖ΔW_V‖/‖W_V‖）。"},
}};
static_assert(table::complete(learning), "lesson/sentences_learn.cpp: one sentence per Learning, in its order");

}  // namespace

const char* marked(Lang lang, Learning id) { return table::in(lang, table::entry(learning, id)); }

}  // namespace attn::lesson
