import { avail, caption, heading, setup, widest } from "./canvas.js";
import { fmt, roundDeep } from "./format.js";

// The arrows view (chapter 12's rotary arrows).
// arrows: d = {panels: [{title, arrows: [[x, y], ...]}], labels (one per arrow), caption, radius}
// each panel a circle of the given radius with its arrows from the centre; the first arrow in
// the main colour, the second in the accent, the third grey and dashed (3:1 or more against
// the page and the book's dark-mode panel)
export function arrows(canvas, d, t) {
  var n = d.panels.length,
    room = avail(canvas),
    gap = 8;
  var ncols = Math.max(1, Math.min(n, Math.floor((room + gap) / (120 + gap))));
  var size = Math.min(150, Math.floor((room - gap * (ncols - 1)) / ncols));
  var width = ncols * size + (ncols - 1) * gap,
    rows = Math.ceil(n / ncols);
  var cap = heading(d.caption || "", width),
    keys = [],
    lx = 4,
    ly = cap.h + 10;
  d.labels.forEach(function (s) {
    // the legend, on as many lines as it needs
    var w = 22 + widest([s], "12px sans-serif");
    if (lx > 4 && lx + w > width - 4) {
      lx = 4;
      ly += 16;
    }
    keys.push([lx, ly]);
    lx += w + 8;
  });
  var top = ly + 14,
    height = top + rows * (size + 18) + 4,
    ctx = setup(canvas, width, height);
  var colours = [t.bar, t.accent, t.third],
    r0 = (size / 2 - 12) / (d.radius || 1);
  caption(ctx, cap, t);
  d.labels.forEach(function (s, i) {
    var at = keys[i];
    ctx.strokeStyle = colours[i % 3];
    ctx.lineWidth = 3;
    ctx.setLineDash(i === 2 ? [5, 3] : []);
    ctx.beginPath();
    ctx.moveTo(at[0], at[1]);
    ctx.lineTo(at[0] + 18, at[1]);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.lineWidth = 1;
    ctx.fillStyle = t.fg;
    ctx.textAlign = "left";
    ctx.fillText(s, at[0] + 22, at[1]);
  });
  d.panels.forEach(function (p, k) {
    var x0 = (k % ncols) * (size + gap),
      y0 = top + Math.floor(k / ncols) * (size + 18);
    var cx = x0 + size / 2,
      cy = y0 + 18 + size / 2 - 6;
    ctx.fillStyle = t.fg;
    ctx.textAlign = "center";
    ctx.fillText(p.title, cx, y0 + 6);
    ctx.strokeStyle = t.muted;
    ctx.beginPath();
    ctx.arc(cx, cy, (d.radius || 1) * r0, 0, 7);
    ctx.moveTo(cx - size / 2 + 6, cy);
    ctx.lineTo(cx + size / 2 - 6, cy);
    ctx.moveTo(cx, cy - size / 2 + 8);
    ctx.lineTo(cx, cy + size / 2 - 8);
    ctx.stroke();
    for (var i = p.arrows.length - 1; i >= 0; i--) {
      // the faded one underneath
      var a = p.arrows[i];
      if (a[0] === null || a[1] === null) continue;
      var ex = cx + a[0] * r0,
        ey = cy - a[1] * r0,
        ang = Math.atan2(ey - cy, ex - cx);
      ctx.strokeStyle = ctx.fillStyle = colours[i % 3];
      ctx.lineWidth = i === 2 ? 2 : 2.5;
      ctx.setLineDash(i === 2 ? [5, 3] : []);
      ctx.beginPath();
      ctx.moveTo(cx, cy);
      ctx.lineTo(ex, ey);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.beginPath();
      ctx.moveTo(ex, ey);
      ctx.lineTo(ex - 8 * Math.cos(ang - 0.4), ey - 8 * Math.sin(ang - 0.4));
      ctx.lineTo(ex - 8 * Math.cos(ang + 0.4), ey - 8 * Math.sin(ang + 0.4));
      ctx.fill();
      ctx.lineWidth = 1;
    }
  });
  canvas.dataset.values = JSON.stringify(
    d.panels.map(function (p) {
      return roundDeep(p.arrows);
    }),
  );
  canvas.dataset.colours = JSON.stringify(colours); // the arrows' colours, in order (tests)
  return (
    (d.caption ? d.caption + ". " : "") +
    d.panels
      .map(function (p) {
        return (
          p.title +
          ": " +
          p.arrows
            .map(function (a, i) {
              return d.labels[i] + " (" + fmt(a[0]) + ", " + fmt(a[1]) + ")";
            })
            .join(", ")
        );
      })
      .join("; ") +
    "."
  );
}
