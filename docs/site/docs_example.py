"""The lesson's picture and its worked example, for the lesson pages built by docs/site/annotate.py.

flow_diagram(): an SVG of the chain X → Q, K, V → S → S' → α → O with the shape on every arrow; each
node links to the line of attention/attention.cpp that computes it (standalone_svg(): the same as a
file of its own, docs/chain.<lang>.svg).

worked_example(): the example's numbers for every --scale and --causal, and the program's sentences
about them, read from the built program (`attn walk --format json`), so that neither can drift from
the code;
docs/site/worked_example.js lays them out (tables, one entry written out, α as a heat map, the demos of
the confusions) and, where the WebAssembly build of the chain sits next to the page, makes the
example editable. Nothing is fetched: the pages work from file://.
"""
import html
import json
import re
import subprocess

from docs_math import sentence_html

SCALES = ["sqrt", "dk", "none"]

# The pages' own words: the picture's labels and the controls around the example. Every sentence about
# the example itself comes from the program (`attn walk --format json`, "text": lesson/sentences.cpp).
TEXT = {
    "en": {
        "diagram_title": "The chain, with the shape of what flows along each arrow (click a step for its code)",
        "names": {"X": "input", "Q": "queries", "K": "keys", "V": "values", "S": "scores", "S'": "scaled",
                  "α": "weights", "O": "output", "mask": "causal mask (optional)"},
        "heading": "The worked example, computed by attn",
        "intro": "Every number below was printed by <code>attn walk --format json</code> when these pages were "
                 "built, so it cannot drift from the code; so was every sentence about it.",
        "choose": "Choose the scaling and the mask:",
        "scale": "scaling", "mask": "mask", "no_mask": "none", "causal": "causal",
        "scale_labels": {"sqrt": r"$\div\sqrt{d_k}$ (the lesson)", "dk": r"$\div d_k$", "none": "none"},
        "colon": ": ", "semicolon": "; ", "comma": ", ", "space": " ", "list_separator": ", ", "open": " (", "close": ")",
        "code": "code",
        "noscript": "The tables of this example need JavaScript; <code>attn walk</code> prints the same numbers.",
        "live_intro": "Change any number, a token's name, the number of tokens or $d_k$ and $d_v$: every table "
                      "below is computed again by the WebAssembly build of the chain — the same C++ as "
                      "<code>attn walk</code>. A cell that is not a number, or beyond float32, is marked and "
                      "named, and until it is fixed the tables below are dimmed and say that they are not "
                      "current. A minus sign may be written - or −.",
        "edited_note": "These are your numbers now, not the lesson's; every table below follows from them.",
        "tokens": "tokens", "token": "token", "reset": "reset to the lesson",
        # {} {}: the lesson's d_k and d_v, which the training keeps
        "train_intro": "Or watch relevance being learned: <b>train</b> replaces $W_Q$ and $W_K$ with small random "
                       "weights (every row of α nearly uniform) and trains the two on the task of "
                       "<code>attn learn</code>, with the lesson's $d_k = {}$ and $d_v = {}$: each token's target is "
                       "the value $v$ of the token it should attend to (猫 to 坐, 坐 to 猫, 地毯 to 坐; those cells "
                       "of α are outlined). $W_V$ stays fixed, so the loss can fall only as α moves its weight to "
                       "those cells. Every frame runs the chain forward, backward and Adam's update a few times, the "
                       "same C++ as <code>attn learn</code>, and every table below is drawn for the weights reached. "
                       "The lesson itself stops at the forward pass.",
        "train": "train", "pause": "pause", "step": "step",
        # {} {}: the steps taken, the seed
        "trained_note": "These weights were learned: {} steps of backpropagation and Adam (seed {}) on the task "
                        "above moved $W_Q$ and $W_K$, and $W_V$ stayed as it started; every table below follows "
                        "from them.",
        "loss_curve": "L = ½‖O − T‖² by step (logarithmic scale)",
        "lang": "en",
        "stale": "Not current: these tables still show the last input the chain accepted, not the one above",
        "full_stop": ". ",
        "render_failed": "This result could not be drawn",
        "refused": "The chain refused this input",
        # a refused cell: matrix, row, column, the cell as typed (the problem from web/walk.cpp's
        # "cell"; "empty" and "decimal_comma" are told apart by the page)
        "cell_problems": {
            "not_a_number": "{}, row {}, column {}: “{}” is not a number",
            "decimal_comma": "{}, row {}, column {}: “{}” is not a number; write the decimal point as “.”, "
                             "not as a comma",
            "empty": "{}, row {}, column {} is empty",
            "beyond_float32": "{}, row {}, column {}: “{}” is beyond float32 (at most ±3.4e38)",
            "infinite": "{}, row {}, column {}: “{}” is infinite",
            "nan": "{}, row {}, column {}: “{}” is NaN (not a number)",
        },
    },
    "zh": {
        "diagram_title": "计算链，每个箭头上标出流经数据的形状（点击某一步可跳到对应代码）",
        "names": {"X": "输入", "Q": "Query", "K": "Key", "V": "Value", "S": "注意力分数", "S'": "缩放后的分数",
                  "α": "注意力权重", "O": "输出", "mask": "因果掩码（可选）"},
        "heading": "示例的计算结果（由 attn 算出）",
        "intro": "下面的每个数都由 <code>attn walk --format json</code> 在生成本页时输出，因此不会与代码不一致；"
                 "关于这些数的每句说明也来自同一份输出。",
        "choose": "选择缩放方式与掩码：",
        "scale": "缩放", "mask": "掩码", "no_mask": "无", "causal": "因果",
        "scale_labels": {"sqrt": r"$\div\sqrt{d_k}$（课程所用）", "dk": r"$\div d_k$", "none": "不缩放"},
        "colon": "：", "semicolon": "；", "comma": "，", "space": "", "list_separator": "、", "open": "（", "close": "）",
        "code": "代码",
        "noscript": "这个示例的表格需要 JavaScript 才能显示；<code>attn walk</code> 会打印同样的数值。",
        "live_intro": "可以修改任意一个数、词的名称、词的个数以及 $d_k$ 和 $d_v$：下面每张表都会由这条计算链的 "
                      "WebAssembly 版本重新算出，它与 <code>attn walk</code> 是同一份 C++ 代码。不是数字或超出 "
                      "float32 范围的格子会被标出并注明原因；改正之前，下面的表格会变淡，并注明它们不是当前输入的"
                      "结果。负号写成 - 或 − 都可以。",
        "edited_note": "现在用的是你输入的数，不再是课程里的；下面每张表都由它们算出。",
        "tokens": "词数", "token": "词", "reset": "恢复课程中的示例",
        "train_intro": "也可以看看相关性是怎样学出来的：点击“训练”后，$W_Q$ 和 $W_K$ 会换成很小的随机权重"
                       "（α 的每一行都接近均匀分布），再在 <code>attn learn</code> 的任务上训练这两个矩阵，维度与课程相同："
                       "$d_k = {}$，$d_v = {}$。每个词的目标是它应当关注的那个词的 Value 向量 $v$（猫关注坐、"
                       "坐关注猫、地毯关注坐；α 中这些格子带有边框）。$W_V$ 保持不变，所以损失要下降，只能让 α "
                       "把权重移到这些格子上。每一帧让计算链做几次前向计算、反向传播和 Adam 更新，与 "
                       "<code>attn learn</code> 是同一份 C++ 代码；下面每张表都按当前学到的权重画出。"
                       "课程本身只讲到前向计算为止。",
        "train": "训练", "pause": "暂停", "step": "步数",
        "trained_note": "这些权重是学出来的：按上面的任务对 $W_Q$ 和 $W_K$ 做了 {} 步反向传播和 Adam 更新"
                        "（随机种子为 {}），$W_V$ 保持不变；下面每张表都由它们算出。",
        "loss_curve": "L = ½‖O − T‖² 随步数的变化（对数刻度）",
        "lang": "zh",
        "stale": "以下表格不是当前输入的结果：它们仍按计算链上一次接受的输入算出",
        "full_stop": "。",
        "render_failed": "无法显示这个结果",
        "refused": "计算链拒绝了这组输入",
        "cell_problems": {
            "not_a_number": "{}：第 {} 行第 {} 列的“{}”不是数字",
            "decimal_comma": "{}：第 {} 行第 {} 列的“{}”不是数字：小数点请写成“.”，不要写成逗号",
            "empty": "{}：第 {} 行第 {} 列为空",
            "beyond_float32": "{}：第 {} 行第 {} 列的“{}”超出 float32 的范围（最大 ±3.4e38）",
            "infinite": "{}：第 {} 行第 {} 列的“{}”是无穷大",
            "nan": "{}：第 {} 行第 {} 列的“{}”是 NaN（非数值）",
        },
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

def walk_json(attn, lang, scale, causal, link):
    """One variant's numbers, with the program's sentences and its sections' formulas typeset for the
    page (docs_math), and each section's markers linked to their lines (`link(marker)`)."""
    args = [attn, "walk", "--format", "json", "--lang", lang, "--scale", scale] + (["--causal"] if causal else [])
    variant = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    variant["text"] = {key: sentence_html(sentence) for key, sentence in variant["text"].items()}
    for section in variant["sections"]:
        section["formula_html"] = sentence_html(f"${section['formula']}$") if section["formula"] else ""
        for marker in section["markers"]:
            marker["href"] = link(marker["name"])
    return variant


def worked_example(attn, lang, link, live=False):
    """The section the page shows: the scale and mask switch, the six variants' numbers, sentences and
    sections as JSON, and docs/site/worked_example.js, which lays them out (and, with `live`, loads
    attn_walk.js and makes the example editable); `link(marker)` is the href of a marker's line.
    Without script, a line says where the same numbers are."""
    t = TEXT[lang]
    radios = (f'<span>{t["scale"]}{t["colon"]}</span>' + "".join(
        f'<label><input type="radio" name="scale-{lang}" value="{s}"{" checked" if s == "sqrt" else ""}> '
        f'{t["scale_labels"][s]}</label>' for s in SCALES)
        + f'<span>{t["mask"]}{t["colon"]}</span>' + "".join(
        f'<label><input type="radio" name="causal-{lang}" value="{c}"{" checked" if c == 0 else ""}> {label}</label>'
        for c, label in ((0, t["no_mask"]), (1, t["causal"]))))
    variants = {f"{scale}-{causal}": walk_json(attn, lang, scale, causal, link) for scale in SCALES for causal in (0, 1)}
    data = json.dumps({"text": t, "variants": variants}, ensure_ascii=False).replace("</", "<\\/")
    intro = t["space"].join((t["intro"], variants["sqrt-0"]["text"]["indices"], t["choose"]))
    return (f'<section id="worked-example" class="worked"><h2>{t["heading"]}</h2><p>{intro}</p>'
            f'<div class="switch">{radios}</div><div class="editor" hidden></div><div class="variant"></div>'
            f'<noscript><p>{t["noscript"]}</p></noscript><script type="application/json" class="worked-data">{data}</script>'
            # the mark is where docs/site/worked_example.js starts timing the module's first render
            + ('<script>performance.mark("attn_walk.js")</script><script src="attn_walk.js"></script>' if live else "")
            + '<script src="worked_example.js"></script></section>')


if __name__ == "__main__":
    # docs/site/docs_example.py --svg en > docs/chain.en.svg (and zh): the committed pictures;
    # tests/test_docs.cpp fails when a committed one differs from what this prints.
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--svg" and sys.argv[2] in TEXT:
        sys.stdout.write(standalone_svg(sys.argv[2]))
    else:
        sys.exit("usage: docs/site/docs_example.py --svg en|zh")
