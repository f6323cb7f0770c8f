import { avail, caption, heading, measurer, setup, widest } from "./canvas.js";
import { fmt, grouped, log2Text, log2Ticks, niceTicks, roundDeep, tickText } from "./format.js";

// plot: d = {x, series: [{label, y}], caption, x_label, y_label, y_min, y_max, x_log, marker,
//   marker_series (the series that get the ring; all when null), y_log, y_unit (a log-log
//   plot's y in a binary unit of bytes, "MiB": its ticks written "64 MiB", "4 GiB")}
var XPAD = 10;
function ringed(d, n) {
  return !d.marker_series || d.marker_series.indexOf(n) >= 0;
}
// The x axis's labels: evenly spaced x (steps, distances, powers of 2 on a log axis) labels
// every k-th point, k the least of 1, 2, 5, 10, ... that keeps labels 8 px apart, and the last
// point; unevenly spaced x (chapter 03's checkpoints 0, 10, 25, ...: 0 and 10 crowded, and a
// phone dropped 10) gets nice ticks over its range. Never cut at the canvas's right edge.
var XTICK_GAP = 8;
function xTicks(xs, raw, at, log) {
  var n = xs.length,
    space = Infinity,
    even = xs.every(function (v, i) {
      if (i) space = Math.min(space, at(v) - at(xs[i - 1]));
      return (
        !i || Math.abs(v - xs[i - 1] - (xs[1] - xs[0])) < 1e-9 * (Math.abs(xs[1] - xs[0]) || 1)
      );
    });
  if (n <= 2 || even || log) {
    var w = widest(raw.map(grouped), "12px sans-serif") + XTICK_GAP,
      k = 1;
    [1, 2, 5, 10, 20, 50, 100].some(function (c) {
      k = c;
      return c * space >= w;
    });
    var out = [];
    for (var i = 0; i < n; i += k) out.push({ s: grouped(raw[i]), x: at(xs[i]) });
    if ((n - 1) % k) {
      // the last point too, in place of its neighbour if they would touch
      var clash = ((n - 1) % k) * space < w;
      if (clash && out.length > 1) {
        out.pop();
        clash = false;
      }
      if (!clash) out.push({ s: grouped(raw[n - 1]), x: at(xs[n - 1]) });
    }
    return out;
  }
  var ticks = niceTicks(
    least(xs),
    most(xs),
    Math.max(2, Math.min(6, Math.floor((at(most(xs)) - at(least(xs))) / 100))),
  );
  return ticks.map(function (v) {
    return { s: tickText(v, ticks.step), x: at(v) };
  });
}
function xTickLabels(ctx, ticks, y, width) {
  ctx.textAlign = "center";
  ticks.forEach(function (b) {
    ctx.fillText(b.s, Math.min(b.x, width - 2 - ctx.measureText(b.s).width / 2), y);
  });
}

// the series' names above the plot: a short line in the series' colour and dash, then its name;
// entries flow left to right and wrap onto more rows (never cut, never drawn over a curve)
var LEGEND_FONT = "12px sans-serif",
  LEGEND_ROW = 16;
function legendLayout(labels, width) {
  var m = measurer(LEGEND_FONT),
    rows = [[]],
    x = 4;
  labels.forEach(function (s, n) {
    var w = 22 + m.measureText(s).width;
    if (x > 4 && x + w > width - 4) {
      rows.push([]);
      x = 4;
    }
    rows[rows.length - 1].push({ n: n, s: s, x: x });
    x += w + 14;
  });
  return { rows: rows, h: rows.length * LEGEND_ROW };
}
function legend(ctx, lay, top, colours, t) {
  ctx.font = LEGEND_FONT;
  ctx.textAlign = "left";
  lay.rows.forEach(function (row, r) {
    var y = top + (r + 0.5) * LEGEND_ROW;
    row.forEach(function (e) {
      ctx.strokeStyle = colours[e.n % colours.length];
      ctx.lineWidth = 2;
      ctx.setLineDash(e.n ? [5, 3] : []);
      ctx.beginPath();
      ctx.moveTo(e.x, y);
      ctx.lineTo(e.x + 18, y);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      ctx.fillStyle = t.fg;
      ctx.fillText(e.s, e.x + 22, y);
    });
  });
}
function least(a) {
  return Math.min.apply(null, a);
}
export function most(a) {
  return Math.max.apply(null, a);
}

// A plot whose data has y_log: true has both axes log2-spaced (chapter 11's cache against the
// context), ticks at powers of 2 (1/8, 1, 4, ...), so a quantity proportional to x is a straight
// line of slope 1; other plots have a linear y axis at nice ticks (x log2-spaced with x_log).
export function plot(canvas, d, t) {
  var loglog = !!d.y_log,
    room = avail(canvas),
    width = Math.min(room, 560),
    x0 = 56;
  var cap = heading(d.caption || "", width);
  var lg = legendLayout(
    d.series.map(function (s) {
      return s.label;
    }),
    width,
  );
  var y0 = cap.h + lg.h + 10,
    ph = 170,
    height = y0 + ph + 52,
    pw = width - x0 - 12;
  var ctx = setup(canvas, width, height),
    colours = [t.bar, t.accent, t.muted, t.third];
  caption(ctx, cap, t);
  legend(ctx, lg, cap.h + 2, colours, t);
  function ok(v) {
    return v !== null && (!loglog || v > 0);
  }
  var xs = d.x.map(function (v) {
      return d.x_log || loglog ? Math.log2(v) : v;
    }),
    all = [];
  d.series.forEach(function (s) {
    all = all.concat(s.y.filter(ok));
  });
  var xlo = least(xs),
    xhi = most(xs),
    lo,
    hi,
    ticks,
    tickY,
    text;
  if (loglog) {
    // exponents of 2: lo, lo + step, ..., hi; labelled in binary units where y_unit names one
    ticks = log2Ticks(least(all), most(all));
    lo = ticks[0];
    hi = ticks[ticks.length - 1];
    tickY = function (k) {
      return Y(Math.pow(2, k));
    };
    text = function (k) {
      return log2Text(k, d.y_unit);
    };
  } else {
    lo = d.y_min !== undefined ? d.y_min : least(all);
    hi = d.y_max !== undefined ? d.y_max : most(all);
    if (hi === lo) hi = lo + 1;
    ticks = niceTicks(lo, hi, 5);
    tickY = function (v) {
      return Y(v);
    };
    text = function (v) {
      return tickText(v, ticks.step);
    };
    canvas.dataset.ticks = JSON.stringify(ticks);
  }
  // wide tick labels (chapter 14's 65536 MiB) push the axis right, clear of the y label
  x0 = Math.max(x0, widest(ticks.map(text), "12px sans-serif") + 26);
  pw = width - x0 - 12;
  // the first and last points stand XPAD px inside the axes: a ring there (6 px) leaves the y
  // axis's labels free (chapter 03's step 0, chapter 13's block 1 covered the "2")
  // square: one doubling is as long on the x axis as on the y axis, so that slope 1 is drawn
  // at 45 degrees (chapter 11: 2 doublings of context on x against 4 or more on y looked flat)
  if (loglog && d.square && xhi > xlo) {
    var per = Math.min((pw - 2 * XPAD) / (xhi - xlo), 240 / (hi - lo));
    ph = per * (hi - lo);
    pw = per * (xhi - xlo) + 2 * XPAD;
    height = y0 + ph + 52;
    ctx = setup(canvas, width, height);
    caption(ctx, cap, t);
    legend(ctx, lg, cap.h + 2, colours, t);
  }
  function at(v) {
    return x0 + XPAD + ((v - xlo) / (xhi - xlo || 1)) * (pw - 2 * XPAD);
  }
  function X(i) {
    return at(xs[i]);
  }
  function Y(v) {
    return y0 + ph - (((loglog ? Math.log2(v) : v) - lo) / (hi - lo)) * ph;
  }
  ctx.strokeStyle = t.muted;
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x0, y0 + ph);
  ctx.lineTo(x0 + pw, y0 + ph);
  ctx.stroke();
  ctx.fillStyle = t.fg;
  ctx.textAlign = "right";
  ticks.forEach(function (v) {
    ctx.fillText(text(v), x0 - 4, tickY(v));
  });
  xTickLabels(ctx, xTicks(xs, d.x, at, d.x_log || loglog), y0 + ph + 12, width);
  ctx.fillText(d.x_label || "", x0 + pw / 2, height - 10);
  ctx.save();
  ctx.translate(12, y0 + ph / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(d.y_label || "", 0, 0);
  ctx.restore();
  d.series.forEach(function (s, n) {
    ctx.strokeStyle = ctx.fillStyle = colours[n % colours.length];
    ctx.lineWidth = 2;
    ctx.setLineDash(n ? [5, 3] : []);
    ctx.beginPath();
    s.y.forEach(function (v, i) {
      if (ok(v)) {
        if (i && ok(s.y[i - 1])) ctx.lineTo(X(i), Y(v));
        else ctx.moveTo(X(i), Y(v));
      }
    });
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.lineWidth = 1;
    s.y.forEach(function (v, i) {
      if (ok(v)) {
        ctx.beginPath();
        ctx.arc(X(i), Y(v), 2.5, 0, 7);
        ctx.fill();
      }
    });
  });
  var rings = [];
  if (d.marker !== undefined && d.marker !== null) {
    // the current setting: a ring on its series
    d.series.forEach(function (s, n) {
      var v = s.y[d.marker];
      if (!ok(v) || !ringed(d, n)) return;
      ctx.strokeStyle = colours[n % colours.length];
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(X(d.marker), Y(v), 6, 0, 7);
      ctx.stroke();
      ctx.lineWidth = 1;
      rings.push([X(d.marker), Y(v), 7]); // its ink's radius
    });
  }
  canvas.mhaGeom = { axisX: x0, firstX: X(0), rings: rings }; // for the tests
  canvas.dataset.values = JSON.stringify(
    d.series.map(function (s) {
      return roundDeep(s.y);
    }),
  );
  return (
    (d.caption ? d.caption + ". " : "") +
    (loglog ? "Both axes on a log scale. " : "") +
    d.series
      .map(function (s) {
        return (
          s.label +
          ": " +
          d.x
            .map(function (x, i) {
              return x + " " + fmt(s.y[i]) + (d.y_unit ? " " + d.y_unit : "");
            })
            .join(", ")
        );
      })
      .join("; ") +
    "."
  );
}
