/* The book's live figures: one front end for every figure (mha/static/live/*.js, shipped with
 * the package; no dependencies, nothing from a network). Python (mha.live) writes a figure as
 *   a div.mha-live[data-figure=NAME] holding a JSON script element (class mha-spec)
 * holding its spec; these files build the controls, look the state up, draw the views and say
 * in words what changed. The same code runs in the built book (no kernel), JupyterLab, Notebook,
 * VS Code and Colab: a figure is plain HTML with this script inlined.
 *
 * spec = {name, title, note, controls: [{name, label, kind: range|select|toggle|step|text, values,
 *         labels, value (an index; a text box's: its text, and max_length), disabled}], views: [{name, kind: heatmap|bars|plot|table|
 *         text|lines|arrows|strips, label}], states: {"i,j,...": state} | compute: NAME, data}
 * state = {views: {NAME: data}, readout: "what the picture shows", state: {...}, disabled:
 *          {control: bool}, options: {control: [indices offered]}, limits: {control: {max,
 *          reset, to}} (a slider's last index here, and the control that sends it back to 0, or
 *          to max with to: "max")}; with listed states a
 *          view's data is an index into spec.pool (each distinct picture stored once)
 * A state is looked up by the controls' indices joined with ","; a figure whose states are too
 * many to list names a compute function registered here (COMPUTE) that makes one from spec.data.
 * Every canvas carries data-values (the numbers it drew, JSON, NaN as null) and data-caption (its
 * caption's lines) for the tests, and canvas.mhaTexts (every text drawn, with its ink's corners:
 * no two may overlap, none may be cut); the root carries data-draws, data-drawn-at,
 * data-draw-ms (the redraw's own time) and data-state.
 *
 * The front end is eight parts, concatenated in this order by mha.live.figure.script() inside one
 * function (one scope, "use strict"): core.js (this file: version, colours, theme, number
 * format, ticks, canvases, DOM helpers, and the registries CANVAS_VIEWS, DOM_VIEWS and COMPUTE
 * that the other parts fill), heatmap.js, charts.js (bars, plots, tables), panels.js (arrows,
 * strips), lines.js (one head as lines), compute.js (in-page computes), lm.js (the Shakespeare
 * language model, run in the page), textfig.js (its figure) and mount.js (controls,
 * a figure's mounting and redraw, window.mhaLive).
 */

var VERSION = 4; // 3: text boxes and the in-page Shakespeare language model; 4: sticky bars
// a front end may run an output's script before the output is in the page: mount again shortly
function soon(mount) { mount(); [0, 50, 250, 1000].forEach(function (t) { setTimeout(mount, t); }); }
if (window.mhaLive && window.mhaLive.version >= VERSION) { soon(window.mhaLive.mountAll); return; }

// ---------------------------------------------------------------- colours
// viridis, 32 steps (matplotlib), interpolated linearly; -1..1 values: a blue-white-red ramp
var VIRIDIS = "440154470d6048186a482374472e7c4538824241863e4a893a548c365d8d32658e2e6d8e2b758e" +
  "287d8e25848e228c8d1f948c1e9c8920a38625ab822eb37c3aba7648c16e58c7656ccd5a7fd34e93d741a8db34c0" +
  "df25d5e21aeae51afde725";
var RDBU = "2166ac4393c392c5ded1e5f0f7f7f7fddbc7f4a582d6604db2182b";
function ramp(hex) {
  var out = [];
  for (var c = 0; c < hex.length; c += 6) {
    out.push([0, 2, 4].map(function (o) { return parseInt(hex.substr(c + o, 2), 16); }));
  }
  return out;
}
var RAMPS = { viridis: ramp(VIRIDIS), diverging: ramp(RDBU) };
function colour(v, name) { // v in 0..1
  var rgb = RAMPS[name || "viridis"], x = Math.min(1, Math.max(0, v)) * (rgb.length - 1);
  var i = Math.min(rgb.length - 2, Math.floor(x)), f = x - i, a = rgb[i], b = rgb[i + 1];
  return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }) + ")";
}
// Text and line colours for the figure's actual background. Dark means light text: the
// page's dark mode, a dark Jupyter theme; but the book's dark mode draws HTML outputs on a light
// panel with dark text (MyST-NB), where the light palette is the legible one. Form controls
// follow (color-scheme), so that an unticked box does not look ticked.
function theme(el) {
  var fg = getComputedStyle(el).color || "#222";
  var rgb = (fg.match(/[\d.]+/g) || [34, 34, 34]).map(Number);
  var dark = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255 > 0.5;
  var root = el.closest ? el.closest(".mha-live") || el : el;
  root.style.colorScheme = dark ? "dark" : "light";
  // a NaN cell: a mid grey with 3:1 or more against both the page and the book's light grey
  // output panel (#ced6dd in its dark mode), crossed in a colour that stands out on the grey
  return { fg: fg, muted: dark ? "#9aa4ae" : "#666", accent: dark ? "#ffa657" : "#c24e00",
    bar: dark ? "#6cb6ff" : "#1f5fa8", nan: dark ? "#8c8c8c" : "#737373",
    // a third series (chapter 12's dashed "q at 0"): a grey 3:1 or more against the page and
    // the book's grey output panel (the muted grey is for axes, and faded on that panel)
    third: dark ? "#c4c4c4" : "#474747",
    nanCross: dark ? "#111" : "#fff", dark: dark };
}

function round(x) { return x === null || !isFinite(x) ? null : Math.round(x * 1e6) / 1e6; }
function roundDeep(a) { return Array.isArray(a) ? a.map(roundDeep) : round(a); }
function plural(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }
// a number as drawn: two decimals, but a small non-zero one (a softmax weight is never 0) in
// exponent form, so that 0.0003 does not read as "0.00"
function fmt(x, decimals) {
  if (x === null) return "NaN";
  if (x === 0) return "0";
  if (Math.abs(x) < 0.005) return x.toExponential(0);
  if (decimals !== undefined && decimals !== null) return x.toFixed(decimals);
  if (Number.isInteger(x) && Math.abs(x) > 1) return grouped(x); // a count: 16, not 16.00; 9,216
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2);
}
// one view's numbers in one style: counts (every value an integer, some above 1) as 16 and 1;
// any other view's as 1.95 and 2.00 (a weight of 1 is 1.00, never "1" beside "0.97")
function fmtFor(values) {
  var all = [];
  (function walk(a) { if (Array.isArray(a)) a.forEach(walk); else if (a !== null) all.push(a); })(values);
  var counts = all.some(function (v) { return Math.abs(v) > 1; }) && all.every(Number.isInteger);
  return function (x, decimals) {
    if (x === null || x === 0 || decimals !== undefined && decimals !== null) return fmt(x, decimals);
    if (counts) return grouped(x);
    return Number.isInteger(x) && Math.abs(x) < 100 ? x.toFixed(2) : fmt(x);
  };
}

// axis ticks at "nice" numbers (steps of 1, 2, 2.5 or 5 x 10^k, as D3's ticks()) inside
// [lo, hi], about n of them; every view with an axis labels it with these (tickText)
function niceTicks(lo, hi, n) {
  if (!isFinite(lo) || !isFinite(hi)) return [];
  if (hi < lo) { var sw = lo; lo = hi; hi = sw; }
  if (hi === lo) return [lo];
  var raw = (hi - lo) / (n || 5), power = Math.pow(10, Math.floor(Math.log10(raw)));
  var best = 1;
  [1, 2, 2.5, 5, 10].forEach(function (c) {
    if (Math.abs(Math.log(c * power / raw)) < Math.abs(Math.log(best * power / raw))) best = c;
  });
  var step = best * power, out = [], first = Math.ceil(lo / step - 1e-9);
  for (var k = first; k * step <= hi + step * 1e-9; k++) out.push(+(k * step).toPrecision(12));
  out.step = step;
  return out;
}
function tickText(v, step) { // as many decimals as the step needs: 0.25, 2.5, 1, 1,000
  var dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9) + (Math.round(step / Math.pow(10,
    Math.floor(Math.log10(step) + 1e-9)) * 10) % 10 ? 1 : 0));
  var x = +v.toFixed(Math.min(dec, 12));
  return Number.isInteger(x) && Math.abs(x) >= 1000 ? x.toLocaleString("en") : String(x);
}

function avail(canvas) { // the width of the figure (the views' box)
  var p = canvas.parentElement, w = (p && p.clientWidth) || 700;
  return Math.max(280, Math.min(w, 1100));
}
function setup(canvas, width, height) {
  var dpr = window.devicePixelRatio || 1;
  canvas.width = Math.ceil(width * dpr); canvas.height = Math.ceil(height * dpr);
  canvas.style.width = width + "px"; // height follows (CSS height: auto): never distorted
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  record(ctx); canvas.mhaTexts = [];
  ctx.clearRect(0, 0, width, height); // transparent: the page's own background shows
  ctx.font = "12px sans-serif"; ctx.textBaseline = "middle";
  return ctx;
}
// Every text a canvas view draws, with the four corners of its ink (CSS px, after any
// rotation), on canvas.mhaTexts: the tests check that no two overlap and none is cut off at
// the canvas's edges (a property, not an attribute: nothing is serialised while drawing).
function record(ctx) {
  if (ctx.mhaRecord) return;
  var fill = ctx.fillText;
  ctx.mhaRecord = true;
  ctx.fillText = function (s, x, y) {
    fill.apply(this, arguments);
    s = String(s);
    if (!s.trim()) return;
    var m = this.measureText(s), k = window.devicePixelRatio || 1, f = this.getTransform();
    var l = x - m.actualBoundingBoxLeft, r = x + m.actualBoundingBoxRight;
    var u = y - m.actualBoundingBoxAscent, b = y + m.actualBoundingBoxDescent;
    (this.canvas.mhaTexts = this.canvas.mhaTexts || []).push({ text: s, font: this.font,
      corners: [[l, u], [r, u], [r, b], [l, b]].map(function (p) {
        return [(f.a * p[0] + f.c * p[1] + f.e) / k, (f.b * p[0] + f.d * p[1] + f.f) / k];
      }) });
  };
}
// text broken into lines no wider than width in the given font (a word wider than a line is
// broken inside); never cut: a long caption takes as many lines as it needs
var MEASURE = null;
function measurer(font) { // a canvas context for measuring text before a view's canvas is sized
  MEASURE = MEASURE || document.createElement("canvas").getContext("2d");
  MEASURE.font = font;
  return MEASURE;
}
function widest(list, font) {
  var m = measurer(font), w = 0;
  list.forEach(function (s) { w = Math.max(w, m.measureText(String(s)).width); });
  return Math.ceil(w);
}
function wrap(text, width, font) {
  var m = measurer(font), lines = [], line = "";
  function fits(s) { return m.measureText(s).width <= width; }
  String(text || "").split(/\s+/).filter(Boolean).forEach(function (w) {
    if (fits(line ? line + " " + w : w)) { line = line ? line + " " + w : w; return; }
    if (line) lines.push(line);
    while (!fits(w) && w.length > 1) {
      var k = w.length - 1;
      while (k > 1 && !fits(w.slice(0, k))) k--;
      lines.push(w.slice(0, k)); w = w.slice(k);
    }
    line = w;
  });
  if (line) lines.push(line);
  return lines;
}
// a canvas's title: bold, wrapped to the canvas's width; heading() before the canvas is sized
// (its height), caption() draws it from the top and keeps its lines in data-caption (tests)
var CAPTION_FONT = "bold 13px sans-serif", CAPTION_LINE = 16;
function heading(text, width) {
  var lines = wrap(text, width - 8, CAPTION_FONT);
  return { lines: lines, h: Math.max(1, lines.length) * CAPTION_LINE + 4 };
}
function caption(ctx, cap, t) {
  ctx.fillStyle = t.fg; ctx.textAlign = "left"; ctx.font = CAPTION_FONT;
  cap.lines.forEach(function (s, i) { ctx.fillText(s, 4, 10 + i * CAPTION_LINE); });
  ctx.font = "12px sans-serif";
  ctx.canvas.dataset.caption = JSON.stringify(cap.lines);
}
// the colour scale: upright at the right of the grids (len px tall), or lying under them
// (below: len px wide, its ticks and label under it; COLOUR_BAR_BELOW px tall in all)
var COLOUR_BAR_BELOW = 50;
// the colour bar's ticks: the view's own (d.ticks, labelled d.tick_labels: e.g. a 0/1 mask's
// "blocked" and "may attend"), or nice numbers
function barTicks(d) {
  if (d.ticks) {
    return { values: d.ticks, text: d.ticks.map(function (v, i) {
      return d.tick_labels ? d.tick_labels[i] : String(v); }) };
  }
  var ticks = niceTicks(d.vmin, d.vmax, 4);
  return { values: ticks, text: ticks.map(function (v) { return tickText(v, ticks.step); }) };
}
// the centres of labels laid along a line (a colour bar lying under the grids): each at its
// tick, moved in from the canvas's edges and apart from its neighbours (6 px: the view's own
// "blocked" and "may attend" at 0 and 1 stay whole); a label with no room left is dropped (null)
function spread(boxes, width) {
  var gap = 6, out = boxes.map(function (b) {
    return Math.max(b.w / 2 + 1, Math.min(width - b.w / 2 - 1, b.c)); });
  for (var i = 1; i < out.length; i++) {
    out[i] = Math.max(out[i], out[i - 1] + (boxes[i - 1].w + boxes[i].w) / 2 + gap);
  }
  for (i = out.length - 1; i >= 0; i--) {
    var right = i === out.length - 1 ? width - 1 : out[i + 1] - boxes[i + 1].w / 2 - gap;
    out[i] = Math.min(out[i], right - boxes[i].w / 2);
  }
  var last = -Infinity;
  return out.map(function (c, i) {
    if (c - boxes[i].w / 2 < Math.max(0, last + gap - 0.5)) return null;
    last = c + boxes[i].w / 2; return c;
  });
}
function tickWidth(d) { // the widest tick label of the colour bar (12px)
  return widest(barTicks(d).text, "12px sans-serif");
}
function colourBarWidth(d) { return 6 + 24 + tickWidth(d) + 10; } // upright, from the grids
function colourBar(ctx, x, y, len, d, t, below) {
  var lo = d.vmin, hi = d.vmax, p, ticks = barTicks(d);
  for (p = 0; p < len; p++) {
    ctx.fillStyle = colour(below ? p / (len - 1) : 1 - p / (len - 1), d.scale);
    if (below) ctx.fillRect(x + p, y, 1, 12); else ctx.fillRect(x, y + p, 12, 1);
  }
  ctx.strokeStyle = t.muted; ctx.strokeRect(x, y, below ? len : 12, below ? 12 : len);
  ctx.fillStyle = t.fg; ctx.textAlign = below ? "center" : "left";
  var spots = ticks.values.map(function (v) { return (v - lo) / (hi - lo) * (len - 1); });
  if (below) {
    var place = spread(ticks.text.map(function (s, i) {
      return { c: x + spots[i], w: ctx.measureText(s).width }; }), parseFloat(ctx.canvas.style.width));
    place.forEach(function (c, i) { if (c !== null) ctx.fillText(ticks.text[i], c, y + 21); });
  } else {
    ticks.values.forEach(function (v, i) { ctx.fillText(ticks.text[i], x + 16, y + len - spots[i]); });
  }
  ctx.canvas.dataset.ticks = JSON.stringify(ticks.values);
  ctx.canvas.dataset.colourBar = below ? "below" : "right";
  ctx.canvas.dataset.colourBarLength = String(Math.round(len));
  ctx.save(); ctx.textAlign = "center";
  if (below) ctx.translate(x + len / 2, y + 38);
  else { ctx.translate(x + 24 + tickWidth(d), y + len / 2); ctx.rotate(-Math.PI / 2); }
  ctx.fillText(d.label || "attention weight", 0, 0); ctx.restore();
}

var CANVAS_VIEWS = {}, DOM_VIEWS = {}, COMPUTE = {};
var counter = 0; // ids for controls: unique in the page

function el(tag, attrs, text) {
  var e = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
  if (text !== undefined) e.textContent = text;
  return e;
}
// a select as wide as its longest option (never clipped), its label above it when the row is
// too narrow for both (a phone), never wider than the figure
function fitSelect(sel, wrap) {
  sel.style.maxWidth = "100%"; sel.style.minWidth = "0"; wrap.style.flexWrap = "wrap";
}
function labelOf(c, i) { return c.labels ? c.labels[i] : String(c.values[i]); }
