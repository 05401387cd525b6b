#!/usr/bin/env python3
"""Build the annotated source pages: one row per note, the note on the left beside the lines of code it
describes on the right, one page per C++ file of the library and its front ends (attention/, matrix/,
simd/, io/, lesson/, cli/, web/, python/), in the reading order; the lesson (English
and Chinese) as the front pages, with the flow diagram and the worked example; the reading order and
the pages for engineers (using it, many heads, building it, robustness) and the performance page with its plots and data.

    /usr/bin/python3 docs/site/annotate.py [--out build/docs] [--attn build/attn]
    (or: ./scripts/dev docs, or meson compile -C build docs)

Uses Debian's python3-markdown and python3-pygments; KaTeX comes from libjs-katex and is copied next
to the pages, so they work offline. A note is a run of // comment lines; the code after it, up to the
next note or the end of its top-level block, is what it describes. Math in notes and in docs/ is
written $…$ or $$…$$; the formulas of marker lines ([step 3] S = Q·Kᵀ …) are typeset from their
plain Unicode by docs/site/docs_math.py. The worked example comes from the built attn
(docs/site/docs_example.py).
"""
import argparse
import html
import re
import shutil
import unicodedata
from pathlib import Path

import markdown
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer

from docs_example import SVG_STYLE, flow_diagram, worked_example
from docs_math import marker_line_html

ROOT = Path(__file__).resolve().parents[2]
KATEX = Path("/usr/share/javascript/katex")
# The folders whose every C++ file gets a page: the library's rooms and its front ends.
FOLDERS = ("attention", "matrix", "simd", "io", "lesson", "cli", "web", "python")
# The reading order of docs/reading-order.md, item by item (a header beside its source); any other
# file of FOLDERS follows it.
ORDER = ["attention/attention.hpp", "attention/options.hpp", "attention/attention.cpp", "attention/guards.hpp",
         "attention/guards.cpp", "attention/trace.cpp",                                              # 1
         "matrix/ops.hpp", "matrix/ops.cpp",                                                         # 2
         "matrix/matrix.hpp", "matrix/matrix.cpp",                                                   # 3
         "lesson/worked_example.hpp", "lesson/walk.hpp", "lesson/walk.cpp", "lesson/sections.hpp",
         "lesson/sections.cpp", "lesson/sentences.hpp", "lesson/sentences.cpp", "cli/walk.hpp",
         "cli/walk.cpp",                                                                             # 4
         "simd/simd.hpp", "simd/batch.hpp", "simd/vector_ops.cpp", "simd/gemm.cpp", "simd/microkernel.hpp",
         "simd/packing.hpp", "simd/blocking.hpp", "simd/blocking.cpp", "simd/dispatch.cpp", "simd/kernels.hpp",
         "simd/kernel_table.cpp", "simd/exp.hpp", "simd/softmax.cpp", "simd/mask.cpp", "simd/fused.cpp",
         "lesson/fused_walk.hpp", "lesson/fused_walk.cpp", "cli/walk_fused.hpp", "cli/walk_fused.cpp",
         "simd/bf16.hpp", "attention/backends.hpp", "attention/backends.cpp",                        # 6
         "attention/backward.cpp", "lesson/walk_grad.cpp", "cli/walk_grad.hpp", "cli/walk_grad.cpp",
         "simd/fused_backward.cpp", "lesson/learn.hpp", "lesson/learn.cpp",                    # 7
         "attention/heads.hpp", "attention/heads.cpp",                                               # 8
         "lesson/experiments.hpp", "lesson/experiments.cpp",                                   # 9
         "matrix/size.hpp", "matrix/size.cpp", "io/io.hpp", "io/npy.cpp", "io/csv.cpp", "io/files.cpp",  # 10
         "lesson/json.hpp", "lesson/json.cpp", "lesson/json_text.cpp", "web/walk.cpp", "web/learn.cpp",  # 11
         "python/attention_cpp.cpp"]                                                                 # 12
MARKER = re.compile(r"\[((?:step|steps|grad|grads|naive|fast|fused|decode) [^\]\n]*)\]")
MARKER_LINE = re.compile(r"^\[((?:step|steps|naive|fast|fused|decode) [^\]\n]*)\](.*)$")
MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
# The Markdown pages and the HTML page each becomes; index.html is the English lesson.
PAGES = {"lesson-03.md": ("Lesson 03: the chain", "index.html", "en"),
         "lesson-03.zh.md": ("第 03 讲（中文）", "lesson-03.zh.html", "zh-CN"),
         "reading-order.md": ("Reading order", "reading-order.html", "en"),
         "using.md": ("Using it", "using.html", "en"),
         "heads.md": ("Many heads", "heads.html", "en"),
         "decoding.md": ("Decoding", "decoding.html", "en"),
         "building.md": ("Building, testing, CI", "building.html", "en"),
         "robustness.md": ("Robustness", "robustness.html", "en"),
         "performance.md": ("Performance", "performance.html", "en")}


def sources():
    found = sorted(str(p.relative_to(ROOT)) for d in FOLDERS for p in (ROOT / d).glob("*.[ch]pp"))
    return [f for f in ORDER if f in found] + [f for f in found if f not in ORDER]


def page_name(source):
    return source.replace("/", "_") + ".html"


def anchor(marker):
    return "m-" + re.sub(r"[^a-z0-9]+", "-", marker.lower()).strip("-")


def sections(text):
    """[(note lines, code lines)]: a note is a run of whole-line // comments, and it describes the code
    after it up to the next note or the end of the top-level block (a closing brace in column 0 and a
    blank line); code after that block stands in a row of its own, without a note."""
    out, note, code = [], [], []
    for line in text.splitlines():
        if line.strip().startswith("//"):
            if code:
                out.append((note, code))
                note, code = [], []
            note.append(re.sub(r"^\s*// ?", "", line))
        elif not line.strip() and code and code[-1].startswith("}") and any(c.strip() for c in code):
            out.append((note, code))
            note, code = [], []
        elif line.strip() or code:
            code.append(line)
    if note or code:
        out.append((note, code))
    return [(note, code[:max((k + 1 for k, c in enumerate(code) if c.strip()), default=0)]) for note, code in out]


def with_math_kept(text, convert):
    """convert(text) with every $…$ and $$…$$ set aside first (so that Markdown neither escapes nor
    emphasises inside them) and put back after, HTML-escaped, for KaTeX to typeset in the browser."""
    kept = []

    def keep(m):
        kept.append(html.escape(m.group(0), quote=False))
        return f"\x00{len(kept) - 1}\x00"

    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], convert(MATH.sub(keep, text)))


def render_note(lines, anchor_of):
    """A note as HTML: each marker line is a paragraph of its own, with the marker's anchor and its
    formula typeset (docs/site/docs_math.py); the other lines are Markdown, _ and * taken literally."""
    out, prose = [], []

    def flush():
        if prose:
            out.append(with_math_kept("\n".join(prose), lambda t: markdown.markdown(re.sub(r"([_*])", r"\\\1", t))))
            prose.clear()

    for line in lines:
        m = MARKER_LINE.match(line)
        if m:
            flush()
            out.append(f'<p class="formula-line">{marker_line_html(m.group(1), m.group(2), anchor_of(m.group(1)))}</p>')
        else:
            prose.append(line)
    flush()
    return "".join(out)


def layout(title, nav, body, current, lang="en", heading=True):
    links = "".join(
        f'<li{" class=current" if href == current else ""}><a href="{href}">{html.escape(label)}</a></li>' for label, href in nav)
    return f"""<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{html.escape(title)} · attention.cpp</title>
<link rel="stylesheet" href="katex/katex.min.css"><link rel="stylesheet" href="style.css">
<script defer src="katex/katex.min.js"></script><script defer src="katex/contrib/auto-render.js"></script>
<script>window.mathOptions = {{  // also for what docs/site/worked_example.js draws later
  delimiters: [{{left: "$$", right: "$$", display: true}}, {{left: "$", right: "$", display: false}}],
  ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code"], throwOnError: false}};
document.addEventListener("DOMContentLoaded", () => renderMathInElement(document.body, window.mathOptions));</script>
</head><body><nav><h2>attention.cpp</h2><ul>{links}</ul></nav><main>{f"<h1>{html.escape(title)}</h1>" if heading else ""}
{body}</main></body></html>
"""


def source_page(source, nav, formatter):
    rows = []
    for number, (note, code) in enumerate(sections((ROOT / source).read_text(encoding="utf-8"))):
        code_html = highlight("\n".join(code), CppLexer(), formatter) if any(c.strip() for c in code) else ""
        rows.append(f'<section class="pair" id="s{number}"><div class="note">{render_note(note, anchor)}</div>'
                    f'<div class="code">{code_html}</div></section>')
    return layout(source, nav, "\n".join(rows), page_name(source))


def heading_anchor(text):
    """The anchor a Markdown viewer gives a heading (GitHub's rule; tests/test_docs.cpp checks links
    against the same): lower case, letters, marks, digits, '_' and '-' kept, spaces to '-'."""
    return "".join("-" if c == " " else c for c in text.strip().lower()
                   if c in " _-" or unicodedata.category(c)[0] in "LMN")


def with_heading_ids(html_text, seen):
    """Every <h1>…<h6> of converted Markdown with the id its heading's anchor gives (repeats numbered
    -1, -2, … as GitHub numbers them; `seen` counts them over the page), so that links to
    page.html#heading lead somewhere."""
    def add_id(m):
        anchor = heading_anchor(html.unescape(re.sub(r"<[^>]+>", "", m.group(2))))
        times = seen.get(anchor, 0)
        seen[anchor] = times + 1
        return f'<h{m.group(1)} id="{anchor}-{times}">' if times else f'<h{m.group(1)} id="{anchor}">'
    return re.sub(r"<h([1-6])>(.*?)(?=</h\1>)", lambda m: add_id(m) + m.group(2), html_text, flags=re.S)


def markdown_page(md_name, nav, marker_pages, extras):
    """A page of docs/: links to other .md pages and to source files follow them to their HTML pages,
    marker links go to the line carrying the marker, and the <!-- diagram --> and
    <!-- worked-example --> placeholders become the HTML `extras` holds for them."""
    title, name, lang = PAGES[md_name]
    text = (ROOT / "docs" / md_name).read_text(encoding="utf-8")
    # The committed picture that Markdown viewers show under the placeholder gives way to the live one.
    text = re.sub(r"^(<!-- diagram -->)\n!\[[^\]\n]*\]\(chain\.[\w.]+\.svg\)$", r"\1", text, flags=re.M)
    if lang == "zh-CN":  # a line break between two Chinese characters is not a space
        text = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef])\n\s*(?=[\u3000-\u9fff\uff00-\uffef])", "", text)
    pages = {md: page for md, (_, page, _) in PAGES.items()}
    text = re.sub(r"\]\(([\w.-]+\.md)(#[\w-]+)?\)", lambda m: f"]({pages.get(m.group(1), m.group(1))}{m.group(2) or ''})", text)
    parts = re.split(r"^<!-- ([\w-]+) -->$", text, flags=re.M)
    body, seen = "", {}
    for k, part in enumerate(parts):
        body += extras[part] if k % 2 else with_heading_ids(
            with_math_kept(part, lambda t: markdown.markdown(t, extensions=["tables", "fenced_code"])), seen)

    def marker_link(m):  # [`[step 3]`](../attention/attention.cpp) → the line of that page carrying it
        marker = html.unescape(m.group(2))
        target = marker_pages.get(marker)
        return f'<a href="{target}#{anchor(marker)}"><code>[{m.group(2)}]</code></a>' if target else m.group(0)

    body = re.sub(r'<a href="\.\./([^"]+)"><code>\[([^\]<]+)\]</code></a>', marker_link, body)
    body = re.sub(r'href="\.\./([\w/]+\.[ch]pp)"', lambda m: f'href="{page_name(m.group(1))}"', body)
    return name, layout(title, nav, body, name, lang, heading=False)  # the Markdown brings its own title


STYLE = """
body { margin: 0; font: 15px/1.5 system-ui, "Noto Sans CJK SC", sans-serif; color: #222; display: flex; }
nav { width: 13rem; flex: none; background: #f4f4f6; padding: 1rem; height: 100vh; overflow-y: auto;
      position: sticky; top: 0; box-sizing: border-box; font-size: 13px; }
nav ul { list-style: none; padding: 0; } nav li.current a { font-weight: bold; } nav a { overflow-wrap: anywhere; }
main { flex: 1; padding: 1rem 2rem; min-width: 0; }
section.pair { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr); border-top: 1px solid #d4d4d8; }
.note { padding: .4rem 1rem .4rem 0; } .note p { margin: .3rem 0; }
.note p.formula-line { background: #f3f6fb; border-left: 3px solid #3b6fd8; padding: .2rem .5rem; }
.marker { font-family: monospace; font-size: 12px; color: #3b6fd8; }
.code { background: #fafafa; padding: .4rem .8rem; }
.code pre { margin: 0; font-size: 12.5px; line-height: 1.4; white-space: pre-wrap; overflow-wrap: anywhere; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: .2rem .5rem; }
img { max-width: 100%; }
.katex-display { overflow-x: auto; overflow-y: hidden; }
main pre { white-space: pre-wrap; overflow-wrap: anywhere; }
figure.diagram { margin: 1rem 0; } figure.diagram svg { width: 100%; max-width: 1080px; height: auto; }
figure.diagram figcaption { font-size: 13px; color: #555; }
.switch { display: flex; gap: .8rem; flex-wrap: wrap; align-items: center; padding: .5rem; background: #f4f4f6; }
.mats { display: flex; flex-wrap: wrap; gap: 1.2rem; align-items: flex-start; margin: .4rem 0; }
.mat .cap { font-size: 13px; color: #555; }
table.matrix td { text-align: right; font-family: monospace; font-size: 13px; }
table.matrix th { font-weight: normal; font-size: 13px; background: #f7f7f7; }
.aside { border-left: 3px solid #d9a400; background: #fffbea; padding: .2rem 1rem; margin: .8rem 0; }
.editor { border: 1px solid #c7d2e8; background: #f7f9fd; padding: .2rem 1rem .6rem; margin: .6rem 0; }
.editor .controls { display: flex; gap: .5rem; flex-wrap: wrap; align-items: center; }
.editor .controls .count { margin-left: .6rem; } .editor button { min-width: 2rem; }
.editor input { width: 4.6em; font: 13px monospace; text-align: right; border: 1px solid #bbb; padding: 1px 3px; }
.editor input.token { width: 5.5em; text-align: left; font-family: inherit; }
.editor input.bad { border-color: #c0392b; background: #fdecea; outline: 2px solid #c0392b; }
.editor .error { color: #c0392b; min-height: 1.2em; }
.variant.stale > :not(.stale-note) { opacity: .3; }
.stale-note { color: #8c2a1f; background: #fdecea; border: 1px dashed #c0392b; padding: .3rem .7rem; }
table.heatmap td.wanted { outline: 3px solid #d9a400; outline-offset: -3px; }
svg.loss polyline { fill: none; stroke: #1e40af; stroke-width: 1.6; } svg.loss .axis { fill: none; stroke: #888; }
svg.loss text { font-size: 11px; fill: #444; text-anchor: end; } svg.loss text.start { text-anchor: start; }
""" + SVG_STYLE


def marker_pages_of(files):
    """marker → the page whose comment line starts with it (each marker is on exactly one line)."""
    found = {}
    for f in files:
        for line in (ROOT / f).read_text(encoding="utf-8").splitlines():
            m = MARKER_LINE.match(re.sub(r"^\s*// ?", "", line)) if line.strip().startswith("//") else None
            if m:
                found.setdefault(m.group(1), page_name(f))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    ap.add_argument("--attn", default=str(ROOT / "build" / "attn"), help="the built attn, which prints the example")
    ap.add_argument("--wasm", default=str(ROOT / "build-wasm" / "attn_walk.js"),
                    help="the WebAssembly build of the chain (scripts/dev wasm); where it exists, the example is editable")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not (KATEX / "katex.min.js").exists():
        raise SystemExit("docs/site/annotate.py: KaTeX not found in /usr/share/javascript/katex (apt-get install libjs-katex)")
    if not Path(args.attn).exists():
        raise SystemExit(f"docs/site/annotate.py: {args.attn} not found: build attn first (ninja -C build attn)")
    shutil.copytree(KATEX, out / "katex", dirs_exist_ok=True)
    for extra in [*(ROOT / "docs").glob("*.png"), *(ROOT / "docs").glob("*.json")]:  # what the pages link
        shutil.copy(extra, out / extra.name)
    shutil.copy(ROOT / "docs" / "site" / "worked_example.js", out / "worked_example.js")
    live = Path(args.wasm).exists()
    if live:
        shutil.copy(args.wasm, out / "attn_walk.js")
    elif (out / "attn_walk.js").exists():
        (out / "attn_walk.js").unlink()  # an older build's module must not make these pages live
    formatter = HtmlFormatter(nowrap=False, style="friendly")
    (out / "style.css").write_text(STYLE + formatter.get_style_defs(".code"), encoding="utf-8")

    files = sources()
    nav = [(title, name) for title, name, _ in PAGES.values()] + [(f, page_name(f)) for f in files]
    marker_pages = marker_pages_of(files)
    link = lambda marker: f"{marker_pages[marker]}#{anchor(marker)}"
    for f in files:
        (out / page_name(f)).write_text(source_page(f, nav, formatter), encoding="utf-8")
    for md in PAGES:
        lang = "zh" if PAGES[md][2] == "zh-CN" else "en"
        extras = {"diagram": flow_diagram(lang, link), "worked-example": worked_example(args.attn, lang, link, live)} if md.startswith("lesson") else {}
        name, page = markdown_page(md, nav, marker_pages, extras)
        (out / name).write_text(page, encoding="utf-8")
    print(f"wrote {len(files) + len(PAGES)} pages to {out}/ (open index.html)"
          + ("; the worked example is editable (attn_walk.js)" if live else "; the worked example is the precomputed one"
             " (no WebAssembly build: scripts/dev wasm)"))


if __name__ == "__main__":
    main()
