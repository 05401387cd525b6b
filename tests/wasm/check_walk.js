// tests/wasm/check_walk.js — the WebAssembly build of the chain (web/walk.cpp, web/learn.cpp) against the
// native program: `node tests/wasm/check_walk.js BUNDLE ATTN`, run by `scripts/dev wasm`.
//  - the worked example, for every --scale and --causal: walk() returns byte for byte what
//    `attn walk --format json` prints, up to its sections and sentences (the page has them);
//  - other inputs (4 tokens, d_k = 2, d_v = 5): its output and α equal `attn run --backend naive` on
//    the same CSV files, to the printed 4 decimals;
//  - the cells are read as typed, by the library's reader of typed cells: full-width forms and the −
//    the page prints are numbers, and bad input gets the reader's or the library's message, naming
//    the matrix, row and column, and for a refused value its cell and problem (empty and a decimal
//    comma among them);
//  - tableNumber() writes a number as the library's table_number does;
//  - the Learner: 300 steps of each task give attn learn's losses and final α; learnDefaults() gives
//    the task, steps, step size and seed that attn learn runs without options;
//  - the bundle is one file under 480 KB (427 KiB when the cap was set: the chain's one call path,
//    which converts every element type a front end may pass, linked whole, with WebAssembly's own
//    exceptions and no filesystem); the time of the first and of later calls is printed.
// Ends with "N passed, M failed", each check counted once.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");

const [bundle, attn] = process.argv.slice(2);
let passed = 0, failed = 0;
function check(ok, what) {
  if (ok) passed++;
  else { failed++; console.log("FAILED: " + what); }
}
const csv = (m) => m.map((row) => row.join(",")).join("\n");
const cells = (m) => m.map((row) => row.map(String));  // a matrix as the page's editor holds it
// what the page passes: the four matrices and the tokens, cell by cell as typed
const state = (x, wq, wk, wv, tokens) => ({ X: x, W_Q: wq, W_K: wk, W_V: wv, tokens });

const X = [[1.0, 0.5, -0.2, 0.8], [0.3, -0.6, 1.2, 0.1], [0.7, 0.9, 0.4, -0.5]];
const WQ = [[0.5, -0.2, 0.8], [0.9, 0.4, -0.3], [-0.6, 1.0, 0.2], [0.3, 0.1, 0.7]];
const WK = [[0.7, 0.3, -0.5], [0.2, 0.9, 0.4], [-0.4, 0.6, 1.1], [0.8, -0.2, 0.3]];
const WV = [[1.0, 0.0, 0.5], [0.0, 1.0, -0.5], [0.5, -0.5, 1.0], [-0.5, 0.5, 0.0]];

const size = fs.statSync(bundle).size;
console.log(`bundle: ${bundle}, ${(size / 1024).toFixed(0)} KiB`);
check(size < 480 * 1024, `the bundle is under 480 KB (${size} bytes)`);

const started = process.hrtime.bigint();
Promise.resolve(require(path.resolve(bundle))()).then((module) => {  // compiled synchronously: the module itself
  const ms = (from) => Number(process.hrtime.bigint() - from) / 1e6;
  console.log(`module ready in ${ms(started).toFixed(1)} ms`);

  // 1. The worked example, six ways.
  for (const scale of ["sqrt", "dk", "none"]) {
    for (const causal of [false, true]) {
      const t = process.hrtime.bigint();
      const got = module.walk(state(cells(X), cells(WQ), cells(WK), cells(WV), ["猫 cat", "坐 sat", "地毯 mat"]), scale,
                              causal);
      const took = ms(t);
      const want = execFileSync(attn, ["walk", "--format", "json", "--scale", scale].concat(causal ? ["--causal"] : []),
                                { encoding: "utf8" });
      console.log(`walk(scale ${scale}, causal ${causal}): ${took.toFixed(2)} ms`);
      // byte for byte, up to "sections": the module leaves out the sections and the sentences, which
      // the page has already (typeset from this same program when it was built)
      const numbers = want.slice(0, want.indexOf(',\n  "sections": [')) + "\n}\n";
      check(JSON.parse(want).text && JSON.parse(want).sections && got === numbers,
            `walk(${scale}, causal ${causal}) equals attn walk --format json, its sections and sentences left out`);
    }
  }

  // 2. Other shapes, against attn run on the same files.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wasm-walk-"));
  const random = (rows, cols, seed) => Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => Math.round(100 * Math.sin(seed + 7 * i + 3 * j)) / 100));
  const inputs = { x: random(4, 3, 1), wq: random(3, 2, 2), wk: random(3, 2, 3), wv: random(3, 5, 4) };
  for (const [name, m] of Object.entries(inputs)) fs.writeFileSync(path.join(dir, name + ".csv"), csv(m) + "\n");
  for (const causal of [false, true]) {
    const d = JSON.parse(module.walk(state(cells(inputs.x), cells(inputs.wq), cells(inputs.wk), cells(inputs.wv),
                                           ["a", "b", "c", "d"]), "sqrt", causal));
    const printed = execFileSync(attn, ["run", "--backend", "naive", "--precision", "4"].concat(
      causal ? ["--causal"] : [], ...["x", "wq", "wk", "wv"].map((k) => ["--" + k, path.join(dir, k + ".csv")])),
      { encoding: "utf8" });
    const numbers = printed.split("\n").filter((l) => l.trim().startsWith("[")).map((l) =>
      l.replace(/[\[\]]/g, "").trim().split(/\s+/).map(Number));
    const want = numbers.slice(0, 4), alpha = numbers.slice(4);
    const close = (a, b) => a.length === b.length && a.every((row, i) => row.length === b[i].length &&
      row.every((v, j) => Math.abs(v - b[i][j]) <= 5e-5));
    check(d.output && close(d.output, want), `4 tokens, d_k = 2, d_v = 5${causal ? ", causal" : ""}: O equals attn run`);
    check(d.weights && close(d.weights, alpha), `4 tokens${causal ? ", causal" : ""}: α equals attn run`);
    check(d.Q_times_K === null, "Q·K is null when n ≠ d_k");
  }
  fs.rmSync(dir, { recursive: true });

  // A reader's own token names: quotes, backslashes and control characters stay valid JSON.
  const names = ['say "hi"', "back\\slash", "tab\there"];
  let parsed = null;
  try { parsed = JSON.parse(module.walk(state(cells(X), cells(WQ), cells(WK), cells(WV), names), "sqrt", false)); } catch (e) {}
  check(parsed !== null && JSON.stringify(parsed.tokens) === JSON.stringify(names), "token names with quotes and tabs");

  // 3. Typed cells as the library reads them: full-width digits and signs, the − the page prints.
  const typedX = [["１.０", "0.5", "−0.2", "0.8"], ["0.3", "－0.6", " 1.2 ", "0.1"], ["0.7", "0.9", "0.4", "‐0.5"]];
  check(module.walk(state(typedX, cells(WQ), cells(WK), cells(WV), ["猫 cat", "坐 sat", "地毯 mat"]), "sqrt", false) ===
        module.walk(state(cells(X), cells(WQ), cells(WK), cells(WV), ["猫 cat", "坐 sat", "地毯 mat"]), "sqrt", false),
        "full-width digits and signs and typographic minus signs read as the lesson's X");
  // Bad input: the message names the matrix and the place.
  const withX = (x, wq = cells(WQ)) => JSON.parse(module.walk(state(x, wq, cells(WK), cells(WV), []), "sqrt", false));
  const error = (x, wq) => withX(x, wq).error || "";
  const row = (...v) => [v.map(String)];
  check(error(row(1, "abc", 0, 0)).includes("X: row 1, column 2 ('abc') is not a number"), "a non-number is named");
  check(error(row(1, 2, 3, "1e39")).includes("X: row 1, column 4 ('1e39') is outside the range of float32"),
        "a value beyond float32 is named");
  check(error(cells(X), [["1", "2", "3"], ["4", "5"]]).includes("W_Q: row 2 has 2 values, row 1 has 3"),
        "a ragged matrix is named");
  check(error([["1", "2", "3"], ["4", "5", "6"]]).includes("X (2×3) needs d_model = 4 columns to meet W_Q (4×3)"),
        "X of the wrong width for the weights is refused, both shapes named");
  check((JSON.parse(module.walk(state(cells(X), cells(WQ), cells(WK), cells(WV), []), "cube", false)).error || "")
            .includes("scale must be one of sqrt, dk and none, got 'cube'"), "an unknown scale is refused, naming the known ones");
  // A refused value also says where it is and what is wrong, so that the page marks the cell and
  // words the problem in its own language without reading the message.
  const cell = (x) => JSON.stringify(withX(x).cell);
  check(cell(row(1, "abc", 0, 0)) === '{"matrix":"X","row":1,"column":2,"problem":"not_a_number","text":"abc"}',
        "a non-number's cell: X row 1, column 2");
  check(cell([["1", "0", "0", "0"], ["0", "1e39", "0", "0"]]) ===
        '{"matrix":"X","row":2,"column":2,"problem":"beyond_float32","text":"1e39"}', "a value beyond float32: its cell");
  check(cell(row(1, 0, 0, "inf")) === '{"matrix":"X","row":1,"column":4,"problem":"infinite","text":"inf"}' &&
        cell(row("nan", 0, 0, 0)) === '{"matrix":"X","row":1,"column":1,"problem":"nan","text":"nan"}', "inf and nan: their cells");
  check(cell(row(1, " ", 0, 0)) === '{"matrix":"X","row":1,"column":2,"problem":"empty","text":""}', "an empty cell");
  check(cell(row(1, "1,5", 0, 0)) === '{"matrix":"X","row":1,"column":2,"problem":"decimal_comma","text":"1,5"}' &&
        withX(row(1, "1，5", 0, 0)).cell.problem === "decimal_comma", "a decimal comma, half- or full-width");
  check(cell(row(1, 2, 3)) === undefined, "a shape error names no cell");
  // 3½. tableNumber(): the library's digits for a table.
  check(["0.2", "12345.678", "3e19", "-0", "2.5e-7"].map((v) => module.tableNumber(Number(v))).join() ===
        "0.2000,12345.678,3e+19,0.0000,2.5e-07", "tableNumber writes as table_number does");

  // 4. Accepted input whose demos overflow: ±∞ and NaN come back as the strings "inf", "-inf" and
  // "nan" (JSON has no word for them), and the result still parses. Q's first rows are (a, a, 0) and
  // (a, −a, 0) with a = 3e19: in S with W_K = W_Q, q₁·q₁ = ∞ and q₁·q₂ = a² − a² = ∞ − ∞ = NaN.
  const eye = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], big = [[3e19, 3e19, 0], [3e19, -3e19, 0], [0, 0, 1], [0, 0, 0]];
  let extreme = null;
  try { extreme = JSON.parse(module.walk(state(cells(eye), cells(big), cells(WK), cells(WV), []), "sqrt", false)); } catch (e) {}
  const demo = extreme && extreme.S_with_W_K_as_W_Q;
  check(extreme !== null && !extreme.error && demo[0][0] === "inf" && demo[0][1] === "nan",
        `values the chain computes as ∞ and NaN arrive as "inf" and "nan" in valid JSON (${demo && demo[0]})`);
  // 5. The Learner is attn learn a step at a time: for each task, 300 steps taken 7 at a time give
  // the same losses as `attn learn --format json` (both printed with 9 digits: the same floats), and
  // walk() on the weights it hands back gives attn learn's final α.
  for (const task of ["sentence", "retrieval"]) {
    const want = JSON.parse(execFileSync(attn, ["learn", "--task", task, "--format", "json"], { encoding: "utf8" }));
    const learner = new module.Learner(task, 1, 0.05);
    let losses = [], r = JSON.parse(learner.step(0));
    const t = process.hrtime.bigint();
    while (r.step < 300) {
      r = JSON.parse(learner.step(Math.min(7, 300 - r.step)));
      losses = losses.concat(r.losses);
    }
    console.log(`Learner(${task}): 300 steps in ${ms(t).toFixed(1)} ms`);
    losses.push(r.loss);
    const alpha = JSON.parse(module.walk(state(cells(r.X), cells(r.W_Q), cells(r.W_K), cells(r.W_V), []), "sqrt",
                                         false)).weights;
    learner.delete();
    check(JSON.stringify(losses) === JSON.stringify(want.loss) && JSON.stringify(r.wanted) === JSON.stringify(want.wanted),
          `Learner(${task}): the 301 losses equal attn learn's (${losses[300]} vs ${want.loss[300]})`);
    check(JSON.stringify(alpha) === JSON.stringify(want.alpha_end), `Learner(${task}): the final α equals attn learn's`);
  }

  // 6. learnDefaults(): what `attn learn` runs without options, as its JSON reports them (lr there at
  // 9 digits, here the shortest decimal of the same float).
  const defaults = JSON.parse(module.learnDefaults());
  const run = JSON.parse(execFileSync(attn, ["learn", "--format", "json"], { encoding: "utf8" }));
  check(Object.keys(defaults).join() === "task,steps,lr,seed" && defaults.task === run.task &&
        defaults.steps === run.steps && defaults.seed === run.seed && Math.fround(defaults.lr) === Math.fround(run.lr),
        `learnDefaults() ${JSON.stringify(defaults)} is what attn learn runs without options`);

  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
});
