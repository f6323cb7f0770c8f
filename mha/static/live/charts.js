// Part 3 of 9: bars, line plots (linear or log-log) and tables.
// bars: d = {values, labels, highlight (indices), caption, y_label, x_label, y_max, y_min}
// Every bar's number is written: above the bar, or on a narrow bar (a phone) upright in a
// smaller font, above it or, where the caption is near, inside its top; key labels at 45
// degrees, upright where the bars are too narrow for slanted ones to clear each other.
function bars(canvas, d, t) {
  var n = d.values.length, room = avail(canvas), ph = 170;
  // wide tick labels (chapter 14's 3,000 KiB) push the axis right, clear of the y label
  var ticks = niceTicks(d.y_min || 0, d.y_max || 1, 5);
  var x0 = Math.max(52, widest(ticks.map(function (tv) { return tickText(tv, ticks.step); }), "12px sans-serif") + 26);
  var bw = Math.max(18, Math.min(56, Math.floor((room - x0 - 10) / n)));
  var width = x0 + n * bw + 10, cap = heading(d.caption || "", width), y0 = cap.h + 18;
  var upright = bw * Math.SQRT1_2 < 16, sin = upright ? 1 : Math.SQRT1_2;
  var labH = Math.ceil(widest(d.labels, "12px sans-serif") * sin) + 14;
  var height = y0 + ph + labH + 20, lo = d.y_min || 0, hi = d.y_max || 1;
  var ctx = setup(canvas, width, height), hl = d.highlight || [], f = fmtFor(d.values);
  caption(ctx, cap, t);
  function y(v) { return y0 + ph - (Math.max(lo, Math.min(hi, v)) - lo) / (hi - lo) * ph; }
  ctx.strokeStyle = t.muted; ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x0, y0 + ph);
  ctx.lineTo(x0 + n * bw, y0 + ph); ctx.stroke(); ctx.textAlign = "right"; ctx.fillStyle = t.fg;
  ticks.forEach(function (tv) { ctx.fillText(tickText(tv, ticks.step), x0 - 4, y(tv)); });
  canvas.dataset.ticks = JSON.stringify(ticks);
  ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
  ctx.fillText(d.y_label || "attention weight", 0, 0); ctx.restore();
  var said = [];
  for (var j = 0; j < n; j++) {
    var v = d.values[j], x = x0 + j * bw + Math.max(2, bw * 0.15), w = bw - 2 * Math.max(2, bw * 0.15);
    ctx.fillStyle = hl.indexOf(j) >= 0 ? t.accent : t.bar;
    // a bar above 0 stays at least 3 px tall (chapter 11's MQA bar beside GPT-3's 96 heads was
    // a sliver); its number says how tall it is
    if (v !== null) ctx.fillRect(x, v > lo ? Math.min(y(v), y(lo) - 3) : y(v), w,
      v > lo ? Math.max(3, y(lo) - y(v)) : y(lo) - y(v));
    // a bar with no value (a configuration that cannot exist) says so, not "NaN"
    var s = v === null ? d.null_label || "n/a" : f(v, d.decimals), at = y(v === null ? lo : v);
    ctx.fillStyle = t.fg; ctx.textAlign = "center"; ctx.font = "12px sans-serif";
    if (ctx.measureText(s).width <= bw - 4) {
      ctx.fillText(s, x + w / 2, at - 8);
    } else { // upright, 11 px: above the bar, or inside its top if the caption is too near
      ctx.font = "11px sans-serif";
      var len = ctx.measureText(s).width, inside = at - 4 - len < y0 - 12 && v !== null;
      ctx.save(); ctx.translate(x + w / 2, inside ? at + 4 : at - 4); ctx.rotate(-Math.PI / 2);
      ctx.textAlign = inside ? "right" : "left";
      if (inside) ctx.fillStyle = t.dark ? "#111" : "#fff";
      ctx.fillText(s, 0, 0); ctx.restore(); ctx.font = "12px sans-serif";
    }
    said.push(s);
    ctx.fillStyle = t.fg;
    ctx.save(); ctx.translate(x + w / 2, y0 + ph + 6); ctx.rotate(upright ? -Math.PI / 2 : -Math.PI / 4);
    ctx.textAlign = "right"; ctx.fillText(d.labels[j], 0, 0); ctx.restore();
  }
  ctx.textAlign = "center"; ctx.fillText(d.x_label || "key", x0 + n * bw / 2, height - 8);
  canvas.dataset.values = JSON.stringify(roundDeep(d.values));
  canvas.dataset.numbers = JSON.stringify(said); // the number written at each bar
  return (d.caption ? d.caption + ". " : "") + "Bars: " +
    d.labels.map(function (s, i) { return s + " " + (d.values[i] === null ? d.null_label || "n/a" : f(d.values[i], d.decimals)); }).join(", ") + ".";
}

// plot: d = {x, series: [{label, y}], caption, x_label, y_label, y_min, y_max, x_log, marker,
//   marker_series (the series that get the ring; all when null)}
var XPAD = 10;
function ringed(d, n) { return !d.marker_series || d.marker_series.indexOf(n) >= 0; }
// The x axis's labels: evenly spaced x (steps, distances, powers of 2 on a log axis) labels
// every k-th point, k the least of 1, 2, 5, 10, ... that keeps labels 8 px apart, and the last
// point; unevenly spaced x (chapter 03's checkpoints 0, 10, 25, ...: 0 and 10 crowded, and a
// phone dropped 10) gets nice ticks over its range. Never cut at the canvas's right edge.
var XTICK_GAP = 8;
function xTicks(xs, raw, at, log) {
  var n = xs.length, space = Infinity, even = xs.every(function (v, i) {
    if (i) space = Math.min(space, at(v) - at(xs[i - 1]));
    return !i || Math.abs(v - xs[i - 1] - (xs[1] - xs[0])) < 1e-9 * (Math.abs(xs[1] - xs[0]) || 1);
  });
  if (n <= 2 || even || log) {
    var w = widest(raw.map(grouped), "12px sans-serif") + XTICK_GAP, k = 1;
    [1, 2, 5, 10, 20, 50, 100].some(function (c) { k = c; return c * space >= w; });
    var out = [];
    for (var i = 0; i < n; i += k) out.push({ s: grouped(raw[i]), x: at(xs[i]) });
    if ((n - 1) % k) { // the last point too, in place of its neighbour if they would touch
      var clash = (n - 1) % k * space < w;
      if (clash && out.length > 1) { out.pop(); clash = false; }
      if (!clash) out.push({ s: grouped(raw[n - 1]), x: at(xs[n - 1]) });
    }
    return out;
  }
  var ticks = niceTicks(least(xs), most(xs), Math.max(2, Math.min(6, Math.floor((at(most(xs)) -
    at(least(xs))) / 100))));
  return ticks.map(function (v) { return { s: tickText(v, ticks.step), x: at(v) }; });
}
function xTickLabels(ctx, ticks, y, width) {
  ctx.textAlign = "center";
  ticks.forEach(function (b) {
    ctx.fillText(b.s, Math.min(b.x, width - 2 - ctx.measureText(b.s).width / 2), y);
  });
}

// the series' names above the plot: a short line in the series' colour and dash, then its name;
// entries flow left to right and wrap onto more rows (never cut, never drawn over a curve)
var LEGEND_FONT = "12px sans-serif", LEGEND_ROW = 16;
function legendLayout(labels, width) {
  var m = measurer(LEGEND_FONT), rows = [[]], x = 4;
  labels.forEach(function (s, n) {
    var w = 22 + m.measureText(s).width;
    if (x > 4 && x + w > width - 4) { rows.push([]); x = 4; }
    rows[rows.length - 1].push({ n: n, s: s, x: x }); x += w + 14;
  });
  return { rows: rows, h: rows.length * LEGEND_ROW };
}
function legend(ctx, lay, top, colours, t) {
  ctx.font = LEGEND_FONT; ctx.textAlign = "left";
  lay.rows.forEach(function (row, r) {
    var y = top + (r + 0.5) * LEGEND_ROW;
    row.forEach(function (e) {
      ctx.strokeStyle = colours[e.n % colours.length]; ctx.lineWidth = 2; ctx.setLineDash(e.n ? [5, 3] : []);
      ctx.beginPath(); ctx.moveTo(e.x, y); ctx.lineTo(e.x + 18, y); ctx.stroke();
      ctx.setLineDash([]); ctx.lineWidth = 1; ctx.fillStyle = t.fg; ctx.fillText(e.s, e.x + 22, y);
    });
  });
}
// a whole number from 1,000 up with thousands separators (8,192 tokens, as the slider says it)
function grouped(v) {
  return typeof v === "number" && Number.isInteger(v) && Math.abs(v) >= 1000 ? v.toLocaleString("en") : String(v);
}
function least(a) { return Math.min.apply(null, a); }
function most(a) { return Math.max.apply(null, a); }

// A plot whose data has y_log: true has both axes log2-spaced (chapter 11's cache against the
// context), ticks at powers of 2 (1/8, 1, 4, ...), so a quantity proportional to x is a straight
// line of slope 1; other plots have a linear y axis at nice ticks (x log2-spaced with x_log).
function plot(canvas, d, t) {
  var loglog = !!d.y_log, room = avail(canvas), width = Math.min(room, 560), x0 = 56;
  var cap = heading(d.caption || "", width);
  var lg = legendLayout(d.series.map(function (s) { return s.label; }), width);
  var y0 = cap.h + lg.h + 10, ph = 170, height = y0 + ph + 52, pw = width - x0 - 12;
  var ctx = setup(canvas, width, height), colours = [t.bar, t.accent, t.muted, t.third];
  caption(ctx, cap, t);
  legend(ctx, lg, cap.h + 2, colours, t);
  function ok(v) { return v !== null && (!loglog || v > 0); }
  var xs = d.x.map(function (v) { return d.x_log || loglog ? Math.log2(v) : v; }), all = [];
  d.series.forEach(function (s) { all = all.concat(s.y.filter(ok)); });
  var xlo = least(xs), xhi = most(xs), lo, hi, ticks, tickY, text;
  if (loglog) { // exponents of 2: lo, lo + step, ..., hi
    lo = Math.floor(Math.log2(least(all))); hi = Math.ceil(Math.log2(most(all)));
    if (hi === lo) hi = lo + 1;
    var step = Math.max(1, Math.ceil((hi - lo) / 5));
    lo = Math.floor(lo / step) * step; hi = Math.ceil(hi / step) * step;
    ticks = []; for (var k = lo; k <= hi; k += step) ticks.push(k);
    tickY = function (k) { return Y(Math.pow(2, k)); };
    text = function (k) { // 65,536 as the bars and tables write it
      return k >= 0 ? Math.pow(2, k).toLocaleString("en") : "1/" + Math.pow(2, -k).toLocaleString("en"); };
  } else {
    lo = d.y_min !== undefined ? d.y_min : least(all);
    hi = d.y_max !== undefined ? d.y_max : most(all);
    if (hi === lo) hi = lo + 1;
    ticks = niceTicks(lo, hi, 5); tickY = function (v) { return Y(v); };
    text = function (v) { return tickText(v, ticks.step); };
    canvas.dataset.ticks = JSON.stringify(ticks);
  }
  // wide tick labels (chapter 14's 65536 MiB) push the axis right, clear of the y label
  x0 = Math.max(x0, widest(ticks.map(text), "12px sans-serif") + 26); pw = width - x0 - 12;
  // the first and last points stand XPAD px inside the axes: a ring there (6 px) leaves the y
  // axis's labels free (chapter 03's step 0, chapter 13's block 1 covered the "2")
  // square: one doubling is as long on the x axis as on the y axis, so that slope 1 is drawn
  // at 45 degrees (chapter 11: 2 doublings of context on x against 4 or more on y looked flat)
  if (loglog && d.square && xhi > xlo) {
    var per = Math.min((pw - 2 * XPAD) / (xhi - xlo), 240 / (hi - lo));
    ph = per * (hi - lo); pw = per * (xhi - xlo) + 2 * XPAD;
    height = y0 + ph + 52; ctx = setup(canvas, width, height);
    caption(ctx, cap, t); legend(ctx, lg, cap.h + 2, colours, t);
  }
  function at(v) { return x0 + XPAD + (v - xlo) / ((xhi - xlo) || 1) * (pw - 2 * XPAD); }
  function X(i) { return at(xs[i]); }
  function Y(v) { return y0 + ph - ((loglog ? Math.log2(v) : v) - lo) / (hi - lo) * ph; }
  ctx.strokeStyle = t.muted; ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x0, y0 + ph);
  ctx.lineTo(x0 + pw, y0 + ph); ctx.stroke(); ctx.fillStyle = t.fg; ctx.textAlign = "right";
  ticks.forEach(function (v) { ctx.fillText(text(v), x0 - 4, tickY(v)); });
  xTickLabels(ctx, xTicks(xs, d.x, at, d.x_log || loglog), y0 + ph + 12, width);
  ctx.fillText(d.x_label || "", x0 + pw / 2, height - 10);
  ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.fillText(d.y_label || "", 0, 0); ctx.restore();
  d.series.forEach(function (s, n) {
    ctx.strokeStyle = ctx.fillStyle = colours[n % colours.length]; ctx.lineWidth = 2; ctx.setLineDash(n ? [5, 3] : []);
    ctx.beginPath();
    s.y.forEach(function (v, i) { if (ok(v)) { if (i && ok(s.y[i - 1])) ctx.lineTo(X(i), Y(v)); else ctx.moveTo(X(i), Y(v)); } });
    ctx.stroke(); ctx.setLineDash([]); ctx.lineWidth = 1;
    s.y.forEach(function (v, i) { if (ok(v)) { ctx.beginPath(); ctx.arc(X(i), Y(v), 2.5, 0, 7); ctx.fill(); } });
  });
  var rings = [];
  if (d.marker !== undefined && d.marker !== null) { // the current setting: a ring on its series
    d.series.forEach(function (s, n) {
      var v = s.y[d.marker]; if (!ok(v) || !ringed(d, n)) return;
      ctx.strokeStyle = colours[n % colours.length]; ctx.lineWidth = 2; ctx.beginPath();
      ctx.arc(X(d.marker), Y(v), 6, 0, 7); ctx.stroke(); ctx.lineWidth = 1;
      rings.push([X(d.marker), Y(v), 7]); // its ink's radius
    });
  }
  canvas.mhaGeom = { axisX: x0, firstX: X(0), rings: rings }; // for the tests
  canvas.dataset.values = JSON.stringify(d.series.map(function (s) { return roundDeep(s.y); }));
  return (d.caption ? d.caption + ". " : "") + (loglog ? "Both axes on a log scale. " : "") +
    d.series.map(function (s) {
      return s.label + ": " + d.x.map(function (x, i) { return x + " " + fmt(s.y[i]); }).join(", ");
    }).join("; ") + ".";
}

// table: d = {columns, rows: [[label, v1, ...]], caption}; text: d = {text}
function table(el, d) {
  el.textContent = "";
  if (!d) return;
  var tab = document.createElement("table");
  if (d.caption) { var cap = document.createElement("caption"); cap.textContent = d.caption; tab.appendChild(cap); }
  var tr = document.createElement("tr");
  d.columns.forEach(function (c) { // an empty corner is a plain cell (axe: empty-table-header)
    var th = document.createElement(c === "" ? "td" : "th"); if (c !== "") th.scope = "col";
    th.textContent = c; tr.appendChild(th);
  });
  tab.appendChild(tr);
  d.rows.forEach(function (r) {
    var row = document.createElement("tr");
    r.forEach(function (v, i) {
      var td = document.createElement(i ? "td" : "th"); if (!i) td.scope = "row";
      td.textContent = typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(2)) : v;
      row.appendChild(td);
    });
    tab.appendChild(row);
  });
  el.appendChild(tab);
  fitTable(el, tab);
}
// A table fits its figure: headers wrap; on a narrow screen (chapter 12's six columns were 4 px
// too wide for a phone, and the whole figure could be panned) the cells' padding shrinks, and a
// table still too wide scrolls inside its own box, never the figure's views
function fitTable(el, tab) {
  el.style.maxWidth = "100%"; el.style.minWidth = "0"; el.style.overflowX = "auto";
  var room = el.parentElement && el.parentElement.clientWidth;
  var tight = room && tab.offsetWidth > room;
  tab.querySelectorAll("th, td").forEach(function (c) { c.style.padding = tight ? "0 .3em" : ""; });
  el.dataset.compact = tight ? "1" : "0";
}

CANVAS_VIEWS.bars = bars;
CANVAS_VIEWS.plot = plot;
