import { measurer, widest, wrap } from "./canvas.js";
import { colourBarWidth } from "./colourbar.js";
import { fmt, fmtFor } from "./format.js";

// The heatmap view's layout (heatmap.js draws it): grids on one colour scale, token labels,
// a colour bar.
// heatmap: d = {grids (H, Lq, Lk; null = NaN), rows, cols, titles, caption, vmin, vmax, scale,
//   label, numbers (write each value in its cell), marks ([[h, i, j], ...] outlined cells),
//   axes (the subtitle; default "rows: queries, columns: keys"), cell_min (the smallest cell,
//   px; default HEAT_MIN), raster (a long text's grids: each drawn as one image, their numbers
//   not copied into data-values; the compute keeps them, the Shakespeare figure's lm.js)}
// The layout (heatLayout): cells as large as the room allows (22 px, 38 with numbers); the
// colour bar at the right, or under the grids on a narrow screen and under a short grid (a
// single query row); several heads 2 or more a row, on a phone with the rows labelled once at
// the left; token labels shrink with the cells (12 down to 9 px) and where even 9 px would
// touch every other token is labelled (the subtitle says so); numbers in cells 11 down to 9 px.
export var HEAT_MIN = 9,
  LABEL_MIN = 9,
  HEAT_GAP = 14,
  SHARED_GAP = 8,
  HEAT_WIDTH = 240;

export function heatLayout(d, room) {
  var H = d.grids.length,
    Lq = d.rows.length,
    Lk = d.cols.length,
    n = Math.max(Lq, Lk, 1);
  var narrow = room < 480,
    bar = colourBarWidth(d),
    L = { shared: false };
  var lab = widest(d.rows, "12px sans-serif") + 6,
    texts = {};
  L.fmt = d.raster ? fmt : fmtFor(d.grids);
  if (d.numbers) {
    d.grids.forEach(function (g) {
      g.forEach(function (r) {
        r.forEach(function (v) {
          if (v !== null) texts[L.fmt(v)] = 1;
        });
      });
    });
    texts = Object.keys(texts);
  }
  // a grid of colours stays about 264 px across; one with numbers in its cells may use the
  // room (chapter 11's cache: 12 columns) so that its numbers keep their 11 px
  var most = Math.max(Math.floor(264 / n), d.numbers ? widest(texts, "11px sans-serif") + 4 : 0);
  if (d.cell_max) most = Math.min(most, d.cell_max); // fitScreen's smaller cells
  function fit(reserve, label) {
    // the largest cell that fits one panel a row
    return Math.max(
      d.cell_min || HEAT_MIN,
      Math.min(
        d.numbers ? 38 : 22,
        Math.floor((room - label - reserve - HEAT_GAP) / Math.max(Lk, 1)),
        most,
      ),
    );
  }
  L.below = narrow;
  L.cell = fit(L.below ? 8 : bar, lab);
  if (!L.below && Lq * L.cell < 100) {
    L.below = true;
    L.cell = fit(8, lab);
  }
  var reserve = L.below ? 8 : bar;
  if (d.numbers) {
    if (L.cell < widest(texts, "9px sans-serif") + 3) {
      // long row labels on two lines, 10 px
      var two = d.rows.map(function (s) {
        return wrap(s, Math.ceil(widest(d.rows, "10px sans-serif") * 0.6), "10px sans-serif");
      });
      var cell2 = fit(reserve, widest([].concat.apply([], two), "10px sans-serif") + 6);
      if (
        cell2 >= 25 &&
        cell2 > L.cell &&
        two.every(function (x) {
          return x.length <= 2;
        })
      ) {
        L.cell = cell2;
        L.rowLines = two;
      }
    }
  }
  var all = d.rows.concat(d.cols).join("");
  function inkHeight(f) {
    // the tallest label's ink, ascender to descender, at f px
    var m = measurer(f + "px sans-serif").measureText(all);
    return m.actualBoundingBoxAscent + m.actualBoundingBoxDescent;
  }
  function labels() {
    // label font, stride and sizes for the current cell
    L.font = 12;
    while (L.font > LABEL_MIN && inkHeight(L.font) > L.cell - 1.5) L.font--;
    // even 9 px would touch: every other token labelled, or every k-th in cells under 5 px
    L.stride =
      inkHeight(L.font) > L.cell - 1.5
        ? Math.max(2, Math.ceil((inkHeight(L.font) + 1.5) / L.cell))
        : 1;
    var f = L.font + "px sans-serif";
    L.rowLab =
      (L.rowLines
        ? widest([].concat.apply([], L.rowLines), "10px sans-serif")
        : widest(d.rows, f)) + 6;
    L.colLab = widest(d.cols, f) + 6;
    L.panelW = L.rowLab + Lk * L.cell + HEAT_GAP;
  }
  labels();
  L.ncols = Math.max(1, Math.min(4, H, Math.floor((room - reserve) / L.panelW)));
  if (H > 1 && L.ncols < 2 && !d.numbers) twoARow(L, d, room, reserve, labels);
  L.step = L.shared ? Lk * L.cell + SHARED_GAP : L.panelW; // from one head's grid to the next
  L.gridsW = L.shared ? L.rowLab + L.ncols * L.step - SHARED_GAP + 4 : L.ncols * L.panelW;
  L.extra = L.below ? (L.shared ? 0 : 8) : bar; // the canvas's width beyond the grids
  L.titles = (d.titles || []).map(function (s) {
    // centred over its grid, never over the next
    return wrap(
      s,
      Math.max((L.shared ? L.step : Lk * L.cell + HEAT_GAP) - 4, 60),
      "12px sans-serif",
    );
  });
  L.titleH = d.titles
    ? Math.max.apply(
        null,
        L.titles.map(function (x) {
          return x.length;
        }),
      ) *
        14 +
      6
    : 6;
  L.panelH = L.titleH + Lq * L.cell + L.colLab + 8;
  L.numbers = 0;
  if (d.numbers) {
    // the largest font (11 to 9 px) at which every number fits its cell
    [11, 10, 9].some(function (f) {
      var ok = f <= L.cell - 4 && widest(texts, f + "px sans-serif") <= L.cell - 3;
      if (ok) L.numbers = f;
      return ok;
    });
  }
  return L;
}

// Several heads 2 (or more) a row rather than a column, if every token is still labelled
// (9 px or more): each head with its own row labels (cells of 11 px or more, on a wide
// screen), or else (a phone) the rows labelled once at the left of each row of heads.
function twoARow(L, d, room, reserve, labels) {
  var H = d.grids.length,
    Lk = d.cols.length,
    first = L.cell,
    c;
  for (c = first; c >= 11 && room >= 480 && !L.two; c--) {
    L.cell = c;
    labels();
    if (L.stride === 1 && 2 * L.panelW <= room - reserve) L.two = "own";
  }
  for (c = first; c >= 10 && !L.two; c--) {
    L.cell = c;
    labels();
    if (L.stride === 1 && L.rowLab + 2 * Lk * c + SHARED_GAP + (L.below ? 4 : reserve) <= room)
      L.two = "shared";
  }
  if (!L.two) {
    L.cell = first;
    labels();
    return;
  }
  L.shared = L.two === "shared";
  L.ncols = Math.max(
    2,
    Math.min(
      4,
      H,
      L.shared
        ? Math.floor(
            (room - L.rowLab - (L.below ? 4 : reserve) + SHARED_GAP) / (Lk * L.cell + SHARED_GAP),
          )
        : Math.floor((room - reserve) / L.panelW),
    ),
  );
}

// fit: many heads (chapter 07's explorer, 8 or 16) in smaller cells, more a row, until the
// grids fit the screen below the figure's bar (or the cells reach FIT_MIN, where every token is
// still labelled): 8 heads of 12 tokens went 1,347 px down the page, 2 a row, and a reader
// moving a control saw 2 to 4 of them
var FIT_MIN = 12;
export function fitScreen(canvas, d, room, L) {
  var root = canvas.closest ? canvas.closest(".mha-live") : null;
  var bar = root && root.querySelector(".mha-bar"),
    top = root ? parseFloat(root.style.getPropertyValue("--mha-top")) || 0 : 0;
  var budget = Math.max(300, window.innerHeight - top - (bar ? bar.offsetHeight : 0) - 110);
  function tall(M) {
    return Math.ceil(d.grids.length / M.ncols) * M.panelH;
  }
  var copy = {},
    k;
  for (k in d) copy[k] = d[k];
  for (var c = L.cell - 1; tall(L) > budget && c >= FIT_MIN; c--) {
    copy.cell_max = c;
    var M = heatLayout(copy, room);
    if (M.stride > 1) break; // never drop a token's label
    if (tall(M) < tall(L)) L = M;
  }
  return L;
}
