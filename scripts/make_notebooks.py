#!/usr/bin/env python3
"""Write the lesson notebooks, docs/lesson-03.ipynb and docs/lesson-03.zh.ipynb, from one source.

    /usr/bin/python3 scripts/make_notebooks.py [--build build] [--check]

Both notebooks have the same cells. What the lesson says about each step (titles, notes, the four
confusions, exercise 5) is not written here: it is read by key from the sentences `attn walk` says,
`attention_cpp.walk(lang=...)["text"]`, with their $…$ formulas set as Markdown math by the site's own
typesetter (docs/site/docs_math.py). Written here, once per language, is only the notebook's framing:
its title and introduction, the exercises the walk does not word, and the code cells' comments and
printouts. A template names what goes where with «…»:

    «walk:KEY»              the walk's sentence KEY («walk:KEY|d_k|heads.h»: its {} filled, in order, from
                            walk()'s fields; fields beyond the sentence's {} are left unused)
    «data:FIELD»            a field of walk(), e.g. the tokens or d_model
    «KEY»                   the framing phrase KEY in the notebook's language (PHRASES below)

In Markdown cells formulas are typeset; in code cells the $ marks are dropped, as the terminal does.
--check writes nothing and exits 1 when a committed notebook differs from what this gives
(tests/python/test_notebooks.py runs the same comparison). Run after the walk's sentences change.
"""
import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "site"))
from docs_math import tex  # noqa: E402  (the pages' typesetter for the walk's sentences)

NOTEBOOKS = {"en": ROOT / "docs" / "lesson-03.ipynb", "zh": ROOT / "docs" / "lesson-03.zh.ipynb"}

# The notebook's own words, once per language. Keys used in code cells must not hold a double quote.
PHRASES = {
    "en": {
        "sp": " ",
        "colon": ":",
        "colon_sp": ": ",
        "comma": ", ",
        "list_sep": ", ",
        "title": "Lesson 03 as a notebook: single-head attention, step by step",
        "intro": "The lesson's chain $X → Q, K, V → S = Q·Kᵀ → S' = S/√d_k → α = softmax_row(S') → O = α·V$, "
                 "computed by this project's C++ through its Python module `attention_cpp`. The numbers are "
                 "the ones `attn walk` prints, and the explanations are the walk's own sentences. Change any "
                 "cell and run it again; `lesson-03.md` shows where each step lives in the code.",
        "example": "The worked example: the tokens «data:tokens»; $n = «data:n»$, $d_model = «data:d_model»$, "
                   "$d_k = «data:d_k»$, $d_v = «data:d_v»$. `layer.project(X)` is step 2.",
        "c_module": "The module: installed with pip (docs/using.md, From Python), or taken straight from a build "
                    "directory.",
        "c_font": "the tokens 猫 坐 地毯 need a font with Chinese characters; this finds one by its file",
        "c_font_fontconfig": "fontconfig (Linux): the fonts that cover Chinese, and the one it prefers among them",
        "c_font_scan": "no fontconfig: the first font on the system that has 猫",
        "c_font_added": "matplotlib learns the font from its file, whatever font list it saved earlier",
        "c_font_missing": "No font with Chinese characters is installed, so 猫 坐 地毯 show as empty boxes in the heat "
                          "maps. Install one (Debian: apt-get install fonts-noto-cjk) and run this cell again.",
        "c_walk": "the worked example, as `attn walk --format json` prints it",
        "c_step2": "step 2",
        "c_step3": "step 3: S_ij = q_i · k_j, n × n",
        "c_no_transpose": " (without the transpose)",
        "c_step4": "step 4",
        "c_library": "steps 3–6 in the library",
        "c_heat": "α, or any matrix of weights, as a heat map: row i is where token i looks",
        "backends": "The same chain on every backend of the project: the naive loops, the xsimd kernels, the "
                    "same kernels with the rows shared out over OpenMP threads, and the fused kernel, which "
                    "never stores $S$ and so returns no $α$.",
        "c_diff": "largest difference from naive",
        "c_cosines": "the angle between query i and key j",
        "c1_symmetric": "With $W_K = W_Q$ every score is the dot product of two queries, so $S$ is symmetric. "
                        "$α$ need not be: each row is divided by the sum of its own exponentials, and those "
                        "sums differ from row to row. The cell prints both, and $α₁₂$ beside $α₂₁$.",
        "c_same_weights": "W_K = W_Q",
        "c_largest": "token → the token whose key its query scores highest",
        "c_S_symmetric": "S symmetric",
        "c_alpha_symmetric": "α symmetric",
        "c_softmax": "softmax along an axis, the row maximum subtracted first",
        "c_shapes": "one vector per token, as in X",
        "c_heads": "the multi-head example of the walk",
        "ex1_title": "Exercise 1 · $d_k$ in place of $√d_k$",
        "ex1_example": "What happens to the softmax's output if the scores are divided by $d_k$ instead of "
                       "$√d_k$? On the worked example first: change `SCALE` and run the cell. Dividing by "
                       "$d_k = «data:d_k»$ brings every score closer to 0 than dividing by $√«data:d_k»$, so "
                       "each row of $α$ comes closer to uniform; without any scaling the rows are sharpest.",
        "c_scale": "try sqrt (the lesson), dk (exercise 1) or none",
        "c_ex1_heat": "α, scale = {SCALE}",
        "ex1_draws": "Three tokens and one set of weights say little about how $d_k$ matters. The next cell "
                     "draws random $Q$ and $K$ for 64 tokens, with entries independent, of mean 0 and "
                     "variance 1, many times at each of several $d_k$. For each scaling it prints the entropy "
                     "of the rows of $α$ (averaged over the rows) as its mean over the draws ± its standard "
                     "deviation: uniform attention over 64 tokens has entropy ln 64, one-hot attention 0. "
                     "Its last lines call the entropy changed only when the lowest and the highest of its "
                     "means over the $d_k$ differ by more than three standard errors of that difference (a "
                     "mean's standard error: the standard deviation of its draws over √draws), the rule "
                     "`attn exercise 1` follows too.",
        "c_ex1_sizes": "tokens, and random draws at each d_k",
        "c_ex1_entropy": "entropy of each row, averaged over the rows (0 · log 0 counts as 0)",
        "c_ex1_header": "entropy of the rows of α: mean ± standard deviation over {draws} draws; "
                        "uniform: ln {n_tokens} = {np.log(n_tokens):.3f}",
        "c_ex1_line": "{name}: from d_k = {widths[0]} to d_k = {widths[-1]}, {first.mean():.3f} → "
                      "{last.mean():.3f}: {words}",
        "c_ex1_rule": "changed only if the highest and the lowest mean differ by more than 3 standard errors",
        "c_ex1_same": "no change beyond 3 standard errors",
        "c_ex1_up": "it rises (α flattens toward uniform)",
        "c_ex1_down": "it falls (α moves toward one-hot)",
        "ex2_title": "Exercise 2 · The diagonal $S_ii$",
        "ex2": "What does $S_ii$ say, and is it always the largest score of row $i$? $S_ii = q_i·k_i$ compares "
               "token $i$'s query with its own key. The two come from different matrices, $W_Q$ and $W_K$, "
               "so nothing makes a token score highest against itself; the cell shows which key wins each "
               "row here.",
        "c_ex2_diagonal": "S_ii is the largest of its row",
        "ex3_title": "Exercise 3 · $n = 1000$",
        "ex3": "$S$ and $α$ have $n²$ entries each: a million at $n = 1000$. Doubling $n$ multiplies both the "
               "memory and the work of steps 3–6 by four. Try 2000.",
        "c_ex3": "try 2000: S has n² entries",
        "c_ex3_holds": "α holds {alpha_n.size:,} weights, {alpha_n.nbytes / 2**20:.1f} MiB",
        "ex4_title": "Exercise 4 · A causal mask",
        "ex4": "Write the mask yourself: in the next cell, set every score of `masked` above the diagonal to "
               "$−∞$ before the softmax, then run it; it compares your $α$ with the library's `causal=True`. "
               "(A hint: `np.triu_indices`.) One answer follows in a collapsed cell.",
        "c_ex4_yours": "your mask: every S'_ij with j > i becomes -np.inf",
        "c_ex4_yours_label": "α with your mask",
        "c_ex4_same": "the same as causal=True's (to float32 rounding)",
        "c_ex4_answer": "one answer: the entries above the diagonal, j > i",
        "c_ex4_above": "above the diagonal",
        "c_ex5_row": "token 1 (猫 cat, index 0 in code); try 1 or 2",
        "c_ex5_causal": "under the causal mask",
        "c_ex5_last_row": "row of α",
        "fast_title": "How fast?",
        "fast": "The fused kernel computes steps 3–6 without storing $S$. The next cell first says what this "
                "build runs (its instruction set, and how many threads the fused kernel gets), then times the "
                "kernel against an expression of your own (PyTorch when it is installed, NumPy otherwise) "
                "on random $Q$, $K$, $V$ of 2048 tokens and width 64: several runs of each, their medians "
                "and the ratio of the medians. The times are this machine's at this moment and move from "
                "one run of the cell to the next; when the runs of the two overlap, the cell says so "
                "instead of naming a faster one.",
        "c_fast_build": "instruction set: {info['instruction_set']} ({info['batch_width']} floats per vector); "
                        "threads of the fused kernel: {threads}",
        "c_fast_warm": "one untimed run first",
        "c_fast_yours": "change this to your own expression",
        "c_fast_yours_name": "yours",
        "c_fast_line": "{name}: median of {repeat} runs {median * 1e3:.1f} ms ({flops / median / 1e9:.0f} "
                       "GFLOP/s); the runs took {t.min() * 1e3:.1f} to {t.max() * 1e3:.1f} ms",
        "c_fast_ratio": "median of yours / median of fused",
        "c_fast_fused_apart": "every run of fused was faster than every run of yours",
        "c_fast_yours_apart": "every run of yours was faster than every run of fused",
        "c_fast_overlap": "the runs of the two overlap: these timings do not tell them apart",
    },
    "zh": {
        "sp": "",
        "colon": "：",
        "colon_sp": "：",
        "comma": "，",
        "list_sep": "、",
        "title": "第 03 讲的笔记本：单头注意力，逐步计算",
        "intro": "课程中的计算链 $X → Q, K, V → S = Q·Kᵀ → S' = S/√d_k → α = softmax_row(S') → O = α·V$，"
                 "由本项目的 C++ 代码通过 Python 模块 `attention_cpp` 算出。这里的每个数都与 `attn walk` 打印的相同，"
                 "各步的说明也直接取自 `attn walk`。可以修改任意一个单元格再运行；每一步在代码中的位置见 "
                 "`lesson-03.zh.md`。",
        "example": "示例中的词为«data:tokens»；$n = «data:n»$，$d_model = «data:d_model»$，$d_k = «data:d_k»$，"
                   "$d_v = «data:d_v»$。`layer.project(X)` 就是第 2 步。",
        "c_module": "模块：用 pip 安装（见 docs/using.md 的 From Python 一节），或直接从构建目录导入。",
        "c_font": "猫、坐、地毯这些词需要含中文字符的字体；这里按字体文件找到一个",
        "c_font_fontconfig": "fontconfig（Linux）：列出能显示中文的字体，并取它首选的一个",
        "c_font_scan": "没有 fontconfig 时：取系统中第一个含有“猫”字的字体",
        "c_font_added": "直接从字体文件加载，与 matplotlib 先前保存的字体列表无关",
        "c_font_missing": "没有安装含中文字符的字体，热力图中的猫、坐、地毯会显示成空白方框。"
                          "请安装一个（Debian：apt-get install fonts-noto-cjk），再运行这个单元格。",
        "c_walk": "示例的全部中间结果，与 `attn walk --format json` 输出的相同",
        "c_step2": "第 2 步",
        "c_step3": "第 3 步：S_ij = q_i · k_j，形状 n × n",
        "c_no_transpose": "（不转置）",
        "c_step4": "第 4 步",
        "c_library": "由库计算第 3–6 步",
        "c_heat": "把 α（或任何权重矩阵）画成热力图：第 i 行表示词 i 关注哪里",
        "backends": "同一条计算链在本项目的每个后端上运行：朴素循环、xsimd 内核、把各行分给 OpenMP 线程的"
                    "同一组内核，以及融合内核——它从不存储 $S$，因此不返回 $α$。",
        "c_diff": "与 naive 的最大差值",
        "c_cosines": "Query i 与 Key j 夹角的余弦",
        "c1_symmetric": "取 $W_K = W_Q$ 时，每个分数都是两个 Query 的点积，所以 $S$ 是对称的。$α$ 却不一定对称："
                        "$α$ 的每一行各自除以本行指数之和，而各行的和并不相同。下面的单元格把两者都打印出来，"
                        "并列出 $α₁₂$ 与 $α₂₁$。",
        "c_same_weights": "W_K = W_Q",
        "c_largest": "每个词 → 与它的 Query 点积最大的 Key 所属的词",
        "c_S_symmetric": "S 是否对称",
        "c_alpha_symmetric": "α 是否对称",
        "c_softmax": "沿某一轴做 softmax，先减去该行（或该列）的最大值",
        "c_shapes": "和 X 一样，每个词一个向量",
        "c_heads": "walk 中多头注意力的例子",
        "ex1_title": "练习 1 · 用 $d_k$ 代替 $√d_k$",
        "ex1_example": "如果分数除以 $d_k$ 而不是 $√d_k$，softmax 的输出会怎样变化？先在示例上看：修改 `SCALE` "
                       "再运行这个单元格。除以 $d_k = «data:d_k»$ 比除以 $√«data:d_k»$ 让每个分数更接近 0，"
                       "所以 $α$ 的每一行都更接近均匀分布；完全不缩放时，各行最集中。",
        "c_scale": "可以试 sqrt（课程的做法）、dk（练习 1）或 none",
        "c_ex1_heat": "α（缩放方式 scale = {SCALE}）",
        "ex1_draws": "只有三个词、一组权重，看不出 $d_k$ 的影响。下一个单元格对若干个 $d_k$ 各做多次随机抽样："
                     "每次随机生成 64 个词的 $Q$ 和 $K$，各分量相互独立、均值为 0、方差为 1。对每种缩放方式，"
                     "它打印 $α$ 各行的熵（对各行取平均）在多次抽样上的均值 ± 标准差。64 个词上均匀分布的熵是 ln 64，"
                     "one-hot 的熵是 0。最后几行比较各 $d_k$ 中最高与最低的平均熵：只有两者之差超过其三倍标准误时，"
                     "才说熵随 $d_k$ 变了（均值的标准误是各次抽样的标准差除以 √抽样次数）；"
                     "`attn exercise 1` 用的也是这条规则。",
        "c_ex1_sizes": "词数，以及每个 d_k 下的抽样次数",
        "c_ex1_entropy": "每一行的熵，再对各行取平均（0 · log 0 按 0 计）",
        "c_ex1_header": "α 各行的熵：{draws} 次抽样的均值 ± 标准差；均匀分布：ln {n_tokens} = "
                        "{np.log(n_tokens):.3f}",
        "c_ex1_line": "{name}：d_k 从 {widths[0]} 到 {widths[-1]}，熵 {first.mean():.3f} → {last.mean():.3f}："
                      "{words}",
        "c_ex1_rule": "只有最高与最低的平均熵相差超过 3 倍标准误，才算变了",
        "c_ex1_same": "变化没有超过 3 倍标准误",
        "c_ex1_up": "升高（α 趋于均匀分布）",
        "c_ex1_down": "降低（α 趋于 one-hot）",
        "ex2_title": "练习 2 · 对角线上的 $S_ii$",
        "ex2": "$S_ii$ 表示什么？它一定是第 $i$ 行最大的分数吗？$S_ii = q_i·k_i$ 是词 $i$ 的 Query 与它自己的 "
               "Key 的点积。两者来自不同的矩阵 $W_Q$ 和 $W_K$，所以没有什么能保证一个词与自己的分数最高；"
               "下面的单元格给出这里每一行得分最高的 Key。",
        "c_ex2_diagonal": "S_ii 是否为本行最大",
        "ex3_title": "练习 3 · $n = 1000$",
        "ex3": "$S$ 和 $α$ 各有 $n²$ 个元素：$n = 1000$ 时就是一百万个。$n$ 翻倍，第 3–6 步的内存和计算量都变为"
               "原来的四倍。可以试试 2000。",
        "c_ex3": "可以试试 2000：S 有 n² 个元素",
        "c_ex3_holds": "α 有 {alpha_n.size:,} 个权重，占 {alpha_n.nbytes / 2**20:.1f} MiB",
        "ex4_title": "练习 4 · 因果掩码",
        "ex4": "自己写一次掩码：在下一个单元格中，把 `masked` 对角线以上的分数都设为 $−∞$（这一步在 softmax "
               "之前），然后运行；它会把你得到的 $α$ 与库中 `causal=True` 的结果比较。（提示：`np.triu_indices`。）"
               "后面一个折叠起来的单元格给出一种写法。",
        "c_ex4_yours": "在这里写掩码：j > i 的每个 S'_ij 都设为 -np.inf",
        "c_ex4_yours_label": "用你的掩码得到的 α",
        "c_ex4_same": "与 causal=True 的结果相同（在 float32 舍入误差之内）",
        "c_ex4_answer": "一种写法：对角线以上（j > i）的元素",
        "c_ex4_above": "对角线以上",
        "c_ex5_row": "第 1 个词（猫，代码下标 0）；可改为 1 或 2",
        "c_ex5_causal": "使用因果掩码时",
        "c_ex5_last_row": "α 的这一行",
        "fast_title": "有多快？",
        "fast": "融合内核计算第 3–6 步，但不存储 $S$。下一个单元格先说明这次构建的运行配置（指令集，以及融合内核"
                "使用的线程数），再在 2048 个词、宽度 64 的随机 $Q$、$K$、$V$ 上，把它与你自己的表达式（装了 "
                "PyTorch 就用 PyTorch，否则用 NumPy）比较：两者各运行若干次，给出各自的中位数和两个中位数之比。"
                "这些时间只反映这台机器此刻的情况，每次运行这个单元格都会有所不同；两者的各次运行时间有重叠时，"
                "单元格会直接说明，而不判定谁更快。",
        "c_fast_build": "指令集：{info['instruction_set']}（每个向量 {info['batch_width']} 个 float）；"
                        "融合内核的线程数：{threads}",
        "c_fast_warm": "先不计时地运行一次",
        "c_fast_yours": "把这里换成你自己的表达式",
        "c_fast_yours_name": "你的表达式",
        "c_fast_line": "{name}：{repeat} 次运行的中位数 {median * 1e3:.1f} ms（{flops / median / 1e9:.0f} "
                       "GFLOP/s）；各次在 {t.min() * 1e3:.1f} 到 {t.max() * 1e3:.1f} ms 之间",
        "c_fast_ratio": "你的表达式的中位数 / 融合内核的中位数",
        "c_fast_fused_apart": "融合内核的每一次运行都比你的表达式的每一次快",
        "c_fast_yours_apart": "你的表达式的每一次运行都比融合内核的每一次快",
        "c_fast_overlap": "两者的运行时间有重叠：这些计时分不出快慢",
    },
}

# The cells: (type, template). Markdown cells set formulas as math; code cells keep them plain.
MD, CODE, ANSWER = "markdown", "code", "answer"  # ANSWER: a code cell whose source starts collapsed
CELLS = [
    (MD, "# «title»\n\n«intro»\n\n«walk:indices»"),
    (CODE, """LANG = "«lang»"
# «c_module»
import os, subprocess, sys, time
build = os.environ.get("ATTN_BUILD", os.path.join("..", "build"))
if os.path.isdir(build):
    sys.path.insert(0, build)
import attention_cpp as ac
import numpy as np
import matplotlib.pyplot as plt
from matplotlib import font_manager
np.set_printoptions(precision=4, suppress=True)

def chinese_font_file():  # «c_font»
    try:  # «c_font_fontconfig»
        listed = subprocess.run(["fc-list", ":lang=zh-cn", "file"], capture_output=True, text=True).stdout
        files = sorted(line.split(":")[0] for line in listed.splitlines())
        best = subprocess.run(["fc-match", "-f", "%{file}", "sans-serif:lang=zh-cn"], capture_output=True, text=True).stdout
        return best if best in files else (files or [None])[0]
    except FileNotFoundError:  # «c_font_scan»
        for path in font_manager.findSystemFonts():
            try:
                if ord("猫") in font_manager.get_font(path).get_charmap():
                    return path
            except RuntimeError:
                pass
    return None

font_file = chinese_font_file()
if font_file:  # «c_font_added»
    font_manager.fontManager.addfont(font_file)
    plt.rcParams["font.sans-serif"] = [font_manager.FontProperties(fname=font_file).get_name(), "DejaVu Sans"]
else:
    print("«c_font_missing»")"""),
    (MD, "## «walk:title.1»\n\n«walk:note.1»\n\n## «walk:title.2»\n\n«walk:note.2»«sp»«walk:weights»\n\n«example»"),
    (CODE, """walk = ac.walk(lang=LANG)  # «c_walk»
tokens = walk["tokens"]
X = np.array(walk["X"], dtype=np.float32)      # n × d_model
W_Q = np.array(walk["W_Q"], dtype=np.float32)  # d_model × d_k
W_K = np.array(walk["W_K"], dtype=np.float32)  # d_model × d_k
W_V = np.array(walk["W_V"], dtype=np.float32)  # d_model × d_v
layer = ac.SingleHeadAttention(W_Q, W_K, W_V)
Q, K, V = layer.project(X, backend="naive")    # «c_step2»«colon» Q = X·W_Q, K = X·W_K, V = X·W_V
print("Q =\\n", Q)
print("K =\\n", K)
print("V =\\n", V)"""),
    (MD, "## «walk:title.3»\n\n«walk:note.3»\n\n**«walk:transpose»** «walk:transpose_note»«sp»«walk:transpose_square»"),
    (CODE, """S = Q @ K.T    # «c_step3»
print("S = Q·Kᵀ =\\n", S)
print("Q·K«c_no_transpose» =\\n", Q @ K)"""),
    (MD, "## «walk:title.4»\n\n«walk:note.4»"),
    (CODE, """d_k = Q.shape[1]
S_scaled = S / np.sqrt(d_k)    # «c_step4»«colon» S' = S / √d_k
print("S' =\\n", S_scaled)"""),
    (MD, "## «walk:title.5»\n\n«walk:note.5»"),
    (CODE, """O, alpha = ac.attention(Q, K, V, backend="naive")  # «c_library»
print("α =\\n", alpha)
print("«walk:row_sums_short»«colon»", alpha.sum(axis=1))"""),
    (MD, "«walk:heat»"),
    (CODE, """def heat(weights, title):  # «c_heat»
    fig, ax = plt.subplots(figsize=(3.6, 3))
    ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(tokens)), tokens)
    ax.set_yticks(range(len(tokens)), tokens)
    for i in range(weights.shape[0]):
        for j in range(weights.shape[1]):
            ax.text(j, i, f"{weights[i, j]:.4f}", ha="center", va="center",
                    color="white" if weights[i, j] > 0.6 else "black")
    ax.set_title(title)
    plt.show()

heat(alpha, "α")"""),
    (MD, "## «walk:title.6»\n\n«walk:note.6»"),
    (CODE, """print("O = α·V =\\n", O)"""),
    (MD, "«backends»"),
    (CODE, """for backend in ["naive", "simd", "parallel", "fused"]:
    O_b, alpha_b = ac.attention(Q, K, V, backend=backend)
    print(f"{backend:9s} O[0] = {O_b[0]}«comma»«c_diff»«colon» {np.abs(O_b - O).max():.1e}")"""),
    (MD, "## «walk:confusion1»\n\n«walk:confusion1_note»\n\n«walk:cosines»"),
    (CODE, """cosines = S / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(K, axis=1))  # «c_cosines»
print("cos θ =\\n", cosines)"""),
    (MD, "«walk:other_keys»\n\n«c1_symmetric»"),
    (CODE, """same = ac.SingleHeadAttention(W_Q, W_Q, W_V)    # «c_same_weights»
Q_same, K_same, _ = same.project(X, backend="naive")
S_same = Q_same @ K_same.T
_, alpha_same = same.forward(X, backend="naive")
print("S =\\n", S_same)
print("α =\\n", alpha_same)
print("«c_S_symmetric»«colon»", np.allclose(S_same, S_same.T), "  «c_alpha_symmetric»«colon»", np.allclose(alpha_same, alpha_same.T))
print(f"α₁₂ = {alpha_same[0, 1]:.4f}«comma»α₂₁ = {alpha_same[1, 0]:.4f}")

def largest_per_row(scores):  # «c_largest»
    return "«comma»".join(f"{tokens[i]} → {tokens[j]}" for i, j in enumerate(scores.argmax(axis=1)))

print("«walk:row_largest»«colon»", largest_per_row(S_same))
print("«walk:with_example_keys»«colon»", largest_per_row(S))"""),
    (MD, "## «walk:confusion2»\n\n«walk:confusion2_note»"),
    (CODE, """def softmax(M, axis):  # «c_softmax»
    e = np.exp(M - M.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)

by_column = softmax(S_scaled, axis=0)
print("«walk:column_sums»«colon»", by_column.sum(axis=0), "  «walk:row_sums_short»«colon»", by_column.sum(axis=1))
heat(by_column, "«walk:by_column»")"""),
    (MD, "## «walk:confusion3»\n\n«walk:confusion3_note»"),
    (CODE, """print("α", alpha.shape, "· V", V.shape, "→ O", O.shape)  # «c_shapes»
for i in range(len(tokens)):
    print(f"o_{i + 1} = " + " + ".join(f"{alpha[i, j]:.4f}·v_{j + 1}" for j in range(len(tokens))))"""),
    (MD, "## «walk:confusion4»\n\n«walk:confusion4_note|d_k|d_model|heads.d_model|heads.h»"),
    (CODE, """heads = walk["heads"]  # «c_heads»
print(f"d_model = {heads['d_model']}, h = {heads['h']}: d_k = d_model / h = {heads['d_k']}")"""),
    (MD, "«walk:heads_cost»"),
    (MD, "## «ex1_title»\n\n«ex1_example»"),
    (CODE, """SCALE = "dk"   # «c_scale»
_, alpha_e1 = ac.attention(Q, K, V, backend="naive", scale=SCALE)
print(alpha_e1)
heat(alpha_e1, f"«c_ex1_heat»")"""),
    (MD, "«ex1_draws»"),
    (CODE, """n_tokens, draws = 64, 20   # «c_ex1_sizes»
widths = [4, 16, 64, 256, 1024]
scales = {"÷ √d_k": "sqrt", "÷ d_k": "dk", "÷ 1": "none"}
rng = np.random.default_rng(1)

def mean_row_entropy(weights):  # «c_ex1_entropy»
    p = weights.astype(np.float64)
    return float(-(p * np.log(np.where(p > 0, p, 1))).sum(axis=1).mean())

entropies = {name: np.zeros((len(widths), draws)) for name in scales}
for w, width in enumerate(widths):
    for t in range(draws):
        Q_r = rng.standard_normal((n_tokens, width)).astype(np.float32)
        K_r = rng.standard_normal((n_tokens, width)).astype(np.float32)
        V_r = np.zeros((n_tokens, 1), dtype=np.float32)
        for name, scale in scales.items():
            _, alpha_r = ac.attention(Q_r, K_r, V_r, backend="simd", scale=scale)
            entropies[name][w, t] = mean_row_entropy(alpha_r)

print(f"«c_ex1_header»")
print(f"{'d_k':>8}" + "".join(f"{width:>17}" for width in widths))
for name, e in entropies.items():
    print(f"{name:>8}" + "".join(f"{m:>9.3f} ± {s:.3f}" for m, s in zip(e.mean(axis=1), e.std(axis=1))))
for name, e in entropies.items():  # «c_ex1_rule»
    first, last, means = e[0], e[-1], e.mean(axis=1)
    low, high = e[means.argmin()], e[means.argmax()]
    standard_error = np.sqrt((low.var(ddof=1) + high.var(ddof=1)) / draws)
    if high.mean() - low.mean() <= 3 * standard_error:
        words = "«c_ex1_same»"
    else:
        words = "«c_ex1_up»" if last.mean() > first.mean() else "«c_ex1_down»"
    print(f"«c_ex1_line»")"""),
    (MD, "## «ex2_title»\n\n«ex2»"),
    (CODE, """print("S_ii:", np.diag(S))
print("«walk:row_largest»«colon»", largest_per_row(S))
print("«c_ex2_diagonal»«colon»", [bool(S[i, i] == S[i].max()) for i in range(len(tokens))])"""),
    (MD, "## «ex3_title»\n\n«ex3»"),
    (CODE, """n, d = 1000, 64   # «c_ex3»
rng = np.random.default_rng(0)
Q_n, K_n, V_n = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
_, alpha_n = ac.attention(Q_n, K_n, V_n, backend="simd")
print(f"n = {n}: «c_ex3_holds»")"""),
    (MD, "## «ex4_title»\n\n«walk:note.mask»\n\n«ex4»"),
    (CODE, """masked = S_scaled.copy()
# «c_ex4_yours»

alpha_yours = softmax(masked, axis=1)
O_causal, alpha_causal = ac.attention(Q, K, V, backend="naive", causal=True)
print("«c_ex4_yours_label»«colon»\\n", alpha_yours)
print("causal=True:\\n", alpha_causal)
print("«c_ex4_same»«colon»", np.allclose(alpha_yours, alpha_causal, rtol=1e-6, atol=1e-6))"""),
    (ANSWER, """masked = S_scaled.copy()
masked[np.triu_indices(len(tokens), k=1)] = -np.inf   # «c_ex4_answer»
alpha_mask = softmax(masked, axis=1)
print("«c_ex4_same»«colon»", np.allclose(alpha_mask, alpha_causal, rtol=1e-6, atol=1e-6))
print("«c_ex4_above»«colon»", alpha_mask[np.triu_indices(len(tokens), k=1)])"""),
    (MD, "## «walk:exercise5»\n\n«walk:exercise5_note»"),
    (CODE, """i = 0   # «c_ex5_row»
print(f"o_{i + 1} = output[{i}] =", O[i])
print(f"v_{i + 1} = V[{i}]      =", V[i])
print(f"o_{i + 1} − v_{i + 1} =", O[i] - V[i])
print(f"‖o_{i + 1} − v_{i + 1}‖«walk:length» = {np.linalg.norm(O[i] - V[i]):.4f}")"""),
    (MD, "«walk:exercise5_causal»"),
    (CODE, """last = len(tokens) - 1   # «c_ex5_causal»
print("o_1 =", O_causal[0], "  v_1 =", V[0])
print(f"o_{last + 1} =", O_causal[last], "  «c_ex5_last_row»«colon»", alpha_causal[last])"""),
    (MD, "## «fast_title»\n\n«fast»"),
    (CODE, """info = ac.build_info()
threads = info["threads"] if info["openmp"] else 1
print(f"«c_fast_build»")
print(f"CPU«colon_sp»{info['cpu']}«comma»{info['caches']}")

n, d, repeat = 2048, 64, 7
rng = np.random.default_rng(1)
Q_t, K_t, V_t = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))

def timings(f):
    f()   # «c_fast_warm»
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return np.array(times)

def yours():   # «c_fast_yours»
    try:
        import torch
        q, k, v = (torch.from_numpy(m) for m in (Q_t, K_t, V_t))
        return torch.softmax(q @ k.T / d**0.5, dim=-1) @ v
    except ImportError:
        s = Q_t @ K_t.T / np.sqrt(d)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ V_t

flops = 4 * n * n * d
t_fused = timings(lambda: ac.attention(Q_t, K_t, V_t, backend="fused"))
t_yours = timings(yours)
for name, t in (("fused", t_fused), ("«c_fast_yours_name»", t_yours)):
    median = np.median(t)
    print(f"«c_fast_line»")
print(f"«c_fast_ratio»«colon_sp»{np.median(t_yours) / np.median(t_fused):.2f}")
if t_fused.max() < t_yours.min():
    print("«c_fast_fused_apart»")
elif t_yours.max() < t_fused.min():
    print("«c_fast_yours_apart»")
else:
    print("«c_fast_overlap»")"""),
]

MARKER = re.compile(r"«([^«»]+)»")


def markdown_math(text):
    """Each $…$ of a sentence set as TeX, as the pages set it; the words between kept."""
    pieces = text.split("$")
    if len(pieces) % 2 == 0:
        raise ValueError(f"unbalanced $ in: {text}")
    return "".join("$" + tex(p) + "$" if k % 2 else p for k, p in enumerate(pieces))


def fill(template, lang, walk, code=False):
    """The template with every «…» replaced: with its $…$ marks in Markdown, without them in code (where a
    replacement also may not hold a double quote, which would end the string literal it stands in)."""
    phrases = PHRASES[lang]

    def one(m):
        text = replacement(m.group(1))
        if code and '"' in text:
            raise ValueError(f"«{m.group(1)}» in a code cell holds a double quote: {text}")
        return text.replace("$", "") if code else text

    def value_of(field):  # "d_k", or "heads.h" for a field of a field
        value = walk
        for part in field.split("."):
            value = value[part]
        return value

    def replacement(name):
        if name == "lang":
            return lang
        if name.startswith("walk:"):
            key, *fields = name[len("walk:"):].split("|")
            sentence = walk["text"][key]
            if sentence.count("{}") > len(fields):
                raise ValueError(f"the walk's sentence {key} has more {{}} than the notebook fills: {sentence}")
            for field in fields[:sentence.count("{}")]:
                sentence = sentence.replace("{}", str(value_of(field)), 1)
            return sentence
        if name.startswith("data:"):
            value = value_of(name[len("data:"):])
            return phrases["list_sep"].join(value) if isinstance(value, list) else str(value)
        return fill(phrases[name], lang, walk, code)

    return MARKER.sub(one, template)


def cell(kind, source, number):
    lines = source.splitlines(keepends=True)
    common = {"id": f"cell-{number:02d}", "source": lines}
    if kind == MD:
        return {"cell_type": "markdown", "metadata": {}, **common}
    metadata = {"jupyter": {"source_hidden": True}} if kind == ANSWER else {}
    return {"cell_type": "code", "execution_count": None, "metadata": metadata, "outputs": [], **common}


def render(kind, template, lang, walk):
    if kind == MD:
        # The walk's notes follow a title on the terminal ("Step 1 · Input X: each row …"); here each starts
        # a paragraph, so its first letter is a capital.
        paragraphs = fill(template, lang, walk).split("\n\n")
        return markdown_math("\n\n".join(p[:1].upper() + p[1:] for p in paragraphs))
    return fill(template, lang, walk, code=True)


def notebook(lang, walk):
    """The notebook for `lang` as the text of its .ipynb file (nbformat 4.5, written as Jupyter writes it)."""
    cells = [cell(kind, render(kind, template, lang, walk), k) for k, (kind, template) in enumerate(CELLS)]
    nb = {"cells": cells,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                       "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def notebooks():
    """{path: text} for both notebooks, from the module's walk in each language."""
    one_language = set(PHRASES["en"]) ^ set(PHRASES["zh"])
    if one_language:
        raise ValueError(f"phrases written in one language only: {sorted(one_language)}")
    import attention_cpp
    return {path: notebook(lang, attention_cpp.walk(lang=lang)) for lang, path in NOTEBOOKS.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"), help="where attention_cpp is built (default: build)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook differs")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.build).resolve()))
    stale = []
    for path, text in notebooks().items():
        if path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(text, encoding="utf-8")
    verb = "differs from the source" if args.check else "written"
    for path in stale:
        print(f"{path}: {verb}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
