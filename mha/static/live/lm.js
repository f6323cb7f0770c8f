// Part 7 of 9: the Shakespeare language model in the page (mha_book.figures.text_heads): the forward pass of
// mha_book.language_model.LanguageModel in plain JavaScript, as far as the attention weights need it,
// on the parameters Python exported (base64 of float16, the shipped values exactly), and the
// compute "text-heads": every head's weights and scores on a passage or the reader's own text.

function halves(b64) { // base64 of little-endian float16 -> Float32Array
  var s = atob(b64), n = s.length >> 1, out = new Float32Array(n), pow = [], e;
  for (e = 0; e < 32; e++) pow.push(Math.pow(2, e - 25));
  for (var i = 0; i < n; i++) {
    var h = s.charCodeAt(2 * i) | (s.charCodeAt(2 * i + 1) << 8), f = h & 1023, v;
    e = (h >> 10) & 31;
    v = e === 0 ? f * 5.9604644775390625e-8 : e === 31 ? (f ? NaN : Infinity) : (1024 + f) * pow[e];
    out[i] = h & 32768 ? -v : v;
  }
  return out;
}

// erf to about 1e-15: its Taylor series (30 terms, Horner) below |x| = 2, erfc's continued
// fraction (40 levels) from 2 to 6, and +-1 beyond (erfc(6) = 2e-17)
var ERF_C = (function () {
  var c = [], f = 1;
  for (var n = 0; n < 30; n++) { if (n) f *= n; c.push((n % 2 ? -2 : 2) / Math.sqrt(Math.PI) / (f * (2 * n + 1))); }
  return c;
})();
function erf(x) {
  var a = Math.abs(x), s, k;
  if (a < 2) { // the terms left out: under 2e-16 (11 terms below 0.5, 17 below 1, 30 below 2)
    var z = x * x, top = a < 0.5 ? 10 : a < 1 ? 16 : 29; s = ERF_C[top];
    for (k = top - 1; k >= 0; k--) s = s * z + ERF_C[k];
    return x * s;
  }
  if (a > 6) return x > 0 ? 1 : -1;
  for (s = a, k = 40; k > 0; k--) s = a + k / 2 / s;
  s = 1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / s;
  return x > 0 ? s : -s;
}
// the GELU's erf, 5 times as fast: erf and its derivative 2/sqrt(pi) exp(-x^2) tabulated every
// 1/64 on -6..6 and interpolated by cubic Hermite polynomials (error under 1e-9)
var ERF_TABLE = (function () {
  var n = 6 * 64, v = new Float64Array(2 * n + 2), d = new Float64Array(2 * n + 2);
  for (var i = 0; i < v.length; i++) {
    var x = (i - n) / 64; v[i] = erf(x); d[i] = 2 / Math.sqrt(Math.PI) * Math.exp(-x * x) / 64;
  }
  return { v: v, d: d };
})();
function erfTable(x) {
  if (x >= 6) return 1;
  if (x <= -6) return -1;
  var u = (x + 6) * 64, i = u | 0, t = u - i, t2 = t * t, t3 = t2 * t, v = ERF_TABLE.v, d = ERF_TABLE.d;
  return (2 * t3 - 3 * t2 + 1) * v[i] + (t3 - 2 * t2 + t) * d[i] + (3 * t2 - 2 * t3) * v[i + 1] + (t3 - t2) * d[i + 1];
}

// y[r] = x[r] W^T + b for rows r0..r1-1: x rows of n, W (m, n) row-major (nn.Linear), y rows
// of m; 4 rows and 2 outputs at a time (a number of W read once serves 4 rows, one of x 2
// outputs: 1.5 times as fast as row by row), then the rows left one by one
function linear(x, W, b, n, m, y, r0, r1) {
  var r = r0, o, i, w, v;
  for (; r + 3 < r1; r += 4) {
    var x0 = r * n, x1 = x0 + n, x2 = x1 + n, x3 = x2 + n;
    for (o = 0; o < m; o += 2) {
      var two = o + 1 < m, s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
      w = o * n; v = two ? w + n : w;
      for (i = 0; i < n; i++) {
        var wi = W[w + i], vi = W[v + i], a0 = x[x0 + i], a1 = x[x1 + i], a2 = x[x2 + i], a3 = x[x3 + i];
        s0 += a0 * wi; s1 += a1 * wi; s2 += a2 * wi; s3 += a3 * wi;
        t0 += a0 * vi; t1 += a1 * vi; t2 += a2 * vi; t3 += a3 * vi;
      }
      var bw = b ? b[o] : 0, y0 = r * m + o;
      y[y0] = s0 + bw; y[y0 + m] = s1 + bw; y[y0 + 2 * m] = s2 + bw; y[y0 + 3 * m] = s3 + bw;
      if (!two) continue;
      var bv = b ? b[o + 1] : 0;
      y[y0 + 1] = t0 + bv; y[y0 + m + 1] = t1 + bv; y[y0 + 2 * m + 1] = t2 + bv; y[y0 + 3 * m + 1] = t3 + bv;
    }
  }
  for (; r < r1; r++) {
    var xa = r * n;
    for (o = 0; o < m; o++) {
      var p0 = 0, p1 = 0;
      for (w = o * n, i = 0; i + 1 < n; i += 2) { p0 += x[xa + i] * W[w + i]; p1 += x[xa + i + 1] * W[w + i + 1]; }
      if (i < n) p0 += x[xa + i] * W[w + i];
      y[r * m + o] = p0 + p1 + (b ? b[o] : 0);
    }
  }
}
function layerNorm(x, g, b, D, eps, y, r0, r1) { // torch.nn.LayerNorm over rows of D
  for (var r = r0; r < r1; r++) {
    var o = r * D, mean = 0, v = 0, i;
    for (i = 0; i < D; i++) mean += x[o + i];
    mean /= D;
    for (i = 0; i < D; i++) v += (x[o + i] - mean) * (x[o + i] - mean);
    var inv = 1 / Math.sqrt(v / D + eps);
    for (i = 0; i < D; i++) y[o + i] = (x[o + i] - mean) * inv * g[i] + b[i];
  }
}

// The model, with what it computed for the last text kept: a character's activations depend
// only on the characters up to it (causal), so a new text recomputes only from its first
// character that differs (typing at the end: one position). W[l][h] holds row i of head h's
// weights at [i * C, i * C + i]; the rest of a row stays 0 (the keys after the query).
function TextModel(data) {
  var c = data.config, w = {}, self = this;
  Object.keys(data.weights).forEach(function (k) { w[k] = halves(data.weights[k]); });
  var C = c.context_length, D = c.d_model, H = c.num_heads, Hkv = c.num_kv_heads, Dh = c.d_head;
  var NL = c.num_layers;
  Object.assign(this, { w: w, C: C, D: D, H: H, Hkv: Hkv, Dh: Dh, F: c.d_ff, NL: NL, eps: c.eps,
    ids: new Int32Array(C), n: 0, X: [], K: [], V: [], W: [], h: new Float32Array(C * D),
    q: new Float32Array(C * H * Dh), a: new Float32Array(C * H * Dh), o: new Float32Array(C * D),
    f: new Float32Array(C * c.d_ff), s: new Float64Array(C), acc: new Float64Array(Dh) });
  for (var l = 0; l < NL; l++) {
    this.X.push(new Float32Array(C * D)); this.K.push(new Float32Array(C * Hkv * Dh));
    this.V.push(new Float32Array(C * Hkv * Dh)); this.W.push([]);
    for (var h = 0; h < H; h++) this.W[l].push(new Float32Array(C * C));
  }
  this.p = function (l, name) { return w["encoder.layers." + l + "." + name] || null; };
  // rotary positions (c.positions "rotary", mha.RotaryMultiHeadAttention): the cosine and sine
  // of pair j at position i, angle i * base^(-2j/Dh), at [i * Dh/2 + j]; "learned" and
  // "sinusoidal" add their table to the embeddings (the rotary model's table is zeros)
  this.rope = null;
  if (c.positions === "rotary") {
    var half = Dh >> 1, base = c.rope_base || 10000, cos = new Float64Array(C * half), sin = new Float64Array(C * half);
    for (var i = 0; i < C; i++) {
      for (var j = 0; j < half; j++) {
        var angle = i * Math.pow(base, -2 * j / Dh);
        cos[i * half + j] = Math.cos(angle); sin[i * half + j] = Math.sin(angle);
      }
    }
    this.rope = { cos: cos, sin: sin, half: half, interleaved: !!c.rope_interleaved };
  }
  this.index = {}; c.vocab.split("").forEach(function (ch, i) { self.index[ch] = i; });
}
// ids (an array of at most C character ids): recompute what changed; returns the first
// position recomputed (ids.length: nothing)
TextModel.prototype.run = function (ids) {
  var L = ids.length, p = 0, D = this.D, C = this.C, i, d, l;
  while (p < L && p < this.n && this.ids[p] === ids[p]) p++;
  if (p === L) return L; // a prefix of the last text: its rows are all there
  for (i = p; i < L; i++) this.ids[i] = ids[i];
  this.n = L;
  var tok = this.w["encoder.embed.tokens.weight"], pos = this.w["encoder.embed.positions.weight"], X0 = this.X[0];
  for (i = p; i < L; i++) for (d = 0; d < D; d++) X0[i * D + d] = tok[ids[i] * D + d] + pos[i * D + d];
  for (l = 0; l < this.NL; l++) this.layer(l, p, L);
  return p;
};
TextModel.prototype.layer = function (l, p, L) {
  var D = this.D, H = this.H, Dh = this.Dh, KD = this.Hkv * Dh, C = this.C, last = l === this.NL - 1;
  var P = this.p.bind(this, l), x = this.X[l], hb = this.h, q = this.q, K = this.K[l], V = this.V[l];
  var scale = 1 / Math.sqrt(Dh), s = this.s, group = H / this.Hkv, i, j, d;
  layerNorm(x, P("res_attn.norm.weight"), P("res_attn.norm.bias"), D, this.eps, hb, p, L);
  linear(hb, P("self_attn.W_q.weight"), P("self_attn.W_q.bias"), D, H * Dh, q, p, L);
  linear(hb, P("self_attn.W_k.weight"), P("self_attn.W_k.bias"), D, KD, K, p, L);
  if (!last) linear(hb, P("self_attn.W_v.weight"), P("self_attn.W_v.bias"), D, KD, V, p, L);
  if (this.rope) { this.rotate(q, H, p, L); this.rotate(K, this.Hkv, p, L); }
  for (var h = 0; h < H; h++) {
    var Wt = this.W[l][h], g = Math.floor(h / group) * Dh;
    for (i = p; i < L; i++) {
      var qo = i * H * Dh + h * Dh, m = -Infinity, sum = 0;
      for (j = 0; j <= i; j++) {
        var ko = j * KD + g, e0 = 0, e1 = 0, e2 = 0, e3 = 0;
        for (d = 0; d + 3 < Dh; d += 4) {
          e0 += q[qo + d] * K[ko + d]; e1 += q[qo + d + 1] * K[ko + d + 1];
          e2 += q[qo + d + 2] * K[ko + d + 2]; e3 += q[qo + d + 3] * K[ko + d + 3];
        }
        for (; d < Dh; d++) e0 += q[qo + d] * K[ko + d];
        s[j] = (e0 + e1 + e2 + e3) * scale; if (s[j] > m) m = s[j];
      }
      for (j = 0; j <= i; j++) { s[j] = Math.exp(s[j] - m); sum += s[j]; }
      for (j = 0; j <= i; j++) Wt[i * C + j] = s[j] / sum;
      if (last) continue;
      var ao = this.a, out = i * H * Dh + h * Dh, acc = this.acc;
      for (d = 0; d < Dh; d++) acc[d] = 0;
      for (j = 0; j <= i; j++) {
        var wij = s[j] / sum, vo = j * KD + g;
        for (d = 0; d < Dh; d++) acc[d] += wij * V[vo + d];
      }
      for (d = 0; d < Dh; d++) ao[out + d] = acc[d];
    }
  }
  if (last) return;
  var y = this.X[l + 1], o = this.o, f = this.f, F = this.F;
  linear(this.a, P("self_attn.W_o.weight"), P("self_attn.W_o.bias"), H * Dh, D, o, p, L);
  for (i = p * D; i < L * D; i++) y[i] = x[i] + o[i];
  layerNorm(y, P("res_ff.norm.weight"), P("res_ff.norm.bias"), D, this.eps, hb, p, L);
  linear(hb, P("ff.0.weight"), P("ff.0.bias"), D, F, f, p, L);
  for (i = p * F; i < L * F; i++) f[i] = 0.5 * f[i] * (1 + erfTable(f[i] * Math.SQRT1_2)); // exact GELU
  linear(f, P("ff.2.weight"), P("ff.2.bias"), F, D, o, p, L);
  for (i = p * D; i < L * D; i++) y[i] += o[i];
};
// rotary positions: turn feature pair j of every one of the n heads of rows r0..r1-1 of x
// (rows of n * Dh) by its position's angle (mha.apply_rope): pairs (j, j + Dh/2), "rotate half",
// or (2j, 2j + 1) when interleaved. Row i's rotation depends on i only, so the rows kept from
// the last text stay right.
TextModel.prototype.rotate = function (x, n, r0, r1) {
  var rope = this.rope, half = rope.half, Dh = this.Dh;
  var b = rope.interleaved ? 1 : half, st = rope.interleaved ? 2 : 1; // a pair: u and u + b
  for (var i = r0; i < r1; i++) {
    for (var h = 0; h < n; h++) {
      var o = (i * n + h) * Dh;
      for (var j = 0; j < half; j++) {
        var c = rope.cos[i * half + j], s = rope.sin[i * half + j], u = o + j * st;
        var x0 = x[u], x1 = x[u + b];
        x[u] = x0 * c - x1 * s; x[u + b] = x0 * s + x1 * c;
      }
    }
  }
};
