// The Shakespeare language model in the page (mha_book.figures.shakespeare_heads): the forward pass
// of mha_book.language_model.LanguageModel in plain JavaScript, as far as the attention weights
// need it, on the parameters Python exported (base64 of float16, the shipped values exactly), and
// its heads' scores.
import { erfTable, halves, layerNorm, linear } from "./lm_math.js";

// The model, with what it computed for the last text kept: a character's activations depend
// only on the characters up to it (causal), so a new text recomputes only from its first
// character that differs (typing at the end: one position). W[l][h] holds row i of head h's
// weights at [i * C, i * C + i]; the rest of a row stays 0 (the keys after the query).
export function TextModel(data) {
  var c = data.config,
    w = {},
    self = this;
  Object.keys(data.weights).forEach(function (k) {
    w[k] = halves(data.weights[k]);
  });
  var C = c.context_length,
    D = c.d_model,
    H = c.num_heads,
    Hkv = c.num_kv_heads,
    Dh = c.d_head;
  var NL = c.num_layers;
  Object.assign(this, {
    w: w,
    C: C,
    D: D,
    H: H,
    Hkv: Hkv,
    Dh: Dh,
    F: c.d_ff,
    NL: NL,
    eps: c.eps,
    ids: new Int32Array(C),
    n: 0,
    X: [],
    K: [],
    V: [],
    W: [],
    h: new Float32Array(C * D),
    q: new Float32Array(C * H * Dh),
    a: new Float32Array(C * H * Dh),
    o: new Float32Array(C * D),
    f: new Float32Array(C * c.d_ff),
    s: new Float64Array(C),
    acc: new Float64Array(Dh),
  });
  for (var l = 0; l < NL; l++) {
    this.X.push(new Float32Array(C * D));
    this.K.push(new Float32Array(C * Hkv * Dh));
    this.V.push(new Float32Array(C * Hkv * Dh));
    this.W.push([]);
    for (var h = 0; h < H; h++) this.W[l].push(new Float32Array(C * C));
  }
  this.p = function (l, name) {
    return w["encoder.layers." + l + "." + name] || null;
  };
  // rotary positions (c.positions "rotary", mha.RotaryMultiHeadAttention): the cosine and sine
  // of pair j at position i, angle i * base^(-2j/Dh), at [i * Dh/2 + j]; "learned" and
  // "sinusoidal" add their table to the embeddings (the rotary model's table is zeros)
  this.rope = null;
  if (c.positions === "rotary") {
    var half = Dh >> 1,
      base = c.rope_base || 10000,
      cos = new Float64Array(C * half),
      sin = new Float64Array(C * half);
    for (var i = 0; i < C; i++) {
      for (var j = 0; j < half; j++) {
        var angle = i * Math.pow(base, (-2 * j) / Dh);
        cos[i * half + j] = Math.cos(angle);
        sin[i * half + j] = Math.sin(angle);
      }
    }
    this.rope = {
      cos: cos,
      sin: sin,
      half: half,
      interleaved: !!c.rope_interleaved,
    };
  }
  this.index = {};
  c.vocab.split("").forEach(function (ch, i) {
    self.index[ch] = i;
  });
}
// ids (an array of at most C character ids): recompute what changed; returns the first
// position recomputed (ids.length: nothing)
TextModel.prototype.run = function (ids) {
  var L = ids.length,
    p = 0,
    D = this.D,
    i,
    d,
    l;
  while (p < L && p < this.n && this.ids[p] === ids[p]) p++;
  if (p === L) return L; // a prefix of the last text: its rows are all there
  for (i = p; i < L; i++) this.ids[i] = ids[i];
  this.n = L;
  var tok = this.w["encoder.embed.tokens.weight"],
    pos = this.w["encoder.embed.positions.weight"],
    X0 = this.X[0];
  for (i = p; i < L; i++)
    for (d = 0; d < D; d++) X0[i * D + d] = tok[ids[i] * D + d] + pos[i * D + d];
  for (l = 0; l < this.NL; l++) this.layer(l, p, L);
  return p;
};
TextModel.prototype.layer = function (l, p, L) {
  var D = this.D,
    H = this.H,
    Dh = this.Dh,
    KD = this.Hkv * Dh,
    C = this.C,
    last = l === this.NL - 1;
  var P = this.p.bind(this, l),
    x = this.X[l],
    hb = this.h,
    q = this.q,
    K = this.K[l],
    V = this.V[l];
  var scale = 1 / Math.sqrt(Dh),
    s = this.s,
    group = H / this.Hkv,
    i,
    j,
    d;
  layerNorm(x, P("res_attn.norm.weight"), P("res_attn.norm.bias"), D, this.eps, hb, p, L);
  linear(hb, P("self_attn.W_q.weight"), P("self_attn.W_q.bias"), D, H * Dh, q, p, L);
  linear(hb, P("self_attn.W_k.weight"), P("self_attn.W_k.bias"), D, KD, K, p, L);
  if (!last) linear(hb, P("self_attn.W_v.weight"), P("self_attn.W_v.bias"), D, KD, V, p, L);
  if (this.rope) {
    this.rotate(q, H, p, L);
    this.rotate(K, this.Hkv, p, L);
  }
  for (var h = 0; h < H; h++) {
    var Wt = this.W[l][h],
      g = Math.floor(h / group) * Dh;
    for (i = p; i < L; i++) {
      var qo = i * H * Dh + h * Dh,
        m = -Infinity,
        sum = 0;
      for (j = 0; j <= i; j++) {
        var ko = j * KD + g,
          e0 = 0,
          e1 = 0,
          e2 = 0,
          e3 = 0;
        for (d = 0; d + 3 < Dh; d += 4) {
          e0 += q[qo + d] * K[ko + d];
          e1 += q[qo + d + 1] * K[ko + d + 1];
          e2 += q[qo + d + 2] * K[ko + d + 2];
          e3 += q[qo + d + 3] * K[ko + d + 3];
        }
        for (; d < Dh; d++) e0 += q[qo + d] * K[ko + d];
        s[j] = (e0 + e1 + e2 + e3) * scale;
        if (s[j] > m) m = s[j];
      }
      for (j = 0; j <= i; j++) {
        s[j] = Math.exp(s[j] - m);
        sum += s[j];
      }
      for (j = 0; j <= i; j++) Wt[i * C + j] = s[j] / sum;
      if (last) continue;
      var ao = this.a,
        out = i * H * Dh + h * Dh,
        acc = this.acc;
      for (d = 0; d < Dh; d++) acc[d] = 0;
      for (j = 0; j <= i; j++) {
        var wij = s[j] / sum,
          vo = j * KD + g;
        for (d = 0; d < Dh; d++) acc[d] += wij * V[vo + d];
      }
      for (d = 0; d < Dh; d++) ao[out + d] = acc[d];
    }
  }
  if (last) return;
  var y = this.X[l + 1],
    o = this.o,
    f = this.f,
    F = this.F;
  linear(this.a, P("self_attn.W_o.weight"), P("self_attn.W_o.bias"), H * Dh, D, o, p, L);
  for (i = p * D; i < L * D; i++) y[i] = x[i] + o[i];
  layerNorm(y, P("res_ff.norm.weight"), P("res_ff.norm.bias"), D, this.eps, hb, p, L);
  linear(hb, P("ff.0.weight"), P("ff.0.bias"), D, F, f, p, L);
  // the exact GELU
  for (i = p * F; i < L * F; i++) f[i] = 0.5 * f[i] * (1 + erfTable(f[i] * Math.SQRT1_2));
  linear(f, P("ff.2.weight"), P("ff.2.bias"), F, D, o, p, L);
  for (i = p * D; i < L * D; i++) y[i] += o[i];
};
// rotary positions: turn feature pair j of every one of the n heads of rows r0..r1-1 of x
// (rows of n * Dh) by its position's angle (mha.apply_rope): pairs (j, j + Dh/2), "rotate half",
// or (2j, 2j + 1) when interleaved. Row i's rotation depends on i only, so the rows kept from
// the last text stay right.
TextModel.prototype.rotate = function (x, n, r0, r1) {
  var rope = this.rope,
    half = rope.half,
    Dh = this.Dh;
  var b = rope.interleaved ? 1 : half,
    st = rope.interleaved ? 2 : 1; // a pair: u and u + b
  for (var i = r0; i < r1; i++) {
    for (var h = 0; h < n; h++) {
      var o = (i * n + h) * Dh;
      for (var j = 0; j < half; j++) {
        var c = rope.cos[i * half + j],
          s = rope.sin[i * half + j],
          u = o + j * st;
        var x0 = x[u],
          x1 = x[u + b];
        x[u] = x0 * c - x1 * s;
        x[u + b] = x0 * s + x1 * c;
      }
    }
  }
};

// head scores as mha.head_scores computes them, on the current text of length L: the mean
// weight on the previous character (null below 2 characters), and the prefix-matching score:
// over the queries i whose last n characters occurred before (key j: the n characters before
// j equal those ending at i), the mean total weight on those keys (null: no such query)
TextModel.prototype.scores = function (L, n) {
  var ids = this.ids,
    C = this.C,
    targets = [],
    rows = 0,
    i,
    j,
    k,
    out = { previous: [], prefix: [] };
  for (i = 0; i < L; i++) {
    var t = [];
    for (j = n; j <= i && i >= n - 1; j++) {
      for (k = 0; k < n && ids[i - k] === ids[j - 1 - k]; k++);
      if (k === n) t.push(j);
    }
    targets.push(t);
    if (t.length) rows++;
  }
  for (var l = 0; l < this.NL; l++) {
    var prev = [],
      pre = [];
    for (var h = 0; h < this.H; h++) {
      var Wt = this.W[l][h],
        a = 0,
        b = 0;
      for (i = 1; i < L; i++) a += Wt[i * C + i - 1];
      for (i = 0; i < L; i++)
        for (k = 0; k < targets[i].length; k++) b += Wt[i * C + targets[i][k]];
      prev.push(L > 1 ? a / (L - 1) : null);
      pre.push(rows ? b / rows : null);
    }
    out.previous.push(prev);
    out.prefix.push(pre);
  }
  out.matches = rows;
  return out;
};
