// The language model's arithmetic (lm.js): float16 decoding, erf (the exact GELU), nn.Linear
// and nn.LayerNorm over rows.

export function halves(b64) {
  // base64 of little-endian float16 -> Float32Array
  var s = atob(b64),
    n = s.length >> 1,
    out = new Float32Array(n),
    pow = [],
    e;
  for (e = 0; e < 32; e++) pow.push(Math.pow(2, e - 25));
  for (var i = 0; i < n; i++) {
    var h = s.charCodeAt(2 * i) | (s.charCodeAt(2 * i + 1) << 8),
      f = h & 1023,
      v;
    e = (h >> 10) & 31;
    v = e === 0 ? f * 5.9604644775390625e-8 : e === 31 ? (f ? NaN : Infinity) : (1024 + f) * pow[e];
    out[i] = h & 32768 ? -v : v;
  }
  return out;
}

// erf to about 1e-15: its Taylor series (30 terms, Horner) below |x| = 2, erfc's continued
// fraction (40 levels) from 2 to 6, and +-1 beyond (erfc(6) = 2e-17)
var ERF_C = (function () {
  var c = [],
    f = 1;
  for (var n = 0; n < 30; n++) {
    if (n) f *= n;
    c.push((n % 2 ? -2 : 2) / Math.sqrt(Math.PI) / (f * (2 * n + 1)));
  }
  return c;
})();
export function erf(x) {
  var a = Math.abs(x),
    s,
    k;
  if (a < 2) {
    // the terms left out: under 2e-16 (11 terms below 0.5, 17 below 1, 30 below 2)
    var z = x * x,
      top = a < 0.5 ? 10 : a < 1 ? 16 : 29;
    s = ERF_C[top];
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
  var n = 6 * 64,
    v = new Float64Array(2 * n + 2),
    d = new Float64Array(2 * n + 2);
  for (var i = 0; i < v.length; i++) {
    var x = (i - n) / 64;
    v[i] = erf(x);
    d[i] = ((2 / Math.sqrt(Math.PI)) * Math.exp(-x * x)) / 64;
  }
  return { v: v, d: d };
})();
export function erfTable(x) {
  if (x >= 6) return 1;
  if (x <= -6) return -1;
  var u = (x + 6) * 64,
    i = u | 0,
    t = u - i,
    t2 = t * t,
    t3 = t2 * t,
    v = ERF_TABLE.v,
    d = ERF_TABLE.d;
  return (
    (2 * t3 - 3 * t2 + 1) * v[i] +
    (t3 - 2 * t2 + t) * d[i] +
    (3 * t2 - 2 * t3) * v[i + 1] +
    (t3 - t2) * d[i + 1]
  );
}

// y[r] = x[r] W^T + b for rows r0..r1-1: x rows of n, W (m, n) row-major (nn.Linear), y rows
// of m; 4 rows and 2 outputs at a time (a number of W read once serves 4 rows, one of x 2
// outputs: 1.5 times as fast as row by row), then the rows left one by one
export function linear(x, W, b, n, m, y, r0, r1) {
  var r = r0,
    o,
    i,
    w,
    v;
  for (; r + 3 < r1; r += 4) {
    var x0 = r * n,
      x1 = x0 + n,
      x2 = x1 + n,
      x3 = x2 + n;
    for (o = 0; o < m; o += 2) {
      var two = o + 1 < m,
        s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0,
        t0 = 0,
        t1 = 0,
        t2 = 0,
        t3 = 0;
      w = o * n;
      v = two ? w + n : w;
      for (i = 0; i < n; i++) {
        var wi = W[w + i],
          vi = W[v + i],
          a0 = x[x0 + i],
          a1 = x[x1 + i],
          a2 = x[x2 + i],
          a3 = x[x3 + i];
        s0 += a0 * wi;
        s1 += a1 * wi;
        s2 += a2 * wi;
        s3 += a3 * wi;
        t0 += a0 * vi;
        t1 += a1 * vi;
        t2 += a2 * vi;
        t3 += a3 * vi;
      }
      var bw = b ? b[o] : 0,
        y0 = r * m + o;
      y[y0] = s0 + bw;
      y[y0 + m] = s1 + bw;
      y[y0 + 2 * m] = s2 + bw;
      y[y0 + 3 * m] = s3 + bw;
      if (!two) continue;
      var bv = b ? b[o + 1] : 0;
      y[y0 + 1] = t0 + bv;
      y[y0 + m + 1] = t1 + bv;
      y[y0 + 2 * m + 1] = t2 + bv;
      y[y0 + 3 * m + 1] = t3 + bv;
    }
  }
  for (; r < r1; r++) {
    var xa = r * n;
    for (o = 0; o < m; o++) {
      var p0 = 0,
        p1 = 0;
      for (w = o * n, i = 0; i + 1 < n; i += 2) {
        p0 += x[xa + i] * W[w + i];
        p1 += x[xa + i + 1] * W[w + i + 1];
      }
      if (i < n) p0 += x[xa + i] * W[w + i];
      y[r * m + o] = p0 + p1 + (b ? b[o] : 0);
    }
  }
}
export function layerNorm(x, g, b, D, eps, y, r0, r1) {
  // torch.nn.LayerNorm over rows of D
  for (var r = r0; r < r1; r++) {
    var o = r * D,
      mean = 0,
      v = 0,
      i;
    for (i = 0; i < D; i++) mean += x[o + i];
    mean /= D;
    for (i = 0; i < D; i++) v += (x[o + i] - mean) * (x[o + i] - mean);
    var inv = 1 / Math.sqrt(v / D + eps);
    for (i = 0; i < D; i++) y[o + i] = (x[o + i] - mean) * inv * g[i] + b[i];
  }
}
