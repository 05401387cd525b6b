#!/usr/bin/env python3
"""Render the annotated pages in headless Chromium and check them as a reader would see them.

    /usr/bin/python3 scripts/check_docs_page.py [--out DIR]

Builds the pages with scripts/annotate.py, loads every page in Chromium (Debian `chromium`), and
checks the DOM after the scripts ran: KaTeX rendered the math (elements of class "katex" on every
page whose source has $…$, and no raw $…$ left in the text), every source file has a page in the
navigation with at least one note/code section, every marker link of the front page points at an
element that exists. Saves screenshots of the front page and of simd/fused.cpp in DIR. Prints one
line per check and "N passed, M failed"; exits 1 on any failure. Without Chromium it prints a line
starting "SKIPPED" and exits 0.
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000", "--window-size=1400,1100"]


def chromium(profile, *args):
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                            capture_output=True, text=True, timeout=120)
    return result.stdout


def visible_text(dom):
    """The DOM without what may legitimately hold a '$': scripts, code, and KaTeX's TeX annotations."""
    for tag in ("script", "pre", "code", "annotation", "style"):
        dom = re.sub(rf"<{tag}\b.*?</{tag}>", "", dom, flags=re.S)
    return re.sub(r"<[^>]+>", "", dom)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    out = Path(ap.parse_args().out)
    if not CHROMIUM:
        print("SKIPPED: the docs page check needs Chromium (Debian: apt-get install chromium)")
        return 0
    subprocess.run([sys.executable, str(ROOT / "scripts" / "annotate.py"), "--out", str(out)], check=True)
    sys.path.insert(0, str(ROOT / "scripts"))
    import annotate  # the same list of sources and page names the generator used

    results = []

    def check(ok, what):
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    with tempfile.TemporaryDirectory() as profile:
        index = chromium(profile, "--dump-dom", (out / "index.html").as_uri())
        for source in annotate.sources():
            page = annotate.page_name(source)
            dom = chromium(profile, "--dump-dom", (out / page).as_uri())
            has_math = "$" in (ROOT / source).read_text(encoding="utf-8")
            katex = dom.count('class="katex"')
            leftover = re.findall(r"\$[^$\n]{1,60}\$?", visible_text(dom))
            check(f'href="{page}"' in index, f"{source}: listed in the navigation")
            sections = dom.count('<section class="pair"')
            check(sections >= 1, f"{source}: {sections} sections")
            if has_math:
                check(katex > 0, f"{source}: {katex} formulas rendered by KaTeX")
            check(not leftover, f"{source}: no raw $…$ left" + (f" (found {leftover[:2]})" if leftover else ""))
        links = re.findall(r'href="([\w.]+\.html)#(m-[\w-]+)"', index)
        missing = [f"{p}#{a}" for p, a in links if f'id="{a}"' not in (out / p).read_text(encoding="utf-8")]
        check(len(links) >= 20 and not missing, f"front page: {len(links)} marker links, all resolve" +
              (f" (missing {missing[:3]})" if missing else ""))
        for name, page in (("index", "index.html"), ("fused", "simd_fused.cpp.html")):
            shot = out / f"screenshot-{name}.png"
            chromium(profile, f"--screenshot={shot}", (out / page).as_uri())
            check(shot.exists() and shot.stat().st_size > 20000, f"screenshot {shot.name}: {shot.stat().st_size if shot.exists() else 0} bytes")
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
