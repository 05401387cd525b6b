// docs/site/worked_example.js — the worked example on the lesson pages (copied next to them by
// docs/site/annotate.py; the page carries the numbers as JSON, from docs/site/docs_example.py).
//
// Every number it shows comes from the chain: the six precomputed variants (scale × mask) were
// printed by `attn walk --format json` when the pages were built; when the WebAssembly build of the
// chain is next to the page (attn_walk.js, `scripts/dev wasm`), X and the weights become editable,
// and each edit is computed by it — the same C++ as `attn walk`, not arithmetic written again here.
// This file only lays the numbers out: tables, the lines written out, the heat map of α.
"use strict";
(() => {
  const section = document.currentScript.closest("section.worked");
  const data = JSON.parse(section.querySelector("script.worked-data").textContent);
  const t = data.text;
  const out = section.querySelector(".variant");
  // Training (the live example only): attn learn's defaults (task, steps, lr, seed, from the module),
  // the module's Learner, the steps it has taken, L before each of them, and the cell each row of α
  // should choose.
  const learning = { defaults: null, learner: null, step: 0, losses: [], loss: null, wanted: null, running: false, timer: 0 };
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

  // ---- the layout of one result --------------------------------------------------------------
  // JSON has no word for ±∞ or NaN, so the chain writes them as the strings "inf", "-inf" (a masked
  // score) and "nan"; every value below is shown as what it is, in a table and in a formula alike.
  //
  // How a number is written. The chain computes in float32 and writes each value with 9 significant
  // digits, enough to read back the same float32; read as a double, those digits would print as
  // digits no float holds (45600001799999995904 for the float32 45600001758288936960). So each value
  // is first taken back to its float32 (Math.fround), then written as the shortest decimal that reads
  // back to that float32 (at most 9 significant digits). To keep the tables' columns readable:
  //   - 0 and 0.001 ≤ |x| < 100000: that shortest decimal rounded, or padded with zeros, to exactly
  //     4 decimals (0.4838, 0.2000, 12345.6780): no digit goes beyond what the float holds;
  //   - any other magnitude: the shortest decimal itself, in scientific notation (3e19, 4.56e19,
  //     3.2999978e18, 2.5e−7), since 4 decimals would show no digit of it, or more digits than the float has.
  // Tables and prose print a negative sign as − (U+2212); formulas set the same digits in TeX, and
  // the editor's cells hold the shortest decimal in ASCII, as a reader types it.
  const value = (v) => (typeof v === "number" ? Math.fround(v) : { inf: Infinity, "-inf": -Infinity }[v] ?? NaN);
  const scientific = (x) => x !== 0 && !(Math.abs(x) >= 1e-3 && Math.abs(x) < 1e5);
  function decimal(x) {  // the shortest decimal that reads back to the float32 x (finite), in ASCII
    let e = x.toExponential(8);
    for (let digits = 1; digits < 9; ++digits) {
      const fewer = x.toExponential(digits - 1);
      if (Math.fround(Number(fewer)) === x) {
        e = fewer;
        break;
      }
    }
    return scientific(x) ? e.replace("e+", "e") : String(Number(e));
  }
  const digits = (x) => (scientific(x) ? decimal(x) : Number(decimal(x)).toFixed(4));
  const shown = (v, inTable) => {
    const x = value(v);
    if (Number.isFinite(x)) {
      if (inTable) return digits(x).replace(/-/g, "−");
      const [mantissa, exponent] = digits(x).split("e");
      return exponent === undefined ? mantissa : `${mantissa}\\times 10^{${exponent}}`;
    }
    if (Number.isNaN(x)) return inTable ? "NaN" : "\\text{NaN}";
    return inTable ? (x > 0 ? "∞" : "−∞") : (x > 0 ? "\\infty" : "-\\infty");
  };
  const fmt = (v) => shown(v, true);
  const fixed = (v) => shown(v, false);
  // one factor of a written-out product: trailing zeros dropped, bracketed when signed or scientific
  const term = (v) => {
    const x = value(v);
    const s = Number.isFinite(x) && !scientific(x) ? digits(x).replace(/0+$/, "").replace(/\.$/, "") : fixed(v);
    return x < 0 || Number.isNaN(x) || scientific(x) ? `(${s})` : s;
  };
  const products = (a, b) => a.map((x, k) => `${term(x)}\\times ${term(b[k])}`).join(" + ");
  const column = (m, j) => m.map((row) => row[j]);
  // each {} in turn by the next value, taken literally (a cell typed as "$&" or "{}" stays as typed);
  // a sentence with more or fewer {} than values is refused, so that no {} or "undefined" is drawn
  const fill = (template, ...values) => {
    const pieces = template.split("{}");
    if (pieces.length - 1 !== values.length)
      throw new Error(`${pieces.length - 1} {} to fill with ${values.length} values: ${template.slice(0, 60)}`);
    return pieces.reduce((s, piece, k) => s + values[k - 1] + piece);
  };

  // `wanted` (training only): wanted[i] is the column row i of α should choose; that cell is outlined
  function table(m, rows, cols, heat, wanted) {
    const head = cols ? "<tr><th></th>" + cols.map((c) => `<th>${esc(c)}</th>`).join("") + "</tr>" : "";
    const body = m.map((row, i) => {
      const cells = row.map((v, j) => {
        let style = wanted && wanted[i] === j ? ' class="wanted"' : "";
        if (heat && Number.isFinite(value(v))) {  // α = 0 white … α = 1 dark blue; white text once the cell is dark
          const shade = 0.08 + 0.92 * v;
          style += ` style="background: rgba(30, 64, 175, ${shade.toFixed(3)}); color: ${shade > 0.42 ? "#fff" : "#111"}"`;
        }
        return `<td${style}>${fmt(v)}</td>`;
      }).join("");
      return `<tr>${rows ? `<th>${esc(rows[i])}</th>` : ""}${cells}</tr>`;
    }).join("");
    return `<table class="matrix${heat ? " heatmap" : ""}">${head}${body}</table>`;
  }
  const figure = (caption, content, name) =>
    `<div class="mat"${name ? ` data-name="${name}"` : ""}><div class="cap">${caption}</div>${content}</div>`;
  const mats = (...figures) => `<div class="mats">${figures.join("")}</div>`;
  const aside = (heading, ...parts) => `<div class="aside"><h4>${heading}</h4>${parts.join("")}</div>`;
  // "猫 → 地毯, …": for each row, the token whose key scores highest (the columns the chain found)
  const largestPerRow = (best, tok) => best.map((j, i) => `${esc(tok[i])} → ${esc(tok[j])}`).join(t.comma);

  function exercise5(e, s) {
    const i = e.row + 1, sub = (v) => v.replace(/\d/g, (c) => "₀₁₂₃₄₅₆₇₈₉"[c]);
    return mats(figure("", table([e.o, e.v, e.difference], [sub(`o${i}`), sub(`v${i}`), sub(`o${i} − v${i}`)])))
      + `<p>$\\lVert o_${i} - v_${i} \\rVert = ${fixed(e.length)}$${s.length}</p>`;
  }

  // mode: "lesson" (the lesson's weights), "edited" (the reader's) or "trained" (the Learner's, below)
  function render(d, mode) {
    const tok = d.tokens, n = d.n;
    // The program's sentences (lesson/sentences.cpp), typeset when the page was built; an edit changes
    // the numbers, never the words, so the precomputed variant of the same scale and mask has them.
    const s = data.variants[`${d.scale}-${d.causal ? 1 : 0}`].text;
    const idx = Array.from({ length: Math.max(d.d_model, d.d_k, d.d_v) }, (_, k) => String(k + 1));
    const html = [];
    // the walk's notes follow a heading on the terminal, lower-case; on the page they open a paragraph
    const para = (sentence) => `<p>${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}</p>`;
    const step = (title, note) => html.push(`<h3>${title}</h3>${para(note)}`);
    const c = t.colon, sc = t.semicolon;

    step(s["title.1"], s["note.1"]);
    html.push(mats(figure("$X$", table(d.X, tok, idx.slice(0, d.d_model)))));
    step(s["title.2"], s["note.2"]);
    const note = { lesson: () => s.weights, edited: () => t.edited_note,
                   trained: () => fill(t.trained_note, learning.step, learning.defaults.seed) }[mode];
    html.push(`<p>${note()}</p>`);
    html.push(mats(...["W_Q", "W_K", "W_V"].map((k) => figure(`$${k}$`, table(d[k]), k)),
                   ...["Q", "K", "V"].map((k) => figure(`$${k}$`, table(d[k], tok, idx.slice(0, d[k][0].length)), k))));
    html.push(`<p>${s.expanded}${c}$Q_{11} = x_1 \\cdot ($ ${s.column1} $) = ${products(d.X[0], column(d.W_Q, 0))}`
              + ` = ${fixed(d.Q[0][0])}$</p>`);
    step(s["title.3"], s["note.3"]);
    html.push(mats(figure("$S$", table(d.S, tok, tok), "S")));
    const j2 = d.written_out.column, k2 = `${j2 + 1}`;  // the entry of row 1 the chain writes out
    html.push(`<p>${s.expanded}${c}$S_{1${k2}} = q_1 \\cdot k_${k2} = ${products(d.Q[0], d.K[j2])} = ${fixed(d.S[0][j2])}$</p>`);
    html.push(d.Q_times_K
      ? aside(s.transpose, `<p>${s.transpose_note}${t.space}${s.transpose_square}</p>`,
              mats(figure("$QK$", table(d.Q_times_K)), figure("$S = QK^\\top$", table(d.S, tok, tok))),
              `<p>$(QK)_{1${k2}} = ${products(d.Q[0], column(d.K, j2))} = ${fixed(d.Q_times_K[0][j2])}$${sc}`
              + `${s.same_in_S}${c}$S_{1${k2}} = ${fixed(d.S[0][j2])}$</p>`)
      : aside(s.transpose, `<p>${s.transpose_note}${t.space}${fill(s.transpose_refused, n, d.d_k)}</p>`));
    html.push(aside(s.confusion1, para(s.confusion1_note),
                    mats(figure(s.cosines, table(d.cosines, tok, tok))),
                    `<p>$S_{1${k2}} = \\lVert q_1 \\rVert \\cdot \\lVert k_${k2} \\rVert \\cdot \\cos\\theta_{1${k2}} = `
                    + `${term(d.written_out.q_norm)}\\times ${term(d.written_out.k_norm)}\\times ${term(d.cosines[0][j2])}`
                    + ` = ${fixed(d.S[0][j2])}$</p>`,
                    mats(figure(s.other_keys, table(d.S_with_W_K_as_W_Q, tok, tok))),
                    para(`${s.row_largest}${c}${largestPerRow(d.largest_per_row.S_with_W_K_as_W_Q, tok)}${sc}`
                         + `${s.with_example_keys}${c}${largestPerRow(d.largest_per_row.S, tok)}`)));
    const divisor = { sqrt: `\\sqrt{${d.d_k}}`, dk: String(d.d_k), none: "1" }[d.scale];
    step(`${s["title.4"]} $S' = S / ${divisor} = ${fixed(d.scale_factor)}\\cdot S$`, s["note.4"]);
    html.push(mats(figure("$S'$", table(d.S_scaled, tok, tok))));
    if (d.causal) {
      step(s["title.mask"], s["note.mask"]);
      html.push(mats(figure("$S'$", table(d.softmax_input, tok, tok))));
    }
    step(s["title.5"], s["note.5"]);
    html.push(mats(figure(s.heat, table(d.weights, tok, tok, true, mode === "trained" ? learning.wanted : null), "alpha")));
    const w = d.softmax_row, i = w.row + 1;  // the row the chain wrote out (its JSON says which)
    const seen = w.exponentials.filter((_, j) => d.softmax_input[w.row][j] !== "-inf");
    html.push(`<p>${s.expanded}${c}${s.row_max}${c}$m = ${fixed(w.max)}$${sc}$e^{S'_{${i}j} - m} = `
              + seen.map(fixed).join(", ") + `$${sc}${s.sum} $= ${fixed(w.sum)}$${sc}`
              + `$\\alpha_{${i}} = ` + d.weights[w.row].map(fixed).join(", ") + "$</p>");
    html.push(`<p>${s.row_sums}${c}` + d.weights_row_sums.map(fixed).join(", ") + "</p>");
    html.push(aside(s.confusion2, para(s.confusion2_note),
                    mats(figure(s.by_column, table(d.softmax_by_column, tok, tok, true))),
                    para(`${s.column_sums}${c}` + d.by_column_sums.columns.map(fixed).join(", ")
                         + `${sc}${s.row_sums_short}${c}` + d.by_column_sums.rows.map(fixed).join(", "))));
    step(s["title.6"], s["note.6"]);
    html.push(mats(figure("$O$", table(d.output, tok, idx.slice(0, d.d_v)), "O")));
    const mix = (row) => d.weights[row].map((a, j) => `${fixed(a)}\\, v_${j + 1}`).join(" + ");
    html.push(`<p>${s.expanded}${c}$o_1 = ${mix(0)}$</p>`);
    html.push(aside(s.confusion3, para(s.confusion3_note) + `<p>$o_${i} = ${mix(w.row)}$</p>`));
    // exercise 5 for each row the chain compared (row 1, and under the mask the last row too)
    html.push(aside(s.exercise5, ...d.exercise5.map((e, k) => para(k ? s.exercise5_causal : s.exercise5_note) + exercise5(e, s))));
    html.push(aside(s.confusion4, para(fill(s.confusion4_note, d.d_k, d.d_model, d.heads.d_model, d.heads.h))
                    + `<p>$d_k = d_{\\text{model}} / h = ${d.heads.d_model} / ${d.heads.h} = ${d.heads.d_k}$</p>`
                    + para(s.heads_cost)));
    out.innerHTML = html.join("");
    out.dataset.scale = d.scale;
    out.dataset.causal = d.causal ? "1" : "0";
    if (window.renderMathInElement && window.mathOptions) window.renderMathInElement(out, window.mathOptions);
  }

  const choice = () => {
    const [scale, causal] = [...section.querySelectorAll(".switch input:checked")].map((i) => i.value);
    return { scale, causal: causal === "1" };
  };
  const precomputed = () => {
    const { scale, causal } = choice();
    render(data.variants[`${scale}-${causal ? 1 : 0}`], "lesson");
  };
  section.querySelector(".switch").addEventListener("change", () => (live ? live.compute() : precomputed()));
  precomputed();  // the page is complete before the WebAssembly module is ready (or without it)

  // ---- the editable example (only with the WebAssembly build) ------------------------------------
  let live = null;
  if (!window.AttnWalk) return;
  const typed = (m) => m.map((row) => row.map((v) => decimal(value(v))));  // 0.200000003 → "0.2", as typed
  const lesson = data.variants["sqrt-0"];
  const fresh = () => ({
    tokens: lesson.tokens.slice(), X: typed(lesson.X), W_Q: typed(lesson.W_Q), W_K: typed(lesson.W_K), W_V: typed(lesson.W_V),
  });
  let state = fresh(), mode = "lesson";
  const editor = section.querySelector(".editor");
  const timings = (window.workedExampleTimings = []);  // ms per computation, read by docs/site/check_docs_page.py

  function drawEditor() {
    const input = (name, i, j, v) =>
      `<input data-m="${name}" data-i="${i}" data-j="${j}" value="${esc(v)}" aria-label="${name} ${i + 1},${j + 1}">`;
    const grid = (name, m, labels) => `<table class="matrix edit"><tr><th></th>`
      + m[0].map((_, j) => `<th>${j + 1}</th>`).join("") + "</tr>"
      + m.map((row, i) => `<tr><th>${labels ? `<input class="token" data-i="${i}" value="${esc(labels[i])}" aria-label="token ${i + 1}">` : i + 1}</th>`
        + row.map((v, j) => `<td>${input(name, i, j, v)}</td>`).join("") + "</tr>").join("") + "</table>";
    const button = (action, label, disabled) => `<button type="button" data-action="${action}"${disabled ? " disabled" : ""}>${label}</button>`;
    const n = state.X.length, dk = state.W_Q[0].length, dv = state.W_V[0].length;
    editor.innerHTML = `<p>${t.live_intro}</p><div class="controls">`
      + `<span class="count">${t.tokens}${t.colon}${n}</span>${button("token+", "+", n >= 8)}${button("token-", "−", n <= 1)}`
      + `<span class="count">$d_k$${t.colon}${dk}</span>${button("dk+", "+", dk >= 8)}${button("dk-", "−", dk <= 1)}`
      + `<span class="count">$d_v$${t.colon}${dv}</span>${button("dv+", "+", dv >= 8)}${button("dv-", "−", dv <= 1)}`
      + button("reset", t.reset, false) + `</div><p>${fill(t.train_intro, lesson.d_k, lesson.d_v)}</p><div class="training"></div><div class="mats">`
      + figure("$X$", grid("X", state.X, state.tokens)) + figure("$W_Q$", grid("W_Q", state.W_Q))
      + figure("$W_K$", grid("W_K", state.W_K)) + figure("$W_V$", grid("W_V", state.W_V))
      + `</div><p class="error" role="alert"></p>`;
    editor.hidden = false;
    if (window.renderMathInElement && window.mathOptions) window.renderMathInElement(editor, window.mathOptions);
    drawTraining();
  }

  // The train button, the step and L reached, and the loss curve; redrawn alone after an edit, so that
  // the cell being typed in keeps its focus.
  function drawTraining() {
    editor.querySelector(".training").innerHTML = `<div class="controls">`
      + `<button type="button" data-action="train">${learning.running ? t.pause : t.train}</button>`
      + `<span class="count status">${t.step}${t.colon}${learning.step}`
      + (learning.loss === null ? "" : `${t.semicolon}L = ${lossText(learning.loss)}`) + `</span></div>` + lossCurve();
  }

  const lossText = (v) => (v < 0.001 ? v.toExponential(3) : v.toFixed(4));
  // L by step, on a logarithmic scale (L falls by orders of magnitude): the values the Learner computed,
  // L before each step taken and L at the weights shown.
  function lossCurve() {
    const L = learning.loss === null ? [] : [...learning.losses, learning.loss];
    if (L.length < 2) return "";
    const w = 340, h = 160, left = 58, bottom = h - 22, top = 10, right = w - 10;
    const logs = L.map(Math.log10), high = Math.max(...logs), low = Math.min(...logs), span = Math.max(high - low, 1e-9);
    const x = (k) => (left + (right - left) * k / (L.length - 1)).toFixed(1);
    const y = (v) => (top + (bottom - top) * (high - v) / span).toFixed(1);
    return figure(t.loss_curve, `<svg class="loss" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}">`
      + `<path class="axis" d="M${left},${top} V${bottom} H${right}"/>`
      + `<polyline points="${logs.map((v, k) => `${x(k)},${y(v)}`).join(" ")}"/>`
      + `<text x="${left - 4}" y="${top + 4}">${lossText(10 ** high)}</text>`
      + `<text x="${left - 4}" y="${bottom}">${lossText(10 ** low)}</text>`
      + `<text class="start" x="${left}" y="${h - 6}">0</text><text x="${right}" y="${h - 6}">${t.step} ${L.length - 1}</text>`
      + "</svg>", "loss");
  }

  // A cell as the chain reads it. What a reader types or pastes for a number becomes ASCII: full-width
  // forms (１.５, －2) by NFKC, and every minus-like sign, the − (U+2212) this page prints among them,
  // as "-". A comma would split the CSV row, so it goes as "!", which no number holds: the chain then
  // refuses that very cell, and refusal() below names it as the reader typed it.
  const asRead = (text) => text.normalize("NFKC").replace(/[\u2010-\u2015\u2212\uFE58\uFE63]/g, "-").replace(/,/g, "!").trim();
  const csv = (m) => m.map((row) => row.map(asRead).join(",")).join("\n");
  // What the chain refused, in the page's language. A refused value comes with its cell (matrix, row,
  // column, what is wrong with it), which the page names in its own words, quoting the cell as typed,
  // so nothing here reads the chain's message; anything else (shapes, a step that could leave float32)
  // is told with the chain's own message.
  const refusal = (d) => {
    if (!d.cell) return t.lang === "en" ? d.error : `${t.refused}${t.colon}${d.error}`;
    const c = d.cell, text = state[c.matrix][c.row - 1][c.column - 1].trim();
    const problem = !text ? "empty" : c.problem === "not_a_number" && text.normalize("NFKC").includes(",") ? "decimal_comma" : c.problem;
    const where = [c.matrix, c.row, c.column];  // an empty cell has no text to quote
    return problem === "empty" ? fill(t.cell_problems.empty, ...where) : fill(t.cell_problems[problem], ...where, text.slice(0, 40));
  };
  // While a cell is refused, or a result could not be drawn, the tables below still hold an earlier
  // result: they are dimmed and say so, until the chain has computed the input shown above them.
  const markStale = (why) => {
    out.classList.add("stale");
    let note = out.querySelector(".stale-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "stale-note";
      out.prepend(note);
    }
    note.textContent = `${t.stale}${t.full_stop}${why}`;
  };
  function compute() {
    const { scale, causal } = choice();
    const started = performance.now();
    const d = JSON.parse(module.walk(csv(state.X), csv(state.W_Q), csv(state.W_K), csv(state.W_V), scale, causal,
                                     state.tokens.join("\n")));
    for (const bad of editor.querySelectorAll("input.bad")) bad.classList.remove("bad");
    const error = editor.querySelector(".error");
    if (d.error) {  // mark the refused cell; the tables keep the last good result, marked as not current
      if (d.cell) {
        const cell = editor.querySelector(`input[data-m="${d.cell.matrix}"][data-i="${d.cell.row - 1}"][data-j="${d.cell.column - 1}"]`);
        if (cell) cell.classList.add("bad");
      }
      error.textContent = refusal(d);
      markStale(error.textContent);
      return;
    }
    try {
      render(d, mode);
    } catch (e) {  // a result the layout could not draw: say so rather than leave another's numbers
      error.textContent = `${t.render_failed}${t.colon}${e.message}`;
      markStale(error.textContent);
      return;
    }
    error.textContent = "";
    out.classList.remove("stale");
    timings.push(performance.now() - started);
  }

  const resize = (m, rows, cols, fillValue) => Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (m[i] && m[i][j] !== undefined ? m[i][j] : fillValue)));
  editor.addEventListener("input", (event) => {
    const cell = event.target;
    if (cell.classList.contains("token")) state.tokens[cell.dataset.i] = cell.value;
    else state[cell.dataset.m][cell.dataset.i][cell.dataset.j] = cell.value;
    if (mode === "trained") {
      forget();
      drawTraining();
    }
    mode = "edited";
    compute();
  });
  editor.addEventListener("click", (event) => {
    const action = event.target.dataset && event.target.dataset.action;
    if (!action) return;
    const n = state.X.length, dm = state.X[0].length, dk = state.W_Q[0].length, dv = state.W_V[0].length;
    if (action === "train") return learning.running ? pause() : train();
    forget();
    if (action === "reset") { state = fresh(); mode = "lesson"; }
    else {
      mode = "edited";
      if (action.startsWith("token")) {
        const rows = n + (action === "token+" ? 1 : -1);
        state.X = resize(state.X, rows, dm, "0");
        state.tokens = Array.from({ length: rows }, (_, i) => state.tokens[i] || `${t.token} ${i + 1}`);
      } else if (action.startsWith("dk")) {
        const cols = dk + (action === "dk+" ? 1 : -1);
        state.W_Q = resize(state.W_Q, dm, cols, "0");
        state.W_K = resize(state.W_K, dm, cols, "0");
      } else {
        state.W_V = resize(state.W_V, dm, dv + (action === "dv+" ? 1 : -1), "0");
      }
    }
    drawEditor();
    compute();
  });

  // ---- training, a few steps per frame (the module's Learner: lesson/learn.cpp's Trainer) -----
  const STEPS_PER_FRAME = 2;  // attn learn's default run, drawn two steps a frame
  function adopt(r) {  // what the Learner reports after its steps: the weights now, and the losses
    // each float written as the shortest decimal that reads back to it: 0.3, not 0.300000012
    const rows = (text) => text.trim().split("\n").map((line) => line.split(",").map((v) => decimal(value(Number(v)))));
    Object.assign(state, { X: rows(r.X), W_Q: rows(r.W_Q), W_K: rows(r.W_K), W_V: rows(r.W_V) });
    learning.step = r.step;
    learning.losses.push(...r.losses);
    learning.loss = r.loss;
    learning.wanted = r.wanted;
    mode = "trained";
  }
  function train() {
    if (!learning.learner) {  // the lesson's X and tokens, the Learner's first weights, ÷√d_k and no mask
      const { task, seed, lr } = learning.defaults;
      state = fresh();
      learning.learner = new module.Learner(task, seed, lr);
      adopt(JSON.parse(learning.learner.step(0)));
      section.querySelector('.switch input[value="sqrt"]').checked = true;
      section.querySelector('.switch input[value="0"]').checked = true;
    }
    const steps = learning.defaults.steps;
    learning.goal = (Math.floor(learning.step / steps) + 1) * steps;
    learning.running = true;
    frame();
  }
  function frame() {
    if (!learning.running) return;
    adopt(JSON.parse(learning.learner.step(Math.min(STEPS_PER_FRAME, learning.goal - learning.step))));
    learning.running = learning.step < learning.goal;
    drawEditor();
    compute();
    if (learning.running) learning.timer = setTimeout(frame, 16);
    else section.dispatchEvent(new Event("worked-example-trained"));
  }
  function pause() {
    clearTimeout(learning.timer);
    learning.running = false;
    drawTraining();
  }
  function forget() {  // an edit or a reset: the weights shown are no longer the Learner's
    clearTimeout(learning.timer);
    if (learning.learner) learning.learner.delete();
    Object.assign(learning, { learner: null, step: 0, losses: [], loss: null, wanted: null, running: false });
  }

  // The module compiles synchronously as AttnWalk() is called (WASM_ASYNC_COMPILATION=0 in
  // meson.build), and AttnWalk() returns the module itself, not a promise (Promise.resolve takes
  // either). Why: compiled asynchronously, the module first fetches its own embedded data: URL, and
  // Chromium answers that fetch only once the page's other work is done; compiled as it is read, the
  // editable example is drawn as soon as the file is. The times it takes are recorded below, and
  // docs/site/check_docs_page.py prints them with each recomputation's.
  let module = null;
  const compiling = performance.now();
  Promise.resolve(window.AttnWalk()).then((m) => {
    module = m;
    learning.defaults = JSON.parse(module.learnDefaults());  // {"task", "steps", "lr", "seed"}, as attn learn's
    live = { compute };
    drawEditor();
    compute();
    window.workedExampleReady = {  // ms to the editable example drawn with its first computation
      // the page marks "attn_walk.js" just before its <script src>, so this counts reading the file too
      from_reading: performance.now() - performance.getEntriesByName("attn_walk.js")[0].startTime,
      from_compiling: performance.now() - compiling,
    };
    section.dispatchEvent(new Event("worked-example-ready"));
  });
})();
