#!/usr/bin/env python3
"""Build the annotated source pages: notes with rendered math on the left, the code they describe on
the right, one page per file of attention/, matrix/, simd/ and io/, the lesson's chain as the front page,
and the performance page with its plots.

    /usr/bin/python3 scripts/annotate.py [--out build/docs]      (or: meson compile -C build docs)

Uses Debian's python3-markdown and python3-pygments; KaTeX comes from libjs-katex and is copied next
to the pages, so they work offline. A note is a run of // comment lines; the code after it, up to the
next note, is what it describes. Math in notes is written $…$ and rendered by KaTeX in the browser.
"""
import argparse
import html
import re
import shutil
from pathlib import Path

import markdown
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer

ROOT = Path(__file__).resolve().parent.parent
KATEX = Path("/usr/share/javascript/katex")
# The reading order of docs/reading-order.md; any other file of these folders follows it.
ORDER = ["attention/attention.hpp", "attention/attention.cpp", "matrix/ops.hpp", "matrix/ops.cpp", "matrix/matrix.hpp",
         "matrix/matrix.cpp", "attention/worked_example.hpp", "attention/backends.hpp", "attention/backends.cpp",
         "simd/simd.hpp", "simd/batch.hpp", "simd/vector_ops.cpp", "simd/gemm.cpp", "simd/microkernel.hpp",
         "simd/packing.hpp", "simd/softmax.cpp", "simd/mask.cpp", "simd/fused.cpp", "simd/threads.hpp", "attention/experiments.hpp", "attention/experiments.cpp",
         "matrix/size.hpp", "matrix/size.cpp", "io/io.hpp", "io/npy.cpp", "io/csv.cpp", "io/files.cpp"]
MARKER = re.compile(r"\[((?:step|steps|naive|fast|fused) [^\]\n]*)\]")
MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$")


def sources():
    found = sorted(str(p.relative_to(ROOT)) for d in ("attention", "matrix", "simd", "io") for p in (ROOT / d).glob("*.[ch]pp"))
    return [f for f in ORDER if f in found] + [f for f in found if f not in ORDER]


def page_name(source):
    return source.replace("/", "_") + ".html"


def anchor(marker):
    return "m-" + re.sub(r"[^a-z0-9]+", "-", marker.lower()).strip("-")


def sections(text):
    """[(note lines, code lines)] — a note is a run of whole-line // comments."""
    out, note, code = [], [], []
    for line in text.splitlines():
        if line.strip().startswith("//"):
            if code:
                out.append((note, code))
                note, code = [], []
            note.append(re.sub(r"^\s*// ?", "", line))
        else:
            code.append(line)
    if note or code:
        out.append((note, code))
    return out


def render_note(lines):
    """Markdown with the math kept away from it: $…$ is set aside, _ and * are escaped (d_k is not
    emphasis), the rest goes through python-markdown, and the math comes back for KaTeX."""
    text = "\n".join(lines)
    kept = []

    def keep(m):
        kept.append(html.escape(m.group(0)))
        return f"\x00{len(kept) - 1}\x00"

    text = MATH.sub(keep, text)
    text = re.sub(r"([_*])", r"\\\1", text)
    rendered = markdown.markdown(text)
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], rendered)


def layout(title, nav, body, current, heading=True):
    links = "".join(
        f'<li{" class=current" if href == current else ""}><a href="{href}">{html.escape(label)}</a></li>' for label, href in nav)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · attention.cpp</title>
<link rel="stylesheet" href="katex/katex.min.css"><link rel="stylesheet" href="style.css">
<script defer src="katex/katex.min.js"></script><script defer src="katex/contrib/auto-render.js"></script>
<script>document.addEventListener("DOMContentLoaded", () => renderMathInElement(document.body, {{
  delimiters: [{{left: "$$", right: "$$", display: true}}, {{left: "$", right: "$", display: false}}],
  ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code"]}}));</script>
</head><body><nav><h2>attention.cpp</h2><ul>{links}</ul></nav><main>{f"<h1>{html.escape(title)}</h1>" if heading else ""}
{body}</main></body></html>
"""


def source_page(source, nav, formatter):
    body = []
    seen = set()
    for number, (note, code) in enumerate(sections((ROOT / source).read_text(encoding="utf-8"))):
        ids = [anchor(m) for m in MARKER.findall("\n".join(note)) if anchor(m) not in seen]
        seen.update(ids)
        id_attr = f' id="{ids[0]}"' if ids else f' id="s{number}"'
        extra = "".join(f'<span id="{i}"></span>' for i in ids[1:])
        code_html = highlight("\n".join(code), CppLexer(), formatter) if any(c.strip() for c in code) else ""
        body.append(f'<section class="pair"{id_attr}>{extra}<div class="note">{render_note(note)}</div>'
                    f'<div class="code">{code_html}</div></section>')
    return layout(source, nav, "\n".join(body), page_name(source))


def markdown_page(md_path, title, nav, current, marker_pages):
    text = md_path.read_text(encoding="utf-8")
    text = re.sub(r"\(([\w.-]+)\.md(#[\w-]+)?\)", lambda m: f"({m.group(1)}.html{m.group(2) or ''})", text)
    body = markdown.markdown(text, extensions=["tables", "fenced_code"])

    def link(m):  # [`[step 3]`](../attention/attention.cpp) → the section of that page carrying it
        marker = html.unescape(m.group(2))
        target = marker_pages.get(marker)
        return f'<a href="{target}#{anchor(marker)}"><code>[{m.group(2)}]</code></a>' if target else m.group(0)

    body = re.sub(r'<a href="\.\./([^"]+)"><code>\[([^\]<]+)\]</code></a>', link, body)
    return layout(title, nav, body, current, heading=False)  # the Markdown brings its own title


STYLE = """
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: #222; display: flex; }
nav { width: 15rem; flex: none; background: #f4f4f6; padding: 1rem; height: 100vh; overflow-y: auto;
      position: sticky; top: 0; box-sizing: border-box; font-size: 13px; }
nav ul { list-style: none; padding: 0; } nav li.current a { font-weight: bold; }
main { flex: 1; padding: 1rem 2rem; min-width: 0; }
section.pair { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr); border-top: 1px solid #eee; }
.note { padding: .4rem 1rem .4rem 0; } .note p { margin: .3rem 0; }
.code { background: #fafafa; padding: .3rem .8rem; overflow-x: auto; }
.code pre { margin: 0; font-size: 12.5px; line-height: 1.4; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: .2rem .5rem; }
img { max-width: 100%; }
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    if not (KATEX / "katex.min.js").exists():
        raise SystemExit("scripts/annotate.py: KaTeX not found in /usr/share/javascript/katex (apt-get install libjs-katex)")
    shutil.copytree(KATEX, out / "katex", dirs_exist_ok=True)
    for image in (ROOT / "docs").glob("*.png"):
        shutil.copy(image, out / image.name)
    formatter = HtmlFormatter(nowrap=False, style="friendly")
    (out / "style.css").write_text(STYLE + formatter.get_style_defs(".code"), encoding="utf-8")

    files = sources()
    pages = [("Lesson 03: the chain", "index.html"), ("第 03 讲（中文）", "lesson-03.zh.html"),
             ("Reading order", "reading-order.html"), ("Performance", "performance.html")]
    nav = pages + [(f, page_name(f)) for f in files]
    marker_pages = {}
    for f in files:
        for m in MARKER.findall((ROOT / f).read_text(encoding="utf-8")):
            marker_pages.setdefault(m, page_name(f))
    for f in files:
        (out / page_name(f)).write_text(source_page(f, nav, formatter), encoding="utf-8")
    for md, (title, name) in zip(["lesson-03.md", "lesson-03.zh.md", "reading-order.md", "performance.md"], pages):
        (out / name).write_text(markdown_page(ROOT / "docs" / md, title, nav, name, marker_pages), encoding="utf-8")
    print(f"wrote {len(files) + len(pages)} pages to {out}/ (open index.html)")


if __name__ == "__main__":
    main()
