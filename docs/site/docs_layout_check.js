// docs/site/docs_layout_check.js — measures a page as the reader sees it, after KaTeX has run, and
// writes what it found as JSON into <pre id="layout-report"> for docs/site/check_docs_page.py, which
// injects this script at the top of a copy of each page (so that it hears every script error the
// page raises) and reads the report from Chromium's --dump-dom.
"use strict";

const scriptErrors = [];
window.addEventListener("error", (e) => scriptErrors.push(String(e.message)));

function visibleText(root) {
  // Text a reader sees as prose: not code, not scripts, not KaTeX's hidden TeX source.
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest("pre, code, script, style, annotation, .katex-mathml, #layout-report")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  let text = "";
  while (walker.nextNode()) text += walker.currentNode.textContent;
  return text;
}

// The TeX of every typeset formula outside code, as written before KaTeX set it: an empty {} there
// is set as nothing, so a value that was never filled in is seen only in this source.
function texSources(root) {
  return [...root.querySelectorAll('.katex-mathml annotation[encoding="application/x-tex"]')]
    .filter((a) => !a.closest("pre, code")).map((a) => a.textContent);
}

// Where a number should be drawn and something else is: in a formula's TeX (outside code), a {} left
// unfilled (KaTeX sets it as nothing, so it is seen only there) or "undefined" or "NaN" after =; in
// the text, "undefined" or "NaN" after =. In the worked example, whose lesson numbers are all finite,
// any {}, "undefined" or "NaN" at all, in its text, its tables or its formulas. (A note may well speak
// of {} or of NaN in words; only these places must hold a number.)
function placeholdersReport() {
  const bad = [];
  const look = (where, text, pattern) => {
    for (const m of text.matchAll(pattern)) bad.push(`${where}: …${text.slice(Math.max(0, m.index - 30), m.index + m[0].length + 10)}…`);
  };
  const afterEquals = /=\s*(?:\\text\{\s*)?(?:undefined|NaN)\b/g;
  look("text", visibleText(document.body), afterEquals);
  for (const tex of texSources(document.body)) {
    look("formula", tex, /\{\s*\}/g);
    look("formula", tex, afterEquals);
  }
  const example = document.querySelector("section.worked .variant");
  if (example) {
    look("worked example", visibleText(example), /\{\s*\}|undefined|NaN/g);
    for (const tex of texSources(example)) look("worked example formula", tex, /undefined|NaN/g);
  }
  return [...new Set(bad)];
}

function isShown(el) {
  return el.getClientRects().length > 0 && !el.closest("[hidden]");
}

function rowsReport() {
  // Every note sits left of its code, the two start on the same line, and every marker is in a note.
  const bad = [];
  for (const pair of document.querySelectorAll("section.pair")) {
    const note = pair.querySelector(":scope > .note"), code = pair.querySelector(":scope > .code");
    if (!note || !code || pair.children.length !== 2) { bad.push(pair.id + ": not one note and one code"); continue; }
    const n = note.getBoundingClientRect(), c = code.getBoundingClientRect();
    if (!(n.right <= c.left + 1 && Math.abs(n.top - c.top) < 2)) bad.push(pair.id + ": note not left of its code");
  }
  for (const marker of document.querySelectorAll(".marker")) {
    const code = marker.closest("section.pair")?.querySelector(":scope > .code");
    if (!marker.closest(".note") || (code && marker.getBoundingClientRect().right > code.getBoundingClientRect().left + 1))
      bad.push(marker.id + ": marker outside the note column");
  }
  return bad;
}

function overflowReport() {
  const bad = [];
  for (const el of document.querySelectorAll(".code, .code pre, table, figure, .katex-display, main"))
    if (isShown(el) && el.scrollWidth > el.clientWidth + 1) bad.push(`${el.tagName.toLowerCase()}.${el.className}: ${el.scrollWidth} > ${el.clientWidth}`);
  if (document.documentElement.scrollWidth > window.innerWidth + 1) bad.push("the page scrolls sideways");
  return bad;
}

function diagramReport() {
  // The nodes in the order of the chain, left to right (Q, K, V share a column), each a link.
  const svg = document.querySelector("figure.diagram svg");
  if (!svg) return null;
  const boxes = [...svg.querySelectorAll("a.node:not(.optional) rect")].map(r => r.getBoundingClientRect());
  const x = boxes.map(b => Math.round(b.left));
  const order = x.length === 8 && x[0] < x[1] && x[1] === x[2] && x[2] === x[3] && x[3] < x[4] && x[4] < x[5] && x[5] < x[6] && x[6] < x[7];
  return {width: Math.round(svg.getBoundingClientRect().width), nodes: boxes.length,
          links: svg.querySelectorAll("a[href]").length, left_to_right: order,
          shape_labels: svg.querySelectorAll("text.shape").length};
}

function heatmapReport() {
  // The visible α: its cells are shaded more the larger the weight; switching to the causal variant
  // shows a heat map whose upper triangle is zero.
  const visible = () => [...document.querySelectorAll(".variant")].filter(isShown);
  const shades = table => [...table.querySelectorAll("td")].map(td => {
    const m = getComputedStyle(td).backgroundColor.match(/rgba?\([^,]+,[^,]+,[^,]+(?:,\s*([\d.]+))?\)/);
    return {value: parseFloat(td.textContent.replace(/−/g, "-")), alpha: m && m[1] ? parseFloat(m[1]) : 1};
  });
  const shown = visible();
  if (shown.length !== 1) return {variants_shown: shown.length};
  const cells = shades(shown[0].querySelector("table.heatmap"));
  const monotone = cells.every(a => cells.every(b => !(a.value < b.value) || a.alpha <= b.alpha));
  const headings = [...shown[0].querySelectorAll("h3")].map(h => h.getBoundingClientRect().top);
  const inOrder = headings.every((t, k) => k === 0 || t > headings[k - 1]);
  const causal = document.querySelector('.switch input[value="1"]');
  causal.click();
  const after = visible();
  let upperZero = false;
  if (after.length === 1 && after[0].dataset.causal === "1") {
    const rows = [...after[0].querySelector("table.heatmap").rows].slice(1).map(r => [...r.cells].slice(1).map(c => c.textContent));
    upperZero = rows.every((row, i) => row.every((v, j) => j <= i || parseFloat(v) === 0));
  }
  return {variants_shown: 1, cells: cells.length, shade_follows_value: monotone, steps_in_order: inOrder,
          headings: headings.length, causal_switch_works: upperZero};
}

function report() {
  const loaded = [...document.querySelectorAll(".switch input:checked")];
  const text = visibleText(document.body);
  const result = {
    lang: document.documentElement.lang,
    katex: document.querySelectorAll(".katex").length,
    katex_errors: document.querySelectorAll(".katex-error").length,
    raw_math: (text.match(/\$[^$\n]{1,60}\$/g) || []).slice(0, 3),
    rows: rowsReport(),
    overflow: overflowReport(),
    diagram: diagramReport(),
    placeholders: placeholdersReport(),
    heatmap: document.querySelector("table.heatmap") ? heatmapReport() : null,
  };
  // the heat map's check has switched the example to its causal variant: that one is read too
  result.placeholders = [...new Set([...result.placeholders, ...placeholdersReport()])];
  loaded.forEach(input => input.click());  // the page as it loaded, for the screenshot the same load takes
  result.script_errors = scriptErrors;
  const pre = document.createElement("pre");
  pre.id = "layout-report";
  pre.hidden = true;
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
}

// auto-render runs on DOMContentLoaded; measure once the fonts are in and the layout has settled.
window.addEventListener("load", () => document.fonts.ready.then(() => setTimeout(report, 200)));
