// Canvases: a view's size and pixel ratio, every text drawn recorded (mhaTexts), text measured
// and wrapped, a view's caption.
export function avail(canvas) {
  // the width of the figure (the views' box)
  var p = canvas.parentElement,
    w = (p && p.clientWidth) || 700;
  return Math.max(280, Math.min(w, 1100));
}
export function setup(canvas, width, height) {
  var dpr = window.devicePixelRatio || 1;
  canvas.width = Math.ceil(width * dpr);
  canvas.height = Math.ceil(height * dpr);
  canvas.style.width = width + "px"; // height follows (CSS height: auto): never distorted
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  record(ctx);
  canvas.mhaTexts = [];
  ctx.clearRect(0, 0, width, height); // transparent: the page's own background shows
  ctx.font = "12px sans-serif";
  ctx.textBaseline = "middle";
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
    var m = this.measureText(s),
      k = window.devicePixelRatio || 1,
      f = this.getTransform();
    var l = x - m.actualBoundingBoxLeft,
      r = x + m.actualBoundingBoxRight;
    var u = y - m.actualBoundingBoxAscent,
      b = y + m.actualBoundingBoxDescent;
    (this.canvas.mhaTexts = this.canvas.mhaTexts || []).push({
      text: s,
      font: this.font,
      corners: [
        [l, u],
        [r, u],
        [r, b],
        [l, b],
      ].map(function (p) {
        return [(f.a * p[0] + f.c * p[1] + f.e) / k, (f.b * p[0] + f.d * p[1] + f.f) / k];
      }),
    });
  };
}
// text broken into lines no wider than width in the given font (a word wider than a line is
// broken inside); never cut: a long caption takes as many lines as it needs
var MEASURE = null;
export function measurer(font) {
  // a canvas context for measuring text before a view's canvas is sized
  MEASURE = MEASURE || document.createElement("canvas").getContext("2d");
  MEASURE.font = font;
  return MEASURE;
}
export function widest(list, font) {
  var m = measurer(font),
    w = 0;
  list.forEach(function (s) {
    w = Math.max(w, m.measureText(String(s)).width);
  });
  return Math.ceil(w);
}
export function wrap(text, width, font) {
  var m = measurer(font),
    lines = [],
    line = "";
  function fits(s) {
    return m.measureText(s).width <= width;
  }
  String(text || "")
    .split(/\s+/)
    .filter(Boolean)
    .forEach(function (w) {
      if (fits(line ? line + " " + w : w)) {
        line = line ? line + " " + w : w;
        return;
      }
      if (line) lines.push(line);
      while (!fits(w) && w.length > 1) {
        var k = w.length - 1;
        while (k > 1 && !fits(w.slice(0, k))) k--;
        lines.push(w.slice(0, k));
        w = w.slice(k);
      }
      line = w;
    });
  if (line) lines.push(line);
  return lines;
}
// a canvas's title: bold, wrapped to the canvas's width; heading() before the canvas is sized
// (its height), caption() draws it from the top and keeps its lines in data-caption (tests)
var CAPTION_FONT = "bold 13px sans-serif",
  CAPTION_LINE = 16;
export function heading(text, width) {
  var lines = wrap(text, width - 8, CAPTION_FONT);
  return { lines: lines, h: Math.max(1, lines.length) * CAPTION_LINE + 4 };
}
export function caption(ctx, cap, t) {
  ctx.fillStyle = t.fg;
  ctx.textAlign = "left";
  ctx.font = CAPTION_FONT;
  cap.lines.forEach(function (s, i) {
    ctx.fillText(s, 4, 10 + i * CAPTION_LINE);
  });
  ctx.font = "12px sans-serif";
  ctx.canvas.dataset.caption = JSON.stringify(cap.lines);
}
