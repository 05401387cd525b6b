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
  // How a number is written is the library's rule, not this file's: with the module, each value is
  // written by its tableNumber() (matrix/print.hpp, table_number: the decimals the float holds, or
  // its shortest decimal beyond 1e5 and below 1e-3). Before the module is ready, or on a page built
  // without it, each value is shown with the digits the chain wrote into the JSON: the shortest
  // decimal that reads back to its float (JavaScript's String() gives back exactly those digits).
  // Here only the marks change: a table prints a negative sign as − (U+2212) and an exponent as
  // e19 or e−7; a formula sets the same digits in TeX.
  let module = null;
  const value = (v) => (typeof v === "number" ? v : { inf: Infinity, "-inf": -Infinity }[v] ?? NaN);
  const digits = (x) => (module ? module.tableNumber(x) : String(x));  // x finite
  const shown = (v, inTable) => {
    const x = value(v);
    if (Number.isFinite(x)) {
      const [mantissa, exponent] = digits(x).toLowerCase().split("e");
      const power = exponent === undefined ? undefined : String(Number(exponent));  // "+19" → "19", "-07" → "-7"
      if (inTable) return (power === undefined ? mantissa : `${mantissa}e${power}`).replace(/-/g, "−");
      return power === undefined ? mantissa : `${mantissa}\\times 10^{${power}}`;
    }
    if (Number.isNaN(x)) return inTable ? "NaN" : "\\text{NaN}";
    return inTable ? (x > 0 ? "∞" : "−∞") : (x > 0 ? "\\infty" : "-\\infty");
  };
  const fmt = (v) => shown(v, true);
  const fixed = (v) => shown(v, false);
  // one factor of a written-out product: trailing zeros dropped, bracketed when signed or scientific
  const term = (v) => {
    const x = value(v), s = fixed(v), plain = Number.isFinite(x) && !s.includes("times");
    const written = plain && s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
    return x < 0 || !plain ? `(${written})` : written;
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

  // The fused walk's steps as a table: the keys taken in, their scores, then m, e^(m_old − m), ℓ, o and
  // o/ℓ after them (lesson/fused_walk.hpp).
  function stepsTable(steps, tok, name) {
    const dv = steps.length ? steps[0].after.o.length : 0;
    const head = [data.variants["sqrt-0"].text.fused_keys, "$s_j$", "$m$", "$e^{m_{\\text{old}} - m}$", "$\\ell$",
                  ...Array.from({ length: dv }, (_, k) => `$o_${k + 1}$`),
                  ...Array.from({ length: dv }, (_, k) => `$(o/\\ell)_${k + 1}$`)];
    const rows = steps.map((st) => `<tr><th>${esc(st.keys.map((j) => tok[j]).join(t.list_separator))}</th>`
      + `<td>${st.scores.map(fmt).join(", ")}</td>`
      + [st.after.m, st.rescale, st.after.l, ...st.after.o, ...st.output].map((v) => `<td>${fmt(v)}</td>`).join("") + "</tr>");
    return figure("", `<table class="matrix steps"><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr>${rows.join("")}</table>`, name);
  }

  // One section of the walk's list (lesson/sections.hpp), drawn with the numbers of `d`: its heading (a
  // step's title with its formula, typeset when the page was built; an aside's title), its note, the
  // lines of code it mirrors, and what the chain computed for it.
  function drawSection(sec, d, mode) {
    const tok = d.tokens, n = d.n, s = data.variants[`${d.scale}-${d.causal ? 1 : 0}`].text;
    const idx = Array.from({ length: Math.max(d.d_model, d.d_k, d.d_v) }, (_, k) => String(k + 1));
    // the walk's notes follow a heading on the terminal, lower-case; on the page they open a paragraph
    const para = (sentence) => `<p>${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}</p>`;
    const c = t.colon, sc = t.semicolon;
    const note = (...values) => (sec.note ? para(values.length ? fill(s[sec.note], ...values) : s[sec.note]) : "");
    const code = sec.markers.length ? `<p class="code">${t.code}${c}` + sec.markers.map((m) =>
      `<a href="${m.href}"><code>${esc(m.file)} [${esc(m.name)}]</code></a>`).join(t.list_separator) + "</p>" : "";
    const step = (...parts) => `<h3>${s[sec.title]}${sec.formula_html ? ` ${sec.formula_html}` : ""}</h3>` + note() + code + parts.join("");
    const j2 = d.written_out.column, k2 = `${j2 + 1}`;  // the entry of row 1 the chain writes out
    const w = d.softmax_row, i = w.row + 1;  // the row the chain wrote out (its JSON says which)
    const mix = (row) => d.weights[row].map((a, j) => `${fixed(a)}\\, v_${j + 1}`).join(" + ");
    const bodies = {
      "step.1": () => step(mats(figure("$X$", table(d.X, tok, idx.slice(0, d.d_model))))),
      "step.2": () => {
        const weights = { lesson: () => s.weights, edited: () => t.edited_note,
                          trained: () => fill(t.trained_note, learning.step, learning.defaults.seed) }[mode];
        return step(`<p class="weights-note">${weights()}</p>`,
          mats(...["W_Q", "W_K", "W_V"].map((k) => figure(`$${k}$`, table(d[k]), k)),
               ...["Q", "K", "V"].map((k) => figure(`$${k}$`, table(d[k], tok, idx.slice(0, d[k][0].length)), k))),
          `<p>${s.expanded}${c}$Q_{11} = x_1 \\cdot ($ ${s.column1} $) = ${products(d.X[0], column(d.W_Q, 0))}`
          + ` = ${fixed(d.Q[0][0])}$</p>`);
      },
      "step.3": () => step(mats(figure("$S$", table(d.S, tok, tok), "S")),
        `<p>${s.expanded}${c}$S_{1${k2}} = q_1 \\cdot k_${k2} = ${products(d.Q[0], d.K[j2])} = ${fixed(d.S[0][j2])}$</p>`),
      transpose: () => (d.Q_times_K
        ? aside(s.transpose, `<p>${s.transpose_note}${t.space}${s.transpose_square}</p>`,
                mats(figure("$QK$", table(d.Q_times_K)), figure("$S = QK^\\top$", table(d.S, tok, tok))),
                `<p>$(QK)_{1${k2}} = ${products(d.Q[0], column(d.K, j2))} = ${fixed(d.Q_times_K[0][j2])}$${sc}`
                + `${s.same_in_S}${c}$S_{1${k2}} = ${fixed(d.S[0][j2])}$</p>`)
        : aside(s.transpose, `<p>${s.transpose_note}${t.space}${fill(s.transpose_refused, n, d.d_k)}</p>`)),
      "confusion.1": () => aside(s.confusion1, note(),
        mats(figure(s.cosines, table(d.cosines, tok, tok))),
        `<p>$S_{1${k2}} = \\lVert q_1 \\rVert \\cdot \\lVert k_${k2} \\rVert \\cdot \\cos\\theta_{1${k2}} = `
        + `${term(d.written_out.q_norm)}\\times ${term(d.written_out.k_norm)}\\times ${term(d.cosines[0][j2])}`
        + ` = ${fixed(d.S[0][j2])}$</p>`,
        mats(figure(s.other_keys, table(d.S_with_W_K_as_W_Q, tok, tok))),
        para(`${s.row_largest}${c}${largestPerRow(d.largest_per_row.S_with_W_K_as_W_Q, tok)}${sc}`
             + `${s.with_example_keys}${c}${largestPerRow(d.largest_per_row.S, tok)}`)),
      // the scale's factor worked out for this d_k (its formula, S' = S/√d_k, is in the heading)
      "step.4": () => step(d.scale === "none" ? "" : `<p>$S' = ${fixed(d.scale_factor)}\\cdot S$</p>`,
        mats(figure("$S'$", table(d.S_scaled, tok, tok)))),
      "step.4.mask": () => step(mats(figure("$S'$", table(d.softmax_input, tok, tok)))),
      "step.5": () => step(
        mats(figure(s.heat, table(d.weights, tok, tok, true, mode === "trained" ? learning.wanted : null), "alpha")),
        `<p>${s.expanded_row}${c}${s.row_max}${c}$m = ${fixed(w.max)}$${sc}$e^{S'_{${i}j} - m} = `
        + w.exponentials.map(fixed).join(", ") + `$${sc}${s.sum} $= ${fixed(w.sum)}$${sc}`
        + `$\\alpha_{${i}} = ` + d.weights[w.row].map(fixed).join(", ") + "$</p>",
        `<p>${s.row_sums}${c}` + d.weights_row_sums.map(fixed).join(", ") + "</p>"),
      "confusion.2": () => aside(s.confusion2, note(),
        mats(figure(s.by_column, table(d.softmax_by_column, tok, tok, true))),
        para(`${s.column_sums}${c}` + d.by_column_sums.columns.map(fixed).join(", ")
             + `${sc}${s.row_sums_short}${c}` + d.by_column_sums.rows.map(fixed).join(", "))),
      "step.6": () => step(mats(figure("$O$", table(d.output, tok, idx.slice(0, d.d_v)), "O")),
        `<p>${s.expanded_row}${c}$o_1 = ${mix(0)}$</p>`),
      // o_i as a mix of values, for the row step 5 wrote out: row 1 is written out in step 6 already
      "confusion.3": () => aside(s.confusion3, note(),
        w.row === 0 ? para(fill(s.written_in_step_6, "$o_1$")) : `<p>$o_${i} = ${mix(w.row)}$</p>`),
      "exercise.2": () => aside(s.exercise2, note(), "<ul>" + d.largest_per_row.S.map((best, r) =>
        `<li>${esc(tok[r])}${c}$S_{${r + 1}${r + 1}} = ${fixed(d.S[r][r])}$${sc}`
        + (best === r ? s.diagonal_yes
                      : `${fill(s.diagonal_no, esc(tok[best]))}${t.open}$S_{${r + 1}${best + 1}} = ${fixed(d.S[r][best])}$${t.close}`)
        + "</li>").join("") + "</ul>"),
      // exercise 5 for each row the chain compared (row 1, and under the mask the last row too)
      "exercise.5": () => aside(s.exercise5, ...d.exercise5.map((e, k) => para(k ? s.exercise5_causal : s.exercise5_note) + exercise5(e, s))),
      shapes: () => `<h3>${s[sec.title]}</h3><p>$X\\ (${d.n}\\times ${d.d_model}) \\to Q, K\\ (${d.n}\\times ${d.d_k}),`
        + ` V\\ (${d.n}\\times ${d.d_v}) \\to S, S', \\alpha\\ (${d.n}\\times ${d.n}) \\to O\\ (${d.n}\\times ${d.d_v})$</p>`,
      "confusion.4": () => aside(s.confusion4, note(d.d_k, d.d_model, d.heads.d_model, d.heads.h),
        `<p>${sec.formula_html.slice(0, -1)} = ${d.heads.d_model} / ${d.heads.h} = ${d.heads.d_k}$</p>`, para(s.heads_cost)),
      fused: () => {
        const f = d.fused, h = f.halves, r = f.row;
        const states = [[s.fused_first_half, h.keys[0], h.states[0]], [s.fused_second_half, h.keys[1], h.states[1]]];
        const stateRow = (label, st, factor) => `<tr><th>${label}</th>` + [st.m, factor, st.l, ...st.o].map((v) => `<td>${fmt(v)}</td>`).join("") + "</tr>";
        const dv = h.merged.o.length;
        return step(para(s.fused_why_m), para(fill(s.fused_row, r + 1, esc(tok[r]), f.moves)),
          stepsTable(f.one_at_a_time, tok, "fused_keys"),
          para(fill(s.fused_end, `$${fixed(f.largest_difference)}$`)),
          mats(figure("$O$", table(f.output, tok, idx.slice(0, d.d_v)), "fused_O")),
          para(s.fused_tiles), stepsTable(f.in_tiles, tok, "fused_tiles"),
          para(s.fused_halves),
          figure("", `<table class="matrix steps"><tr><th></th><th>$m$</th><th>$e^{m_{\\text{half}} - m}$</th><th>$\\ell$</th>`
            + Array.from({ length: dv }, (_, k) => `<th>$o_${k + 1}$</th>`).join("") + "</tr>"
            + states.map(([label, keys, st], k) =>
              stateRow(`${label}${t.open}${esc(keys.map((j) => tok[j]).join(t.list_separator))}${t.close}`, st, h.factors[k])).join("")
            + stateRow(s.fused_merge, h.merged, 1) + "</table>", "fused_halves"),
          `<p>$o / \\ell = ${h.output.map(fixed).join(", ")}$</p>`,
          para(fill(s.fused_merged, `$${fixed(h.largest_difference)}$`, r + 1)));
      },
    };
    return bodies[sec.key]();
  }

  // mode: "lesson" (the lesson's weights), "edited" (the reader's) or "trained" (the Learner's, below).
  // The sections are the walk's list, in its order, as the page was built with them (their formulas
  // typeset then); the numbers are `d`'s.
  function render(d, mode) {
    const sections = data.variants[`${d.scale}-${d.causal ? 1 : 0}`].sections;
    out.innerHTML = sections.map((sec) => drawSection(sec, d, mode)).join("");
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
  const typed = (m) => m.map((row) => row.map(String));  // the JSON's shortest decimal, as a reader types it: "0.2"
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

  // What the chain refused, in the page's language. A refused value comes with its cell (matrix, row,
  // column, what is wrong with it, the cell as typed), which the library's reader of typed cells
  // found (io/io.hpp, parse_cells: it also reads full-width forms and the − this page prints); the
  // page words the problem in its own language, so nothing here reads the chain's message. Anything
  // else (shapes, a step that could leave float32) is told with the chain's own message.
  const refusal = (d) => {
    if (!d.cell) return t.lang === "en" ? d.error : `${t.refused}${t.colon}${d.error}`;
    const c = d.cell, where = [c.matrix, c.row, c.column];  // an empty cell has no text to quote
    return c.problem === "empty" ? fill(t.cell_problems.empty, ...where) : fill(t.cell_problems[c.problem], ...where, c.text);
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
    const d = JSON.parse(module.walk(state, scale, causal));  // the cells as typed: the library reads them
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
    // each float as the shortest decimal that reads back to it, as the JSON has it: 0.3, not 0.300000012
    Object.assign(state, { X: typed(r.X), W_Q: typed(r.W_Q), W_K: typed(r.W_K), W_V: typed(r.W_V) });
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
