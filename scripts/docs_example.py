"""The lesson's picture and its worked example, for the lesson pages built by scripts/annotate.py.

flow_diagram(): an SVG of the chain X → Q, K, V → S → S' → α → O with the shape on every arrow; each
node links to the line of attention/attention.cpp that computes it (standalone_svg(): the same as a
file of its own, docs/chain.<lang>.svg).

worked_example(): the example's numbers for every --scale and --causal, read from the built program
(`attn walk --format json`), so that they cannot drift from the code, and the page's words for them;
scripts/worked_example.js lays them out (tables, one entry written out, α as a heat map, the demos of
the confusions) and, where the WebAssembly build of the chain sits next to the page, makes the
example editable. Nothing is fetched: the pages work from file://.
"""
import html
import json
import re
import subprocess

SCALES = ["sqrt", "dk", "none"]

TEXT = {
    "en": {
        "diagram_title": "The chain, with the shape of what flows along each arrow (click a step for its code)",
        "names": {"X": "input", "Q": "queries", "K": "keys", "V": "values", "S": "scores", "S'": "scaled",
                  "α": "weights", "O": "output", "mask": "causal mask (optional)"},
        "heading": "The worked example, computed by attn",
        "intro": "Every number below was printed by <code>attn walk --format json</code> when these pages were "
                 "built, so it cannot drift from the code. Indices count from 1, as in the lesson: $o_1$ is row 1 of "
                 "$O$, which 0-based code calls <code>output[0]</code>. Choose the scaling and the mask:",
        "scale": "scaling", "mask": "mask", "no_mask": "none", "causal": "causal",
        "scale_labels": {"sqrt": r"$\div\sqrt{d_k}$ (the lesson)", "dk": r"$\div d_k$", "none": "none"},
        "weights_note": "$W_Q$, $W_K$, $W_V$ are this project's choice (<code>attention/worked_example.hpp</code>): "
                        "the lesson uses them but never prints them. $X$ is the lesson's own.",
        "step": "Step {}", "expanded": "One entry written out", "colon": ": ", "semicolon": "; ",
        "titles": ["Input $X$", "Projections $Q = XW_Q$, $K = XW_K$, $V = XW_V$", "Scores $S = QK^\\top$",
                   "Scaling", "Causal mask", "Weights $\\alpha = \\operatorname{softmax}_{\\text{row}}(S')$",
                   "Output $O = \\alpha V$"],
        "column1": "column 1 of $W_Q$",
        "scale_notes": {
            "sqrt": r"With $d_k$ independent unit-variance entries, $\operatorname{Var}(q\cdot k) = d_k$; dividing "
                    r"by $\sqrt{d_k}$ brings it back to 1.",
            "dk": r"Dividing by $d_k$ leaves $\operatorname{Var}(S'_{ij}) = 1/d_k$: the larger $d_k$, the closer "
                  r"the scores sit to 0 and the flatter $\alpha$ becomes.",
            "none": r"Unscaled, $\operatorname{Var}(S_{ij}) = d_k$: the larger $d_k$, the wider the scores spread "
                    r"and the closer the softmax comes to picking one token."},
        "mask_note": r"$S'_{ij} = -\infty$ for $j > i$; $e^{-\infty} = 0$, so no token gets weight from a later one.",
        "row_max": "row maximum", "sum": "sum", "row_sums": "Row sums of $\\alpha$",
        "heat": "darker = more attention",
        "transpose": "Why $K^\\top$ and not $K$?",
        "transpose_note": r"$(QK)_{ij} = \sum_p Q_{ip}K_{pj}$ pairs the features of query $i$ with feature $j$ "
                          r"of every token: it compares no query with any key.",
        "transpose_square": "It is shape-valid here only because $n = d_k = {}$.",
        "transpose_refused": "Here $n = {}$ and $d_k = {}$: $QK$ is not even defined.",
        "confusion1": "Confusion 1 · Why does $QK^\\top$ tell how the tokens relate?",
        "confusion1_note": r"$S_{ij} = q_i \cdot k_j = \lVert q_i\rVert\,\lVert k_j\rVert \cos\theta_{ij}$ grows "
                           r"as query $i$ and key $j$ point the same way. Which directions count as related is no "
                           r"fixed rule of grammar: $W_Q$ and $W_K$ are learned, so “related” means whatever "
                           r"training found useful. Below, the cosines; then the same $X$ with another $W_K$ "
                           r"($W_K = W_Q$, standing in for a model trained differently).",
        "cosines": r"$\cos\theta_{ij}$",
        "other_keys": r"$S$ with $W_K = W_Q$",
        "row_largest": "largest score of each row",
        "with_example_keys": "with the example's $W_K$",
        "same_in_S": "the same position in $S$",
        "confusion2": "Confusion 2 · Why softmax along rows and not down columns?",
        "confusion2_note": "Row $i$ shares out the attention of query $i$ over every position. Taken down each "
                           "column instead, every column sums to 1 and the rows do not: column $j$ would say how "
                           "strongly all the queries compete for position $j$, another question, and $o_i$ would "
                           "not be an average of the values.",
        "by_column": "softmax down the columns",
        "confusion3": "Confusion 3 · Why is the output still one vector per token?",
        "confusion3_note": r"$\alpha V$ is $(n \times n)(n \times d_v) = n \times d_v$: one row per token, as in $X$. "
                           r"The form is the same, the content is not: $x_i$ was token $i$'s embedding alone; "
                           r"$o_i$ mixes every token's value, in the shares of row $i$ of $\alpha$, as written out for $o_1$ above.",
        "column_sums": "column sums", "row_sums_short": "row sums",
        "exercise5": "Exercise 5 · output[0] against V[0]",
        "exercise5_causal": "Under the causal mask token 1 sees only itself: $\\alpha_{11} = 1$, so $o_1 = v_1$. "
                            "The last token sees every token:",
        "confusion4": "Confusion 4 · How do $d_k$ and $d_{\\text{model}}$ relate?",
        "confusion4_note": "One head may choose $d_k$ freely (here {}, with $d_{\\text{model}} = {}$). The original "
                           "Transformer has $h$ heads of width",
        "length": " (length)",
        "noscript": "The tables of this example need JavaScript; <code>attn walk</code> prints the same numbers.",
        "comma": ", ",
        "live_intro": "Change any number, a token's name, the number of tokens or $d_k$ and $d_v$: every table "
                      "below is computed again by the WebAssembly build of the chain — the same C++ as "
                      "<code>attn walk</code>. A cell that is not a number, or beyond float32, is marked and "
                      "named, and nothing changes until it is fixed.",
        "edited_note": "These are your numbers now, not the lesson's; every table below follows from them.",
        "tokens": "tokens", "token": "token", "reset": "reset to the lesson",
    },
    "zh": {
        "diagram_title": "计算链，每个箭头上标出流经数据的形状（点击某一步可跳到对应代码）",
        "names": {"X": "输入", "Q": "查询", "K": "键", "V": "值", "S": "分数", "S'": "缩放后",
                  "α": "权重", "O": "输出", "mask": "因果掩码（可选）"},
        "heading": "示例的计算结果，由 attn 算出",
        "intro": "下面每个数都是构建本页时由 <code>attn walk --format json</code> 输出的，因此不会与代码脱节。"
                 "下标与课程一致，从 1 开始：$o_1$ 是 $O$ 的第 1 行，即从 0 计数的代码中的 <code>output[0]</code>。"
                 "选择缩放方式与掩码：",
        "scale": "缩放", "mask": "掩码", "no_mask": "无", "causal": "因果",
        "scale_labels": {"sqrt": r"$\div\sqrt{d_k}$（课程）", "dk": r"$\div d_k$", "none": "不缩放"},
        "weights_note": "$W_Q$、$W_K$、$W_V$ 由本项目选定（<code>attention/worked_example.hpp</code>）："
                        "课程用到它们，但没有给出数值。$X$ 取自课程。",
        "step": "第 {} 步", "expanded": "展开其中一项", "colon": "：", "semicolon": "；",
        "titles": ["输入 $X$", "线性投影 $Q = XW_Q$，$K = XW_K$，$V = XW_V$", "分数 $S = QK^\\top$", "缩放",
                   "因果掩码", "权重 $\\alpha = \\operatorname{softmax}_{\\text{row}}(S')$", "输出 $O = \\alpha V$"],
        "column1": "$W_Q$ 的第 1 列",
        "scale_notes": {
            "sqrt": r"$q$、$k$ 各有 $d_k$ 个独立的单位方差分量时 $\operatorname{Var}(q\cdot k) = d_k$；"
                    r"除以 $\sqrt{d_k}$ 使方差回到 1。",
            "dk": r"除以 $d_k$ 时 $\operatorname{Var}(S'_{ij}) = 1/d_k$：$d_k$ 越大，分数越贴近 0，$\alpha$ 越平坦。",
            "none": r"不缩放时 $\operatorname{Var}(S_{ij}) = d_k$：$d_k$ 越大，分数越分散，softmax 越接近只选一个词。"},
        "mask_note": r"$j > i$ 时 $S'_{ij} = -\infty$；$e^{-\infty} = 0$，所以任何词都得不到后面词的权重。",
        "row_max": "行最大值", "sum": "求和", "row_sums": "$\\alpha$ 各行之和",
        "heat": "颜色越深，注意力越多",
        "transpose": "第 3 步为什么用 $K^\\top$ 而不是 $K$？",
        "transpose_note": r"$(QK)_{ij} = \sum_p Q_{ip}K_{pj}$ 把查询 $i$ 的各个特征与每个词的第 $j$ 个特征相乘："
                          r"它没有拿任何查询去比较任何键。",
        "transpose_square": "这里能相乘只是因为恰好 $n = d_k = {}$。",
        "transpose_refused": "这里 $n = {}$、$d_k = {}$：$QK$ 根本无法相乘。",
        "confusion1": "容易混淆的问题 1 · $QK^\\top$ 为什么能表示词与词之间的关系？",
        "confusion1_note": r"$S_{ij} = q_i \cdot k_j = \lVert q_i\rVert\,\lVert k_j\rVert \cos\theta_{ij}$："
                           r"查询 $i$ 与键 $j$ 的方向越一致，分数越高。哪些方向算“相关”，并不是语法上定好的标签："
                           r"$W_Q$ 和 $W_K$ 都是学出来的，所谓相关，就是训练中发现有用的那种关系。下面先列出余弦，"
                           r"再看同一个 $X$ 换一个 $W_K$（取 $W_K = W_Q$，代表另一种训练结果）会怎样。",
        "cosines": r"$\cos\theta_{ij}$",
        "other_keys": r"$W_K = W_Q$ 时的 $S$",
        "row_largest": "每行最大的分数",
        "with_example_keys": "示例中的 $W_K$",
        "same_in_S": "$S$ 中同一位置",
        "confusion2": "容易混淆的问题 2 · softmax 为什么按行做，而不是按列？",
        "confusion2_note": "第 $i$ 行是查询 $i$ 把注意力分给所有位置的方式。若按列做 softmax，每一列之和为 1，"
                           "各行之和却不是 1：第 $j$ 列表示的是所有查询争夺位置 $j$ 的程度，回答的是另一个问题；"
                           "$o_i$ 也不再是值向量的加权平均。",
        "by_column": "按列做 softmax",
        "confusion3": "容易混淆的问题 3 · 为什么输出仍然是一个词一个向量？",
        "confusion3_note": r"$\alpha V$ 的形状是 $(n \times n)(n \times d_v) = n \times d_v$：和 $X$ 一样，每个词一行。"
                           r"形式相同，内容却不同：$x_i$ 只是词 $i$ 自己的嵌入；$o_i$ 则按 $\alpha$ 第 $i$ 行的比例，"
                           r"把所有词的值向量混合在一起，上面展开的 $o_1$ 就是一例。",
        "column_sums": "各列之和", "row_sums_short": "各行之和",
        "exercise5": "练习 5 · 比较 output[0] 与 V[0]",
        "exercise5_causal": "使用因果掩码时，第 1 个词只能看到自己：$\\alpha_{11} = 1$，所以 $o_1 = v_1$。最后一个词能看到所有词：",
        "confusion4": "容易混淆的问题 4 · $d_k$ 与 $d_{\\text{model}}$ 是什么关系？",
        "confusion4_note": "单头时 $d_k$ 可以自由选择（这里是 {}，$d_{\\text{model}} = {}$）。原始 Transformer 中每个头的宽度为",
        "length": "（长度）",
        "noscript": "这个示例的表格需要 JavaScript；<code>attn walk</code> 会打印同样的数。",
        "comma": "，",
        "live_intro": "可以修改任意一个数、词的名字、词的个数，以及 $d_k$ 和 $d_v$：下面每张表都会由这条计算链的 "
                      "WebAssembly 版本重新算出——与 <code>attn walk</code> 是同一份 C++ 代码。不是数字或超出 float32 "
                      "范围的格子会被标出并说明原因，改正之前其余内容保持不变。",
        "edited_note": "现在这些是你的数，而不是课程里的；下面每张表都由它们算出。",
        "tokens": "词数", "token": "词", "reset": "恢复课程中的示例",
    },
}

# ---- the picture ------------------------------------------------------------------------------

def svg_text(s):
    """Text for an SVG <text>, with x_sub written as a lowered, smaller sub."""
    return re.sub(r"_([A-Za-z0-9]+)", r'<tspan class="sub" dy="4">\1</tspan><tspan dy="-4">&#8203;</tspan>', html.escape(s))


SVG_STYLE = """
svg .node rect { fill: #eef3fd; stroke: #3b6fd8; stroke-width: 1.5; } svg .node:hover rect { fill: #dbe6fb; }
svg .node.optional rect { fill: #fff; stroke-dasharray: 5 3; }
svg text { font: 15px system-ui, "Noto Sans CJK SC", sans-serif; text-anchor: middle; fill: #111; }
svg text.formula { font-family: "DejaVu Serif", serif; font-style: italic; }
svg text.name { font-size: 13px; fill: #444; } svg tspan.sub { font-size: 11px; } svg text.shape { font-size: 13px; fill: #b03a2e; text-anchor: start; }
"""


def flow_diagram(lang, link):
    """The diagram as the pages show it: `link(marker)` → the href of that marker's line."""
    return (f'<figure class="diagram">{diagram_svg(lang, link)}'
            f'<figcaption>{html.escape(TEXT[lang]["diagram_title"])}</figcaption></figure>')


def standalone_svg(lang):
    """The same diagram as a file of its own (docs/chain.<lang>.svg, shown by any Markdown viewer): its
    style inside, a white ground, each node linked to attention/attention.cpp next to docs/."""
    return diagram_svg(lang, lambda marker: "../attention/attention.cpp", standalone=True) + "\n"


def diagram_svg(lang, link, standalone=False):
    t = TEXT[lang]["names"]
    nodes = {  # name: (x, y, width, formula, marker)
        "X": (10, 118, 110, "X", "step 1"), "Q": (240, 20, 120, "Q = X·W_Q", "step 2.Q"),
        "K": (240, 118, 120, "K = X·W_K", "step 2.K"), "V": (240, 216, 120, "V = X·W_V", "step 2.V"),
        "S": (440, 60, 120, "S = Q·Kᵀ", "step 3"), "S'": (615, 60, 125, "S' = S/√d_k", "step 4"),
        "α": (795, 60, 160, "α = softmax(S')", "step 5"), "O": (940, 200, 120, "O = α·V", "step 6")}
    h = 64
    arrows = [  # (from point, to point, label, label position)
        ((120, 150), (237, 52), "", None), ((120, 150), (237, 150), "n×d_model", (128, 142)),
        ((120, 150), (237, 248), "", None), ((360, 52), (437, 84), "n×d_k", (372, 50)),
        ((360, 150), (437, 102), "n×d_k  (Kᵀ: d_k×n)", (330, 192)), ((560, 92), (612, 92), "n×n", (566, 84)),
        ((740, 92), (792, 92), "n×n", (746, 84)), ((875, 124), (995, 197), "n×n", (945, 150)),
        ((360, 248), (937, 236), "n×d_v", (600, 262))]
    title = html.escape(TEXT[lang]["diagram_title"])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1080 300" role="img" aria-label="{title}">'
             if standalone else f'<svg viewBox="0 0 1080 300" role="img" aria-label="{title}">']
    if standalone:
        parts.append(f'<style>{SVG_STYLE}</style><rect width="1080" height="300" fill="#fff"/>')
    parts.append('<defs><marker id="head" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto">'
                 '<path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>')
    for (x1, y1), (x2, y2), label, at in arrows:
        parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#555" stroke-width="1.6" marker-end="url(#head)"/>')
        if label:
            parts.append(f'<text class="shape" x="{at[0]}" y="{at[1]}">{svg_text(label)}</text>')
    for name, (x, y, w, formula, marker) in nodes.items():
        parts.append(f'<a href="{link(marker)}" class="node"><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8"/>'
                     f'<text x="{x + w / 2}" y="{y + 26}" class="formula">{svg_text(formula)}</text>'
                     f'<text x="{x + w / 2}" y="{y + 50}" class="name">{html.escape(t[name])}</text></a>')
    parts.append(f'<a href="{link("step 4.mask")}" class="node optional"><rect x="690" y="160" width="170" height="40" rx="8"/>'
                 f'<text x="775" y="185" class="name">{html.escape(t["mask"])}</text></a>'
                 '<line x1="775" y1="160" x2="766" y2="97" stroke="#999" stroke-dasharray="4 3" marker-end="url(#head)"/>')
    parts.append(f'<text class="shape" x="985" y="288">{svg_text("n×d_v")}</text></svg>')
    return "".join(parts)


# ---- the numbers --------------------------------------------------------------------------------

def walk_json(attn, lang, scale, causal):
    args = [attn, "walk", "--format", "json", "--lang", lang, "--scale", scale] + (["--causal"] if causal else [])
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def worked_example(attn, lang, live=False):
    """The section the page shows: the scale and mask switch, the six variants' numbers as JSON, and
    scripts/worked_example.js, which lays them out (and, with `live`, loads attn_walk.js and makes
    the example editable). Without script, a line says where the same numbers are."""
    t = TEXT[lang]
    radios = (f'<span>{t["scale"]}{t["colon"]}</span>' + "".join(
        f'<label><input type="radio" name="scale-{lang}" value="{s}"{" checked" if s == "sqrt" else ""}> '
        f'{t["scale_labels"][s]}</label>' for s in SCALES)
        + f'<span>{t["mask"]}{t["colon"]}</span>' + "".join(
        f'<label><input type="radio" name="causal-{lang}" value="{c}"{" checked" if c == 0 else ""}> {label}</label>'
        for c, label in ((0, t["no_mask"]), (1, t["causal"]))))
    variants = {f"{scale}-{causal}": walk_json(attn, lang, scale, causal) for scale in SCALES for causal in (0, 1)}
    data = json.dumps({"text": t, "variants": variants}, ensure_ascii=False).replace("</", "<\\/")
    return (f'<section id="worked-example" class="worked"><h2>{t["heading"]}</h2><p>{t["intro"]}</p>'
            f'<div class="switch">{radios}</div><div class="editor" hidden></div><div class="variant"></div>'
            f'<noscript><p>{t["noscript"]}</p></noscript><script type="application/json" class="worked-data">{data}</script>'
            # the mark is where scripts/worked_example.js starts timing the module's first render
            + ('<script>performance.mark("attn_walk.js")</script><script src="attn_walk.js"></script>' if live else "")
            + '<script src="worked_example.js"></script></section>')


if __name__ == "__main__":
    # scripts/docs_example.py --svg en > docs/chain.en.svg (and zh): the committed pictures;
    # tests/test_docs.cpp fails when a committed one differs from what this prints.
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--svg" and sys.argv[2] in TEXT:
        sys.stdout.write(standalone_svg(sys.argv[2]))
    else:
        sys.exit("usage: scripts/docs_example.py --svg en|zh")
