/* The book's live figures: one front end for every figure (mha/static/live.js, shipped with the
 * package; no dependencies, nothing from a network). Python (mha.live) writes a figure as
 *   a div.mha-live[data-figure=NAME] holding a JSON script element (class mha-spec)
 * holding its spec; this file builds the controls, looks the state up, draws the views and says
 * in words what changed. The same code runs in the built book (no kernel), JupyterLab, Notebook,
 * VS Code and Colab: a figure is plain HTML with this script inlined.
 *
 * spec = {name, title, note, controls: [{name, label, kind: range|select|toggle|step, values,
 *         labels, value (an index), disabled}], views: [{name, kind: heatmap|bars|plot|table|
 *         text|lines, label}], states: {"i,j,...": state} | compute: NAME, data}
 * state = {views: {NAME: data}, readout: "what the picture shows", state: {...}, disabled:
 *          {control: bool}, options: {control: [indices offered]}, limits: {control: {max,
 *          reset}} (a slider's last index here, and the control that sends it back to 0)}; with listed states a
 *          view's data is an index into spec.pool (each distinct picture stored once)
 * A state is looked up by the controls' indices joined with ","; a figure whose states are too
 * many to list names a compute function registered here (COMPUTE) that makes one from spec.data.
 * Every canvas carries data-values (the numbers it drew, JSON, NaN as null) for the tests; the
 * root carries data-draws, data-drawn-at, data-draw-ms (the redraw's own time) and data-state.
 */
(function () {
  "use strict";
  var VERSION = 2;
  // a front end may run an output's script before the output is in the page: mount again shortly
  function soon(mount) { mount(); [0, 50, 250, 1000].forEach(function (t) { setTimeout(mount, t); }); }
  if (window.mhaLive && window.mhaLive.version >= VERSION) { soon(window.mhaLive.mountAll); return; }

  // ---------------------------------------------------------------- colours
  // viridis, 32 steps (matplotlib), interpolated linearly; -1..1 values: a blue-white-red ramp
  var VIRIDIS = "440154470d6048186a482374472e7c4538824241863e4a893a548c365d8d32658e2e6d8e2b758e" +
    "287d8e25848e228c8d1f948c1e9c8920a38625ab822eb37c3aba7648c16e58c7656ccd5a7fd34e93d741a8db34c0" +
    "df25d5e21aeae51afde725";
  var RDBU = "2166ac4393c392c5ded1e5f0f7f7f7fddbc7f4a582d6604db2182b";
  function ramp(hex) {
    var out = [];
    for (var c = 0; c < hex.length; c += 6) {
      out.push([0, 2, 4].map(function (o) { return parseInt(hex.substr(c + o, 2), 16); }));
    }
    return out;
  }
  var RAMPS = { viridis: ramp(VIRIDIS), diverging: ramp(RDBU) };
  function colour(v, name) { // v in 0..1
    var rgb = RAMPS[name || "viridis"], x = Math.min(1, Math.max(0, v)) * (rgb.length - 1);
    var i = Math.min(rgb.length - 2, Math.floor(x)), f = x - i, a = rgb[i], b = rgb[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }) + ")";
  }
  // Text and line colours for the figure's actual background. Dark means light text: the
  // page's dark mode, a dark Jupyter theme; but the book's dark mode draws HTML outputs on a light
  // panel with dark text (MyST-NB), where the light palette is the legible one. Form controls
  // follow (color-scheme), so that an unticked box does not look ticked.
  function theme(el) {
    var fg = getComputedStyle(el).color || "#222";
    var rgb = (fg.match(/[\d.]+/g) || [34, 34, 34]).map(Number);
    var dark = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255 > 0.5;
    var root = el.closest ? el.closest(".mha-live") || el : el;
    root.style.colorScheme = dark ? "dark" : "light";
    return { fg: fg, muted: dark ? "#9aa4ae" : "#666", accent: dark ? "#ffa657" : "#c24e00",
      bar: dark ? "#6cb6ff" : "#1f5fa8", nan: dark ? "#555" : "#ccc", dark: dark };
  }

  function round(x) { return x === null || !isFinite(x) ? null : Math.round(x * 1e6) / 1e6; }
  function roundDeep(a) { return Array.isArray(a) ? a.map(roundDeep) : round(a); }
  // a number as drawn: two decimals, but a small non-zero one (a softmax weight is never 0) in
  // exponent form, so that 0.0003 does not read as "0.00"
  function fmt(x) {
    if (x === null) return "NaN";
    if (x === 0) return "0";
    if (x !== 0 && Math.abs(x) < 0.005) return x.toExponential(0);
    return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2);
  }

  // axis ticks at "nice" numbers (steps of 1, 2, 2.5 or 5 x 10^k, as D3's ticks()) inside
  // [lo, hi], about n of them; every view with an axis labels it with these (tickText)
  function niceTicks(lo, hi, n) {
    if (!isFinite(lo) || !isFinite(hi)) return [];
    if (hi < lo) { var sw = lo; lo = hi; hi = sw; }
    if (hi === lo) return [lo];
    var raw = (hi - lo) / (n || 5), power = Math.pow(10, Math.floor(Math.log10(raw)));
    var best = 1;
    [1, 2, 2.5, 5, 10].forEach(function (c) {
      if (Math.abs(Math.log(c * power / raw)) < Math.abs(Math.log(best * power / raw))) best = c;
    });
    var step = best * power, out = [], first = Math.ceil(lo / step - 1e-9);
    for (var k = first; k * step <= hi + step * 1e-9; k++) out.push(+(k * step).toPrecision(12));
    out.step = step;
    return out;
  }
  function tickText(v, step) { // as many decimals as the step needs: 0.25, 2.5, 1, 1000
    var dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9) + (Math.round(step / Math.pow(10,
      Math.floor(Math.log10(step) + 1e-9)) * 10) % 10 ? 1 : 0));
    return String(+v.toFixed(Math.min(dec, 12)));
  }

  function avail(canvas) { // the width of the figure (the views' box)
    var p = canvas.parentElement, w = (p && p.clientWidth) || 700;
    return Math.max(280, Math.min(w, 1100));
  }
  function setup(canvas, width, height) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(width * dpr); canvas.height = Math.ceil(height * dpr);
    canvas.style.width = width + "px"; // height follows (CSS height: auto): never distorted
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height); // transparent: the page's own background shows
    ctx.font = "12px sans-serif"; ctx.textBaseline = "middle";
    return ctx;
  }
  function caption(ctx, text, width, t) { // bold, shrunk to fit
    var size = 13; ctx.fillStyle = t.fg; ctx.textAlign = "left";
    do { ctx.font = "bold " + size + "px sans-serif"; } while (ctx.measureText(text).width > width - 8 && --size > 9);
    ctx.fillText(text, 4, 10); ctx.font = "12px sans-serif";
  }
  function colourBar(ctx, x, y, h, d, t) {
    var lo = d.vmin, hi = d.vmax;
    for (var p = 0; p < h; p++) { ctx.fillStyle = colour(1 - p / (h - 1), d.scale); ctx.fillRect(x, y + p, 12, 1); }
    ctx.strokeStyle = t.muted; ctx.strokeRect(x, y, 12, h);
    ctx.fillStyle = t.fg; ctx.textAlign = "left";
    var ticks = niceTicks(lo, hi, 4);
    ticks.forEach(function (v) { ctx.fillText(tickText(v, ticks.step), x + 16, y + h - (v - lo) / (hi - lo) * (h - 1)); });
    ctx.canvas.dataset.ticks = JSON.stringify(ticks);
    ctx.save(); ctx.translate(x + 54, y + h / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center"; ctx.fillText(d.label || "attention weight", 0, 0); ctx.restore();
  }

  // ---------------------------------------------------------------- views
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

  // bars: d = {values, labels, highlight (indices), caption, y_label, x_label, y_max, y_min}
  function bars(canvas, d, t) {
    var n = d.values.length, room = avail(canvas), x0 = 52, y0 = 28, ph = 170;
    var bw = Math.max(18, Math.min(56, Math.floor((room - x0 - 10) / n)));
    var width = x0 + n * bw + 10, height = y0 + ph + 66, lo = d.y_min || 0, hi = d.y_max || 1;
    var ctx = setup(canvas, width, height), hl = d.highlight || [];
    caption(ctx, d.caption || "", width, t);
    function y(v) { return y0 + ph - (Math.max(lo, Math.min(hi, v)) - lo) / (hi - lo) * ph; }
    ctx.strokeStyle = t.muted; ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x0, y0 + ph);
    ctx.lineTo(x0 + n * bw, y0 + ph); ctx.stroke(); ctx.textAlign = "right"; ctx.fillStyle = t.fg;
    var ticks = niceTicks(lo, hi, 5);
    ticks.forEach(function (tv) { ctx.fillText(tickText(tv, ticks.step), x0 - 4, y(tv)); });
    canvas.dataset.ticks = JSON.stringify(ticks);
    ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
    ctx.fillText(d.y_label || "attention weight", 0, 0); ctx.restore();
    for (var j = 0; j < n; j++) {
      var v = d.values[j], x = x0 + j * bw + Math.max(2, bw * 0.15), w = bw - 2 * Math.max(2, bw * 0.15);
      ctx.fillStyle = hl.indexOf(j) >= 0 ? t.accent : t.bar;
      if (v !== null) ctx.fillRect(x, y(v), w, y(lo) - y(v));
      ctx.fillStyle = t.fg; ctx.textAlign = "center";
      // a bar with no value (a configuration that cannot exist) says so, not "NaN"
      if (bw >= 34) ctx.fillText(v === null ? "n/a" : fmt(v), x + w / 2, y(v === null ? lo : v) - 8);
      ctx.save(); ctx.translate(x + w / 2, y0 + ph + 6); ctx.rotate(-Math.PI / 4);
      ctx.textAlign = "right"; ctx.fillText(d.labels[j], 0, 0); ctx.restore();
    }
    ctx.textAlign = "center"; ctx.fillText(d.x_label || "key", x0 + n * bw / 2, height - 8);
    canvas.dataset.values = JSON.stringify(roundDeep(d.values));
    return (d.caption ? d.caption + ". " : "") + "Bars: " +
      d.labels.map(function (s, i) { return s + " " + (d.values[i] === null ? "n/a" : fmt(d.values[i])); }).join(", ") + ".";
  }

  // plot: d = {x, series: [{label, y}], caption, x_label, y_label, y_min, y_max, x_log, marker}
  // x tick labels: none cut at the canvas's right edge, none written over its neighbour (a
  // narrow phone drops the ones that would collide, never the last)
  function xTickLabels(ctx, labels, X, y, width) {
    var boxes = labels.map(function (v, i) {
      var s = String(v), w = ctx.measureText(s).width, x = Math.min(X(i), width - 2 - w / 2);
      return { s: s, x: x, l: x - w / 2, r: x + w / 2 };
    });
    var last = boxes.length - 1, right = -Infinity;
    ctx.textAlign = "center";
    boxes.forEach(function (b, i) {
      var clash = b.l < right + 4 || (i < last && b.r + 4 > boxes[last].l);
      if (clash && i !== last) return;
      ctx.fillText(b.s, b.x, y); right = b.r;
    });
  }

  function plot(canvas, d, t) {
    var room = avail(canvas), width = Math.min(room, 560), height = 250, x0 = 56, y0 = 28;
    var pw = width - x0 - 12, ph = height - y0 - 52, ctx = setup(canvas, width, height);
    caption(ctx, d.caption || "", width, t);
    var xs = d.x.map(function (v) { return d.x_log ? Math.log2(v) : v; });
    var xlo = Math.min.apply(null, xs), xhi = Math.max.apply(null, xs), all = [];
    d.series.forEach(function (s) { all = all.concat(s.y.filter(function (v) { return v !== null; })); });
    var lo = d.y_min !== undefined ? d.y_min : Math.min.apply(null, all);
    var hi = d.y_max !== undefined ? d.y_max : Math.max.apply(null, all);
    if (hi === lo) hi = lo + 1;
    function X(i) { return x0 + (xs[i] - xlo) / ((xhi - xlo) || 1) * pw; }
    function Y(v) { return y0 + ph - (v - lo) / (hi - lo) * ph; }
    ctx.strokeStyle = t.muted; ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x0, y0 + ph);
    ctx.lineTo(x0 + pw, y0 + ph); ctx.stroke(); ctx.fillStyle = t.fg; ctx.textAlign = "right";
    var ticks = niceTicks(lo, hi, 5);
    ticks.forEach(function (tv) { ctx.fillText(tickText(tv, ticks.step), x0 - 4, Y(tv)); });
    canvas.dataset.ticks = JSON.stringify(ticks);
    xTickLabels(ctx, d.x, X, y0 + ph + 12, width);
    ctx.fillText(d.x_label || "", x0 + pw / 2, height - 10);
    ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.fillText(d.y_label || "", 0, 0); ctx.restore();
    var colours = [t.bar, t.accent, t.muted];
    d.series.forEach(function (s, n) {
      ctx.strokeStyle = ctx.fillStyle = colours[n % 3]; ctx.lineWidth = 2; ctx.setLineDash(n ? [5, 3] : []);
      ctx.beginPath();
      s.y.forEach(function (v, i) { if (v !== null) { if (i && s.y[i - 1] !== null) ctx.lineTo(X(i), Y(v)); else ctx.moveTo(X(i), Y(v)); } });
      ctx.stroke(); ctx.setLineDash([]); ctx.lineWidth = 1;
      s.y.forEach(function (v, i) { if (v !== null) { ctx.beginPath(); ctx.arc(X(i), Y(v), 2.5, 0, 7); ctx.fill(); } });
      ctx.textAlign = "left"; ctx.fillText(s.label, x0 + 8 + n * Math.floor(pw / 2), y0 + 4);
    });
    if (d.marker !== undefined && d.marker !== null) { // the current setting, a ring on each series
      d.series.forEach(function (s, n) {
        var v = s.y[d.marker]; if (v === null) return;
        ctx.strokeStyle = colours[n % 3]; ctx.lineWidth = 2; ctx.beginPath();
        ctx.arc(X(d.marker), Y(v), 6, 0, 7); ctx.stroke(); ctx.lineWidth = 1;
      });
    }
    canvas.dataset.values = JSON.stringify(d.series.map(function (s) { return roundDeep(s.y); }));
    return (d.caption ? d.caption + ". " : "") + d.series.map(function (s) {
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
    d.columns.forEach(function (c) { var th = document.createElement("th"); th.scope = "col"; th.textContent = c; tr.appendChild(th); });
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
  }
  var CANVAS_VIEWS = { heatmap: heatmap, bars: bars, plot: plot };

  // ---- arrows view (chapter 11's rotary pairs): a self-contained addition
  // arrows: d = {panels: [{title, arrows: [[x, y], ...]}], labels (one per arrow), caption, radius}
  // each panel a circle of the given radius with its arrows from the centre; the first arrow in
  // the main colour, the second in the accent, the third faded and dashed
  function arrows(canvas, d, t) {
    var n = d.panels.length, room = avail(canvas), gap = 8;
    var ncols = Math.max(1, Math.min(n, Math.floor((room + gap) / (120 + gap))));
    var size = Math.min(150, Math.floor((room - gap * (ncols - 1)) / ncols)), top = 44;
    var width = ncols * size + (ncols - 1) * gap, rows = Math.ceil(n / ncols);
    var height = top + rows * (size + 18) + 4, ctx = setup(canvas, width, height);
    var colours = [t.bar, t.accent, t.muted], r0 = (size / 2 - 12) / (d.radius || 1);
    caption(ctx, d.caption || "", width, t);
    var lx = 4; // legend
    d.labels.forEach(function (s, i) {
      ctx.strokeStyle = colours[i % 3]; ctx.lineWidth = 3; ctx.setLineDash(i === 2 ? [4, 3] : []);
      ctx.beginPath(); ctx.moveTo(lx, 30); ctx.lineTo(lx + 18, 30); ctx.stroke();
      ctx.setLineDash([]); ctx.lineWidth = 1; ctx.fillStyle = t.fg; ctx.textAlign = "left";
      ctx.fillText(s, lx + 22, 30); lx += 30 + ctx.measureText(s).width;
    });
    d.panels.forEach(function (p, k) {
      var x0 = (k % ncols) * (size + gap), y0 = top + Math.floor(k / ncols) * (size + 18);
      var cx = x0 + size / 2, cy = y0 + 18 + size / 2 - 6;
      ctx.fillStyle = t.fg; ctx.textAlign = "center"; ctx.fillText(p.title, cx, y0 + 6);
      ctx.strokeStyle = t.muted; ctx.beginPath(); ctx.arc(cx, cy, (d.radius || 1) * r0, 0, 7);
      ctx.moveTo(cx - size / 2 + 6, cy); ctx.lineTo(cx + size / 2 - 6, cy);
      ctx.moveTo(cx, cy - size / 2 + 8); ctx.lineTo(cx, cy + size / 2 - 8); ctx.stroke();
      for (var i = p.arrows.length - 1; i >= 0; i--) { // the faded one underneath
        var a = p.arrows[i]; if (a[0] === null || a[1] === null) continue;
        var ex = cx + a[0] * r0, ey = cy - a[1] * r0, ang = Math.atan2(ey - cy, ex - cx);
        ctx.strokeStyle = ctx.fillStyle = colours[i % 3]; ctx.lineWidth = i === 2 ? 1.5 : 2.5;
        ctx.setLineDash(i === 2 ? [4, 3] : []);
        ctx.beginPath(); ctx.moveTo(cx, cy); ctx.lineTo(ex, ey); ctx.stroke(); ctx.setLineDash([]);
        ctx.beginPath(); ctx.moveTo(ex, ey);
        ctx.lineTo(ex - 8 * Math.cos(ang - 0.4), ey - 8 * Math.sin(ang - 0.4));
        ctx.lineTo(ex - 8 * Math.cos(ang + 0.4), ey - 8 * Math.sin(ang + 0.4)); ctx.fill();
        ctx.lineWidth = 1;
      }
    });
    canvas.dataset.values = JSON.stringify(d.panels.map(function (p) { return roundDeep(p.arrows); }));
    return (d.caption ? d.caption + ". " : "") + d.panels.map(function (p) {
      return p.title + ": " + p.arrows.map(function (a, i) {
        return d.labels[i] + " (" + fmt(a[0]) + ", " + fmt(a[1]) + ")";
      }).join(", ");
    }).join("; ") + ".";
  }
  CANVAS_VIEWS.arrows = arrows;

  // ---- plot with both axes log2-spaced (chapter 10's cache against the context): a
  // self-contained addition. A plot whose data has y_log: true (and x_log) is drawn here, every
  // other plot by plot() above. Ticks: powers of 2 (1/8, 1, 4, ...), so a quantity proportional
  // to x is a straight line of slope 1. data-values: the numbers drawn, as plot() gives them.
  function plotLogLog(canvas, d, t) {
    var room = avail(canvas), width = Math.min(room, 560), height = 250, x0 = 56, y0 = 28;
    var pw = width - x0 - 12, ph = height - y0 - 52, ctx = setup(canvas, width, height);
    caption(ctx, d.caption || "", width, t);
    var xs = d.x.map(function (v) { return Math.log2(v); }), all = [];
    d.series.forEach(function (s) { all = all.concat(s.y.filter(function (v) { return v !== null && v > 0; })); });
    var xlo = Math.min.apply(null, xs), xhi = Math.max.apply(null, xs);
    var lo = Math.floor(Math.log2(Math.min.apply(null, all))), hi = Math.ceil(Math.log2(Math.max.apply(null, all)));
    if (hi === lo) hi = lo + 1;
    var step = Math.max(1, Math.ceil((hi - lo) / 5));
    lo = Math.floor(lo / step) * step; hi = Math.ceil(hi / step) * step;
    function X(i) { return x0 + (xs[i] - xlo) / ((xhi - xlo) || 1) * pw; }
    function Y(v) { return y0 + ph - (Math.log2(v) - lo) / (hi - lo) * ph; }
    function power(k) { return k >= 0 ? String(Math.pow(2, k)) : "1/" + Math.pow(2, -k); }
    ctx.strokeStyle = t.muted; ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x0, y0 + ph);
    ctx.lineTo(x0 + pw, y0 + ph); ctx.stroke(); ctx.fillStyle = t.fg; ctx.textAlign = "right";
    for (var k = lo; k <= hi; k += step) ctx.fillText(power(k), x0 - 4, Y(Math.pow(2, k)));
    xTickLabels(ctx, d.x, X, y0 + ph + 12, width);
    ctx.fillText(d.x_label || "", x0 + pw / 2, height - 10);
    ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.fillText(d.y_label || "", 0, 0); ctx.restore();
    var colours = [t.bar, t.accent, t.muted];
    function ok(v) { return v !== null && v > 0; }
    d.series.forEach(function (s, n) {
      ctx.strokeStyle = ctx.fillStyle = colours[n % 3]; ctx.lineWidth = 2; ctx.setLineDash(n ? [5, 3] : []);
      ctx.beginPath();
      s.y.forEach(function (v, i) { if (ok(v)) { if (i && ok(s.y[i - 1])) ctx.lineTo(X(i), Y(v)); else ctx.moveTo(X(i), Y(v)); } });
      ctx.stroke(); ctx.setLineDash([]); ctx.lineWidth = 1;
      s.y.forEach(function (v, i) { if (ok(v)) { ctx.beginPath(); ctx.arc(X(i), Y(v), 2.5, 0, 7); ctx.fill(); } });
      ctx.textAlign = "left"; ctx.fillText(s.label, x0 + 8 + n * Math.floor(pw / 2), y0 + 4);
    });
    if (d.marker !== undefined && d.marker !== null) { // the current setting, a ring on each series
      d.series.forEach(function (s, n) {
        var v = s.y[d.marker]; if (!ok(v)) return;
        ctx.strokeStyle = colours[n % 3]; ctx.lineWidth = 2; ctx.beginPath();
        ctx.arc(X(d.marker), Y(v), 6, 0, 7); ctx.stroke(); ctx.lineWidth = 1;
      });
    }
    canvas.dataset.values = JSON.stringify(d.series.map(function (s) { return roundDeep(s.y); }));
    return (d.caption ? d.caption + ". " : "") + "Both axes on a log scale. " + d.series.map(function (s) {
      return s.label + ": " + d.x.map(function (x, i) { return x + " " + fmt(s.y[i]); }).join(", ");
    }).join("; ") + ".";
  }
  CANVAS_VIEWS.plot = (function (linear) {
    return function (canvas, d, t) { return d.y_log ? plotLogLog(canvas, d, t) : linear(canvas, d, t); };
  })(CANVAS_VIEWS.plot);
  // ---------------------------------------------------------------- lines view (one head)
  // lines: d = {grids (H, Lq, Lk), rows (query labels), cols (key labels), titles, head (the
  //   head shown first), focus ([side, index] or null), focus_from ({knob, queries: [query
  //   index or null per value of that control]}), caption, label}. In the manner of bertviz's
  //   head view: queries in a left column, keys in a right one, a line for every pair whose
  //   width and opacity are the weight. Every token is a button: keyboard focus or a mouse over
  //   it shows only its lines, a click or tap pins them (aria-pressed; Escape unpins), arrow
  //   keys move between tokens (one tab stop per column). With H > 1 a select picks the head.
  //   The view's element carries data-values = {head, focus: {side, index, label} | null,
  //   lines: [[query, key, weight], ...] (every line drawn)}, data-focus-draws (its own redraws),
  //   data-drawn-at and data-draw-ms; its canvas an aria-label saying what it draws.
  var LINE_ROW = 26, LINE_CUT = 0.05; // lines of a weight under LINE_CUT are not drawn
  function lines(box, d, t) {
    var shape = JSON.stringify([d.rows, d.cols, d.titles, d.grids.length]), m = box.mhaLines;
    if (!m || m.shape !== shape) m = box.mhaLines = buildLines(box, d, shape);
    var base = d.focus || null, f = d.focus_from, root = box.closest(".mha-live");
    var knob = f && root && root.querySelector('[data-knob="' + f.knob + '"]');
    if (knob) { var q = f.queries[Number(knob.value)]; base = q === null || q === undefined ? null : ["query", q]; }
    if (JSON.stringify(base) !== JSON.stringify(m.base)) m.pinned = null; // a new step: unpin
    if (m.d && m.d.head !== d.head) m.head = d.head || 0;
    m.d = d; m.t = t; m.base = base;
    drawLines(m);
  }

  function buildLines(box, d, shape) {
    var m = { shape: shape, box: box, head: d.head || 0, pinned: null, hover: null, base: null,
      pointer: false, buttons: { query: [], key: [] } };
    box.textContent = "";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "lines view: " + (d.caption || "one head") +
      "; tokens are buttons: focus one to see only its lines");
    if (d.grids.length > 1) { // the head picker
      var id = "mha-lines-" + (++counter), wrap = el("div", { "class": "mha-control" });
      var sel = el("select", { id: id });
      wrap.appendChild(el("label", { "for": id }, "head"));
      d.grids.forEach(function (g, h) { sel.appendChild(el("option", { value: String(h) }, d.titles ? d.titles[h] : "head " + h)); });
      sel.value = String(m.head); fitSelect(sel, wrap);
      sel.addEventListener("change", function () { m.head = Number(sel.value); drawLines(m); });
      wrap.appendChild(sel); box.appendChild(wrap); m.select = sel;
    }
    m.cap = el("p"); m.cap.style.cssText = "margin:.2em 0;font-weight:600";
    box.appendChild(m.cap);
    m.legend = el("p", { "class": "mha-lines-legend" }); m.legend.style.cssText = "margin:.2em 0;font-size:13px";
    box.appendChild(m.legend);
    m.said = el("p", { "class": "mha-lines-readout", "aria-live": "polite" });
    m.said.style.cssText = "margin:.2em 0;min-height:1.3em";
    box.appendChild(m.said);
    var row = el("div"); row.style.cssText = "display:flex;align-items:flex-start";
    function column(side, labels) {
      var col = el("div", { role: "group", "aria-label": side === "query" ? "queries" : "keys" });
      col.style.cssText = "display:flex;flex-direction:column;flex:none;align-items:" +
        (side === "query" ? "flex-end" : "flex-start");
      var head = el("div", {}, side === "query" ? "queries" : "keys");
      head.style.cssText = "height:22px;line-height:22px;font-size:12px;opacity:.8";
      col.appendChild(head);
      labels.forEach(function (s, i) {
        var b = el("button", { type: "button", "aria-pressed": "false", tabindex: i ? "-1" : "0",
          "aria-label": side + " " + i + ": " + s }, s);
        b.style.cssText = "height:" + LINE_ROW + "px;min-width:32px;margin:0;padding:0 6px;" +
          "border:1px solid transparent;border-radius:4px;background:transparent;color:inherit;" +
          "font:inherit;font-size:13px;cursor:pointer;white-space:nowrap";
        b.addEventListener("pointerdown", function (e) { m.pointer = e.pointerType !== "mouse"; });
        b.addEventListener("pointerenter", function (e) { if (e.pointerType === "mouse") { m.hover = [side, i]; drawLines(m); } });
        b.addEventListener("pointerleave", function (e) { if (e.pointerType === "mouse") { m.hover = null; drawLines(m); } });
        b.addEventListener("focus", function () {
          m.buttons[side].forEach(function (o) { o.tabIndex = o === b ? 0 : -1; }); // roving tab stop
          if (!m.pointer) { m.hover = [side, i]; drawLines(m); } // a tap pins instead (click)
        });
        b.addEventListener("blur", function () { m.pointer = false; if (m.hover) { m.hover = null; drawLines(m); } });
        b.addEventListener("click", function () {
          m.pointer = false;
          m.pinned = m.pinned && m.pinned[0] === side && m.pinned[1] === i ? null : [side, i];
          drawLines(m);
        });
        b.addEventListener("keydown", function (e) {
          var list = m.buttons[side], other = m.buttons[side === "query" ? "key" : "query"], to = null;
          if (e.key === "ArrowDown") to = list[Math.min(list.length - 1, i + 1)];
          else if (e.key === "ArrowUp") to = list[Math.max(0, i - 1)];
          else if (e.key === "Home") to = list[0];
          else if (e.key === "End") to = list[list.length - 1];
          else if (e.key === "ArrowRight" && side === "query" || e.key === "ArrowLeft" && side === "key") to = other[Math.min(other.length - 1, i)];
          else if (e.key === "Escape" && m.pinned) { m.pinned = null; drawLines(m); e.preventDefault(); return; }
          if (to) { e.preventDefault(); to.focus(); }
        });
        m.buttons[side].push(b); col.appendChild(b);
      });
      return col;
    }
    m.left = column("query", d.rows);
    m.canvas = el("canvas", { role: "img" });
    m.canvas.style.cssText = "margin:22px 0 0;flex:none";
    m.right = column("key", d.cols);
    row.appendChild(m.left); row.appendChild(m.canvas); row.appendChild(m.right);
    box.appendChild(row);
    return m;
  }

  function drawLines(m) {
    var start = performance.now(), d = m.d, t = m.t, h = m.head, w = d.grids[h];
    var Lq = d.rows.length, Lk = d.cols.length, f = m.hover || m.pinned || m.base, drawn = [];
    var cut = d.threshold === undefined ? LINE_CUT : d.threshold;
    if (m.select) m.select.value = String(h);
    ["query", "key"].forEach(function (side) {
      m.buttons[side].forEach(function (b, i) {
        var on = f && f[0] === side && f[1] === i, pin = m.pinned && m.pinned[0] === side && m.pinned[1] === i;
        b.style.background = on ? (t.dark ? "rgba(255,166,87,.22)" : "rgba(194,78,0,.12)") : "transparent";
        b.style.borderColor = on ? t.accent : "transparent";
        b.setAttribute("aria-pressed", pin ? "true" : "false");
      });
    });
    var room = (m.box.parentElement && m.box.parentElement.clientWidth) || 700;
    var width = Math.max(80, Math.min(260, room - m.left.offsetWidth - m.right.offsetWidth - 8));
    var height = Math.max(Lq, Lk) * LINE_ROW, ctx = setup(m.canvas, width, height), i, j;
    function yq(i) { return (i + 0.5) * LINE_ROW; }
    ctx.strokeStyle = t.bar; ctx.lineCap = "round";
    for (i = 0; i < Lq; i++) {
      if (f && f[0] === "query" && f[1] !== i) continue;
      for (j = 0; j < Lk; j++) {
        if (f && f[0] === "key" && f[1] !== j) continue;
        var v = w[i][j] === null ? 0 : w[i][j], a = Math.max(0, Math.min(1, v));
        drawn.push([i, j, round(v)]);
        if (a < cut) continue;
        ctx.globalAlpha = a; ctx.lineWidth = 0.5 + 5 * a;
        ctx.beginPath(); ctx.moveTo(2, yq(i)); ctx.lineTo(width - 2, yq(j)); ctx.stroke();
      }
    }
    ctx.globalAlpha = 1; ctx.lineWidth = 1;
    var head = d.titles ? d.titles[h] : "", who = f ? f[0] + " " + (f[0] === "query" ? d.rows : d.cols)[f[1]] : null;
    m.cap.textContent = (d.caption || "") + (head && d.grids.length > 1 ? " (" + head + ")" : "") +
      (who ? ": the lines of " + who : ": every query's lines");
    var words;
    if (f) {
      words = who + ": " + drawn.map(function (l) { return (f[0] === "query" ? d.cols[l[1]] : d.rows[l[0]]) + " " + fmt(l[2]); }).join(", ");
    } else {
      words = "the strongest line of each query: " + w.map(function (r, i) {
        var best = 0; r.forEach(function (x, j) { if (x > r[best]) best = j; });
        return d.rows[i] + " to " + d.cols[best] + " " + fmt(r[best]);
      }).join(", ");
    }
    m.canvas.setAttribute("aria-label", "Lines from queries (left) to keys (right), width and opacity the " +
      (d.label || "attention weight") + (head ? ", " + head : "") + "; " + words + ".");
    var said = linesSaid(d, f, drawn, cut);
    m.legend.textContent = "Line width and opacity: the " + (d.label || "attention weight") +
      " (thin and faint near " + cut + ", thick and solid at 1); lines under " + cut + " are not drawn.";
    m.said.textContent = said.text;
    m.box.dataset.values = JSON.stringify({ head: h, focus: f ? { side: f[0], index: f[1],
      label: (f[0] === "query" ? d.rows : d.cols)[f[1]] } : null, lines: drawn, threshold: cut,
      shown: said.shown, largest: said.largest });
    m.box.dataset.focusDraws = String(+(m.box.dataset.focusDraws || 0) + 1);
    m.box.dataset.drawnAt = String(performance.now());
    m.box.dataset.drawMs = String(+m.box.dataset.drawnAt - start);
  }
  // what a focused token's lines say, in words: its largest weights ("m \u2192 c: 0.97"), or
  // that none reaches the drawing threshold (a key nobody attends to draws nothing)
  function linesSaid(d, f, drawn, cut) {
    var shown = drawn.filter(function (l) { return l[2] !== null && l[2] >= cut; }).length;
    if (!f) return { shown: shown, largest: [], text: "Focus, hover or tap a token to see only its lines and their weights." };
    var name = (f[0] === "query" ? d.rows : d.cols)[f[1]];
    var top = drawn.slice().sort(function (a, b) { return b[2] - a[2]; }).slice(0, 3)
      .filter(function (l) { return l[2] >= cut; });
    if (!top.length) {
      return { shown: 0, largest: [], text: f[0] === "key" ?
        "No query puts more than " + cut + " on key " + name + " (" + f[1] + "): no line is drawn." :
        "Query " + name + " (" + f[1] + ") puts no weight above " + cut + " on any key: no line is drawn." };
    }
    var largest = top.map(function (l) { return [l[0], l[1], l[2]]; });
    return { shown: shown, largest: largest, text: (f[0] === "query" ? "Query " : "Key ") + name + " (" + f[1] +
      "), largest weights: " + top.map(function (l) {
        return d.rows[l[0]] + " \u2192 " + d.cols[l[1]] + ": " + fmt(l[2]);
      }).join(", ") + (shown > top.length ? " (" + shown + " lines over " + cut + ")" : "") + "." };
  }
  var DOM_VIEWS = { lines: lines };

  // ---------------------------------------------------------------- in-page compute
  var COMPUTE = {};
  function decode(b64) { // base64 of little-endian float32 -> Float32Array
    var s = atob(b64), bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }
  // weights (H, Lq, Lk); o: {H, Hkv, Dh, Lq, Lk, qStride, kStride, T, allowed(i, j)}; as
  // mha.scaled_dot_product_attention: softmax_j(q_i(h) . k_j(g) / (sqrt(Dh) T)), g = h // (H / Hkv)
  function attention(q, k, o) {
    var group = o.H / o.Hkv, scale = 1 / (Math.sqrt(o.Dh) * o.T), out = [];
    for (var h = 0; h < o.H; h++) {
      var g = Math.floor(h / group), rows = [];
      for (var i = 0; i < o.Lq; i++) {
        var s = new Array(o.Lk), m = -Infinity, sum = 0, j;
        for (j = 0; j < o.Lk; j++) {
          if (!o.allowed(i, j)) { s[j] = -Infinity; continue; }
          var dot = 0, qi = i * o.qStride + h * o.Dh, kj = j * o.kStride + g * o.Dh;
          for (var d = 0; d < o.Dh; d++) dot += q[qi + d] * k[kj + d];
          s[j] = dot * scale;
          if (s[j] > m) m = s[j];
        }
        for (j = 0; j < o.Lk; j++) { s[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - m); sum += s[j]; }
        for (j = 0; j < o.Lk; j++) s[j] = sum > 0 ? s[j] / sum : 0; // a row with no key: zeros
        rows.push(s);
      }
      out.push(rows);
    }
    return out;
  }


  // chapter 07's explorer (mha.live.explorer): too many settings to list, so the page computes
  // the weights from the queries and keys Python exported (split into heads, mask, temperature,
  // softmax), the same arithmetic as mha.explore.explore_once
  COMPUTE.explorer = function (v, data, changed, root) {
    var memo = root.mhaMemo || (root.mhaMemo = { cache: {} }), src = data.sources[v.source];
    var trained = src.kind !== "random", out = { options: {}, disabled: {}, set: {} };
    function got(key, b64) { return memo.cache[key] || (memo.cache[key] = decode(b64)); }
    ["num_heads", "num_kv_heads", "seq_len", "mask", "sentence"].forEach(function (n) { out.disabled[n] = trained; });
    out.disabled.d_model = true;
    if (changed === "source" && trained && data.sources[memo.lastSource || v.source].kind === "random") {
      out.set.temperature = 1; // a trained source from the random layer: T = 1, the model as trained
    }
    memo.lastSource = v.source;
    // without grouping (num_kv_heads = num_heads) the two move together, as in mha.widgets
    var prevH = memo.lastH === undefined ? v.num_heads : memo.lastH;
    if (changed === "num_heads" && v.num_kv_heads === prevH) out.set.num_kv_heads = v.num_heads;
    memo.lastH = v.num_heads;
    var offered = [1, 2, 4, 8, 16].map(function (h, i) { return v.num_heads % h === 0 ? i : -1; })
      .filter(function (i) { return i >= 0; });
    out.options.num_kv_heads = offered;
    var T = v.temperature, seed = String(v.seed), q, k, o, tq, tk, titles, caption, counts, table;
    if (!trained) {
      var H = v.num_heads, Hkv = v.num_kv_heads, L = v.seq_len, Dh = data.d_model / H;
      var key = seed + "|" + v.sentence, valid = Math.min(data.lengths[v.sentence], L);
      if (H % Hkv) Hkv = H; // a moment before the options follow
      q = got("q" + key, src.q[key]); k = got("k" + key + Hkv * Dh, src.k[key + "|" + (Hkv * Dh)]);
      tq = tk = data.tokens[v.sentence].slice(0, L);
      o = { H: H, Hkv: Hkv, Dh: Dh, Lq: L, Lk: L, qStride: data.d_model, kStride: Hkv * Dh, T: T,
        allowed: v.mask === "causal" ? function (i, j) { return j <= i; }
          : v.mask === "padding" ? function (i, j) { return j < valid; } : function () { return true; } };
      titles = [];
      for (var h = 0; h < H; h++) titles.push("head " + h + (Hkv < H ? " (kv " + Math.floor(h / (H / Hkv)) + ")" : ""));
      caption = H + " heads" + (Hkv < H ? ", " + Hkv + " key/value heads" : "") + ", L = " + L + ", d_model = " + data.d_model +
        ", T = " + T.toFixed(2) + ", mask: " + v.mask + ", seed " + seed;
      var c = data.counts[H + "," + Hkv + "," + L];
      counts = "d_head = " + Dh + ", parameters " + c[0].toLocaleString("en") + ", FLOPs " +
        c[1].toLocaleString("en") + ", KV cache values " + c[2].toLocaleString("en");
      table = null;
    } else {
      var view = src.views[seed];
      q = got("q" + v.source + seed, view.q); k = got("k" + v.source + seed, view.k);
      tq = view.tokens_q; tk = view.tokens_k;
      o = { H: src.H, Hkv: src.H, Dh: src.Dh, Lq: tq.length, Lk: tk.length, qStride: src.H * src.Dh,
        kStride: src.H * src.Dh, T: T, allowed: src.causal ? function (i, j) { return j <= i; } : function () { return true; } };
      titles = src.titles; caption = v.source + " (trained), input sample " + seed +
        (tk.length === tq.length ? ", L = " + tq.length : ", Lq = " + tq.length + ", Lk = " + tk.length) + ", T = " + T.toFixed(2);
      counts = src.note; table = src.table;
    }
    return {
      views: { counts: { text: counts }, table: table,
        heads: { grids: attention(q, k, o), rows: tq, cols: tk, titles: titles, caption: caption,
          vmin: 0, vmax: 1, scale: "viridis", label: "attention weight" } },
      readout: caption + ".", options: out.options, disabled: out.disabled, set: out.set,
      unused: trained ? { d_model: 1, num_heads: 1, num_kv_heads: 1, seq_len: 1, mask: 1, sentence: 1 } : null,
      state: { source: v.source, seed: Number(seed), temperature: T, num_heads: trained ? src.H : v.num_heads,
        num_kv_heads: trained ? src.H : o.Hkv, seq_len: tq.length,
        mask_kind: trained ? (src.causal ? "causal" : "none") : v.mask, sentence: v.sentence } };
  };

  // the explorer's second view, one head as lines (mha.live.explorer's "view" control picks the
  // heatmaps or the lines of the same weights; the lines view has its own head picker)
  COMPUTE.explorer = (function (heatmaps) {
    return function (v, data, changed, root) {
      var st = heatmaps(v, data, changed, root), asLines = v.view === "lines", w = st.views.heads;
      st.views.lines = asLines ? { grids: w.grids, rows: w.rows, cols: w.cols, titles: w.titles,
        head: 0, focus: null, caption: w.caption, label: w.label } : null;
      if (asLines) st.views.heads = null;
      if (v.view !== undefined) st.state.view = v.view;
      return st;
    };
  })(COMPUTE.explorer);

  // ---------------------------------------------------------------- controls
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // a select as wide as its longest option (never clipped), its label above it when the row is
  // too narrow for both (a phone), never wider than the figure
  function fitSelect(sel, wrap) {
    sel.style.maxWidth = "100%"; sel.style.minWidth = "0"; wrap.style.flexWrap = "wrap";
  }
  function labelOf(c, i) { return c.labels ? c.labels[i] : String(c.values[i]); }

  function buildControl(c, uid, onChange) {
    var wrap = el("div", { "class": "mha-control" }), id = uid + "-" + c.name, input, out;
    var lab = el("label", { "for": id }, c.label);
    wrap.appendChild(lab);
    if (c.kind === "select") {
      input = el("select", { id: id });
      c.values.forEach(function (v, i) { input.appendChild(el("option", { value: String(i) }, labelOf(c, i))); });
      input.value = String(c.value);
      fitSelect(input, wrap);
    } else if (c.kind === "toggle") {
      input = el("input", { id: id, type: "checkbox" });
      input.checked = c.value === 1;
      wrap.className += " mha-toggle";
    } else { // range and step: an index into the listed values
      input = el("input", { id: id, type: "range", min: "0", max: String(c.values.length - 1), step: "1",
        value: String(c.value) });
    }
    input.dataset.knob = c.name;
    if (c.disabled) input.disabled = true;
    if (c.kind === "step") {
      var prev = el("button", { type: "button", "aria-label": c.label + ": previous step" }, "\u25c0");
      var next = el("button", { type: "button", "aria-label": c.label + ": next step" }, "\u25b6");
      [[prev, -1], [next, 1]].forEach(function (p) {
        p[0].addEventListener("click", function () {
          var v = Math.max(0, Math.min(Number(input.max), Number(input.value) + p[1]));
          if (String(v) !== input.value) { input.value = String(v); onChange(c.name); }
        });
      });
      wrap.appendChild(prev); wrap.appendChild(input); wrap.appendChild(next);
      wrap.className += " mha-step";
    } else {
      wrap.appendChild(input);
    }
    if (c.kind === "range" || c.kind === "step") { out = el("output", { "for": id }); wrap.appendChild(out); }
    input.addEventListener(c.kind === "range" || c.kind === "step" ? "input" : "change", function () { onChange(c.name); });
    if (c.kind === "range" || c.kind === "step") input.addEventListener("change", function () { onChange(c.name); });
    return { spec: c, input: input, out: out };
  }

  // ---------------------------------------------------------------- a figure
  var counter = 0;
  function mount(root) {
    var spec = JSON.parse(root.querySelector("script.mha-spec").textContent), uid = "mha-live-" + (++counter);
    var ctl = {}, views = {}, last = null;
    var box = root.querySelector(".mha-controls");
    function index(name) { var c = ctl[name]; return c.spec.kind === "toggle" ? (c.input.checked ? 1 : 0) : Number(c.input.value); }
    function values() {
      var v = {}; spec.controls.forEach(function (c) { v[c.name] = c.values[index(c.name)]; }); return v;
    }
    spec.controls.forEach(function (c) { ctl[c.name] = buildControl(c, uid, redraw); box.appendChild(ctl[c.name].input.parentElement); });
    var area = root.querySelector(".mha-views");
    spec.views.forEach(function (v) {
      var e = CANVAS_VIEWS[v.kind] ? el("canvas", { role: "img", "aria-label": v.label || v.name })
        : el("div", { "class": "mha-" + v.kind });
      e.dataset.view = v.name; area.appendChild(e); views[v.name] = { spec: v, el: e };
    });
    var readout = root.querySelector(".mha-readout");

    function apply(st) { // options and disabled controls a state asks for
      Object.keys(st.options || {}).forEach(function (name) {
        var c = ctl[name], offered = st.options[name], sel = c.input, old = Number(sel.value);
        var now = Array.prototype.map.call(sel.options, function (o) { return Number(o.value); });
        if (now.join() !== offered.join()) {
          sel.textContent = "";
          offered.forEach(function (i) { sel.appendChild(el("option", { value: String(i) }, labelOf(c.spec, i))); });
        }
        var pick = offered.indexOf(old) >= 0 ? old : offered.filter(function (i) { return i <= old; }).pop();
        sel.value = String(pick === undefined ? offered[0] : pick);
      });
      Object.keys(st.disabled || {}).forEach(function (name) { ctl[name].input.disabled = st.disabled[name]; });
      Object.keys(st.set || {}).forEach(function (name) { // set a control to the value given
        var i = ctl[name].spec.values.indexOf(st.set[name]); if (i >= 0) ctl[name].input.value = String(i);
      });
    }

    function state(changed) {
      if (spec.compute) {
        var f = COMPUTE[spec.compute], st = f(values(), spec.data, changed, root);
        if (st.options || st.disabled || st.set) { apply(st); st = f(values(), spec.data, null, root); }
        return st;
      }
      var key = spec.controls.map(function (c) { return index(c.name); }).join(",");
      var st = spec.states[key];
      if (st && st.limits && limit(st.limits, changed)) {
        st = spec.states[spec.controls.map(function (c) { return index(c.name); }).join(",")];
      }
      return st;
    }
    // a listed state may limit a slider to its first max + 1 values (chapter 12: the block
    // slider runs to the last block of this block size) and send it back to 0 when the control
    // named in reset moves: {limits: {control: {max, reset}}}; true when a value changed
    function limit(limits, changed) {
      var moved = false;
      Object.keys(limits).forEach(function (name) {
        var c = ctl[name], lim = limits[name], old = c.input.value;
        c.input.max = String(lim.max);
        if (lim.reset && changed === lim.reset) c.input.value = "0";
        if (Number(c.input.value) > lim.max) c.input.value = String(lim.max);
        if (c.input.value !== old) moved = true;
      });
      return moved;
    }

    function redraw(changed) {
      var start = performance.now(), st = state(changed), t = theme(root);
      spec.controls.forEach(function (c) {
        var k = ctl[c.name], i = index(c.name), unused = st.unused && st.unused[c.name];
        // a control the picture does not use (a trained layer's own sizes) shows no stale value
        var shown = unused ? "\u2014" : labelOf(c, i);
        if (k.out) k.out.textContent = shown;
        if (c.kind === "range" || c.kind === "step") {
          k.input.setAttribute("aria-valuetext", unused ? "not used by this source" : shown);
        }
      });
      spec.views.forEach(function (v) {
        var d = st.views[v.name], e = views[v.name].el;
        if (typeof d === "number") d = spec.pool[d]; // listed states share their views' data
        e.hidden = d === null || d === undefined;
        if (e.hidden) return;
        if (CANVAS_VIEWS[v.kind]) e.setAttribute("aria-label", CANVAS_VIEWS[v.kind](e, d, t));
        else if (v.kind === "table") table(e, d);
        else if (DOM_VIEWS[v.kind]) DOM_VIEWS[v.kind](e, d, t);
        else e.textContent = d.text;
      });
      readout.textContent = st.readout || ""; // announced when it changes (aria-live)
      root.dataset.state = JSON.stringify(st.state || values());
      last = st;
      root.dataset.drawnAt = String(performance.now());
      root.dataset.drawMs = String(+root.dataset.drawnAt - start); // look-up (or compute) + draw
      root.dataset.draws = String(+(root.dataset.draws || 0) + 1);
    }
    root.mhaRedraw = function () { redraw(undefined); };
    redraw(null);
    if (!last) throw new Error("no state drawn");
  }

  function mountAll() {
    document.querySelectorAll(".mha-live:not([data-mounted])").forEach(function (root) {
      if (!parsed(root)) return; // mounted by a later call, once the page has parsed it
      root.dataset.mounted = "1";
      try { mount(root); } catch (err) {
        var e = root.querySelector(".mha-error"); if (e) e.textContent = "The figure could not draw: " + err;
        throw err;
      }
    });
  }
  // ---- a root the page has parsed (a self-contained addition): while a page is still loading,
  // a timer of soon() may find a later figure's root whose spec and error box the parser has not
  // reached yet (a page arrives in chunks); reading that spec threw "Cannot read properties of
  // null (reading 'textContent')". A root is ready once the script after its spec (the front
  // end, inlined after it) is in the page, or the page is parsed; DOMContentLoaded mounts the rest.
  function parsed(root) {
    return document.readyState !== "loading" || !!root.querySelector("script.mha-spec + script");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { mountAll(); });

  // ---------------------------------------------------------------- chapter 05: strips, split-heads
  // (mha/live/ch05.py) strips: d = {panels: [{title, grid, focus}], heads, d_head, rows, cols,
  // labels, caption}. Panels 0 and 2 are rows x cols grids of categories (heads); panel 1 is the
  // split tensor, heads * rows rows of d_head, drawn with its heads side by side; focus is
  // [row, col] or [head, row, col]. One colour per head, neighbours far apart in hue.
  function headColour(h, H, t) {
    var k = H >= 8 ? H / 2 - 1 : 1, hue = Math.round(((h * k) % H) * 360 / H);
    return "hsl(" + hue + ",65%," + (t.dark ? "62%" : "45%") + ")";
  }
  function strips(canvas, d, t) {
    var H = d.heads, Dh = d.d_head, R = d.rows, C = d.cols, gap = 3, rowH = 10;
    var width = avail(canvas), probe = setup(canvas, 10, 10), lab = 0;
    probe.font = "10px sans-serif";
    d.labels.forEach(function (s) { lab = Math.max(lab, probe.measureText(s).width); });
    lab = Math.ceil(lab) + 6;
    var cw = (width - lab - 8 - (H - 1) * gap) / C, panelH = 22 + R * rowH + 16, top = 22;
    var ctx = setup(canvas, width, top + 3 * panelH), r, c;
    caption(ctx, d.caption || "", width, t);
    function xOf(p, col, head) { return lab + (p === 1 ? head * (Dh * cw + gap) + col * cw : col * cw); }
    d.panels.forEach(function (panel, p) {
      var y0 = top + p * panelH + 20, g = panel.grid, f = panel.focus;
      ctx.font = "bold 12px sans-serif"; ctx.fillStyle = t.fg; ctx.textAlign = "left";
      var title = panel.title;
      while (ctx.measureText(title).width > width - 8 && title.length > 12) title = title.slice(0, -2);
      if (title !== panel.title) title = title.slice(0, -1) + "\u2026";
      ctx.fillText(title, 4, y0 - 10);
      ctx.font = "10px sans-serif"; ctx.textAlign = "right";
      for (r = 0; r < R; r++) ctx.fillText(p === 1 ? "row " + r : d.labels[r], lab - 4, y0 + (r + 0.5) * rowH);
      for (var head = 0; head < (p === 1 ? H : 1); head++) {
        for (r = 0; r < R; r++) {
          var line = g[p === 1 ? head * R + r : r], start = 0;
          for (c = 1; c <= line.length; c++) { // one rectangle per run of one head
            if (c < line.length && line[c] === line[start]) continue;
            ctx.fillStyle = headColour(line[start], H, t);
            var x = xOf(p, start, head);
            ctx.fillRect(x, y0 + r * rowH, xOf(p, c, head) - x + 0.4, rowH - 1);
            start = c;
          }
        }
      }
      ctx.textAlign = "center"; ctx.fillStyle = t.fg;
      if (p === 1) {
        for (head = 0; head < H; head++) {
          if (Dh * cw >= 22 || head === f[0]) ctx.fillText("h" + head, xOf(1, Dh / 2, head), y0 + R * rowH + 8);
        }
      } else {
        [0, 128, 256, 384, 511].forEach(function (col) { ctx.fillText(String(col), Math.min(xOf(0, col + 0.5), width - 12), y0 + R * rowH + 8); });
      }
      var fr = f.length === 3 ? f[1] : f[0], fc = f.length === 3 ? f[2] : f[1], fh = f.length === 3 ? f[0] : 0;
      var fx = xOf(p, fc + 0.5, fh), fy = y0 + (fr + 0.5) * rowH;
      ctx.strokeStyle = t.fg; ctx.lineWidth = 1; ctx.beginPath(); // crosshair through the number
      ctx.moveTo(lab, fy); ctx.lineTo(xOf(p, C / (p === 1 ? H : 1), p === 1 ? H - 1 : 0), fy);
      ctx.moveTo(fx, y0); ctx.lineTo(fx, y0 + R * rowH); ctx.stroke();
      ctx.strokeStyle = t.accent; ctx.lineWidth = 2.5; ctx.beginPath(); ctx.arc(fx, fy, 6, 0, 7); ctx.stroke();
      ctx.lineWidth = 1;
    });
    canvas.dataset.values = JSON.stringify(d.panels.map(function (q) { return { grid: q.grid, focus: q.focus }; }));
    return (d.caption ? d.caption + ". " : "") + d.panels.map(function (q) {
      return q.title + ", the number at [" + q.focus.join(", ") + "]";
    }).join("; ") + ". Colour: the head (" + H + " heads).";
  }
  CANVAS_VIEWS.strips = strips;

  function ints16(b64) { // base64 of little-endian int16 -> Int16Array
    var s = atob(b64), out = new Int16Array(s.length / 2);
    for (var i = 0; i < out.length; i++) out[i] = (s.charCodeAt(2 * i) | (s.charCodeAt(2 * i + 1) << 8)) << 16 >> 16;
    return out;
  }
  // split-heads: the numbers 1..rows*cols, split into heads by mha.split_heads (or the reshape
  // without transpose) and merged back by mha.merge_heads, as Python exported them; the page
  // only finds the chosen number in them (mha.live.ch05.split_state draws the same in Python)
  COMPUTE["split-heads"] = function (v, data, changed, root) {
    var memo = root.mhaSplit || (root.mhaSplit = {}), R = data.rows, C = data.cols, H = v.num_heads;
    var Dh = C / H, key = H + "," + (v.wrong ? 1 : 0), input = memo.input || (memo.input = ints16(data.input));
    if (!memo[key]) {
      var lay = data.layouts[key], split = ints16(lay.split), merged = ints16(lay.merged);
      var pos = new Int32Array(R * C), p, r;
      for (p = 0; p < split.length; p++) pos[split[p] - 1] = p;
      var headOf = function (val) { return Math.floor(pos[val - 1] / (R * Dh)); };
      var grids = [[], [], []];
      for (r = 0; r < R; r++) {
        var a = [], b = [];
        for (var c = 0; c < C; c++) { a.push(headOf(input[r * C + c])); b.push(headOf(merged[r * C + c])); }
        grids[0].push(a); grids[2].push(b);
      }
      for (var h0 = 0; h0 < H; h0++) for (r = 0; r < R; r++) { var row = []; for (p = 0; p < Dh; p++) row.push(h0); grids[1].push(row); }
      memo[key] = { merged: merged, pos: pos, grids: grids };
    }
    var m = memo[key], n = input[v.token * C + v.feature], at = m.pos[n - 1];
    var h = Math.floor(at / (R * Dh)), rw = Math.floor(at / Dh) % R, col = at % Dh;
    var q = m.merged.indexOf(n), t2 = Math.floor(q / C), f2 = q % C;
    var name = v.wrong ? "reshape without transpose" : "split_heads", tok = data.tokens;
    var nn = n.toLocaleString("en"), heads = H + " head" + (H > 1 ? "s" : "") + " of " + Dh;
    var how = v.wrong ? "its position counting from 0, " + (n - 1) + " = " + h + " x " + (R * Dh) + " + " + rw +
        " x " + Dh + " + " + col + ": the numbers are dealt out in reading order"
      : "feature " + v.feature + " = " + h + " x " + Dh + " + " + col;
    var home = t2 === v.token && f2 === v.feature;
    return {
      views: {
        strips: { heads: H, d_head: Dh, rows: R, cols: C, labels: tok,
          caption: nn + " = input[0, " + v.token + ", " + v.feature + "], " + heads,
          panels: [
            { title: "input (1, 9, 512): colour = the head that " + name + " gives each number to",
              grid: m.grids[0], focus: [v.token, v.feature] },
            { title: name + " -> (1, " + H + ", 9, " + Dh + "): the heads side by side", grid: m.grids[1],
              focus: [h, rw, col] },
            { title: "merge_heads -> (1, 9, 512): colour = the head each number came from",
              grid: m.grids[2], focus: [t2, f2] }] },
        path: { columns: ["step", "index", "value"], caption: "The number " + nn + ", step by step",
          rows: [["input", "[0, " + v.token + ", " + v.feature + "]", n], [name, "[0, " + h + ", " + rw + ", " + col + "]", n],
            ["merge_heads", "[0, " + t2 + ", " + f2 + "]", n]] } },
      readout: nn + " (token " + v.token + " \"" + tok[v.token] + "\", feature " + v.feature + "): " + name +
        " puts it in head " + h + ", row " + rw + ", column " + col + " (" + how + "); merge_heads brings it to token " +
        t2 + ", feature " + f2 + (home ? ", where it started." : ", not where it started (token " + v.token +
        ", feature " + v.feature + ").") + (v.wrong && H > 1 ? " The real harm is inside attention: a row of a head is" +
        " no longer one token, so the head compares pieces of different tokens." : ""),
      state: { num_heads: H, token: v.token, feature: v.feature, wrong: v.wrong, number: n, head: h, row: rw,
        column: col, back: [t2, f2] } };
  };

  // the book's theme switch: redraw in the new colours
  if (window.MutationObserver) {
    new MutationObserver(function () {
      document.querySelectorAll(".mha-live[data-mounted]").forEach(function (r) { if (r.mhaRedraw) r.mhaRedraw(); });
    }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  window.mhaLive = { version: VERSION, mountAll: mountAll, compute: COMPUTE, attention: attention,
    decode: decode, views: CANVAS_VIEWS, table: table, colour: colour };
  soon(mountAll);
})();
