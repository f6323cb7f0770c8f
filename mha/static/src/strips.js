import { avail, caption, heading, setup, widest, wrap } from "./canvas.js";

// The strips view (chapter 05's split-heads, mha_book/figures/batched_heads.py).
// strips: d = {panels: [{title, grid, focus}], heads, d_head, rows, cols, labels, caption}.
// Panels 0 and 2 are rows x cols grids of categories (heads); panel 1 is the split tensor,
// heads * rows rows of d_head, drawn with its heads side by side; focus is [row, col] or
// [head, row, col]. One colour per head from HEAD_COLOURS: 16 colours chosen
// greedily far apart in Oklab (every pair at least 0.14 apart, each at least 0.12 from the
// book's white page and its light grey output panel), so the first H of them are distinct
// for every H; labels 11 px, titles wrapped.
var HEAD_COLOURS = [
  "#1f77b4",
  "#fab72a",
  "#bb0522",
  "#eb76e9",
  "#55d7f6",
  "#24af32",
  "#2b5b07",
  "#700e99",
  "#be8073",
  "#7edf7f",
  "#a355b4",
  "#0f3bb7",
  "#70394b",
  "#9ca2f5",
  "#53a298",
  "#877d09",
];
function headColour(h, H) {
  if (H <= HEAD_COLOURS.length) return HEAD_COLOURS[h];
  return "hsl(" + Math.round((h * 360) / H) + ",65%,50%)"; // more heads than colours
}
export function strips(canvas, d, t) {
  var H = d.heads,
    Dh = d.d_head,
    R = d.rows,
    C = d.cols,
    gap = 3,
    rowH = 14,
    r,
    c;
  var width = avail(canvas),
    lab = widest(d.labels.concat(["row " + (R - 1)]), "11px sans-serif") + 6;
  var cw = (width - lab - 8 - (H - 1) * gap) / C,
    cap = heading(d.caption || "", width);
  var titles = d.panels.map(function (q) {
    return wrap(q.title, width - 8, "bold 12px sans-serif");
  });
  var tops = [],
    y = cap.h + 2;
  titles.forEach(function (tl) {
    y += tl.length * 15 + 4;
    tops.push(y);
    y += R * rowH + 20;
  });
  var ctx = setup(canvas, width, y);
  caption(ctx, cap, t);
  function xOf(p, col, head) {
    return lab + (p === 1 ? head * (Dh * cw + gap) + col * cw : col * cw);
  }
  d.panels.forEach(function (panel, p) {
    var y0 = tops[p],
      g = panel.grid,
      f = panel.focus;
    ctx.font = "bold 12px sans-serif";
    ctx.fillStyle = t.fg;
    ctx.textAlign = "left";
    titles[p].forEach(function (s, k, all) {
      ctx.fillText(s, 4, y0 - 10 - (all.length - 1 - k) * 15);
    });
    ctx.font = "11px sans-serif";
    ctx.textAlign = "right";
    for (r = 0; r < R; r++)
      ctx.fillText(p === 1 ? "row " + r : d.labels[r], lab - 4, y0 + (r + 0.5) * rowH);
    for (var head = 0; head < (p === 1 ? H : 1); head++) {
      for (r = 0; r < R; r++) {
        var line = g[p === 1 ? head * R + r : r],
          start = 0;
        for (c = 1; c <= line.length; c++) {
          // one rectangle per run of one head
          if (c < line.length && line[c] === line[start]) continue;
          ctx.fillStyle = headColour(line[start], H);
          var x = xOf(p, start, head);
          ctx.fillRect(x, y0 + r * rowH, xOf(p, c, head) - x + 0.4, rowH - 1);
          start = c;
        }
      }
    }
    ctx.textAlign = "center";
    ctx.fillStyle = t.fg;
    if (p === 1) {
      for (head = 0; head < H; head++) {
        if (Dh * cw >= 24 || head === f[0])
          ctx.fillText("h" + head, xOf(1, Dh / 2, head), y0 + R * rowH + 9);
      }
    } else {
      [0, 128, 256, 384, 511].forEach(function (col) {
        ctx.fillText(String(col), Math.min(xOf(0, col + 0.5), width - 12), y0 + R * rowH + 9);
      });
    }
    var fr = f.length === 3 ? f[1] : f[0],
      fc = f.length === 3 ? f[2] : f[1],
      fh = f.length === 3 ? f[0] : 0;
    var fx = xOf(p, fc + 0.5, fh),
      fy = y0 + (fr + 0.5) * rowH;
    ctx.strokeStyle = t.fg;
    ctx.lineWidth = 1;
    ctx.beginPath(); // crosshair through the number
    ctx.moveTo(lab, fy);
    ctx.lineTo(xOf(p, C / (p === 1 ? H : 1), p === 1 ? H - 1 : 0), fy);
    ctx.moveTo(fx, y0);
    ctx.lineTo(fx, y0 + R * rowH);
    ctx.stroke();
    ctx.strokeStyle = t.accent;
    ctx.lineWidth = 2.5;
    ctx.beginPath();
    ctx.arc(fx, fy, 6, 0, 7);
    ctx.stroke();
    ctx.lineWidth = 1;
  });
  ctx.font = "12px sans-serif";
  canvas.dataset.values = JSON.stringify(
    d.panels.map(function (q) {
      return { grid: q.grid, focus: q.focus };
    }),
  );
  canvas.dataset.titles = JSON.stringify(titles); // each panel's title, as the lines drawn
  canvas.mhaGeom = { lab: lab, cw: cw, gap: gap, rowH: rowH, tops: tops }; // for the tests
  return (
    (d.caption ? d.caption + ". " : "") +
    d.panels
      .map(function (q) {
        return q.title + ", the number at [" + q.focus.join(", ") + "]";
      })
      .join("; ") +
    ". Colour: the head (" +
    H +
    " heads)."
  );
}
