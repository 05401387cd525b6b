#!/usr/bin/env python3
"""Write the lesson notebooks, docs/lesson-03.ipynb and docs/lesson-03.zh.ipynb, from one source.

    /usr/bin/python3 scripts/make_notebooks.py [--build build] [--check]

Both notebooks have the same cells. Their order is the walk's: the notebook goes down the walk's
sections, `attention_cpp.walk(lang=...)["sections"]` (lesson/sections.hpp), and each section's
heading, formula, note and lines of code come from the walk, as do the sentences the cells name by key
(`walk(...)["text"]`), with their $…$ formulas set as Markdown math by the site's own typesetter
(docs/site/docs_math.py). Written here, once per language, is only the notebook's framing: its title
and introduction, the exercises the walk does not word, and the code cells' comments and printouts.
The NumPy cells are the reader's own work: each computes something the walk computed too and prints
whether it is the walk's, so that no demo is computed here instead of by the walk. A template names
what goes where with «…»:

    «walk:KEY»              the walk's sentence KEY («walk:KEY|d_k|heads.h»: its {} filled, in order, from
                            walk()'s fields; fields beyond the sentence's {} are left unused)
    «data:FIELD»            a field of walk(), e.g. the tokens or d_model
    «section:KEY»           the formula of the walk's section KEY, e.g. «section:step.4»
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
        "c_largest": "token → the token whose key its query scores highest",
        "c_S_symmetric": "S symmetric",
        "c_alpha_symmetric": "α symmetric",
        "c_softmax": "softmax along an axis, the row maximum subtracted first",
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
                     "Whether a scaling's entropy changes with $d_k$ is for `attn exercise 1` to say: it runs "
                     "the same experiment with the library and states the rule it decides by.",
        "c_ex1_sizes": "tokens, and random draws at each d_k",
        "c_ex1_entropy": "entropy of each row, averaged over the rows (0 · log 0 counts as 0)",
        "c_ex1_header": "entropy of the rows of α: mean ± standard deviation over {draws} draws; "
                        "uniform: ln {n_tokens} = {np.log(n_tokens):.3f}",
        "c_ex2_diagonal": "S_ii is the largest of its row",
        "code": "Code",
        "c_check": "the same as the walk's",
        "c_check_note": "each cell below computes something the walk has computed too, and checks itself against it",
        "c_step2": "step 2",
        "c_step3": "step 3: S_ij = q_i · k_j, n × n",
        "c_step4": "step 4",
        "c_largest_yours": "each row's highest-scoring key, found with np.argmax",
        "c_mix": "row i of O is α's row i times V: the values mixed in α's shares",
        "c_shapes": "the shape of every step",
        "c_ex5_yours": "o_i − v_i and its length",
        "ex2_try": "The next cell finds each row's highest-scoring key with NumPy and checks it against the walk's.",
        "fused_try": "The next cell takes the same row's keys one at a time in NumPy, as the fused kernel does, "
                     "prints $m$, $e^(m_old − m)$, $ℓ$ and $o / ℓ$ after each, and checks the last state "
                     "against the walk's.",
        "c_fused_row": "the row the walk takes key by key, and its scores S' (step 4)",
        "c_fused_step": "one key at a time: rescale what was summed against the old maximum, then add the key",
        "c_fused_rescale": "0 before the first key, where m_old = −∞",
        "halves_try": "The next cell does the same for the two halves of the keys on their own, merges the two "
                      "states and checks the merge against the walk's and against the single pass.",
        "c_halves": "the keys in two halves, each taken in on its own, as the decode kernel's threads take theirs",
        "c_merge": "the merge: both states against the larger maximum",
        "c_one_pass": "the single pass above",
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
        "c_library": "由库计算第 3–6 步",
        "c_heat": "把 α（或任何权重矩阵）画成热力图：第 i 行表示词 i 关注哪里",
        "backends": "同一条计算链在本项目的每个后端上运行：朴素循环、xsimd 内核、把各行分给 OpenMP 线程的"
                    "同一组内核，以及融合内核——它从不存储 $S$，因此不返回 $α$。",
        "c_diff": "与 naive 的最大差值",
        "c_cosines": "Query i 与 Key j 夹角的余弦",
        "c1_symmetric": "取 $W_K = W_Q$ 时，每个分数都是两个 Query 的点积，所以 $S$ 是对称的。$α$ 却不一定对称："
                        "$α$ 的每一行各自除以本行指数之和，而各行的和并不相同。下面的单元格把两者都打印出来，"
                        "并列出 $α₁₂$ 与 $α₂₁$。",
        "c_largest": "每个词 → 与它的 Query 点积最大的 Key 所属的词",
        "c_S_symmetric": "S 是否对称",
        "c_alpha_symmetric": "α 是否对称",
        "c_softmax": "沿某一轴做 softmax，先减去该行（或该列）的最大值",
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
                     "one-hot 的熵是 0。某种缩放方式的熵是否随 $d_k$ 变化，由 `attn exercise 1` 判断："
                     "它用本项目的库做同样的实验，并说明据以判断的规则。",
        "c_ex1_sizes": "词数，以及每个 d_k 下的抽样次数",
        "c_ex1_entropy": "每一行的熵，再对各行取平均（0 · log 0 按 0 计）",
        "c_ex1_header": "α 各行的熵：{draws} 次抽样的均值 ± 标准差；均匀分布：ln {n_tokens} = "
                        "{np.log(n_tokens):.3f}",
        "c_ex2_diagonal": "S_ii 是否为本行最大",
        "code": "代码",
        "c_check": "与 walk 的结果相同",
        "c_check_note": "下面每个单元格都算一个 walk 也算过的量，并与 walk 的结果核对",
        "c_step2": "第 2 步",
        "c_step3": "第 3 步：S_ij = q_i · k_j，形状 n × n",
        "c_step4": "第 4 步",
        "c_largest_yours": "用 np.argmax 找出每行得分最高的 Key",
        "c_mix": "O 的第 i 行是 α 的第 i 行乘以 V：按 α 的比例混合各个 Value",
        "c_shapes": "每一步的形状",
        "c_ex5_yours": "o_i − v_i 及其长度",
        "ex2_try": "下一个单元格用 NumPy 找出每行得分最高的 Key，并与 walk 的结果核对。",
        "fused_try": "下一个单元格用 NumPy 像融合内核那样，逐个加入同一行的 Key，打印每一步之后的 $m$、"
                     "$e^(m_old − m)$、$ℓ$ 和 $o / ℓ$，最后把状态与 walk 的结果核对。",
        "c_fused_row": "walk 逐个 Key 演示的那一行，以及它的分数 S'（第 4 步）",
        "c_fused_step": "每次加入一个 Key：先把按旧最大值累加的部分重新缩放，再加上这个 Key",
        "c_fused_rescale": "第一个 Key 之前 m_old = −∞，因此为 0",
        "halves_try": "下一个单元格把 Key 分成两半，分别独立处理，再合并两个状态，并与 walk 的合并结果以及一次遍历的结果核对。",
        "c_halves": "把 Key 分成两半，各自独立处理，就像解码内核的各个线程那样",
        "c_merge": "合并：两个状态都换算到较大的那个最大值",
        "c_one_pass": "上面一次遍历的结果",
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

# The cells. The notebook goes down the walk's sections (walk()["sections"], lesson/sections.hpp), in
# their order: each section opens with a Markdown cell of its heading (a step's title with its
# formula), its note and the lines of code it mirrors, made from the walk itself (section_heading),
# then the cells SECTIONS gives it; a section it gives none is its heading alone. A template: (type,
# text). MORE: text that goes on in the section's heading cell. Markdown cells set formulas as math;
# code cells keep them plain. The NumPy cells are the reader's own hands-on work: each computes
# something the walk has computed too, and prints whether it is the same (same_as_walk), never a
# number of its own that the walk carries.
MD, CODE, ANSWER, MORE = "markdown", "code", "answer", "more"  # ANSWER: a code cell whose source starts collapsed
HEAD = [
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
    print("«c_font_missing»")

walk = ac.walk(lang=LANG)  # «c_walk»

def heat(weights, title):  # «c_heat»
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

def same_as_walk(mine, key):  # «c_check_note»
    return bool(np.allclose(np.array(mine, dtype=np.float64), np.array(walk[key], dtype=np.float64), rtol=1e-5, atol=1e-6))"""),
]

SECTIONS = {
    "step.2": [
        (MORE, "«walk:weights»\n\n«example»"),
        (CODE, """tokens = walk["tokens"]
X = np.array(walk["X"], dtype=np.float32)      # n × d_model
W_Q = np.array(walk["W_Q"], dtype=np.float32)  # d_model × d_k
W_K = np.array(walk["W_K"], dtype=np.float32)  # d_model × d_k
W_V = np.array(walk["W_V"], dtype=np.float32)  # d_model × d_v
layer = ac.SingleHeadAttention(W_Q, W_K, W_V)
Q, K, V = layer.project(X, backend="naive")    # «c_step2»«colon» Q = X·W_Q, K = X·W_K, V = X·W_V
print("Q =\\n", Q)
print("K =\\n", K)
print("V =\\n", V)"""),
    ],
    "step.3": [(CODE, """S = Q @ K.T    # «c_step3»
print("S = Q·Kᵀ =\\n", S)
print("«c_check»«colon»", same_as_walk(S, "S"))""")],
    "transpose": [
        (MORE, "«walk:transpose_square»"),
        (CODE, """print("Q·K =\\n", Q @ K)
print("«c_check»«colon»", same_as_walk(Q @ K, "Q_times_K"))"""),
    ],
    "confusion.1": [
        (MORE, "«walk:cosines»"),
        (CODE, """cosines = S / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(K, axis=1))  # «c_cosines»
print("cos θ =\\n", cosines)
print("«c_check»«colon»", same_as_walk(cosines, "cosines"))"""),
        (MD, "«walk:other_keys»\n\n«c1_symmetric»"),
        (CODE, """same = ac.SingleHeadAttention(W_Q, W_Q, W_V)    # W_K = W_Q
Q_same, K_same, _ = same.project(X, backend="naive")
S_same = Q_same @ K_same.T
_, alpha_same = same.forward(X, backend="naive")
print("S =\\n", S_same)
print("α =\\n", alpha_same)
print("«c_check»«colon»", same_as_walk(S_same, "S_with_W_K_as_W_Q"))
print("«c_S_symmetric»«colon»", np.allclose(S_same, S_same.T), "  «c_alpha_symmetric»«colon»", np.allclose(alpha_same, alpha_same.T))
print(f"α₁₂ = {alpha_same[0, 1]:.4f}«comma»α₂₁ = {alpha_same[1, 0]:.4f}")

def largest_per_row(scores):  # «c_largest»
    return "«comma»".join(f"{tokens[i]} → {tokens[j]}" for i, j in enumerate(scores.argmax(axis=1)))

print("«walk:row_largest»«colon»", largest_per_row(S_same))
print("«walk:with_example_keys»«colon»", largest_per_row(S))
print("«c_check»«colon»", list(S_same.argmax(axis=1)) == walk["largest_per_row"]["S_with_W_K_as_W_Q"])"""),
    ],
    "step.4": [
        (CODE, """d_k = Q.shape[1]
S_scaled = S / np.sqrt(d_k)    # «c_step4»«colon» «section:step.4»
print("S' =\\n", S_scaled)
print("«c_check»«colon»", same_as_walk(S_scaled, "S_scaled"))"""),
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
    print(f"{name:>8}" + "".join(f"{m:>9.3f} ± {s:.3f}" for m, s in zip(e.mean(axis=1), e.std(axis=1))))"""),
    ],
    "step.5": [
        (CODE, """O, alpha = ac.attention(Q, K, V, backend="naive")  # «c_library»
print("α =\\n", alpha)
print("«walk:row_sums_short»«colon»", alpha.sum(axis=1))"""),
        (MD, "«walk:heat»"),
        (CODE, """heat(alpha, "α")"""),
    ],
    "confusion.2": [(CODE, """def softmax(M, axis):  # «c_softmax»
    e = np.exp(M - M.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)

by_column = softmax(S_scaled, axis=0)
print("«walk:column_sums»«colon»", by_column.sum(axis=0), "  «walk:row_sums_short»«colon»", by_column.sum(axis=1))
print("«c_check»«colon»", same_as_walk(by_column, "softmax_by_column"))
heat(by_column, "«walk:by_column»")""")],
    "step.6": [
        (CODE, """print("O = α·V =\\n", O)
print("«c_check»«colon»", same_as_walk(O, "output"))"""),
        (MD, "«backends»"),
        (CODE, """for backend in ["naive", "simd", "parallel", "fused"]:
    O_b, alpha_b = ac.attention(Q, K, V, backend=backend)
    print(f"{backend:9s} O[0] = {O_b[0]}«comma»«c_diff»«colon» {np.abs(O_b - O).max():.1e}")"""),
    ],
    "confusion.3": [(CODE, """for i in range(len(tokens)):   # «c_mix»
    print(f"o_{i + 1} = " + " + ".join(f"{alpha[i, j]:.4f}·v_{j + 1}" for j in range(len(tokens))))
print("α·V", "«c_check»«colon»", same_as_walk(alpha @ V, "output"))""")],
    "exercise.2": [
        (MORE, "«ex2_try»"),
        (CODE, """print("S_ii:", np.diag(S))
largest = S.argmax(axis=1)   # «c_largest_yours»
print("«walk:row_largest»«colon»", largest_per_row(S))
print("«c_ex2_diagonal»«colon»", [bool(largest[i] == i) for i in range(len(tokens))])
print("«c_check»«colon»", list(largest) == walk["largest_per_row"]["S"])"""),
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
    ],
    "exercise.5": [
        (CODE, """i = 0   # «c_ex5_row»
print(f"o_{i + 1} = output[{i}] =", O[i])
print(f"v_{i + 1} = V[{i}]      =", V[i])
print(f"o_{i + 1} − v_{i + 1} =", O[i] - V[i])   # «c_ex5_yours»
print(f"‖o_{i + 1} − v_{i + 1}‖«walk:length» = {np.linalg.norm(O[i] - V[i]):.4f}")
mine = walk["exercise5"][0]
print("«c_check»«colon»", bool(np.allclose(O[0] - V[0], mine["difference"], atol=1e-6)
                              and np.isclose(np.linalg.norm(O[0] - V[0]), mine["length"], rtol=1e-5)))"""),
        (MD, "«walk:exercise5_causal»"),
        (CODE, """last = len(tokens) - 1   # «c_ex5_causal»
print("o_1 =", O_causal[0], "  v_1 =", V[0])
print(f"o_{last + 1} =", O_causal[last], "  «c_ex5_last_row»«colon»", alpha_causal[last])"""),
    ],
    "shapes": [(CODE, """print(f"X {X.shape} → Q {Q.shape}, K {K.shape}, V {V.shape} → S {S.shape} → S' {S_scaled.shape}"   # «c_shapes»
      f" → α {alpha.shape} → O {O.shape}")""")],
    "confusion.4": [
        (CODE, """heads = walk["heads"]  # «c_heads»
print(f"d_model = {heads['d_model']}, h = {heads['h']}: «section:confusion.4» = {heads['d_model']} / {heads['h']} = {heads['d_k']}")"""),
        (MD, "«walk:heads_cost»"),
    ],
    "fused": [
        (MORE, "«walk:fused_why_m»\n\n«fused_try»"),
        (CODE, """fused = walk["fused"]
i = fused["row"]   # «c_fused_row»
scores = S_scaled[i]
print(tokens[i], "S' =", scores)

def take_in(keys, m=-np.inf, l=0.0, o=None):  # «c_fused_step»
    o = np.zeros(V.shape[1], dtype=np.float32) if o is None else o
    for j in keys:
        m_new = max(m, scores[j])
        rescale = np.exp(m - m_new)   # «c_fused_rescale»
        l = l * rescale + np.exp(scores[j] - m_new)
        o = o * rescale + np.exp(scores[j] - m_new) * V[j]
        m = m_new
        print(f"+ {tokens[j]}: m = {m:.4f}, e^(m_old − m) = {rescale:.4f}, ℓ = {l:.4f}, o/ℓ = {o / l}")
    return m, l, o

m, l, o = take_in(range(len(tokens)))
print("o/ℓ =", o / l, "  O[i] =", O[i])
after = fused["one_at_a_time"][-1]["after"]
print("«c_check»«colon»", bool(np.allclose([m, l, *o], [after["m"], after["l"], *after["o"]], rtol=1e-5, atol=1e-6)))"""),
        (MD, "«walk:fused_halves»\n\n«halves_try»"),
        (CODE, """half = (len(tokens) + 1) // 2   # «c_halves»
m1, l1, o1 = take_in(range(half))
m2, l2, o2 = take_in(range(half, len(tokens)))
m12 = max(m1, m2)   # «c_merge»
l12 = np.exp(m1 - m12) * l1 + np.exp(m2 - m12) * l2
o12 = np.exp(m1 - m12) * o1 + np.exp(m2 - m12) * o2
merged = fused["halves"]["merged"]
print("m, ℓ =", m12, l12, "  o/ℓ =", o12 / l12)
print("«c_check»«colon»", bool(np.allclose([m12, l12, *o12], [merged["m"], merged["l"], *merged["o"]], rtol=1e-5, atol=1e-6)))
print("«c_one_pass»«colon»", bool(np.allclose([m12, l12, *o12], [m, l, *o], rtol=1e-5, atol=1e-6)))"""),
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
    ],
}


def section_heading(section, lang, walk):
    """A section's heading cell, as the walk gives it: its title (a step's with its formula), its note
    (confusion 4's filled from the walk) and the lines of code it mirrors."""
    text = walk["text"]
    title = text[section["title"]] + (f" ${section['formula']}$" if section["formula"] and not section["aside"] else "")
    parts = [f"## {title}"]
    if section["note"]:
        note = text[section["note"]]
        if section["key"] == "confusion.4":
            note = fill("«walk:confusion4_note|d_k|d_model|heads.d_model|heads.h»", lang, walk)
        parts.append(note)
    if section["markers"]:
        phrases = PHRASES[lang]
        parts.append(phrases["code"] + phrases["colon_sp"] + phrases["list_sep"].join(
            f"`{m['file']}` [{m['name']}]" for m in section["markers"]))
    return "\n\n".join(parts)


def cells_of(walk, lang):
    """[(type, source)] of the notebook for `lang`: the head, then every section of the walk, in order."""
    out = [(kind, render(kind, template, lang, walk)) for kind, template in HEAD]
    for section in walk["sections"]:
        heading = section_heading(section, lang, walk)
        rest = SECTIONS.get(section["key"], [])
        more = [template for kind, template in rest if kind == MORE]
        heading = "\n\n".join([heading] + [fill(t, lang, walk) for t in more])
        out.append((MD, render(MD, heading, lang, walk, filled=True)))
        out += [(kind, render(kind, template, lang, walk)) for kind, template in rest if kind != MORE]
    return out


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
        if name.startswith("section:"):  # a section's formula: «section:step.4»
            return next(s["formula"] for s in walk["sections"] if s["key"] == name[len("section:"):])
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


def render(kind, template, lang, walk, filled=False):
    if kind == MD:
        # The walk's notes follow a title on the terminal ("Step 1 · Input X: each row …"); here each starts
        # a paragraph, so its first letter is a capital.
        paragraphs = (template if filled else fill(template, lang, walk)).split("\n\n")
        return markdown_math("\n\n".join(p[:1].upper() + p[1:] for p in paragraphs))
    return fill(template, lang, walk, code=True)


def notebook(lang, walk):
    """The notebook for `lang` as the text of its .ipynb file (nbformat 4.5, written as Jupyter writes it)."""
    cells = [cell(kind, source, k) for k, (kind, source) in enumerate(cells_of(walk, lang))]
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
