/* The book's live figures: one front end for every figure (mha/static/live.js, shipped with the
 * package; no dependencies, nothing from a network). Python (mha.live) writes a figure as
 *   a div.mha-live[data-figure=NAME] holding a JSON script element (class mha-spec)
 * holding its spec; this file builds the controls, looks the state up, draws the views and says
 * in words what changed. The same code runs in the built book (no kernel), JupyterLab, Notebook,
 * VS Code and Colab: a figure is plain HTML with this script inlined.
 *
 * spec = {name, title, note, controls: [{name, label, kind: range|select|toggle|step, values,
 *         labels, value (an index), disabled}], views: [{name, kind: heatmap|bars|plot|table|
 *         text, label}], states: {"i,j,...": state} | compute: NAME, data}
 * state = {views: {NAME: data}, readout: "what the picture shows", state: {...}, disabled:
 *          {control: bool}, options: {control: [indices offered]}}; with listed states a
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
  function theme(el) { // text and line colours from the page (the book's dark mode included)
    var fg = getComputedStyle(el).color || "#222";
    var dark = document.documentElement.dataset.theme === "dark";
    return { fg: fg, muted: dark ? "#9aa4ae" : "#666", accent: dark ? "#ffa657" : "#c24e00",
      bar: dark ? "#6cb6ff" : "#1f5fa8", nan: dark ? "#555" : "#ccc", dark: dark };
  }

  function round(x) { return x === null || !isFinite(x) ? null : Math.round(x * 1e6) / 1e6; }
  function roundDeep(a) { return Array.isArray(a) ? a.map(roundDeep) : round(a); }
  function fmt(x) { return x === null ? "NaN" : (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2)); }

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
    for (var k = 0; k <= 4; k++) ctx.fillText(String(+(lo + (hi - lo) * k / 4).toFixed(2)), x + 16, y + h - (k / 4) * (h - 1));
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
    for (var k = 0; k <= 4; k++) { var tv = lo + (hi - lo) * k / 4; ctx.fillText(String(+tv.toFixed(2)), x0 - 4, y(tv)); }
    ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
    ctx.fillText(d.y_label || "attention weight", 0, 0); ctx.restore();
    for (var j = 0; j < n; j++) {
      var v = d.values[j], x = x0 + j * bw + Math.max(2, bw * 0.15), w = bw - 2 * Math.max(2, bw * 0.15);
      ctx.fillStyle = hl.indexOf(j) >= 0 ? t.accent : t.bar;
      if (v !== null) ctx.fillRect(x, y(v), w, y(lo) - y(v));
      ctx.fillStyle = t.fg; ctx.textAlign = "center";
      if (bw >= 34) ctx.fillText(fmt(v), x + w / 2, y(v === null ? lo : v) - 8);
      ctx.save(); ctx.translate(x + w / 2, y0 + ph + 6); ctx.rotate(-Math.PI / 4);
      ctx.textAlign = "right"; ctx.fillText(d.labels[j], 0, 0); ctx.restore();
    }
    ctx.textAlign = "center"; ctx.fillText(d.x_label || "key", x0 + n * bw / 2, height - 8);
    canvas.dataset.values = JSON.stringify(roundDeep(d.values));
    return (d.caption ? d.caption + ". " : "") + "Bars: " +
      d.labels.map(function (s, i) { return s + " " + fmt(d.values[i]); }).join(", ") + ".";
  }

  // plot: d = {x, series: [{label, y}], caption, x_label, y_label, y_min, y_max, x_log, marker}
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
    for (var k = 0; k <= 4; k++) { var tv = lo + (hi - lo) * k / 4; ctx.fillText(String(+tv.toFixed(2)), x0 - 4, Y(tv)); }
    ctx.textAlign = "center";
    d.x.forEach(function (v, i) { ctx.fillText(String(v), X(i), y0 + ph + 12); });
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

  // ---------------------------------------------------------------- controls
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
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
          var v = Math.max(0, Math.min(c.values.length - 1, Number(input.value) + p[1]));
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
    }

    function state(changed) {
      if (spec.compute) {
        var f = COMPUTE[spec.compute], st = f(values(), spec.data, changed, root);
        if (st.options || st.disabled) { apply(st); st = f(values(), spec.data, changed, root); }
        return st;
      }
      var key = spec.controls.map(function (c) { return index(c.name); }).join(",");
      return spec.states[key];
    }

    function redraw(changed) {
      var start = performance.now(), st = state(changed), t = theme(root);
      spec.controls.forEach(function (c) {
        var k = ctl[c.name], i = index(c.name);
        if (k.out) k.out.textContent = labelOf(c, i);
        if (c.kind === "range" || c.kind === "step") k.input.setAttribute("aria-valuetext", labelOf(c, i));
      });
      spec.views.forEach(function (v) {
        var d = st.views[v.name], e = views[v.name].el;
        if (typeof d === "number") d = spec.pool[d]; // listed states share their views' data
        e.hidden = d === null || d === undefined;
        if (e.hidden) return;
        if (CANVAS_VIEWS[v.kind]) e.setAttribute("aria-label", CANVAS_VIEWS[v.kind](e, d, t));
        else if (v.kind === "table") table(e, d);
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
      root.dataset.mounted = "1";
      try { mount(root); } catch (err) {
        var e = root.querySelector(".mha-error"); if (e) e.textContent = "The figure could not draw: " + err;
        throw err;
      }
    });
  }
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
    var how = v.wrong ? (n - 1) + " = " + h + " x " + (R * Dh) + " + " + rw + " x " + Dh + " + " + col + " (reading order)"
      : v.feature + " = " + h + " x " + Dh + " + " + col;
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
        ", feature " + v.feature + ")."),
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
