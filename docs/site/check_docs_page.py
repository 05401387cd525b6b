#!/usr/bin/env python3
"""Render every annotated page in headless Chromium and check it as a reader would see it.

    /usr/bin/python3 docs/site/check_docs_page.py [--out DIR] [--attn build/attn]

Builds the pages with docs/site/annotate.py, then for every page loads a copy carrying
docs/site/docs_layout_check.js at 1400×1100 and reads the report it leaves in the DOM. A page fails when

  - a note is not left of its code, not level with it, or a marker sits outside the note column;
  - code, a table, a figure or display math is wider than its box, or the page scrolls sideways;
  - its source has formulas ($…$, or a marker line with one) and KaTeX typeset none, KaTeX reported
    an error, or raw $…$ is left in the text;
  - a Chinese page is not lang="zh-CN" (and an English one not "en");
  - a script of the page raised an error while it loaded or while the check used it (a sentence of
    the worked example filled with more or fewer values than its {} is one: worked_example.js refuses it);
  - where a number should be drawn there is something else: a {} left unfilled in a formula's TeX
    (KaTeX sets an empty {} as nothing), "undefined" or "NaN" after = in a formula or the text, or
    {}, "undefined" or "NaN" anywhere in the worked example's text, tables or formulas (in both of the
    variants the check shows, the lesson's and the causal one, whose numbers are all finite);
  - on the lesson pages: the flow diagram is missing, has not its 8 linked nodes left to right in the
    chain's order, or lacks the shapes on its arrows; the heat map of α is missing, its shading does not
    grow with the weight, the steps are out of order, or the switch to the causal variant does not
    show a zero upper triangle;
  - where the WebAssembly build exists (build-wasm/, scripts/dev wasm), the worked example is not
    editable, or, edited as a reader would (docs/site/docs_live_check.js), shows an S that is not
    X·W_Q·(X·W_K)ᵀ, an α or O that is not what `attn run` prints for the same matrices, a fourth
    causal token with a nonzero upper triangle, a non-number not marked and named (or anything else
    changed meanwhile), or a reset that does not bring back α₁ = 0.4838, 0.2844, 0.2317; a fused walk
    (steps 3–6 key by key) whose O is not attn run's, or whose merged halves are not its one-pass state;
    then, with
    3e19, 1, 1e, 1e4, 1e40, inf, nan, nothing, letters, 1,5, −0.2, －0.2 and 0.5 typed into W_Q₁₁ one
    after the other, a state that shows numbers other than `attn run`'s α and O for what is typed,
    unless `attn run` refuses it and the page marks that cell, names the problem in its language and
    marks the tables as not current (the fused walk's O and merge checked for each accepted value too); a number with more significant digits than a float32 holds;
    3e19 and the scores it gives not shown as the shortest decimal that reads back to their float32;
    1,5 not named as a decimal comma in the page's words; −0.2 (the sign the page prints) or －0.2
    not read as -0.2; or any script error meanwhile. After training, the step count, the loss and α
    must be `attn learn`'s (its defaults are the page's). Screenshots of the overflowed (3e19), the
    refused (1e40) and the decimal-comma (1,5) states, and of the fused walk, are saved beside the pages'. Without it, the example must be the
    precomputed one. That check runs on Chromium's real clock (DevTools
    pipe) and prints how long the first render and each recomputation took, and the module's size.

Every href and src of every page (SVG links included) must name a file that was generated or
copied, and every #anchor must exist in it. A screenshot of every page, taken by the same load once the
report is written (hidden, and the example switched back as it loaded), is saved in DIR/screenshots/.
Prints one line per check and "N passed, M failed"; exits 1 on any failure. Without Chromium it
prints a line starting "SKIPPED" and exits 0.
"""
import argparse
import base64
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=8000", "--window-size=1400,1100", "--allow-file-access-from-files"]


def chromium(profile, *args):
    result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                            capture_output=True, text=True, timeout=120)
    return result.stdout


def formula_in_marker_line(line):
    """Whether a source line is a marker comment whose text holds a formula the pages typeset."""
    import annotate
    import docs_math
    m = annotate.MARKER_LINE.match(re.sub(r"^\s*// ?", "", line)) if line.strip().startswith("//") else None
    return bool(m) and any(docs_math.is_formula(piece) for piece in docs_math.SEPARATOR.split(m.group(2)))


def broken_links(out):
    """[(page, link)] for every href/src that names no file of `out` or an anchor its target lacks."""
    ids = {}
    bad = []
    for page in sorted(out.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        for link in re.findall(r'(?:href|src)="([^"]+)"', text):
            if re.match(r"[a-z]+:", link):
                bad.append((page.name, link))  # the pages must work offline: nothing from elsewhere
                continue
            target, _, frag = link.partition("#")
            path = (out / target) if target else page
            if not path.exists():
                bad.append((page.name, link))
            elif frag:
                if path not in ids:
                    ids[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(encoding="utf-8", errors="replace")))
                if frag not in ids[path]:
                    bad.append((page.name, link))
    return bad


def attn_run(attn, inputs):
    """(output, α) as `attn run --backend naive` prints them for the matrices typed into the page, or
    None when it refuses them."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [attn, "run", "--backend", "naive", "--precision", "4"]
        for name, flag in (("X", "--x"), ("W_Q", "--wq"), ("W_K", "--wk"), ("W_V", "--wv")):
            path = Path(tmp) / f"{name}.csv"
            path.write_text("\n".join(",".join(row) for row in inputs[name]) + "\n")
            args += [flag, str(path)]
        run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode == 2 and run.stderr.startswith("attn: error: "):
        return None
    run.check_returncode()
    rows = [[float(v) for v in line.strip(" []").split()] for line in run.stdout.splitlines() if line.strip().startswith("[")]
    n = len(inputs["X"])
    return rows[:n], rows[n:]


def float32(text):
    """A number as the page shows it (− for a minus sign, 3e19) as the float32 it reads back to."""
    import numpy
    return numpy.float32(text.replace("−", "-"))


def shortest_digits(x):
    """The fewest significant digits of a decimal that reads back to the float32 x (at most 9)."""
    import numpy
    return next(d for d in range(1, 10) if d == 9 or numpy.float32(f"{float(x):.{d - 1}e}") == x)


def significant_digits(text):
    """How many significant digits a number shown by the page has ("0.4838": 4, "4.56e19": 3)."""
    mantissa = re.sub(r"[^0-9]", "", re.split(r"e", text)[0]).lstrip("0")
    return len(mantissa)


def scores_in_float32(inputs):
    """S = (X·W_Q)·(X·W_K)ᵀ in float32, each sum taken in order as the chain's naive backend does."""
    import numpy
    X, WQ, WK = (numpy.array([[float32(v) for v in row] for row in inputs[k]], dtype=numpy.float32)
                 for k in ("X", "W_Q", "W_K"))

    def product(A, B):
        out = numpy.zeros((A.shape[0], B.shape[1]), dtype=numpy.float32)
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                acc = numpy.float32(0)
                for k in range(A.shape[1]):
                    acc = numpy.float32(acc + numpy.float32(A[i, k] * B[k, j]))
                out[i, j] = acc
        return out
    return product(product(X, WQ), product(X, WK).T)


def large_value_checks(check, name, state):
    """3e19 in W_Q₁₁: every number the page shows reads back to the float32 the chain holds, in the
    fewest digits that do, never the digits of a double (30000001000000000000.0000)."""
    import numpy
    wq = state["W_Q"][0][0]
    check(float32(wq) == numpy.float32(3e19) and significant_digits(wq) == shortest_digits(numpy.float32(3e19)),
          f"{name}: W_Q₁₁ = 3e19 is shown as {wq!r}: the float32 attn run reads, in its shortest digits")
    S = scores_in_float32(state["inputs"])
    shown = [float32(v) for row in state["S"] for v in row]
    exact = [v == want and significant_digits(text) == shortest_digits(want)
             for v, want, text in zip(shown, S.flatten(), (t for row in state["S"] for t in row))]
    check(len(shown) == S.size and all(exact),
          f"{name}: … and S as shown ({state['S'][0]} …) reads back to the float32 of X·W_Q·(X·W_K)ᵀ, "
          f"in its shortest digits ({S[0, 0]:.9g} for S₁₁)")


def typed_checks(check, name, typed, attn, tolerance):
    """After each value typed into W_Q₁₁: the page shows the chain's own α and O for what is typed (what
    `attn run` prints for the same matrices), or, where attn run refuses them, marks that cell, says why
    in the page's language and marks the tables as not current. Never an earlier input's numbers
    unmarked, never a number with more digits than a float32 holds. Then what a reader may type
    beyond plain ASCII: 3e19 (shown in its own digits), 1,5 (marked and named as a decimal comma),
    −0.2 and －0.2 (read as -0.2, the sign the page prints and a full-width one)."""
    import docs_example
    zh = name.startswith("lesson-03.zh")
    problems = docs_example.TEXT["zh" if zh else "en"]["cell_problems"]
    read_as = {"−0.2": "-0.2", "－0.2": "-0.2"}  # what attn run is given for what the reader typed
    for state in typed:
        inputs = {k: [[read_as.get(v, v) for v in row] for row in m] for k, m in state["inputs"].items()}
        want = attn_run(attn, inputs)
        what = f"{name}: W_Q₁₁ = {state['value']!r}"
        numbers = re.findall(r"[0-9][0-9.]*(?:e[−-]?[0-9]+)?", state["tables"])
        check(numbers and max(map(significant_digits, numbers)) <= 9,
              f"{what}: no table shows more digits than a float32 holds (at most 9 significant; "
              f"longest {max(numbers, key=significant_digits, default='')!r})")
        if state["value"] == "3e19":
            large_value_checks(check, name, state)
        if state["value"] in read_as:
            check(want is not None, f"{what}: attn run accepts {read_as[state['value']]!r}")
        if state["value"] == "1,5":
            check(state["message"] == problems["decimal_comma"].format("W_Q", 1, 1, "1,5"),
                  f"{what}: the cell is named with the page's own words for a decimal comma ({state['message']!r})")
        if want is not None:
            O, alpha = want
            check(not state["stale"] and not state["marked"] and not state["message"]
                  and close(state["alpha"], alpha, tolerance) and close(state["O"], O, tolerance)
                  and "undefined" not in state["tables"],
                  f"{what}: accepted by attn run, and the page shows its α and O, current ({state['alpha']})")
            fused_checks(check, what, state["fused"], O, tolerance)
        else:
            words = state["message"]
            in_language = re.search(r"[\u4e00-\u9fff]", words) and "is not a number" not in words if zh else bool(words)
            check(state["stale"] and state["marked"] == [["W_Q", 0, 0]] and bool(in_language)
                  and state["note"].endswith(words) and len(state["note"]) > len(words),
                  f"{what}: refused by attn run; the page marks the cell, says why ({words!r}) and marks the tables "
                  f"as not current ({state['note'][:60]!r}…)")


def fused_checks(check, what, fused, O, tolerance):
    """The fused walk drawn for the input shown: O taken key by key is attn run's O, and the merge of the
    two halves is the state after the last key of the single pass (m, ℓ and o alike)."""
    check(close(fused["O"], O, tolerance), f"{what}: the fused walk's O, key by key, is attn run's ({fused['O'][:1]} …)")
    last, merged = fused["steps"][-1] if fused["steps"] else [], fused["halves"][-1] if fused["halves"] else []
    # a step's cells: its scores, m, e^(m_old − m), ℓ, o…, o/ℓ…; the merge's: m, its factor (1), ℓ, o…
    d_v = len(fused["O"][0]) if fused["O"] else 0
    one_pass = [last[1], last[3], *last[4:4 + d_v]] if len(last) >= 4 + d_v else []
    merge = [merged[0], merged[2], *merged[3:]] if len(merged) >= 3 else []
    check(one_pass and len(merge) == len(one_pass) and close([merge], [[float(v) for v in one_pass]], tolerance),
          f"{what}: the fused walk's merged halves are its one-pass state (m, ℓ, o: {merge} and {one_pass})")


def training_checks(check, name, r, attn, tolerance):
    """The train control against `attn learn --format json` (the same Trainer, with attn learn's defaults,
    which the page reads from the module's learnDefaults())."""
    zh = name.startswith("lesson-03.zh")
    want = json.loads(subprocess.run([attn, "learn", "--format", "json", "--lang", "zh" if zh else "en"],
                                     capture_output=True, text=True, check=True).stdout)
    step_word, colon, semicolon, train_word = ("步数", "：", "；", "训练") if zh else ("step", ": ", "; ", "train")
    p = r["paused"]
    check(p["status"].startswith(f"{step_word}{colon}2{semicolon}L = ") and p["button"] == train_word,
          f"{name}: train, then pause after the first frame: the counter stops at 2 steps ({p})")
    t = r["trained"]
    shown_step, shown_loss = re.fullmatch(rf"{step_word}{colon}(\d+){semicolon}L = ([0-9.e+-]+)", t["status"]).groups()
    loss = want["loss"]
    # as the page writes L: 4 decimals, or 4 significant digits below 0.001
    label = lambda v: f"{v:.4f}" if v >= 0.001 else re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{v:.3e}")
    check(int(shown_step) == want["steps"] and shown_loss == label(loss[-1]),
          f"{name}: after training the page says step {shown_step}, L = {shown_loss}; attn learn: L = {loss[-1]:.4g}")
    check(float(shown_loss) < 0.1 * loss[0],
          f"{name}: … below 10% of the start, L = {loss[0]:.4f} ({float(shown_loss) / loss[0]:.2e} of it)")
    check(close(t["alpha"], want["alpha_end"], tolerance),
          f"{name}: the trained α shown equals attn learn's final α ({t['alpha'][0]} …)")
    largest = [max(range(len(row)), key=lambda j: float(row[j])) for row in t["alpha"]]
    check(t["wanted"] == [[i, j] for i, j in enumerate(want["wanted"])] and largest == want["wanted"],
          f"{name}: the outlined cells are the ones the task wants, and each row's largest α is there ({t['wanted']})")
    c = t["curve"]
    check(c is not None and c["points"] == len(loss) == want["steps"] + 1
          and c["labels"][:2] == [label(max(loss)), label(min(loss))],
          f"{name}: the loss curve has a point for each of the {len(loss)} losses and is labelled with the largest "
          f"and smallest ({c and c['labels']})")
    w = t["inputs"]
    d_model = len(w["X"][0])
    shapes = {k: (len(w[k]), {len(row) for row in w[k]}) for k in ("W_Q", "W_K", "W_V")}
    check(all(rows == d_model and len(cols) == 1 for rows, cols in shapes.values()) and shapes["W_Q"] == shapes["W_K"]
          and str(want["steps"]) in t["note"] and (f"种子为 {want['seed']}" if zh else f"seed {want['seed']}") in t["note"]
          and t["button"] == train_word,
          f"{name}: the editor holds the trained weights, {d_model} rows each, W_Q and W_K alike "
          f"({shapes['W_Q'][1]} columns), and the text says they were learned in {want['steps']} steps from seed {want['seed']}")
    reset = t["reset"]
    check(reset["alpha_row_1"] == ["0.4838", "0.2844", "0.2317"] and reset["curve"] is None
          and reset["status"] == f"{step_word}{colon}0",
          f"{name}: reset to the lesson after training: α₁ = {reset['alpha_row_1']}, no curve, step 0")


def live_screenshots(profile, out, name, shots, timeout=60):
    """Screenshots of the editable example in states a reader can reach: an overflow the chain computes
    (3e19 in W_Q₁₁: S_ij near 10¹⁹ and ∞ in the W_K = W_Q demo), a refused cell (1e40), a decimal
    comma (1,5), the fused walk of the lesson's example (its steps, its halves), and after
    training (the loss curve and weights reached; α with the wanted cells outlined)."""
    browser = DevTools(profile, (out / name).as_uri())
    saved = []
    try:
        deadline = time.monotonic() + timeout
        tab = browser.attach(deadline)
        browser.wait_for(tab, "window.workedExampleReady !== undefined", deadline)
        typing = ("(value, target) => { const c = document.querySelector('.editor input[data-m=\"W_Q\"][data-i=\"0\"][data-j=\"0\"]');"
                  " c.value = value; c.dispatchEvent(new Event('input', {bubbles: true}));"
                  " document.querySelector(target).scrollIntoView(); return true; }")
        for state, value, target in (("overflowed", "3e19", '.variant .mat[data-name="S"]'),
                                     ("refused", "1e40", ".editor .error"), ("comma", "1,5", ".editor .error")):
            browser.evaluate(tab, f"({typing})({json.dumps(value)}, {json.dumps(target)})")
            time.sleep(0.3)
            shot = shots / f"{name.removesuffix('.html')}-{state}.png"
            shot.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", tab)["data"]))
            saved.append(shot)
        # the fused walk of the lesson's example: its steps key by key, then its halves and their merge
        browser.evaluate(tab, "document.querySelector('.editor button[data-action=\"reset\"]').click() || true")
        for state, target in (("fused", '.variant .mat[data-name="fused_keys"]'),
                              ("fused-halves", '.variant .mat[data-name="fused_halves"]')):
            browser.evaluate(tab, f"document.querySelector({json.dumps(target)}).scrollIntoView() || true")
            time.sleep(0.3)
            shot = shots / f"{name.removesuffix('.html')}-{state}.png"
            shot.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", tab)["data"]))
            saved.append(shot)
        # trained: the curve and the weights reached, then α with the wanted cells outlined
        browser.evaluate(tab, "(() => { const s = document.querySelector('section.worked');"
                              " s.addEventListener('worked-example-trained', () => { window.trainedForShot = true; }, {once: true});"
                              " s.querySelector('.editor button[data-action=\"reset\"]').click();"
                              " s.querySelector('.editor button[data-action=\"train\"]').click(); return true; })()")
        browser.wait_for(tab, "window.trainedForShot === true", time.monotonic() + timeout)  # a time of its own
        for state, target in (("trained-weights", ".editor .status"), ("trained", '.variant .mat[data-name="alpha"]')):
            browser.evaluate(tab, f"document.querySelector({json.dumps(target)}).scrollIntoView() || true")
            time.sleep(0.3)
            shot = shots / f"{name.removesuffix('.html')}-{state}.png"
            shot.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", tab)["data"]))
            saved.append(shot)
    finally:
        browser.close()
    return saved


def close(shown, want, tolerance):
    return len(shown) == len(want) and all(
        len(a) == len(b) and all(abs(float(x) - y) <= tolerance for x, y in zip(a, b)) for a, b in zip(shown, want))


def probe(profile, out, name, script, report_id, screenshot, attempts=3):
    """Loads page `name` with `script` added at the top of its <head> (before any script of the page, so
    that it hears their errors) and returns the JSON it leaves in <pre id=report_id>, or None; the same
    load saves the page's `screenshot` (the report is hidden, so the picture is the page's own).
    Chromium's virtual clock can run out before a busy machine has compiled the page's WebAssembly,
    and the DOM is then dumped without a report: such a load is tried again, up to `attempts` times."""
    html = (out / name).read_text(encoding="utf-8")
    copy = out / f"_{report_id}_{name}"
    copy.write_text(html.replace("<head>", f'<head><script src="{script}"></script>', 1), encoding="utf-8")
    found = None
    for _ in range(attempts):
        found = re.search(rf'<pre id="{report_id}"[^>]*>(.*?)</pre>', chromium(profile, "--dump-dom", f"--screenshot={screenshot}", copy.as_uri()), re.S)
        if found:
            break
    copy.unlink()
    return json.loads(found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
                      .replace("&amp;", "&")) if found else None


def layout_reports(out, names, shots):
    """The layout check's report of every page, {name: report or None}, with each page's screenshot.
    The loads are independent, so as many Chromiums run at once as there are cores, each with a
    profile of its own (a profile is one browser's); the checks then read the reports in the pages' order."""
    def load(name):
        with tempfile.TemporaryDirectory() as profile:
            return probe(profile, out, name, "layout_check.js", "layout-report", shots / (name.removesuffix(".html") + ".png"))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(names, pool.map(load, names)))


class DevTools:
    """Chromium driven over its DevTools pipe (fds 3 and 4, NUL-separated JSON), on the real clock:
    under --virtual-time-budget a page's performance.now() stands still while its scripts run, so the
    live example's times are taken this way."""

    def __init__(self, profile, url, timeout=60):
        to_browser, self.to_browser = os.pipe()
        self.from_browser, from_browser = os.pipe()

        def wire():  # the browser expects to read commands on fd 3 and write answers on fd 4
            os.dup2(to_browser, 100)
            os.dup2(from_browser, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)
        flags = [f for f in FLAGS if not f.startswith("--virtual-time-budget")]
        self.process = subprocess.Popen([CHROMIUM, *flags, f"--user-data-dir={profile}", "--remote-debugging-pipe", url],
                                        preexec_fn=wire, close_fds=False,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self.timeout, self.pending, self.last_id = timeout, b"", 0

    def call(self, method, tab=None, **params):
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params, **({"sessionId": tab} if tab else {})}
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.pending:
                if not select.select([self.from_browser], [], [], self.timeout)[0]:
                    raise TimeoutError(f"Chromium did not answer {method}")
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    raise EOFError(f"Chromium closed its pipe during {method}")
                self.pending += chunk
            line, _, self.pending = self.pending.partition(b"\0")
            answer = json.loads(line)
            if answer.get("id") == self.last_id:  # events and other answers are not needed here
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def attach(self, deadline):
        """The browser's page to talk to (its DevTools sessionId), once it has one (None if not by `deadline`)."""
        pages = []
        while not pages and time.monotonic() < deadline:
            pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            time.sleep(0.05)
        return self.call("Target.attachToTarget", targetId=pages[0]["targetId"], flatten=True)["sessionId"] if pages else None

    def evaluate(self, tab, expression):
        return self.call("Runtime.evaluate", tab, returnByValue=True, expression=expression)["result"].get("value")

    def wait_for(self, tab, expression, deadline):
        """The value of `expression` in the page once it is truthy, asked every 0.1 s (None at `deadline`)."""
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(tab, expression)
                if value:
                    return value
            except RuntimeError:  # no page to evaluate in yet (it is still being loaded): ask again
                pass
            time.sleep(0.1)
        return None

    def close(self):
        try:
            self.call("Browser.close")
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


def probe_real_time(profile, out, name, script, report_id, timeout=180):
    """Like probe(), on the real clock (DevTools): the text of <pre id=report_id> as JSON, or None
    when the page has not left it within `timeout` seconds (the whole live check, training included,
    which takes far longer while the machine's cores are busy with other work)."""
    html = (out / name).read_text(encoding="utf-8")
    copy = out / f"_{report_id}_{name}"
    copy.write_text(html.replace("</body>", f'<script src="{script}"></script></body>'), encoding="utf-8")
    browser = DevTools(profile, copy.as_uri())
    found = None
    try:
        deadline = time.monotonic() + timeout
        tab = browser.attach(deadline)
        if tab:
            found = browser.wait_for(tab, f"(document.getElementById('{report_id}') || {{}}).textContent", deadline)
    finally:
        browser.close()
        copy.unlink()
    return json.loads(found) if found else None


def live_checks(check, profile, out, name, attn):
    """The editable worked example, used as a reader would (docs/site/docs_live_check.js), against attn run."""
    import numpy
    r = probe_real_time(profile, out, name, "live_check.js", "live-report")
    if r is None:
        return check(False, f"{name}: the live example's check did not report")
    if "error" in r:
        return check(False, f"{name}: live example: {r['error']}")
    # 4 decimals on both sides, from the same float32 chain: a last-place difference at most
    tolerance = 1.01e-4
    e = r["edited"]
    X, WQ, WK = (numpy.array(e["inputs"][k], dtype=float) for k in ("X", "W_Q", "W_K"))
    check(close(e["S"], (X @ WQ) @ (X @ WK).T, tolerance), f"{name}: after editing X₁₂ and W_Q,21 the page's S equals X·W_Q·(X·W_K)ᵀ")
    O, alpha = attn_run(attn, e["inputs"])
    check(close(e["alpha"], alpha, tolerance) and close(e["O"], O, tolerance), f"{name}: … and its α and O equal attn run's")
    fused_checks(check, f"{name}: after editing X₁₂ and W_Q,21", e["fused"], O, tolerance)
    c = r["causal"]
    upper = [c["alpha"][i][j] for i in range(len(c["alpha"])) for j in range(i + 1, len(c["alpha"]))]
    check(c["causal"] == "1" and len(c["alpha"]) == 4 and all(v == "0.0000" for v in upper),
          f"{name}: a fourth token under the causal mask: α is 4×4 with a zero upper triangle")
    b = r["bad"]
    import docs_example
    named = docs_example.TEXT["zh" if name.startswith("lesson-03.zh") else "en"]["cell_problems"]["not_a_number"]
    named = named.format("X", 2, 3, "abc")
    check(b["marked"] == [["X", 1, 2]] and b["message"] == named and b["unchanged"] and b["cleared"],
          f"{name}: a non-number is marked and named in the page's language, and no number changes until it is fixed ({b})")
    check(r["reset"]["alpha_row_1"] == ["0.4838", "0.2844", "0.2317"] and r["reset"]["tokens"] == 3,
          f"{name}: reset brings back the lesson's α₁ = {r['reset']['alpha_row_1']}")
    typed_checks(check, name, r["typed"], attn, tolerance)
    training_checks(check, name, r, attn, tolerance)
    check(not r["script_errors"], f"{name}: no script error while editing ({r['script_errors'][:3]})")
    # Times are reported, not judged: they are the host's, and a check decides only what a commit decides.
    times = sorted(r["recompute_ms"])
    first = r["first_render_ms"]
    print(f"info {name}: first render {first['from_reading']:.0f} ms from reading attn_walk.js, "
          f"{first['from_compiling']:.0f} ms from compiling it; "
          f"{len(times)} recomputations: median {times[len(times) // 2]:.0f} ms, slowest {times[-1]:.0f} ms "
          f"(target < 100 ms each); attn_walk.js {(out / 'attn_walk.js').stat().st_size // 1024} KiB (tests/wasm/check_walk.js holds its size)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    ap.add_argument("--attn", default=str(ROOT / "build" / "attn"))
    args = ap.parse_args()
    out = Path(args.out)
    if not CHROMIUM:
        print("SKIPPED: the docs page check needs Chromium (Debian: apt-get install chromium)")
        return 0
    subprocess.run([sys.executable, str(ROOT / "docs" / "site" / "annotate.py"), "--out", str(out), "--attn", args.attn],
                   check=True)
    sys.path.insert(0, str(ROOT / "docs" / "site"))
    import annotate  # the same sources, pages and markers the generator used

    results = []

    def check(ok, what):
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    bad = broken_links(out)
    check(not bad, f"every link and anchor of {len(list(out.glob('*.html')))} pages resolves" + (f" (broken: {bad[:4]})" if bad else ""))

    pages = [(name, lang, ROOT / "docs" / md) for md, (_, name, lang) in annotate.PAGES.items()]
    pages += [(annotate.page_name(f), "en", ROOT / f) for f in annotate.sources()]
    shots = out / "screenshots"
    shots.mkdir(exist_ok=True)
    (out / "layout_check.js").write_text((ROOT / "docs" / "site" / "docs_layout_check.js").read_text(encoding="utf-8"))
    (out / "live_check.js").write_text((ROOT / "docs" / "site" / "docs_live_check.js").read_text(encoding="utf-8"))
    live = (out / "attn_walk.js").exists()
    wasm_built = (ROOT / "build-wasm" / "attn_walk.js").exists()
    check(live == wasm_built, f"the worked example is {'editable' if live else 'precomputed'}"
          f" ({'a' if wasm_built else 'no'} WebAssembly build in build-wasm/)")
    layouts = layout_reports(out, [name for name, _, _ in pages], shots)
    with tempfile.TemporaryDirectory() as profile:
        for name, lang, source in pages:
            shot = shots / (name.removesuffix(".html") + ".png")
            r = layouts[name]
            if r is None:
                check(False, f"{name}: the layout check did not report")
                continue
            text = source.read_text(encoding="utf-8")
            has_math = "$" in text or any(formula_in_marker_line(line) for line in text.splitlines())
            check(r["lang"] == lang, f"{name}: lang=\"{r['lang']}\"")
            check(not r["script_errors"], f"{name}: no script error" + (f" ({r['script_errors'][:2]})" if r["script_errors"] else ""))
            check(not r["placeholders"], f"{name}: every number drawn, no {{}}, undefined or NaN in its place"
                  + (f" ({r['placeholders'][:3]})" if r["placeholders"] else ""))
            check(not r["rows"], f"{name}: every note left of and level with its code" + (f" ({r['rows'][:2]})" if r["rows"] else ""))
            check(not r["overflow"], f"{name}: nothing wider than its box at 1400 px" + (f" ({r['overflow'][:2]})" if r["overflow"] else ""))
            if has_math:
                check(r["katex"] > 0 and r["katex_errors"] == 0 and not r["raw_math"],
                      f"{name}: {r['katex']} formulas typeset, {r['katex_errors']} errors, raw $…$ left: {r['raw_math']}")
            if name in ("index.html", "lesson-03.zh.html"):
                d, h = r["diagram"], r["heatmap"]
                check(bool(d) and d["nodes"] == 8 and d["links"] == 9 and d["left_to_right"] and d["shape_labels"] >= 8
                      and d["width"] >= 600, f"{name}: flow diagram {d}")
                check(bool(h) and h.get("variants_shown") == 1 and h["cells"] == 9 and h["shade_follows_value"]
                      and h["steps_in_order"] and h["headings"] >= 6 and h["causal_switch_works"], f"{name}: heat map {h}")
                if live:
                    live_checks(check, profile, out, name, args.attn)
                    for shot in live_screenshots(profile, out, name, shots):
                        check(shot.stat().st_size > 20000, f"{name}: screenshot {shot.relative_to(out)}")
            check(shot.exists() and shot.stat().st_size > 20000, f"{name}: screenshot {shot.relative_to(out)}")
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
