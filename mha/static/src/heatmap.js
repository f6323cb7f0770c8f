// The heatmap view: every head's grid on one colour scale (heat_layout.js lays them out).
import { avail, caption, heading, setup, wrap } from "./canvas.js";
import { COLOUR_BAR_BELOW, colourBar } from "./colourbar.js";
import { colour } from "./colours.js";
import { roundDeep } from "./format.js";
import { HEAT_WIDTH, fitScreen, heatLayout } from "./heat_layout.js";
import { isMasked } from "./masked.js";

export function heatmap(canvas, d, t) {
  var H = d.grids.length,
    Lq = d.rows.length,
    Lk = d.cols.length,
    lo = d.vmin,
    hi = d.vmax;
  var room = avail(canvas),
    L = heatLayout(d, room),
    h,
    i,
    j;
  if (d.fit && H > 1 && !d.raster) L = fitScreen(canvas, d, room, L);
  var cell = L.cell;
  var axes =
    (d.axes || "rows: queries, columns: keys") +
    (L.stride > 1 ? " (" + everyNth(L.stride) + " token labelled)" : "") +
    (d.masked ? "; blank" + (d.raster ? "" : ", struck through") + ": masked" : "");
  // as wide as the grids (HEAT_WIDTH at least): the caption and the subtitle wrap, so a longer
  // caption (chapter 02's "fill mha (the package), causal") never widens the canvas and moves
  // the views (two heatmaps side by side stacked while the reader clicked)
  var width = Math.min(room, Math.max(L.gridsW + L.extra, HEAT_WIDTH));
  var cap = heading(d.caption || "", width),
    sub = wrap(axes, width - 8, "12px sans-serif");
  var top = cap.h + sub.length * 15 + 2,
    nrows = Math.ceil(H / L.ncols);
  var barLen = L.below
    ? Math.min(220, width - L.rowLab - 20)
    : Math.min(200, Math.max(100, nrows * L.panelH - L.titleH - 12));
  var height = top + nrows * L.panelH + (L.below ? COLOUR_BAR_BELOW + 4 : 6);
  if (!L.below) height = Math.max(height, top + L.titleH + barLen + 10);
  var ctx = setup(canvas, width, height),
    panels = [];
  caption(ctx, cap, t);
  ctx.fillStyle = t.muted;
  ctx.textAlign = "left";
  sub.forEach(function (s, k) {
    ctx.fillText(s, 4, cap.h + 6 + k * 15);
  });
  var labelFont = L.font + "px sans-serif";
  for (h = 0; h < H; h++) {
    var c = h % L.ncols,
      x0 = L.shared ? L.rowLab + c * L.step : c * L.panelW + L.rowLab;
    var y0 = top + Math.floor(h / L.ncols) * L.panelH + L.titleH;
    panels.push([x0, y0]);
    ctx.fillStyle = t.fg;
    ctx.textAlign = "center";
    (L.titles[h] || []).forEach(function (s, k, all) {
      ctx.fillText(s, x0 + (Lk * cell) / 2, y0 - 10 - (all.length - 1 - k) * 14);
    });
    if (d.raster) raster(ctx, d, h, x0, y0, cell, t);
    for (i = 0; i < Lq && !d.raster; i++) {
      for (j = 0; j < Lk; j++) {
        var v = d.grids[h][i][j],
          cx = x0 + j * cell,
          cy = y0 + i * cell;
        if (isMasked(d.masked, h, i, j)) {
          // blocked by the mask: no colour (a weight near 0
          // is dark purple), a thin stroke from corner to corner
          ctx.strokeStyle = t.muted;
          ctx.lineWidth = 1;
          ctx.beginPath();
          ctx.moveTo(cx + 2, cy + cell - 2);
          ctx.lineTo(cx + cell - 2, cy + 2);
          ctx.stroke();
          continue;
        }
        if (v === null) {
          // NaN: grey with a cross
          ctx.fillStyle = t.nan;
          ctx.fillRect(cx, cy, cell, cell);
          ctx.strokeStyle = t.nanCross;
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          ctx.moveTo(cx + 2, cy + 2);
          ctx.lineTo(cx + cell - 2, cy + cell - 2);
          ctx.moveTo(cx + cell - 2, cy + 2);
          ctx.lineTo(cx + 2, cy + cell - 2);
          ctx.stroke();
          ctx.lineWidth = 1;
          continue;
        }
        var u = (v - lo) / (hi - lo);
        ctx.fillStyle = colour(u, d.scale);
        ctx.fillRect(cx, cy, cell, cell);
        if (L.numbers) {
          var light = d.scale === "diverging" ? Math.abs(u - 0.5) < 0.3 : u > 0.55;
          ctx.fillStyle = light ? "#111" : "#fff";
          ctx.font = L.numbers + "px sans-serif";
          ctx.fillText(L.fmt(v), cx + cell / 2, cy + cell / 2);
          ctx.font = "12px sans-serif";
        }
      }
    }
    (d.marks || []).forEach(function (m) {
      if (m[0] !== h) return;
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 + m[2] * cell + 1, y0 + m[1] * cell + 1, cell - 2, cell - 2);
      ctx.lineWidth = 1;
    });
    ctx.fillStyle = t.fg;
    ctx.textAlign = "right";
    ctx.font = labelFont;
    for (i = 0; i < Lq && (!L.shared || c === 0); i += L.stride) {
      if (!L.rowLines) {
        ctx.fillText(d.rows[i], x0 - 3, y0 + (i + 0.5) * cell);
        continue;
      }
      ctx.font = "10px sans-serif"; // a long label on two lines
      L.rowLines[i].forEach(function (s, k, all) {
        ctx.fillText(s, x0 - 3, y0 + (i + 0.5) * cell + (k - (all.length - 1) / 2) * 12);
      });
      ctx.font = labelFont;
    }
    for (j = 0; j < Lk; j += L.stride) {
      ctx.save();
      ctx.translate(x0 + (j + 0.5) * cell, y0 + Lq * cell + 3);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(d.cols[j], 0, 0);
      ctx.restore();
    }
    ctx.font = "12px sans-serif";
  }
  if (L.below) colourBar(ctx, L.rowLab, height - COLOUR_BAR_BELOW, barLen, d, t, true);
  else colourBar(ctx, L.gridsW + 6, top + L.titleH, barLen, d, t, false);
  if (d.raster) delete canvas.dataset.values;
  else canvas.dataset.values = JSON.stringify(roundDeep(d.grids));
  canvas.dataset.heads = String(H);
  canvas.dataset.columns = String(L.ncols); // heatmaps a row
  canvas.dataset.labelStride = String(L.stride);
  canvas.dataset.numbers = String(L.numbers); // the numbers' font size (0: none written)
  canvas.mhaGeom = {
    cell: cell,
    panels: panels,
    labelFont: L.font,
    shared: L.shared,
  };
  return (
    (d.caption ? d.caption + ". " : "") +
    H +
    (H === 1 ? " heatmap" : " heatmaps") +
    (d.titles ? " (" + d.titles.join("; ") + ")" : "") +
    "; rows: " +
    d.rows.join(" ") +
    "; columns: " +
    d.cols.join(" ") +
    "; colour from " +
    lo +
    " to " +
    hi +
    "." +
    (d.masked ? " Blank cells: masked." : "") +
    (L.stride > 1 ? " " + everyNth(L.stride).replace("e", "E") + " token is labelled." : "")
  );
}
function everyNth(k) {
  // every other, every 3rd, every 12th, every 22nd
  var end = Math.floor(k / 10) % 10 === 1 ? "th" : ["th", "st", "nd", "rd"][k % 10] || "th";
  return k === 2 ? "every other" : "every " + k + end;
}

// a grid drawn as one image (a long text's 128 x 128 cells of 2 px): one pixel per cell in a
// scratch canvas, scaled up without smoothing; colours from a 256-step table of the scale
var RASTER = { luts: {} };
function raster(ctx, d, h, x0, y0, cell, t) {
  var g = d.grids[h],
    Lq = d.rows.length,
    Lk = d.cols.length,
    lo = d.vmin,
    k = 255 / (d.vmax - lo);
  var lut =
    RASTER.luts[d.scale] ||
    (RASTER.luts[d.scale] = new Uint8Array(768).map(function (x, i) {
      return Number(colour(((i / 3) | 0) / 255, d.scale).match(/\d+/g)[i % 3]);
    }));
  var c = RASTER.canvas || (RASTER.canvas = document.createElement("canvas"));
  c.width = Math.max(1, Lk);
  c.height = Math.max(1, Lq);
  var cx = c.getContext("2d"),
    img = cx.createImageData(c.width, c.height),
    px = img.data,
    nan = t.dark ? 140 : 115;
  for (var i = 0; i < Lq; i++) {
    for (var j = 0, row = g[i]; j < Lk; j++) {
      var v = row[j],
        p = (i * Lk + j) * 4,
        u = v === null ? -1 : Math.round((v - lo) * k);
      u = u < 0 ? 0 : u > 255 ? 255 : u;
      px[p] = v === null ? nan : lut[3 * u];
      px[p + 1] = v === null ? nan : lut[3 * u + 1];
      px[p + 2] = v === null ? nan : lut[3 * u + 2];
      px[p + 3] = isMasked(d.masked, h, i, j) ? 0 : 255;
    }
  }
  cx.putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(c, x0, y0, Lk * cell, Lq * cell);
  ctx.imageSmoothingEnabled = true;
}
