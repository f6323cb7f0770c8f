/* The attention explorer's front end (mha/static/explorer.js, vendored with the package: no
 * dependencies, nothing from a network). It draws attention weights on a canvas: one heatmap
 * per head on one colour scale from 0 to 1 with a colour bar and token labels (chapter 07), or
 * the bars of one query (chapter 01).
 *
 * Two ways in, one drawing code:
 * - live (Jupyter): Python computes the weights (mha.widgets.explore_once) and sends them in a
 *   <div class="mha-live"> holding JSON; this file only draws them.
 * - static (the built book, no kernel): a <div class="mha-static"> holds what Python exported at
 *   build time (projected queries and keys at the longest length, or one query's scores); this
 *   file wires the page's controls and applies, per change, the choice of heads, seq_len, the
 *   mask, the temperature and the softmax:
 *     w[h][i][j] = softmax_j( q_i(h) . k_j(g) / (sqrt(Dh) * T) ) over the allowed keys j,
 *     g = floor(h / (H / Hkv)) (grouped-query attention), as mha.scaled_dot_product_attention.
 * Every canvas carries data-weights (the numbers drawn, JSON) for the tests.
 */
(function () {
  "use strict";
  var VERSION = 1;
  // a front end may run an output's script before the output is in the page: mount again shortly
  function soon(mount) { mount(); [0, 50, 250, 1000].forEach(function (t) { setTimeout(mount, t); }); }
  if (window.mhaViz && window.mhaViz.version >= VERSION) { soon(window.mhaViz.mountAll); return; }

  // viridis, 32 steps (matplotlib), interpolated linearly
  var VIRIDIS = "440154470d6048186a482374472e7c4538824241863e4a893a548c365d8d32658e2e6d8e2b758e" +
    "287d8e25848e228c8d1f948c1e9c8920a38625ab822eb37c3aba7648c16e58c7656ccd5a7fd34e93d741a8db34c0" +
    "df25d5e21aeae51afde725";
  var RGB = [];
  for (var c = 0; c < VIRIDIS.length; c += 6) {
    RGB.push([0, 2, 4].map(function (o) { return parseInt(VIRIDIS.substr(c + o, 2), 16); }));
  }
  function colour(v) {
    var x = Math.min(1, Math.max(0, v)) * (RGB.length - 1), i = Math.min(RGB.length - 2, Math.floor(x));
    var f = x - i, a = RGB[i], b = RGB[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }) + ")";
  }

  function decode(b64) { // base64 of little-endian float32 -> Float32Array
    var s = atob(b64), bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }

  // weights (H, Lq, Lk) as nested arrays; o: {H, Hkv, Dh, Lq, Lk, qStride, kStride, T, allowed}
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

  function round(w) { return Math.round(w * 1e6) / 1e6; }

  function setupCanvas(canvas, width, height) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(width * dpr); canvas.height = Math.ceil(height * dpr);
    canvas.style.width = width + "px"; // height follows (CSS height: auto): never distorted
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, width, height);
    ctx.font = "11px sans-serif"; ctx.textBaseline = "middle";
    return ctx;
  }

  function colourBar(ctx, x, y, h, label) {
    for (var p = 0; p < h; p++) { ctx.fillStyle = colour(1 - p / (h - 1)); ctx.fillRect(x, y + p, 12, 1); }
    ctx.strokeStyle = "#444"; ctx.strokeRect(x, y, 12, h);
    ctx.fillStyle = "#222"; ctx.textAlign = "left";
    for (var t = 0; t <= 4; t++) ctx.fillText(String(t / 4), x + 16, y + h - (t / 4) * (h - 1));
    ctx.save(); ctx.translate(x + 50, y + h / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center"; ctx.fillText(label, 0, 0); ctx.restore();
  }

  // one heatmap per head: rows = queries (tq), columns = keys (tk), colour scale 0..1
  function drawHeads(canvas, w, tq, tk, titles, caption) {
    var H = w.length, Lq = tq.length, Lk = tk.length;
    var cell = Math.max(9, Math.min(20, Math.floor(240 / Math.max(Lq, Lk))));
    var ctx = setupCanvas(canvas, 10, 10), lab = 0;
    tq.concat(tk).forEach(function (t) { lab = Math.max(lab, ctx.measureText(t).width); });
    lab = Math.ceil(lab) + 6;
    var panelW = lab + Lk * cell + 16, panelH = 18 + Lq * cell + lab, top = 38;
    // as many columns (up to 4) as the text column holds at full size: labels stay readable
    var avail = (canvas.parentElement && canvas.parentElement.clientWidth) || 1000;
    var ncols = Math.max(1, Math.min(4, H, Math.floor((avail - 80) / panelW)));
    var nrows = Math.ceil(H / ncols);
    var width = ncols * panelW + 80, height = top + nrows * panelH + 8;
    ctx = setupCanvas(canvas, width, height);
    // the title on two lines (caption, then how to read it), shrunk if it is wider than the canvas
    ctx.fillStyle = "#111"; ctx.textAlign = "left";
    var size = 12;
    do { ctx.font = "bold " + size + "px sans-serif"; } while (ctx.measureText(caption).width > width - 8 && --size > 8);
    ctx.fillText(caption, 4, 10);
    ctx.font = "11px sans-serif"; ctx.fillText("(rows: queries, columns: keys)", 4, 25);
    for (var h = 0; h < H; h++) {
      var x0 = (h % ncols) * panelW + lab, y0 = top + Math.floor(h / ncols) * panelH + 18, i, j;
      ctx.font = "11px sans-serif"; ctx.fillStyle = "#111"; ctx.textAlign = "center";
      ctx.fillText(titles[h], x0 + Lk * cell / 2, y0 - 9);
      for (i = 0; i < Lq; i++) {
        for (j = 0; j < Lk; j++) { ctx.fillStyle = colour(w[h][i][j]); ctx.fillRect(x0 + j * cell, y0 + i * cell, cell, cell); }
      }
      ctx.fillStyle = "#222"; ctx.textAlign = "right";
      for (i = 0; i < Lq; i++) ctx.fillText(tq[i], x0 - 3, y0 + (i + 0.5) * cell);
      for (j = 0; j < Lk; j++) {
        ctx.save(); ctx.translate(x0 + (j + 0.5) * cell, y0 + Lq * cell + 3); ctx.rotate(-Math.PI / 2);
        ctx.fillText(tk[j], 0, 0); ctx.restore();
      }
    }
    colourBar(ctx, width - 72, top + 18, Math.min(height - top - 30, 200), "attention weight");
    canvas.dataset.weights = JSON.stringify(w.map(function (a) { return a.map(function (r) { return r.map(round); }); }));
    canvas.dataset.heads = String(H);
    canvas.setAttribute("aria-label", caption + ". " + H + " heatmaps, one per head (" + titles.join("; ") +
      "); rows are the queries (" + tq.join(" ") + "), columns the keys; colour from 0 to 1 (viridis).");
  }

  // chapter 01: the weights of one query over the keys, as bars (0..1)
  function drawBars(canvas, w, tokens, highlight, caption) {
    var n = tokens.length, bw = 56, ph = 170, width = n * bw + 70, height = ph + 96;
    var ctx = setupCanvas(canvas, width, height), x0 = 50, y0 = 26;
    ctx.fillStyle = "#111"; ctx.font = "bold 12px sans-serif"; ctx.textAlign = "left";
    ctx.fillText(caption, 4, 10); ctx.font = "11px sans-serif";
    ctx.strokeStyle = "#888"; ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x0, y0 + ph);
    ctx.lineTo(x0 + n * bw, y0 + ph); ctx.stroke(); ctx.textAlign = "right"; ctx.fillStyle = "#222";
    for (var t = 0; t <= 4; t++) ctx.fillText(String(t / 4), x0 - 4, y0 + ph - (t / 4) * ph);
    ctx.save(); ctx.translate(12, y0 + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
    ctx.fillText("attention weight", 0, 0); ctx.restore();
    for (var j = 0; j < n; j++) {
      var x = x0 + j * bw + 8, bh = w[j] * ph;
      ctx.fillStyle = tokens[j] === highlight ? "#e66100" : "#1f77b4";
      ctx.fillRect(x, y0 + ph - bh, bw - 16, bh);
      ctx.fillStyle = "#222"; ctx.textAlign = "center";
      ctx.fillText(w[j].toFixed(2), x + (bw - 16) / 2, y0 + ph - bh - 7);
      ctx.save(); ctx.translate(x + (bw - 16) / 2, y0 + ph + 6); ctx.rotate(-Math.PI / 6);
      ctx.textAlign = "right"; ctx.fillText(tokens[j], 0, 0); ctx.restore();
    }
    ctx.textAlign = "center"; ctx.fillText("key token", x0 + n * bw / 2, height - 8);
    canvas.dataset.weights = JSON.stringify(w.map(round));
    canvas.setAttribute("aria-label", caption + ". Bars: " + tokens.map(function (t, i) {
      return t + " " + w[i].toFixed(2); }).join(", "));
  }

  function table(el, t) { // t: {columns: [...], rows: [[label, v1, ...], ...]} or null
    if (!el) return;
    el.textContent = "";
    if (!t) return;
    var tab = document.createElement("table"), tr = document.createElement("tr");
    ["head"].concat(t.columns).forEach(function (c) { var th = document.createElement("th"); th.textContent = c; tr.appendChild(th); });
    tab.appendChild(tr);
    t.rows.forEach(function (r) {
      var row = document.createElement("tr");
      r.forEach(function (v, i) {
        var td = document.createElement("td");
        td.textContent = i === 0 ? v : (typeof v === "number" ? v.toFixed(2) : v); row.appendChild(td);
      });
      tab.appendChild(row);
    });
    if (t.caption) { var cap = document.createElement("div"); cap.textContent = t.caption; el.appendChild(cap); }
    el.appendChild(tab);
  }

  function stamp(root) { root.dataset.drawnAt = String(performance.now()); root.dataset.draws = String(+(root.dataset.draws || 0) + 1); }

  // ---------------------------------------------------------------- live (Jupyter)
  function mountLive(root) {
    var p = JSON.parse(root.querySelector("script.mha-data").textContent), canvas = root.querySelector("canvas");
    if (p.kind === "bars") drawBars(canvas, p.weights, p.tokens, p.highlight, p.caption);
    else drawHeads(canvas, p.weights, p.tokens_q, p.tokens_k, p.titles, p.caption);
    table(root.querySelector(".mha-table"), p.table);
    stamp(root);
  }

  // ---------------------------------------------------------------- static (the built book)
  function divisors(n) { var d = []; for (var i = 1; i <= n; i++) if (n % i === 0) d.push(i); return d; }

  function mountStatic(root) {
    var data = JSON.parse(root.querySelector("script.mha-data").textContent);
    var canvas = root.querySelector("canvas"), ctl = {};
    // choosing a trained source from the random layer sets T = 1 (the model as trained) until
    // the temperature slider is moved; the slider's grid need not pass through 1 exactly
    var lastSource = null, tOverride = null;
    root.querySelectorAll("[data-knob]").forEach(function (e) { ctl[e.dataset.knob] = e; });
    function val(name) { var e = ctl[name]; return e.type === "range" ? Number(e.value) : e.value; }
    function show(name, text) { var o = root.querySelector('output[data-for="' + name + '"]'); if (o) o.textContent = text; }

    function updateBars() {
      var T = Math.pow(10, val("temperature")), s = data.scores, m = Math.max.apply(null, s);
      var e = s.map(function (x) { return Math.exp((x - m) / T); }), z = e.reduce(function (a, b) { return a + b; });
      show("temperature", T.toFixed(2));
      drawBars(canvas, e.map(function (x) { return x / z; }), data.tokens, data.highlight,
        data.caption.replace("{T}", T.toFixed(2)));
      root.dataset.state = JSON.stringify({ temperature: T });
    }

    function syncKv(H) { // num_kv_heads offers only the divisors of num_heads
      var sel = ctl.num_kv_heads, old = Number(sel.value), opts = divisors(H);
      if (sel.options.length !== opts.length || Number(sel.options[sel.options.length - 1].value) !== H) {
        sel.textContent = "";
        opts.forEach(function (d) { var o = document.createElement("option"); o.value = o.textContent = String(d); sel.appendChild(o); });
      }
      sel.value = String(opts.indexOf(old) >= 0 ? old : opts.filter(function (d) { return d <= old; }).pop() || 1);
    }

    function updateHeads() {
      var name = val("source"), src = data.sources[name];
      var seed = String(val("seed")), trained = src.kind !== "random", q, k, o, tq, tk, titles, caption;
      if (trained && lastSource !== null && data.sources[lastSource].kind === "random") {
        tOverride = 1; ctl.temperature.value = "0"; // the slider snaps to its grid point nearest 1
      }
      lastSource = name;
      var T = tOverride !== null ? tOverride : Math.pow(10, val("temperature"));
      ["d_model", "num_heads", "num_kv_heads", "seq_len", "mask", "sentence"].forEach(function (n) {
        if (ctl[n]) ctl[n].disabled = trained || n === "d_model";
      });
      show("temperature", T.toFixed(2)); show("seed", seed);
      if (!trained) {
        var H = Number(val("num_heads")); syncKv(H);
        var Hkv = Number(val("num_kv_heads")), L = val("seq_len"), Dh = data.d_model / H, mask = val("mask");
        var sent = val("sentence"), key = seed + "|" + sent, valid = Math.min(data.lengths[sent], L);
        q = decode(src.q[key]); k = decode(src.k[key + "|" + (Hkv * Dh)]);
        tq = tk = data.tokens[sent].slice(0, L);
        o = { H: H, Hkv: Hkv, Dh: Dh, Lq: L, Lk: L, qStride: data.d_model, kStride: Hkv * Dh, T: T,
          allowed: mask === "causal" ? function (i, j) { return j <= i; }
            : mask === "padding" ? function (i, j) { return j < valid; } : function () { return true; } };
        titles = []; for (var h = 0; h < H; h++) titles.push("head " + h + (Hkv < H ? " (kv " + Math.floor(h / (H / Hkv)) + ")" : ""));
        caption = H + " heads" + (Hkv < H ? ", " + Hkv + " key/value heads" : "") + ", d_model = " + data.d_model +
          ", T = " + T.toFixed(2) + ", mask: " + mask + ", seed " + seed;
        show("seq_len", String(L));
        var c = data.counts[H + "," + Hkv + "," + L];
        root.querySelector(".mha-counts").textContent = "d_head = " + Dh + ", parameters " + c[0].toLocaleString("en") +
          ", FLOPs " + c[1].toLocaleString("en") + ", KV cache values " + c[2].toLocaleString("en");
        table(root.querySelector(".mha-table"), null);
      } else {
        var v = src.views[seed];
        q = decode(v.q); k = decode(v.k); tq = v.tokens_q; tk = v.tokens_k;
        o = { H: src.H, Hkv: src.H, Dh: src.Dh, Lq: tq.length, Lk: tk.length, qStride: src.H * src.Dh,
          kStride: src.H * src.Dh, T: T, allowed: src.causal ? function (i, j) { return j <= i; } : function () { return true; } };
        titles = src.titles; caption = name + " (trained), input sample " + seed + ", T = " + T.toFixed(2);
        show("seq_len", String(tq.length));
        root.querySelector(".mha-counts").textContent = src.note;
        table(root.querySelector(".mha-table"), src.table);
      }
      drawHeads(canvas, attention(q, k, o), tq, tk, titles, caption);
      root.dataset.state = JSON.stringify({ source: name, seed: Number(seed), temperature: T,
        num_heads: trained ? src.H : Number(val("num_heads")), num_kv_heads: trained ? src.H : Number(val("num_kv_heads")),
        seq_len: tq.length, mask_kind: trained ? (src.causal ? "causal" : "none") : val("mask"), sentence: val("sentence") });
    }

    var update = data.kind === "bars" ? updateBars : updateHeads;
    function onChange() { update(); stamp(root); }
    if (ctl.temperature) { // the reader moved the slider: its value counts again
      ["input", "change"].forEach(function (ev) { ctl.temperature.addEventListener(ev, function () { tOverride = null; }); });
    }
    Object.keys(ctl).forEach(function (n) { ctl[n].addEventListener("input", onChange); ctl[n].addEventListener("change", onChange); });
    onChange();
  }

  function mountAll() {
    document.querySelectorAll(".mha-live:not([data-mounted]), .mha-static:not([data-mounted])").forEach(function (root) {
      root.dataset.mounted = "1";
      try { (root.classList.contains("mha-live") ? mountLive : mountStatic)(root); } catch (err) {
        var e = root.querySelector(".mha-error"); if (e) e.textContent = "The explorer could not draw: " + err;
        throw err;
      }
    });
  }

  window.mhaViz = { version: VERSION, attention: attention, mountAll: mountAll, drawHeads: drawHeads, drawBars: drawBars };
  soon(mountAll);
})();
