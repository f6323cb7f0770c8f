import { setup } from "./canvas.js";
import { neverShrink } from "./controls.js";
import { fmt, round } from "./format.js";
import { isMasked } from "./masked.js";

// The lines view of one head (queries left, keys right, a line per pair): lines.js builds its
// buttons, this module draws its lines and says them in words.
// lines: d = {grids (H, Lq, Lk), rows (query labels), cols (key labels), titles, head (the
//   head shown first), focus ([side, index] or null), focus_from ({knob, queries: [query
//   index or null per value of that control]}), caption, label, max_rows (a long text's
//   tokens scroll in a box this many rows tall), masked (as the heatmap's: the pairs a mask blocks,
//   which get no line and are left out of the lines listed and said)}. In the manner of bertviz's
//   head view: queries in a left column, keys in a right one, a line for every pair whose width and
//   opacity are the weight. Every token is a button: keyboard focus or a mouse over it shows only
//   its lines, a click or tap pins them (aria-pressed; Escape unpins), arrow keys move between
//   tokens (one tab stop per column). With H > 1 a select picks the head. Nothing above the token
//   columns changes while the pointer moves over them (the words that name the focused token sit
//   under the columns), so no token moves under the pointer.
//   A label that occurs twice is named with its position ("the (3)").
//   The view's element carries data-values = {head, focus: {side, index, label} | null,
//   lines: [[query, key, weight], ...] (every line drawn)}, data-focus-draws (its own redraws),
//   data-drawn-at and data-draw-ms; its canvas an aria-label saying what it draws.
export var LINE_ROW = 26,
  LINE_CUT = 0.05; // lines of a weight under LINE_CUT are not drawn
// a line's opacity: 0.25 + 1.5 x its weight, solid from 0.5 (a 0.3 line is not pale), its
// width 1 + 4.5 x the weight: both grow with the weight over the whole range
var LINE_ALPHA = 0.25;
export function drawLines(m) {
  var start = performance.now(),
    d = m.d,
    t = m.t,
    h = m.head,
    w = d.grids[h];
  var Lq = d.rows.length,
    Lk = d.cols.length,
    f = m.hover || m.pinned || m.base,
    drawn = [];
  var cut = d.threshold === undefined ? LINE_CUT : d.threshold;
  if (m.select) m.select.value = String(h);
  ["query", "key"].forEach(function (side) {
    m.buttons[side].forEach(function (b, i) {
      var on = f && f[0] === side && f[1] === i,
        pin = m.pinned && m.pinned[0] === side && m.pinned[1] === i;
      b.style.background = on
        ? t.dark
          ? "rgba(255,166,87,.22)"
          : "rgba(194,78,0,.12)"
        : "transparent";
      b.style.borderColor = on ? t.accent : "transparent";
      b.setAttribute("aria-pressed", pin ? "true" : "false");
    });
  });
  var room = (m.box.parentElement && m.box.parentElement.clientWidth) || 700;
  var width = Math.max(80, Math.min(260, room - m.left.offsetWidth - m.right.offsetWidth - 8));
  var height = Math.max(Lq, Lk) * LINE_ROW,
    ctx = setup(m.canvas, width, height),
    i,
    j;
  function yq(i) {
    return (i + 0.5) * LINE_ROW;
  }
  ctx.strokeStyle = t.bar;
  ctx.lineCap = "round";
  for (i = 0; i < Lq; i++) {
    if (f && f[0] === "query" && f[1] !== i) continue;
    for (j = 0; j < Lk; j++) {
      if (f && f[0] === "key" && f[1] !== j) continue;
      if (isMasked(d.masked, h, i, j)) continue; // blocked: no line, not listed
      var v = w[i][j] === null ? 0 : w[i][j],
        a = Math.max(0, Math.min(1, v));
      drawn.push([i, j, round(v)]);
      if (a < cut) continue;
      ctx.globalAlpha = Math.min(1, LINE_ALPHA + 1.5 * a);
      ctx.lineWidth = 1 + 4.5 * a;
      ctx.beginPath();
      ctx.moveTo(2, yq(i));
      ctx.lineTo(width - 2, yq(j));
      ctx.stroke();
    }
  }
  ctx.globalAlpha = 1;
  ctx.lineWidth = 1;
  var head = d.titles ? d.titles[h] : "",
    who = f ? f[0] + " " + tokenName(f[0] === "query" ? d.rows : d.cols, f[1]) : null;
  m.cap.textContent = (d.caption || "") + (head && d.grids.length > 1 ? " (" + head + ")" : "");
  var words;
  if (f) {
    words =
      who +
      ": " +
      drawn
        .map(function (l) {
          return (
            (f[0] === "query" ? tokenName(d.cols, l[1]) : tokenName(d.rows, l[0])) + " " + fmt(l[2])
          );
        })
        .join(", ");
  } else {
    words =
      "the strongest line of each query: " +
      w
        .map(function (r, i) {
          var best = -1;
          r.forEach(function (x, j) {
            if (!isMasked(d.masked, h, i, j) && (best < 0 || x > r[best])) best = j;
          });
          if (best < 0) return tokenName(d.rows, i) + " to no key (all masked)";
          return tokenName(d.rows, i) + " to " + tokenName(d.cols, best) + " " + fmt(r[best]);
        })
        .join(", ");
  }
  m.canvas.setAttribute(
    "aria-label",
    "Lines from queries (left) to keys (right), width and opacity the " +
      (d.label || "attention weight") +
      (head ? ", " + head : "") +
      "; " +
      words +
      ".",
  );
  var said = linesSaid(d, f, drawn, cut);
  m.legend.textContent =
    "Line width and opacity: the " +
    (d.label || "attention weight") +
    " (thin and light near " +
    cut +
    ", solid from 0.5, thickest at 1); lines under " +
    cut +
    " are not drawn" +
    (d.masked ? ", nor those the mask blocks." : ".");
  m.said.textContent = said.text + whose(m, f);
  neverShrink(m.said, "2.6em"); // the pointer moving over tokens moves nothing below
  m.box.dataset.values = JSON.stringify({
    head: h,
    focus: f
      ? {
          side: f[0],
          index: f[1],
          label: (f[0] === "query" ? d.rows : d.cols)[f[1]],
        }
      : null,
    lines: drawn,
    threshold: cut,
    shown: said.shown,
    largest: said.largest,
  });
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
  var d = m.d,
    base = m.base;
  if (!base || !f || !d.focus_from) return "";
  function name(g) {
    return g[0] + " " + tokenName(g[0] === "query" ? d.rows : d.cols, g[1]);
  }
  if (base[0] === f[0] && base[1] === f[1])
    return " These are the lines of the step's " + name(base) + ".";
  return (
    " These are the lines of the " +
    name(f) +
    " you " +
    (m.hover ? "focus or point at" : "pinned") +
    ", not of the step's " +
    name(base) +
    ", which come back when " +
    (m.hover ? "the focus or pointer leaves." : "you tap the token again or press Escape.")
  );
}
// what a focused token's lines say, in words: its largest weights ("m \u2192 c: 0.97"), or
// that none reaches the drawing threshold (a key nobody attends to draws nothing)
function linesSaid(d, f, drawn, cut) {
  var shown = drawn.filter(function (l) {
    return l[2] !== null && l[2] >= cut;
  }).length;
  if (!f)
    return {
      shown: shown,
      largest: [],
      text: "Focus, hover or tap a token to see only its lines and their weights.",
    };
  var name = (f[0] === "query" ? d.rows : d.cols)[f[1]];
  var top = drawn
    .slice()
    .sort(function (a, b) {
      return b[2] - a[2];
    })
    .slice(0, 3)
    .filter(function (l) {
      return l[2] >= cut;
    });
  if (!top.length) {
    return {
      shown: 0,
      largest: [],
      text:
        f[0] === "key"
          ? "No query puts more than " +
            cut +
            " on key " +
            name +
            " (" +
            f[1] +
            "): no line is drawn."
          : "Query " +
            name +
            " (" +
            f[1] +
            ") puts no weight above " +
            cut +
            " on any key: no line is drawn.",
    };
  }
  var largest = top.map(function (l) {
    return [l[0], l[1], l[2]];
  });
  return {
    shown: shown,
    largest: largest,
    text:
      (f[0] === "query" ? "Query " : "Key ") +
      name +
      " (" +
      f[1] +
      "), largest weights: " +
      top
        .map(function (l) {
          return tokenName(d.rows, l[0]) + " \u2192 " + tokenName(d.cols, l[1]) + ": " + fmt(l[2]);
        })
        .join(", ") +
      (shown > top.length ? " (" + shown + " lines over " + cut + ")" : "") +
      ".",
  };
}
