// Part 2 of 7: the heatmap view (grids on one colour scale, token labels, a colour bar).
// heatmap: d = {grids (H, Lq, Lk; null = NaN), rows, cols, titles, caption, vmin, vmax, scale,
//   label, numbers (write each value in its cell), marks ([[h, i, j], ...] outlined cells)}
function heatmap(canvas, d, t) {
  var H = d.grids.length, Lq = d.rows.length, Lk = d.cols.length, lo = d.vmin, hi = d.vmax;
  var room = avail(canvas), probe = setup(canvas, 10, 10), lab = 0;
  d.rows.concat(d.cols).forEach(function (s) { lab = Math.max(lab, probe.measureText(s).width); });
  lab = Math.ceil(lab) + 6;
  var cell = Math.max(9, Math.min(d.numbers ? 38 : 22, Math.floor((room - lab - 90) / Math.max(Lk, 1)),
    Math.floor(260 / Math.max(Lq, Lk))));
  var panelW = lab + Lk * cell + 14, panelH = 20 + Lq * cell + lab, top = 34;
  var ncols = Math.max(1, Math.min(4, H, Math.floor((room - 76) / panelW)));
  if (H > 1 && ncols < 2 && room >= 480 && !d.numbers) { // a grid, not a column: 2 a row
    var small = Math.floor(((room - 76) / 2 - lab - 14) / Math.max(Lk, 1));
    if (small >= 9) {
      cell = Math.min(cell, small); panelW = lab + Lk * cell + 14; panelH = 20 + Lq * cell + lab;
      ncols = Math.max(2, Math.min(4, H, Math.floor((room - 76) / panelW)));
    }
  }
  probe.font = "bold 13px sans-serif";
  var words = Math.max(probe.measureText(d.caption || "").width, probe.measureText(d.axes || "").width * 0.95);
  var width = Math.min(room, Math.max(ncols * panelW + 76, Math.ceil(words) + 10));
  var height = top + Math.ceil(H / ncols) * panelH + 6;
  var ctx = setup(canvas, width, height), h, i, j;
  caption(ctx, d.caption || "", width, t);
  ctx.fillStyle = t.muted; ctx.fillText(d.axes || "rows: queries, columns: keys", 4, 25);
  for (h = 0; h < H; h++) {
    var x0 = (h % ncols) * panelW + lab, y0 = top + Math.floor(h / ncols) * panelH + 18;
    ctx.fillStyle = t.fg; ctx.textAlign = "center";
    if (d.titles) ctx.fillText(d.titles[h], x0 + Lk * cell / 2, y0 - 9);
    for (i = 0; i < Lq; i++) {
      for (j = 0; j < Lk; j++) {
        var v = d.grids[h][i][j], cx = x0 + j * cell, cy = y0 + i * cell;
        if (v === null) { // NaN: grey with a cross
          ctx.fillStyle = t.nan; ctx.fillRect(cx, cy, cell, cell); ctx.strokeStyle = t.accent;
          ctx.beginPath(); ctx.moveTo(cx + 2, cy + 2); ctx.lineTo(cx + cell - 2, cy + cell - 2);
          ctx.moveTo(cx + cell - 2, cy + 2); ctx.lineTo(cx + 2, cy + cell - 2); ctx.stroke();
          continue;
        }
        var u = (v - lo) / (hi - lo);
        ctx.fillStyle = colour(u, d.scale); ctx.fillRect(cx, cy, cell, cell);
        if (d.numbers && cell >= 26) {
          var light = d.scale === "diverging" ? Math.abs(u - 0.5) < 0.3 : u > 0.55;
          ctx.fillStyle = light ? "#111" : "#fff"; ctx.font = "10px sans-serif";
          ctx.fillText(fmt(v), cx + cell / 2, cy + cell / 2); ctx.font = "12px sans-serif";
        }
      }
    }
    (d.marks || []).forEach(function (m) {
      if (m[0] !== h) return;
      ctx.strokeStyle = t.accent; ctx.lineWidth = 2;
      ctx.strokeRect(x0 + m[2] * cell + 1, y0 + m[1] * cell + 1, cell - 2, cell - 2); ctx.lineWidth = 1;
    });
    ctx.fillStyle = t.fg; ctx.textAlign = "right";
    for (i = 0; i < Lq; i++) ctx.fillText(d.rows[i], x0 - 3, y0 + (i + 0.5) * cell);
    for (j = 0; j < Lk; j++) {
      ctx.save(); ctx.translate(x0 + (j + 0.5) * cell, y0 + Lq * cell + 3); ctx.rotate(-Math.PI / 2);
      ctx.fillText(d.cols[j], 0, 0); ctx.restore();
    }
  }
  colourBar(ctx, ncols * panelW + 6, top + 18, Math.max(60, Math.min(height - top - 30, 200)), d, t);
  canvas.dataset.values = JSON.stringify(roundDeep(d.grids));
  canvas.dataset.heads = String(H);
  canvas.dataset.columns = String(ncols); // heatmaps a row
  return (d.caption ? d.caption + ". " : "") + H + (H === 1 ? " heatmap" : " heatmaps") +
    (d.titles ? " (" + d.titles.join("; ") + ")" : "") + "; rows: " + d.rows.join(" ") +
    "; columns: " + d.cols.join(" ") + "; colour from " + lo + " to " + hi + ".";
}

CANVAS_VIEWS.heatmap = heatmap;
