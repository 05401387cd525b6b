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
def test_every_walk_sentence_the_notebook_names_is_in_it(lang):
    import attention_cpp
    walk = attention_cpp.walk(lang=lang)
    cells = json.loads(MADE[generator.NOTEBOOKS[lang]])["cells"]
    markdown = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    keys = {m.split("|")[0][len("walk:"):] for kind, t in generator.CELLS if kind == generator.MD
            for m in generator.MARKER.findall(t) if m.startswith("walk:")}
    assert {"title.3", "note.3", "confusion1", "confusion1_note", "title.4", "note.4", "confusion4",
            "exercise5"} <= keys
    for key in keys:
        # The words of each sentence (the text between its formulas) are in the notebook as the walk has them.
        for words in walk["text"][key].split("$")[::2]:
            words = words.strip()
            if "{}" not in words and words:
                assert words.lower() in markdown.lower(), (key, words)
    assert "$" not in "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


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
