#!/usr/bin/env python3
"""Run the lesson notebooks (docs/lesson-03.ipynb and its Chinese twin) end to end with nbclient, and
check that the numbers they compute are the ones `attn walk --format json` prints.

    /usr/bin/python3 tests/checks/run_notebooks.py [--build build] [--attn build/attn]

Each notebook must be committed without outputs, run every cell without an error (the module is
imported from --build, as a developer would), and leave Q, K, V, α and O of the worked example and α
under the causal mask equal to attn walk's (the same float32 bits), and what it computes in NumPy
within float32 rounding of attn walk's: S, S with W_K = W_Q (confusion 1), the softmax down columns
(confusion 2), α under exercise 4's own −∞ mask, and the online softmax of the fused walk, key by key
and merged from two halves; every hands-on cell must print that it found the walk's numbers; with no
warning from any cell. That the notebooks
are what scripts/make_notebooks.py makes is tests/python/test_notebooks.py's check.

The notebooks run against a stale font list made on purpose: matplotlib saves the fonts it finds in a
font list the first time it runs and does not look again, so on a machine where it ran before the
Chinese font was installed, asking for that font by name draws boxes for 猫 坐 地毯 and warns. The
check writes such a list into a folder of its own (MPLCONFIGDIR): matplotlib's own list with every
font that covers Chinese taken out, as it was before the font came. It first shows that the list is
stale (a figure drawn by family name alone warns of a missing glyph), then runs the notebooks with
it: each must find the font by its file and draw without a warning.

Needs nbclient, ipykernel and matplotlib, and a font with the tokens' characters (Debian:
python3-nbclient python3-ipykernel python3-matplotlib fonts-noto-cjk). Last line: "N passed, M failed".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import numpy as np
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = {"lesson-03.ipynb": "en", "lesson-03.zh.ipynb": "zh"}
sys.path.insert(0, str(ROOT / "scripts"))
from make_notebooks import PHRASES  # noqa: E402  (the notebooks' own words: what their checks print)

# Appended to the notebook for this check only: what the notebook computed, as JSON.
REPORT = """import json as _json
print(_json.dumps({"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist(), "S": S.tolist(), "weights": alpha.tolist(),
                   "output": O.tolist(), "weights_causal": alpha_causal.tolist(), "tokens": tokens,
                   "S_with_W_K_as_W_Q": S_same.tolist(), "softmax_by_column": by_column.tolist(),
                   "weights_own_mask": alpha_mask.tolist(), "font_file": font_file,
                   "fused_state": [float(x) for x in (m, l, *o)], "fused_merged": [float(x) for x in (m12, l12, *o12)]}))"""

# Run with MPLCONFIGDIR naming the stale folder: matplotlib's list of the fonts it found, rewritten
# without the fonts that cover Chinese, as it would have been saved before one was installed.
MAKE_STALE = """import json, pathlib, subprocess
import matplotlib, matplotlib.font_manager  # the import finds the fonts and saves their list (fontlist-v*.json)
chinese = subprocess.run(["fc-list", ":lang=zh-cn", "file"], capture_output=True, text=True, check=True).stdout
files = {line.split(":")[0] for line in chinese.splitlines()}
for path in pathlib.Path(matplotlib.get_cachedir()).glob("fontlist-v*.json"):
    saved = json.loads(path.read_text(encoding="utf-8"))
    saved["ttflist"] = [font for font in saved["ttflist"] if font["fname"] not in files]
    path.write_text(json.dumps(saved), encoding="utf-8")
print(len(files))"""

# A font asked for by family name alone: with a stale list matplotlib does not know the name and warns
# of each missing glyph, which is what shows that the list is stale.
BY_NAME_ONLY = """import io, warnings
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.rcParams["font.sans-serif"] = ["Noto Sans CJK JP", "Noto Sans CJK SC", "DejaVu Sans"]
figure, axes = plt.subplots()
axes.set_title("猫 坐 地毯")
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    figure.savefig(io.BytesIO())
print(sum("missing from current font" in str(w.message) for w in seen))"""


def stale_font_list(folder, check):
    """Makes `folder` hold a font list without the Chinese fonts, and checks that it is stale."""
    env = {**os.environ, "MPLCONFIGDIR": str(folder)}
    run = lambda code: subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    made = run(MAKE_STALE)
    fonts = int(made.stdout.strip() or 0) if made.returncode == 0 else 0
    check(fonts > 0, f"a font covering Chinese is installed ({fonts} files; fontconfig's fc-list)"
          + (f": {made.stderr.strip()[-300:]}" if made.returncode else ""))
    warned = run(BY_NAME_ONLY)
    check(warned.returncode == 0 and int(warned.stdout.strip() or 0) > 0,
          f"the font list in {folder.name} is stale: a title of 猫 坐 地毯 asked for by family name only warns "
          f"of {warned.stdout.strip() or '?'} missing glyphs")
    os.environ["MPLCONFIGDIR"] = str(folder)  # the notebooks' kernels start with it


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    args = ap.parse_args()
    os.environ["ATTN_BUILD"] = str(Path(args.build).resolve())
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the kernel's debugger: no warning about frozen modules
    results = []

    def check(ok, what):
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    stale = tempfile.TemporaryDirectory(prefix="stale-fontlist-")
    stale_font_list(Path(stale.name), check)
    for name, lang in NOTEBOOKS.items():
        nb = nbformat.read(ROOT / "docs" / name, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        check(all(not c.outputs and c.execution_count is None for c in code),
              f"{name}: committed without outputs ({len(code)} code cells)")
        nb.cells.append(nbformat.v4.new_code_cell(REPORT))
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(ROOT / "docs")}})
        try:
            client.execute()
        except CellExecutionError as e:
            check(False, f"{name}: a cell failed: {str(e)[:2000]}")
            continue
        check(True, f"{name}: all {len(code)} code cells ran")
        printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
        got = json.loads(printed)
        walk = json.loads(subprocess.run([args.attn, "walk", "--format", "json", "--lang", lang],
                                         capture_output=True, text=True, check=True).stdout)
        causal = json.loads(subprocess.run([args.attn, "walk", "--format", "json", "--lang", lang, "--causal"],
                                           capture_output=True, text=True, check=True).stdout)
        same = lambda a, b: np.array_equal(np.array(a, dtype=np.float32), np.array(b, dtype=np.float32))
        for key in ("Q", "K", "V", "weights", "output"):
            check(same(got[key], walk[key]), f"{name}: its {key} is attn walk's, bit for bit ({got[key][0]})")
        check(same(got["weights_causal"], causal["weights"]), f"{name}: its causal α is attn walk --causal's")
        close = lambda a, b: np.allclose(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64), rtol=1e-6, atol=1e-6)
        check(close(got["S"], walk["S"]), f"{name}: its S (NumPy's Q @ K.T) is attn walk's")
        for key in ("S_with_W_K_as_W_Q", "softmax_by_column"):
            check(close(got[key], walk[key]), f"{name}: its {key} (NumPy's) is attn walk's")
        check(close(got["weights_own_mask"], causal["weights"]),
              f"{name}: exercise 4's answer, the −∞ mask written in NumPy, gives attn walk --causal's α")
        check(got["tokens"] == walk["tokens"], f"{name}: its tokens are attn walk's in its language ({got['tokens']})")
        f = walk["fused"]
        for key, state in (("fused_state", f["one_at_a_time"][-1]["after"]), ("fused_merged", f["halves"]["merged"])):
            check(close(got[key], [state["m"], state["l"], *state["o"]]),
                  f"{name}: its online softmax, key by key in NumPy ({key}), is attn walk's ({got[key]})")
        # every hands-on cell checks itself against the walk, and says so
        printed_all = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stdout")
        said = PHRASES[lang]["c_check"]
        check(printed_all.count(f"{said}{PHRASES[lang]['colon']} True") >= 10 and f"{said}{PHRASES[lang]['colon']} False" not in printed_all,
              f"{name}: every NumPy cell that computes what the walk computed finds the walk's numbers "
              f"({printed_all.count(said)} checks)")
        check(bool(got["font_file"]), f"{name}: found the Chinese font by its file ({got['font_file']})")
        warnings = [o["text"] for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stderr"]
        check(not warnings, f"{name}: no cell wrote a warning, with the stale font list (a missing glyph would)"
              f"{warnings[:1]}")
        figures = sum(1 for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
        check(figures >= 3, f"{name}: the heat maps were drawn ({figures} figures)")

    stale.cleanup()
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
