// Part 5 of 9: the lines view of one head (queries left, keys right, a line per pair).
// lines: d = {grids (H, Lq, Lk), rows (query labels), cols (key labels), titles, head (the
//   head shown first), focus ([side, index] or null), focus_from ({knob, queries: [query
//   index or null per value of that control]}), caption, label, max_rows (a long text's
//   tokens scroll in a box this many rows tall)}. In the manner of bertviz's
//   head view: queries in a left column, keys in a right one, a line for every pair whose
//   width and opacity are the weight. Every token is a button: keyboard focus or a mouse over
//   it shows only its lines, a click or tap pins them (aria-pressed; Escape unpins), arrow
//   keys move between tokens (one tab stop per column). With H > 1 a select picks the head.
//   Nothing above the token columns changes while the pointer moves over them (the words
//   that name the focused token sit under the columns), so no token moves under the pointer.
//   A label that occurs twice is named with its position ("the (3)").
//   The view's element carries data-values = {head, focus: {side, index, label} | null,
//   lines: [[query, key, weight], ...] (every line drawn)}, data-focus-draws (its own redraws),
//   data-drawn-at and data-draw-ms; its canvas an aria-label saying what it draws.
var LINE_ROW = 26, LINE_CUT = 0.05; // lines of a weight under LINE_CUT are not drawn
// a line's opacity: 0.25 + 1.5 x its weight, solid from 0.5 (a 0.3 line is not pale), its
// width 1 + 4.5 x the weight: both grow with the weight over the whole range
var LINE_ALPHA = 0.25;
function lines(box, d, t) {
  var shape = JSON.stringify([d.titles, d.grids.length, d.max_rows]), m = box.mhaLines;
  // the head the reader picked stays when the input changes (a new sentence or seed), as long
  // as the data asks for the same head as before and has the reader's
  var had = m && m.d && (m.d.head || 0) === (d.head || 0) && m.head < d.grids.length ? m.head : null;
  if (!m || m.shape !== shape) m = box.mhaLines = buildLines(box, d, shape);
  else if (JSON.stringify([d.rows, d.cols]) !== m.tokens) relabel(m, d); // new tokens, same heads
  m.tokens = JSON.stringify([d.rows, d.cols]);
  var base = d.focus || null, f = d.focus_from, root = box.closest(".mha-live");
  var knob = f && root && root.querySelector('[data-knob="' + f.knob + '"]');
  if (knob) { var q = f.queries[Number(knob.value)]; base = q === null || q === undefined ? null : ["query", q]; }
  if (JSON.stringify(base) !== JSON.stringify(m.base)) m.pinned = null; // a new step: unpin
  m.head = had === null ? d.head || 0 : had;
  m.d = d; m.t = t; m.base = base;
  drawLines(m);
}

function buildLines(box, d, shape) {
  var m = { shape: shape, box: box, head: d.head || 0, pinned: null, hover: null, base: null,
    pointer: null, buttons: { query: [], key: [] } };
  box.textContent = "";
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "lines view: " + (d.caption || "one head") +
    "; tokens are buttons: focus one to see only its lines");
  if (d.grids.length > 1) { // the head picker
    var id = "mha-lines-" + (++counter), wrap = el("div", { "class": "mha-control" });
    var sel = el("select", { id: id });
    wrap.appendChild(el("label", { "for": id }, "head"));
    d.grids.forEach(function (g, h) { sel.appendChild(el("option", { value: String(h) }, d.titles ? d.titles[h] : "head " + h)); });
    sel.value = String(m.head); fitSelect(sel, wrap);
    sel.addEventListener("change", function () { m.head = Number(sel.value); drawLines(m); });
    wrap.appendChild(sel); box.appendChild(wrap); m.select = sel;
  }
  m.cap = el("p"); m.cap.style.cssText = "margin:.2em 0;font-weight:600";
  box.appendChild(m.cap);
  m.legend = el("p", { "class": "mha-lines-legend" }); m.legend.style.cssText = "margin:.2em 0;font-size:13px";
  box.appendChild(m.legend);
  m.said = el("p", { "class": "mha-lines-readout", "aria-live": "polite" });
  m.said.style.cssText = "margin:.3em 0;min-height:2.6em";
  var row = m.row = el("div"); row.style.cssText = "display:flex;align-items:flex-start";
  scrolls(row, d);
  function column(side, labels) {
    var col = el("div", { role: "group", "aria-label": side === "query" ? "queries" : "keys" });
    col.style.cssText = "display:flex;flex-direction:column;flex:none;align-items:" +
      (side === "query" ? "flex-end" : "flex-start");
    var head = el("div", {}, side === "query" ? "queries" : "keys");
    head.style.cssText = "height:22px;line-height:22px;font-size:12px;opacity:.8";
    col.appendChild(head);
    labels.forEach(function (s, i) { button(side, i, s, col); });
    return col;
  }
  function button(side, i, s, col) { // token i of a column, appended to it
    var b = el("button", { type: "button", "aria-pressed": "false", tabindex: i ? "-1" : "0",
      "aria-label": side + " " + i + ": " + s }, s);
    b.style.cssText = "height:" + LINE_ROW + "px;min-width:32px;margin:0;padding:0 6px;" +
      "border:1px solid transparent;border-radius:4px;background:transparent;color:inherit;" +
      "font:inherit;font-size:13px;cursor:pointer;white-space:nowrap";
    // a tap (touch, pen) pins and unpins by click; the focus it gives the button must not show
    // the button's lines as if focused by keyboard (they stayed after a tap had unpinned them):
    // m.pointer is the button being tapped until its click
    b.addEventListener("pointerdown", function (e) { m.pointer = e.pointerType !== "mouse" ? b : null; });
    b.addEventListener("pointercancel", function () { m.pointer = null; });
    b.addEventListener("pointerenter", function (e) { if (e.pointerType === "mouse") { m.hover = [side, i]; drawLines(m); } });
    b.addEventListener("pointerleave", function (e) { if (e.pointerType === "mouse") { m.hover = null; drawLines(m); } });
    b.addEventListener("focus", function () {
      m.buttons[side].forEach(function (o) { o.tabIndex = o === b ? 0 : -1; }); // roving tab stop
      if (m.pointer !== b) { m.hover = [side, i]; drawLines(m); } // a tap pins instead (click)
    });
    b.addEventListener("blur", function () { if (m.hover) { m.hover = null; drawLines(m); } });
    b.addEventListener("click", function () {
      if (m.pointer === b && m.hover && m.hover[0] === side && m.hover[1] === i) m.hover = null;
      m.pointer = null;
      m.pinned = m.pinned && m.pinned[0] === side && m.pinned[1] === i ? null : [side, i];
      drawLines(m);
    });
    b.addEventListener("keydown", function (e) {
      var list = m.buttons[side], other = m.buttons[side === "query" ? "key" : "query"], to = null;
      m.pointer = null; // the keyboard again: focus shows a token's lines
      if (e.key === "ArrowDown") to = list[Math.min(list.length - 1, i + 1)];
      else if (e.key === "ArrowUp") to = list[Math.max(0, i - 1)];
      else if (e.key === "Home") to = list[0];
      else if (e.key === "End") to = list[list.length - 1];
      else if (e.key === "ArrowRight" && side === "query" || e.key === "ArrowLeft" && side === "key") to = other[Math.min(other.length - 1, i)];
      else if (e.key === "Escape" && m.pinned) { m.pinned = null; drawLines(m); e.preventDefault(); return; }
      if (to) { e.preventDefault(); to.focus(); }
    });
    m.buttons[side].push(b); col.appendChild(b);
  }
  m.button = button;
  m.left = column("query", d.rows);
  m.canvas = el("canvas", { role: "img" });
  m.canvas.style.cssText = "margin:22px 0 0;flex:none";
  m.right = column("key", d.cols);
  row.appendChild(m.left); row.appendChild(m.canvas); row.appendChild(m.right);
  box.appendChild(row); box.appendChild(m.said);
  return m;
}

// new tokens (another sentence; a reader typing): the buttons are kept, relabelled, and added
// or removed at the end, as a new view would have them (nothing pinned or hovered, one tab stop)
function relabel(m, d) {
  [["query", d.rows, m.left], ["key", d.cols, m.right]].forEach(function (p) {
    var side = p[0], labels = p[1], list = m.buttons[side];
    while (list.length > labels.length) p[2].removeChild(list.pop());
    labels.forEach(function (s, i) {
      if (i >= list.length) m.button(side, i, s, p[2]);
      else if (list[i].textContent !== s) { list[i].textContent = s; list[i].setAttribute("aria-label", side + " " + i + ": " + s); }
    });
    if (list.length && !list.some(function (b) { return b.tabIndex === 0; })) list[0].tabIndex = 0;
  });
  m.pinned = m.hover = null;
  m.box.setAttribute("aria-label", "lines view: " + (d.caption || "one head") +
    "; tokens are buttons: focus one to see only its lines");
  scrolls(m.row, d);
}
function scrolls(row, d) { // a long text's tokens scroll in a box max_rows tall
  var on = !!d.max_rows && Math.max(d.rows.length, d.cols.length) > d.max_rows;
  row.style.maxHeight = on ? (d.max_rows * LINE_ROW + 22) + "px" : "";
  row.style.overflowY = on ? "auto" : "";
  if (on) row.dataset.scrolls = "1"; else delete row.dataset.scrolls;
}

function drawLines(m) {
  var start = performance.now(), d = m.d, t = m.t, h = m.head, w = d.grids[h];
  var Lq = d.rows.length, Lk = d.cols.length, f = m.hover || m.pinned || m.base, drawn = [];
  var cut = d.threshold === undefined ? LINE_CUT : d.threshold;
  if (m.select) m.select.value = String(h);
  ["query", "key"].forEach(function (side) {
    m.buttons[side].forEach(function (b, i) {
      var on = f && f[0] === side && f[1] === i, pin = m.pinned && m.pinned[0] === side && m.pinned[1] === i;
      b.style.background = on ? (t.dark ? "rgba(255,166,87,.22)" : "rgba(194,78,0,.12)") : "transparent";
      b.style.borderColor = on ? t.accent : "transparent";
      b.setAttribute("aria-pressed", pin ? "true" : "false");
    });
  });
  var room = (m.box.parentElement && m.box.parentElement.clientWidth) || 700;
  var width = Math.max(80, Math.min(260, room - m.left.offsetWidth - m.right.offsetWidth - 8));
  var height = Math.max(Lq, Lk) * LINE_ROW, ctx = setup(m.canvas, width, height), i, j;
  function yq(i) { return (i + 0.5) * LINE_ROW; }
  ctx.strokeStyle = t.bar; ctx.lineCap = "round";
  for (i = 0; i < Lq; i++) {
    if (f && f[0] === "query" && f[1] !== i) continue;
    for (j = 0; j < Lk; j++) {
      if (f && f[0] === "key" && f[1] !== j) continue;
      var v = w[i][j] === null ? 0 : w[i][j], a = Math.max(0, Math.min(1, v));
      drawn.push([i, j, round(v)]);
      if (a < cut) continue;
      ctx.globalAlpha = Math.min(1, LINE_ALPHA + 1.5 * a); ctx.lineWidth = 1 + 4.5 * a;
      ctx.beginPath(); ctx.moveTo(2, yq(i)); ctx.lineTo(width - 2, yq(j)); ctx.stroke();
    }
  }
  ctx.globalAlpha = 1; ctx.lineWidth = 1;
  var head = d.titles ? d.titles[h] : "", who = f ? f[0] + " " + tokenName(f[0] === "query" ? d.rows : d.cols, f[1]) : null;
  m.cap.textContent = (d.caption || "") + (head && d.grids.length > 1 ? " (" + head + ")" : "");
  var words;
  if (f) {
    words = who + ": " + drawn.map(function (l) { return (f[0] === "query" ? tokenName(d.cols, l[1]) : tokenName(d.rows, l[0])) + " " + fmt(l[2]); }).join(", ");
  } else {
    words = "the strongest line of each query: " + w.map(function (r, i) {
      var best = 0; r.forEach(function (x, j) { if (x > r[best]) best = j; });
      return tokenName(d.rows, i) + " to " + tokenName(d.cols, best) + " " + fmt(r[best]);
    }).join(", ");
  }
  m.canvas.setAttribute("aria-label", "Lines from queries (left) to keys (right), width and opacity the " +
    (d.label || "attention weight") + (head ? ", " + head : "") + "; " + words + ".");
  var said = linesSaid(d, f, drawn, cut);
  m.legend.textContent = "Line width and opacity: the " + (d.label || "attention weight") +
    " (thin and light near " + cut + ", solid from 0.5, thickest at 1); lines under " + cut + " are not drawn.";
  m.said.textContent = said.text + whose(m, f);
  neverShrink(m.said, "2.6em"); // the pointer moving over tokens moves nothing below
  m.box.dataset.values = JSON.stringify({ head: h, focus: f ? { side: f[0], index: f[1],
    label: (f[0] === "query" ? d.rows : d.cols)[f[1]] } : null, lines: drawn, threshold: cut,
    shown: said.shown, largest: said.largest });
  m.box.dataset.focusDraws = String(+(m.box.dataset.focusDraws || 0) + 1);
  m.box.dataset.drawnAt = String(performance.now());
  m.box.dataset.drawMs = String(+m.box.dataset.drawnAt - start);
}
// a token's name in words: its label, with its position where the label occurs twice
function tokenName(list, i) {
  return list.indexOf(list[i]) !== list.lastIndexOf(list[i]) ? list[i] + " (" + i + ")" : list[i];
}
// where a step control chooses the query (focus_from), which query's lines these are: the
// step's, or a focused token's, which override the step until the focus or pin leaves
function whose(m, f) {
  var d = m.d, base = m.base;
  if (!base || !f || !d.focus_from) return "";
  function name(g) { return g[0] + " " + tokenName(g[0] === "query" ? d.rows : d.cols, g[1]); }
  if (base[0] === f[0] && base[1] === f[1]) return " These are the lines of the step's " + name(base) + ".";
  return " These are the lines of the " + name(f) + " you " + (m.hover ? "focus or point at" :
    "pinned") + ", not of the step's " + name(base) + ", which come back when " +
    (m.hover ? "the focus or pointer leaves." : "you tap the token again or press Escape.");
}
// what a focused token's lines say, in words: its largest weights ("m \u2192 c: 0.97"), or
// that none reaches the drawing threshold (a key nobody attends to draws nothing)
function linesSaid(d, f, drawn, cut) {
  var shown = drawn.filter(function (l) { return l[2] !== null && l[2] >= cut; }).length;
  if (!f) return { shown: shown, largest: [], text: "Focus, hover or tap a token to see only its lines and their weights." };
  var name = (f[0] === "query" ? d.rows : d.cols)[f[1]];
  var top = drawn.slice().sort(function (a, b) { return b[2] - a[2]; }).slice(0, 3)
    .filter(function (l) { return l[2] >= cut; });
  if (!top.length) {
    return { shown: 0, largest: [], text: f[0] === "key" ?
      "No query puts more than " + cut + " on key " + name + " (" + f[1] + "): no line is drawn." :
      "Query " + name + " (" + f[1] + ") puts no weight above " + cut + " on any key: no line is drawn." };
  }
  var largest = top.map(function (l) { return [l[0], l[1], l[2]]; });
  return { shown: shown, largest: largest, text: (f[0] === "query" ? "Query " : "Key ") + name + " (" + f[1] +
    "), largest weights: " + top.map(function (l) {
      return tokenName(d.rows, l[0]) + " \u2192 " + tokenName(d.cols, l[1]) + ": " + fmt(l[2]);
    }).join(", ") + (shown > top.length ? " (" + shown + " lines over " + cut + ")" : "") + "." };
}
DOM_VIEWS.lines = lines;
