// Part 2 of 9: the heatmap view (grids on one colour scale, token labels, a colour bar).
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
var HEAT_MIN = 9, LABEL_MIN = 9, HEAT_GAP = 14, SHARED_GAP = 8, HEAT_WIDTH = 240;

function heatLayout(d, room) {
  var H = d.grids.length, Lq = d.rows.length, Lk = d.cols.length, n = Math.max(Lq, Lk, 1);
  var narrow = room < 480, bar = colourBarWidth(d), L = { shared: false };
  var lab = widest(d.rows, "12px sans-serif") + 6, texts = {};
  L.fmt = d.raster ? fmt : fmtFor(d.grids);
  if (d.numbers) {
    d.grids.forEach(function (g) { g.forEach(function (r) { r.forEach(function (v) { if (v !== null) texts[L.fmt(v)] = 1; }); }); });
    texts = Object.keys(texts);
  }
  // a grid of colours stays about 264 px across; one with numbers in its cells may use the
  // room (chapter 11's cache: 12 columns) so that its numbers keep their 11 px
  var most = Math.max(Math.floor(264 / n), d.numbers ? widest(texts, "11px sans-serif") + 4 : 0);
  if (d.cell_max) most = Math.min(most, d.cell_max); // fitScreen's smaller cells
  function fit(reserve, label) { // the largest cell that fits one panel a row
    return Math.max(d.cell_min || HEAT_MIN, Math.min(d.numbers ? 38 : 22, Math.floor((room - label - reserve -
      HEAT_GAP) / Math.max(Lk, 1)), most));
  }
  L.below = narrow;
  L.cell = fit(L.below ? 8 : bar, lab);
  if (!L.below && Lq * L.cell < 100) { L.below = true; L.cell = fit(8, lab); }
  var reserve = L.below ? 8 : bar;
  if (d.numbers) {
    if (L.cell < widest(texts, "9px sans-serif") + 3) { // long row labels on two lines, 10 px
      var two = d.rows.map(function (s) { return wrap(s, Math.ceil(widest(d.rows, "10px sans-serif") * 0.6), "10px sans-serif"); });
      var cell2 = fit(reserve, widest([].concat.apply([], two), "10px sans-serif") + 6);
      if (cell2 >= 25 && cell2 > L.cell && two.every(function (x) { return x.length <= 2; })) {
        L.cell = cell2; L.rowLines = two;
      }
    }
  }
  var all = d.rows.concat(d.cols).join("");
  function inkHeight(f) { // the tallest label's ink, ascender to descender, at f px
    var m = measurer(f + "px sans-serif").measureText(all);
    return m.actualBoundingBoxAscent + m.actualBoundingBoxDescent;
  }
  function labels() { // label font, stride and sizes for the current cell
    L.font = 12;
    while (L.font > LABEL_MIN && inkHeight(L.font) > L.cell - 1.5) L.font--;
    // even 9 px would touch: every other token labelled, or every k-th in cells under 5 px
    L.stride = inkHeight(L.font) > L.cell - 1.5 ? Math.max(2, Math.ceil((inkHeight(L.font) + 1.5) / L.cell)) : 1;
    var f = L.font + "px sans-serif";
    L.rowLab = (L.rowLines ? widest([].concat.apply([], L.rowLines), "10px sans-serif") : widest(d.rows, f)) + 6;
    L.colLab = widest(d.cols, f) + 6;
    L.panelW = L.rowLab + Lk * L.cell + HEAT_GAP;
  }
  labels();
  L.ncols = Math.max(1, Math.min(4, H, Math.floor((room - reserve) / L.panelW)));
  if (H > 1 && L.ncols < 2 && !d.numbers) twoARow(L, d, room, reserve, labels);
  L.step = L.shared ? Lk * L.cell + SHARED_GAP : L.panelW; // from one head's grid to the next
  L.gridsW = L.shared ? L.rowLab + L.ncols * L.step - SHARED_GAP + 4 : L.ncols * L.panelW;
  L.extra = L.below ? (L.shared ? 0 : 8) : bar; // the canvas's width beyond the grids
  L.titles = (d.titles || []).map(function (s) { // centred over its grid, never over the next
    return wrap(s, Math.max((L.shared ? L.step : Lk * L.cell + HEAT_GAP) - 4, 60), "12px sans-serif");
  });
  L.titleH = d.titles ? Math.max.apply(null, L.titles.map(function (x) { return x.length; })) * 14 + 6 : 6;
  L.panelH = L.titleH + Lq * L.cell + L.colLab + 8;
  L.numbers = 0;
  if (d.numbers) { // the largest font (11 to 9 px) at which every number fits its cell
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
  var H = d.grids.length, Lk = d.cols.length, first = L.cell, c;
  for (c = first; c >= 11 && room >= 480 && !L.two; c--) {
    L.cell = c; labels();
    if (L.stride === 1 && 2 * L.panelW <= room - reserve) L.two = "own";
  }
  for (c = first; c >= 10 && !L.two; c--) {
    L.cell = c; labels();
    if (L.stride === 1 && L.rowLab + 2 * Lk * c + SHARED_GAP + (L.below ? 4 : reserve) <= room) L.two = "shared";
  }
  if (!L.two) { L.cell = first; labels(); return; }
  L.shared = L.two === "shared";
  L.ncols = Math.max(2, Math.min(4, H, L.shared ? Math.floor((room - L.rowLab - (L.below ? 4 : reserve) +
    SHARED_GAP) / (Lk * L.cell + SHARED_GAP)) : Math.floor((room - reserve) / L.panelW)));
}

// fit: many heads (chapter 07's explorer, 8 or 16) in smaller cells, more a row, until the
// grids fit the screen below the figure's bar (or the cells reach FIT_MIN, where every token is
// still labelled): 8 heads of 12 tokens went 1,347 px down the page, 2 a row, and a reader
// moving a control saw 2 to 4 of them
var FIT_MIN = 12;
function fitScreen(canvas, d, room, L) {
  var root = canvas.closest ? canvas.closest(".mha-live") : null;
  var bar = root && root.querySelector(".mha-bar"), top = root ? parseFloat(root.style.getPropertyValue("--mha-top")) || 0 : 0;
  var budget = Math.max(300, window.innerHeight - top - (bar ? bar.offsetHeight : 0) - 110);
  function tall(M) { return Math.ceil(d.grids.length / M.ncols) * M.panelH; }
  var copy = {}, k;
  for (k in d) copy[k] = d[k];
  for (var c = L.cell - 1; tall(L) > budget && c >= FIT_MIN; c--) {
    copy.cell_max = c;
    var M = heatLayout(copy, room);
    if (M.stride > 1) break; // never drop a token's label
    if (tall(M) < tall(L)) L = M;
  }
  return L;
}

function heatmap(canvas, d, t) {
  var H = d.grids.length, Lq = d.rows.length, Lk = d.cols.length, lo = d.vmin, hi = d.vmax;
  var room = avail(canvas), L = heatLayout(d, room), h, i, j;
  if (d.fit && H > 1 && !d.raster) L = fitScreen(canvas, d, room, L);
  var cell = L.cell;
  var axes = (d.axes || "rows: queries, columns: keys") +
    (L.stride > 1 ? " (" + everyNth(L.stride) + " token labelled)" : "") +
    (d.masked ? "; blank" + (d.raster ? "" : ", struck through") + ": masked" : "");
  // as wide as the grids (HEAT_WIDTH at least): the caption and the subtitle wrap, so a longer
  // caption (chapter 02's "fill mha (the package), causal") never widens the canvas and moves
  // the views (two heatmaps side by side stacked while the reader clicked)
  var width = Math.min(room, Math.max(L.gridsW + L.extra, HEAT_WIDTH));
  var cap = heading(d.caption || "", width), sub = wrap(axes, width - 8, "12px sans-serif");
  var top = cap.h + sub.length * 15 + 2, nrows = Math.ceil(H / L.ncols);
  var barLen = L.below ? Math.min(220, width - L.rowLab - 20)
    : Math.min(200, Math.max(100, nrows * L.panelH - L.titleH - 12));
  var height = top + nrows * L.panelH + (L.below ? COLOUR_BAR_BELOW + 4 : 6);
  if (!L.below) height = Math.max(height, top + L.titleH + barLen + 10);
  var ctx = setup(canvas, width, height), panels = [];
  caption(ctx, cap, t);
  ctx.fillStyle = t.muted; ctx.textAlign = "left";
  sub.forEach(function (s, k) { ctx.fillText(s, 4, cap.h + 6 + k * 15); });
  var labelFont = L.font + "px sans-serif";
  for (h = 0; h < H; h++) {
    var c = h % L.ncols, x0 = L.shared ? L.rowLab + c * L.step : c * L.panelW + L.rowLab;
    var y0 = top + Math.floor(h / L.ncols) * L.panelH + L.titleH;
    panels.push([x0, y0]);
    ctx.fillStyle = t.fg; ctx.textAlign = "center";
    (L.titles[h] || []).forEach(function (s, k, all) {
      ctx.fillText(s, x0 + Lk * cell / 2, y0 - 10 - (all.length - 1 - k) * 14);
    });
    if (d.raster) raster(ctx, d, h, x0, y0, cell, t);
    for (i = 0; i < Lq && !d.raster; i++) {
      for (j = 0; j < Lk; j++) {
        var v = d.grids[h][i][j], cx = x0 + j * cell, cy = y0 + i * cell;
        if (d.masked && d.masked[i].charAt(j) === "1") { // blocked by the mask: no colour (a weight near 0
          // is dark purple), a thin stroke from corner to corner
          ctx.strokeStyle = t.muted; ctx.lineWidth = 1; ctx.beginPath();
          ctx.moveTo(cx + 2, cy + cell - 2); ctx.lineTo(cx + cell - 2, cy + 2); ctx.stroke();
          continue;
        }
        if (v === null) { // NaN: grey with a cross
          ctx.fillStyle = t.nan; ctx.fillRect(cx, cy, cell, cell); ctx.strokeStyle = t.nanCross;
          ctx.lineWidth = 1.5; ctx.beginPath(); ctx.moveTo(cx + 2, cy + 2);
          ctx.lineTo(cx + cell - 2, cy + cell - 2); ctx.moveTo(cx + cell - 2, cy + 2);
          ctx.lineTo(cx + 2, cy + cell - 2); ctx.stroke(); ctx.lineWidth = 1;
          continue;
        }
        var u = (v - lo) / (hi - lo);
        ctx.fillStyle = colour(u, d.scale); ctx.fillRect(cx, cy, cell, cell);
        if (L.numbers) {
          var light = d.scale === "diverging" ? Math.abs(u - 0.5) < 0.3 : u > 0.55;
          ctx.fillStyle = light ? "#111" : "#fff"; ctx.font = L.numbers + "px sans-serif";
          ctx.fillText(L.fmt(v), cx + cell / 2, cy + cell / 2); ctx.font = "12px sans-serif";
        }
      }
    }
    (d.marks || []).forEach(function (m) {
      if (m[0] !== h) return;
      ctx.strokeStyle = t.accent; ctx.lineWidth = 2;
      ctx.strokeRect(x0 + m[2] * cell + 1, y0 + m[1] * cell + 1, cell - 2, cell - 2); ctx.lineWidth = 1;
    });
    ctx.fillStyle = t.fg; ctx.textAlign = "right"; ctx.font = labelFont;
    for (i = 0; i < Lq && (!L.shared || c === 0); i += L.stride) {
      if (!L.rowLines) { ctx.fillText(d.rows[i], x0 - 3, y0 + (i + 0.5) * cell); continue; }
      ctx.font = "10px sans-serif"; // a long label on two lines
      L.rowLines[i].forEach(function (s, k, all) {
        ctx.fillText(s, x0 - 3, y0 + (i + 0.5) * cell + (k - (all.length - 1) / 2) * 12);
      });
      ctx.font = labelFont;
    }
    for (j = 0; j < Lk; j += L.stride) {
      ctx.save(); ctx.translate(x0 + (j + 0.5) * cell, y0 + Lq * cell + 3); ctx.rotate(-Math.PI / 2);
      ctx.fillText(d.cols[j], 0, 0); ctx.restore();
    }
    ctx.font = "12px sans-serif";
  }
  if (L.below) colourBar(ctx, L.rowLab, height - COLOUR_BAR_BELOW, barLen, d, t, true);
  else colourBar(ctx, L.gridsW + 6, top + L.titleH, barLen, d, t, false);
  if (d.raster) delete canvas.dataset.values; else canvas.dataset.values = JSON.stringify(roundDeep(d.grids));
  canvas.dataset.heads = String(H);
  canvas.dataset.columns = String(L.ncols); // heatmaps a row
  canvas.dataset.labelStride = String(L.stride);
  canvas.dataset.numbers = String(L.numbers); // the numbers' font size (0: none written)
  canvas.mhaGeom = { cell: cell, panels: panels, labelFont: L.font, shared: L.shared };
  return (d.caption ? d.caption + ". " : "") + H + (H === 1 ? " heatmap" : " heatmaps") +
    (d.titles ? " (" + d.titles.join("; ") + ")" : "") + "; rows: " + d.rows.join(" ") +
    "; columns: " + d.cols.join(" ") + "; colour from " + lo + " to " + hi + "." +
    (d.masked ? " Blank cells: masked." : "") +
    (L.stride > 1 ? " " + everyNth(L.stride).replace("e", "E") + " token is labelled." : "");
}
function everyNth(k) { // every other, every 3rd, every 12th, every 22nd
  var end = Math.floor(k / 10) % 10 === 1 ? "th" : ["th", "st", "nd", "rd"][k % 10] || "th";
  return k === 2 ? "every other" : "every " + k + end;
}

// a grid drawn as one image (a long text's 128 x 128 cells of 2 px): one pixel per cell in a
// scratch canvas, scaled up without smoothing; colours from a 256-step table of the scale
var RASTER = { luts: {} };
function raster(ctx, d, h, x0, y0, cell, t) {
  var g = d.grids[h], Lq = d.rows.length, Lk = d.cols.length, lo = d.vmin, k = 255 / (d.vmax - lo);
  var lut = RASTER.luts[d.scale] || (RASTER.luts[d.scale] = new Uint8Array(768).map(function (x, i) {
    return Number(colour((i / 3 | 0) / 255, d.scale).match(/\d+/g)[i % 3]); }));
  var c = RASTER.canvas || (RASTER.canvas = document.createElement("canvas"));
  c.width = Math.max(1, Lk); c.height = Math.max(1, Lq);
  var cx = c.getContext("2d"), img = cx.createImageData(c.width, c.height), px = img.data, nan = t.dark ? 140 : 115;
  for (var i = 0; i < Lq; i++) {
    for (var j = 0, row = g[i]; j < Lk; j++) {
      var v = row[j], p = (i * Lk + j) * 4, u = v === null ? -1 : Math.round((v - lo) * k);
      u = u < 0 ? 0 : u > 255 ? 255 : u;
      px[p] = v === null ? nan : lut[3 * u]; px[p + 1] = v === null ? nan : lut[3 * u + 1];
      px[p + 2] = v === null ? nan : lut[3 * u + 2]; px[p + 3] = d.masked && d.masked[i].charAt(j) === "1" ? 0 : 255;
    }
  }
  cx.putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(c, x0, y0, Lk * cell, Lq * cell);
  ctx.imageSmoothingEnabled = true;
}

CANVAS_VIEWS.heatmap = heatmap;
