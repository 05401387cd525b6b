"""The lesson notebooks are what scripts/make_notebooks.py makes from the walk's sentences.

Run by `meson test` (tests/meson.build) with the build directory on PYTHONPATH: the notebooks are made
again from this build's `attention_cpp.walk()` and compared with the committed docs/lesson-03.ipynb and
docs/lesson-03.zh.ipynb, so a sentence changed in the walk and not in the notebooks (or a notebook
edited by hand) fails here. The fix is `python3 scripts/make_notebooks.py --build build`.
"""
import difflib
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "scripts" / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = load_generator()
MADE = generator.notebooks()


@pytest.mark.parametrize("path", sorted(generator.NOTEBOOKS.values()), ids=lambda p: p.name)
def test_the_committed_notebook_is_what_the_generator_makes(path):
    committed = path.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(committed.splitlines(True), MADE[path].splitlines(True),
                                        "committed", "made", n=1))
    assert committed == MADE[path], (f"{path.name} differs from what scripts/make_notebooks.py makes "
                                     f"(run it with --build naming this build):\n{diff[:3000]}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_notebook_goes_down_the_walks_sections_in_their_order(lang):
    """Each section of the walk opens a Markdown cell with its title (a step's with its formula) and its
    note, in the walk's order; the sentences the cells name by key are there as the walk has them."""
    import attention_cpp
    walk = attention_cpp.walk(lang=lang)
    cells = json.loads(MADE[generator.NOTEBOOKS[lang]])["cells"]
    markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    headings = [m.split("\n")[0] for m in markdown if m.startswith("## ")]
    at = -1
    for section in walk["sections"]:
        words = walk["text"][section["title"]].split("$")[0].strip()  # the title's words before any formula
        found = [k for k, h in enumerate(headings) if k > at and words in h]
        assert found, (section["key"], words)
        at = found[0]
    assert {"step.1", "step.4", "confusion.1", "confusion.4", "exercise.5", "fused"} <= {s["key"] for s in walk["sections"]}
    text = "".join(markdown).lower()
    keys = {s["note"] for s in walk["sections"] if s["note"]} | {m.split("|")[0][len("walk:"):]
            for kind, t in generator.HEAD + [c for cells in generator.SECTIONS.values() for c in cells]
            if kind in (generator.MD, generator.MORE) for m in generator.MARKER.findall(t) if m.startswith("walk:")}
    for key in keys:
        # The words of each sentence (the text between its formulas) are in the notebook as the walk has them.
        for words in walk["text"][key].split("$")[::2]:
            words = words.strip()
            if "{}" not in words and words:
                assert words.lower() in text, (key, words)
    assert "$" not in "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_no_hands_on_cell_computes_a_demo_without_checking_it_against_the_walk():
    """A code cell that computes what the walk carries (a NumPy S, the cosines, the column softmax, the
    online softmax…) prints whether it is the walk's: it never stands in for the walk's numbers."""
    code = "".join("".join(c["source"]) for c in json.loads(MADE[generator.NOTEBOOKS["en"]])["cells"]
                   if c["cell_type"] == "code")
    for key in ("S", "Q_times_K", "cosines", "S_with_W_K_as_W_Q", "S_scaled", "softmax_by_column", "output"):
        assert f'same_as_walk(' in code and f'"{key}")' in code, key
    for field in ('walk["largest_per_row"]', 'walk["exercise5"]', 'fused["one_at_a_time"]', 'fused["halves"]'):
        assert field in code, field
    assert "standard_error" not in code and "3 *" not in code  # exercise 1's rule is attn exercise 1's, not copied


def test_the_chinese_notebook_comments_and_prints_in_chinese():
    assert set(generator.PHRASES["en"]) == set(generator.PHRASES["zh"])
    cells = json.loads(MADE[generator.NOTEBOOKS["zh"]])["cells"]
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    english = [t for k, t in generator.PHRASES["en"].items()
               if k.startswith("c_") and " " in t and t != generator.PHRASES["zh"][k]]
    assert len(english) > 30
    assert not [t for t in english if t in code]


def test_the_hardware_summary_comes_with_the_timing_not_first():
    cells = json.loads(MADE[generator.NOTEBOOKS["en"]])["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert [k for k, source in enumerate(code) if "build_info" in source] == [len(code) - 1]
    assert "perf_counter" in code[-1] and "np.median" in code[-1]
