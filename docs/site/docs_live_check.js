// docs/site/docs_live_check.js — loaded into a copy of a lesson page by docs/site/check_docs_page.py when
// the page's worked example is editable (attn_walk.js beside it). It edits the example the way a
// reader would and leaves what it saw in <pre id="live-report"> as JSON; the Python side compares
// the numbers with `attn run` and NumPy. Steps:
//   1. edit one cell of X and one of W_Q: report the matrices typed and the tables S, α, O shown, and
//      the fused walk's (its O, its steps key by key, its halves and their merge);
//   2. add a token and switch the causal mask on: report α (its upper triangle must be 0);
//   3. type a non-number into X: report which cells are marked, the message, and whether α stayed;
//   4. fix it, reset to the lesson, mask off: report α's first row (0.4838 0.2844 0.2317);
//   5. type 3e19, 1, 1e, 1e4, 1e40, inf, nan, nothing, letters, 1,5, −0.2 (the minus sign the page
//      prints), －0.2 (a full-width minus) and 0.5 into W_Q₁₁, one after the other, as keystrokes
//      arrive: after each, report the matrices typed, whether the tables are marked as not current
//      (and what they say), the marked cells, the message, the tables W_Q, S, α and O as shown, the
//      fused walk's tables, and the text of every table cell;
//   6. train: pause after the first frame and resume; once the Learner has taken its 300 steps,
//      report the step and loss shown, α, the outlined cells, the loss curve; reset to the lesson;
//   and every script error the page raised, and the milliseconds of the first render (from reading and from compiling the module) and of each
//   recomputation, which check_docs_page.py takes on the real clock and prints.
"use strict";
(() => {
  const scriptErrors = [];
  window.addEventListener("error", (e) => scriptErrors.push(String(e.message)));
  const report = (r) => {
    const pre = document.createElement("pre");
    pre.id = "live-report";
    pre.textContent = JSON.stringify(r);
    document.body.appendChild(pre);
  };
  const section = document.querySelector("section.worked");
  // a table as the reader sees it, its values only (no row or column labels), with − read as -
  const shown = (name) => [...section.querySelectorAll(`.variant .mat[data-name="${name}"] table tr`)]
    .map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent.replace(/−/g, "-"))).filter((row) => row.length);
  const cell = (m, i, j) => section.querySelector(`.editor input[data-m="${m}"][data-i="${i}"][data-j="${j}"]`);
  const type = (input, value) => {
    input.value = value;
    input.dispatchEvent(new Event("input", { bubbles: true }));
  };
  const click = (selector) => section.querySelector(selector).click();
  // the fused walk's tables: O key by key, the walked row's steps, the two halves and their merge
  const fused = () => ({ O: shown("fused_O"), steps: shown("fused_keys"), halves: shown("fused_halves") });
  const matrices = () => Object.fromEntries(["X", "W_Q", "W_K", "W_V"].map((m) => {
    const inputs = [...section.querySelectorAll(`.editor input[data-m="${m}"]`)];
    const rows = Math.max(...inputs.map((c) => +c.dataset.i)) + 1;
    return [m, Array.from({ length: rows }, (_, i) => inputs.filter((c) => +c.dataset.i === i).map((c) => c.value))];
  }));

  // Waits for the module by its event, not by polling: under Chromium's virtual time a polling timer
  // would use up the time budget before the WebAssembly is compiled.
  const run = () => {
    const r = { first_render_ms: window.workedExampleReady };
    type(cell("X", 0, 1), "0.9");
    type(cell("W_Q", 1, 0), "-0.4");
    r.edited = { inputs: matrices(), S: shown("S"), alpha: shown("alpha"), O: shown("O"), fused: fused() };

    click('.editor button[data-action="token+"]');
    click('.switch input[value="1"]');
    r.causal = { inputs: matrices(), alpha: shown("alpha"), causal: section.querySelector(".variant").dataset.causal };

    const before = shown("alpha");
    type(cell("X", 1, 2), "abc");
    const marked = [...section.querySelectorAll(".editor input.bad")].map((c) => [c.dataset.m, +c.dataset.i, +c.dataset.j]);
    r.bad = { marked, message: section.querySelector(".editor .error").textContent,
              unchanged: JSON.stringify(shown("alpha")) === JSON.stringify(before) };
    type(cell("X", 1, 2), "1.2");
    r.bad.cleared = section.querySelectorAll(".editor input.bad").length === 0 && !section.querySelector(".editor .error").textContent;

    click('.editor button[data-action="reset"]');
    click('.switch input[value="0"]');
    r.reset = { alpha_row_1: shown("alpha")[0], tokens: shown("alpha").length };

    const variant = section.querySelector(".variant");
    r.typed = ["3e19", "1", "1e", "1e4", "1e40", "inf", "nan", "", "abc", "1,5", "−0.2", "－0.2", "0.5"].map((value) => {
      type(cell("W_Q", 0, 0), value);
      const note = variant.querySelector(".stale-note");
      return { value, inputs: matrices(), stale: variant.classList.contains("stale"), note: note ? note.textContent : "",
               marked: [...section.querySelectorAll(".editor input.bad")].map((c) => [c.dataset.m, +c.dataset.i, +c.dataset.j]),
               message: section.querySelector(".editor .error").textContent,
               W_Q: shown("W_Q"), S: shown("S"), alpha: shown("alpha"), O: shown("O"), fused: fused(),
               tables: [...variant.querySelectorAll("td")].map((td) => td.textContent).join(" ") };
    });
    click('.editor button[data-action="reset"]');

    const status = () => section.querySelector(".editor .status").textContent;
    const trainButton = () => section.querySelector('.editor button[data-action="train"]');
    const curve = () => {
      const svg = section.querySelector(".editor svg.loss");
      return svg && { points: svg.querySelector("polyline").getAttribute("points").trim().split(/\s+/).length,
                      labels: [...svg.querySelectorAll("text")].map((e) => e.textContent) };
    };
    section.addEventListener("worked-example-trained", () => {
      const wanted = [...section.querySelectorAll('.variant .mat[data-name="alpha"] td.wanted')]
        .map((td) => [td.parentElement.rowIndex - 1, td.cellIndex - 1]);
      r.trained = { status: status(), button: trainButton().textContent, alpha: shown("alpha"), wanted, curve: curve(),
                    inputs: matrices(), note: section.querySelector(".variant p.weights-note").textContent };
      click('.editor button[data-action="reset"]');
      r.trained.reset = { status: status(), curve: curve(), alpha_row_1: shown("alpha")[0] };
      r.script_errors = scriptErrors;
      r.recompute_ms = window.workedExampleTimings;
      report(r);
    }, { once: true });
    trainButton().click();  // the first frame is drawn at once; pause, then go on
    trainButton().click();
    r.paused = { status: status(), button: trainButton().textContent };
    trainButton().click();
  };
  // a step that throws leaves its error as the report, rather than no report at all
  const guarded = () => {
    try {
      run();
    } catch (e) {
      report({ error: `${e.message} (${e.stack})` });
    }
  };
  if (window.workedExampleReady !== undefined) guarded();
  else section.addEventListener("worked-example-ready", guarded);
})();
