// Part 6 of 9: in-page computes (chapter 07's explorer, chapter 05's split-heads), from the
// tensors Python exported.
function decode(b64) { // base64 of little-endian float32 -> Float32Array
  var s = atob(b64), bytes = new Uint8Array(s.length);
  for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return new Float32Array(bytes.buffer);
}
// weights (H, Lq, Lk); o: {H, Hkv, Dh, Lq, Lk, qStride, kStride, T, allowed(i, j), sink}; as
// mha.scaled_dot_product_attention: softmax_j(q_i(h) . k_j(g) / (sqrt(Dh) T)), g = h // (H / Hkv).
// A sink logit s (a number; else none), as mha.modern.sink_attention on the tempered queries: the
// softmax runs over the row's scores and s (T does not divide s), and s's share is dropped
function attention(q, k, o) {
  var group = o.H / o.Hkv, scale = 1 / (Math.sqrt(o.Dh) * o.T), out = [];
  var sink = typeof o.sink === "number" ? o.sink : null;
  for (var h = 0; h < o.H; h++) {
    var g = Math.floor(h / group), rows = [];
    for (var i = 0; i < o.Lq; i++) {
      var s = new Array(o.Lk), m = sink === null ? -Infinity : sink, sum = 0, j;
      for (j = 0; j < o.Lk; j++) {
        if (!o.allowed(i, j)) { s[j] = -Infinity; continue; }
        var dot = 0, qi = i * o.qStride + h * o.Dh, kj = j * o.kStride + g * o.Dh;
        for (var d = 0; d < o.Dh; d++) dot += q[qi + d] * k[kj + d];
        s[j] = dot * scale;
        if (s[j] > m) m = s[j];
      }
      for (j = 0; j < o.Lk; j++) { s[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - m); sum += s[j]; }
      if (sink !== null) sum += Math.exp(sink - m); // the sink's share, then dropped
      for (j = 0; j < o.Lk; j++) s[j] = sum > 0 ? s[j] / sum : 0; // a row with no key: zeros
      rows.push(s);
    }
    out.push(rows);
  }
  return out;
}

// a causal sliding window of w positions (null: off) and-ed with allowed(i, j): query i sees
// keys i - w < j <= i, as mha.modern.window_mask
function windowed(allowed, w) {
  return typeof w !== "number" ? allowed : function (i, j) { return j <= i && j > i - w && allowed(i, j); };
}
// the captions' words for a sink s (as mha_book.explore.sink_said): the share it took, 1 - a row's
// sum on average over every head and query
function sinkSaid(grids, s) {
  if (typeof s !== "number") return "";
  var kept = 0, n = 0;
  grids.forEach(function (rows) {
    rows.forEach(function (r) { for (var j = 0; j < r.length; j++) kept += r[j]; n++; });
  });
  kept /= n;
  return ", sink s = " + s + ": rows sum to " + kept.toFixed(2) + " on average (" + (1 - kept).toFixed(2) + " to the sink)";
}

// chapter 07's explorer (mha_book.figures.explorer): too many settings to list, so the page computes
// the weights from the queries and keys Python exported (split into heads, mask and window,
// temperature, softmax with the sink), the same arithmetic as mha_book.explore.explore_once
COMPUTE.explorer = function (v, data, changed, root) {
  var memo = root.mhaMemo || (root.mhaMemo = { cache: {} }), src = data.sources[v.source];
  var trained = src.kind !== "random", out = { options: {}, disabled: {}, set: {} };
  function got(key, b64) { return memo.cache[key] || (memo.cache[key] = decode(b64)); }
  ["num_heads", "num_kv_heads", "seq_len", "mask", "sentence"].forEach(function (n) { out.disabled[n] = trained; });
  var cross = trained && !!src.cross, win = cross ? null : v.window; // cross-attention: no window
  out.disabled.window = cross;
  out.disabled.d_model = true;
  var wasRandom = data.sources[memo.lastSource || v.source].kind === "random";
  if (changed === "source" && trained && wasRandom) {
    out.set.temperature = 1; // a trained source from the random layer: T = 1, the model as trained
    memo.readerT = v.temperature;
  }
  if (changed === "source" && !trained && !wasRandom && memo.readerT !== undefined) {
    // back to the random layer: the reader's own T again, unless they moved it meanwhile
    if (v.temperature === 1) out.set.temperature = memo.readerT;
    memo.readerT = undefined;
  }
  memo.lastSource = v.source;
  // without grouping (num_kv_heads = num_heads) the two move together, as in mha_book.widgets
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
    o = { H: H, Hkv: Hkv, Dh: Dh, Lq: L, Lk: L, qStride: data.d_model, kStride: Hkv * Dh, T: T, sink: v.sink,
      allowed: windowed(v.mask === "causal" ? function (i, j) { return j <= i; }
        : v.mask === "padding" ? function (i, j) { return j < valid; } : function () { return true; }, win) };
    titles = [];
    for (var h = 0; h < H; h++) titles.push("head " + h + (Hkv < H ? " (kv " + Math.floor(h / (H / Hkv)) + ")" : ""));
    caption = plural(H, "head") + (Hkv < H ? ", " + plural(Hkv, "key/value head") : "") + ", L = " + L + ", d_model = " + data.d_model +
      ", T = " + T.toFixed(2) + ", mask: " + v.mask + (win ? ", causal window " + win : "") + ", seed " + seed;
    var c = data.counts[H + "," + Hkv + "," + L];
    counts = "d_head = " + Dh + ", parameters " + c[0].toLocaleString("en") + ", FLOPs " +
      c[1].toLocaleString("en") + ", KV cache values " + c[2].toLocaleString("en");
    table = null;
  } else {
    var view = src.views[seed];
    q = got("q" + v.source + seed, view.q); k = got("k" + v.source + seed, view.k);
    tq = view.tokens_q; tk = view.tokens_k;
    o = { H: src.H, Hkv: src.H, Dh: src.Dh, Lq: tq.length, Lk: tk.length, qStride: src.H * src.Dh,
      kStride: src.H * src.Dh, T: T, sink: v.sink,
      allowed: windowed(src.causal ? function (i, j) { return j <= i; } : function () { return true; }, win) };
    titles = src.titles; caption = v.source + " (trained), " + (view.name ? "passage \"" +
      view.name + "\" (seed " + seed + ")" : "input sample " + seed) +
      (tk.length === tq.length ? ", L = " + tq.length : ", Lq = " + tq.length + ", Lk = " + tk.length) + ", T = " + T.toFixed(2) +
      (win ? ", causal window " + win : "");
    counts = src.note; table = src.table;
  }
  var grids = attention(q, k, o), masked = [], blocked = false;
  caption += sinkSaid(grids, o.sink);
  for (var mi = 0; mi < o.Lq; mi++) { // the cells the mask blocks: drawn blank, struck through
    var mrow = "";
    for (var mj = 0; mj < o.Lk; mj++) { mrow += o.allowed(mi, mj) ? "0" : "1"; blocked = blocked || !o.allowed(mi, mj); }
    masked.push(mrow);
  }
  return {
    views: { counts: { text: counts }, table: table,
      heads: { grids: grids, rows: tq, cols: tk, titles: titles, caption: caption,
        vmin: 0, vmax: 1, scale: "viridis", label: "attention weight", masked: blocked ? masked : undefined, fit: true,
        cell_min: trained ? src.cell_min : undefined } }, // a passage: cells small enough to fit
    readout: caption + ".", options: out.options, disabled: out.disabled, set: out.set,
    unused: trained ? { d_model: 1, num_heads: 1, num_kv_heads: 1, seq_len: 1, mask: 1, sentence: 1, window: cross } : null,
    state: { source: v.source, seed: Number(seed), temperature: T, num_heads: trained ? src.H : v.num_heads,
      num_kv_heads: trained ? src.H : o.Hkv, seq_len: tq.length,
      mask_kind: trained ? (src.causal ? "causal" : "none") : v.mask, window: win, sink: v.sink,
      sentence: v.sentence } };
};

// the explorer's second view, one head as lines (mha_book.figures.explorer's "view" control picks the
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

function ints16(b64) { // base64 of little-endian int16 -> Int16Array
  var s = atob(b64), out = new Int16Array(s.length / 2);
  for (var i = 0; i < out.length; i++) out[i] = (s.charCodeAt(2 * i) | (s.charCodeAt(2 * i + 1) << 8)) << 16 >> 16;
  return out;
}
// split-heads: the numbers 1..rows*cols, split into heads by mha.split_heads (or the reshape
// without transpose) and merged back by mha.merge_heads, as Python exported them; the page
// only finds the chosen number in them (mha_book.figures.batched_heads.split_state draws the same in Python)
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
    var back = 0; // numbers the round trip leaves where they were
    for (p = 0; p < merged.length; p++) if (merged[p] === input[p]) back++;
    memo[key] = { merged: merged, pos: pos, grids: grids, back: back };
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
          { title: "merge_heads -> (1, 9, 512): colour = the head each number came from" +
              (v.wrong && H > 1 ? " (a correct round trip's stripes, other numbers in them)" : ""),
            grid: m.grids[2], focus: [t2, f2] }] },
      path: { columns: ["step", "index", "value"], caption: "The number " + nn + ", step by step",
        rows: [["input", "[0, " + v.token + ", " + v.feature + "]", n], [name, "[0, " + h + ", " + rw + ", " + col + "]", n],
          ["merge_heads", "[0, " + t2 + ", " + f2 + "]", n]] } },
    readout: nn + " (token " + v.token + " \"" + tok[v.token] + "\", feature " + v.feature + "): " + name +
      " puts it in head " + h + ", row " + rw + ", column " + col + " (" + how + "); merge_heads brings it to token " +
      t2 + ", feature " + f2 + (home ? (m.back === R * C ? ", where it started." : ", where it started, by luck:" +
      " the wrong round trip leaves only " + m.back.toLocaleString("en") + " of the " + (R * C).toLocaleString("en") +
      " numbers in place.") : ", not where it started (token " + v.token +
      ", feature " + v.feature + ").") + (v.wrong && H > 1 ? " The real harm is inside attention: a row of a head is" +
      " no longer one token, so the head compares pieces of different tokens." : ""),
    state: { num_heads: H, token: v.token, feature: v.feature, wrong: v.wrong, number: n, head: h, row: rw,
      column: col, back: [t2, f2] } };
};
