// The explorer's attention, from the tensors Python exported (mha_book.figures.explorer): the
// weights, a sliding window, the captions' words for a sink.
import { fill } from "../../../mha/static/src/format.js";

export function decode(b64) {
  // base64 of little-endian float32 -> Float32Array
  var s = atob(b64),
    bytes = new Uint8Array(s.length);
  for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return new Float32Array(bytes.buffer);
}
// weights (H, Lq, Lk); o: {H, Hkv, Dh, Lq, Lk, qStride, kStride, T, allowed(i, j), sink}; as
// mha.scaled_dot_product_attention: softmax_j(q_i(h) . k_j(g) / (sqrt(Dh) T)), g = h // (H / Hkv).
// A sink logit s (a number; else none), as mha.modern.sink_attention on the tempered queries: the
// softmax runs over the row's scores and s (T does not divide s), and s's share is dropped
export function attention(q, k, o) {
  var group = o.H / o.Hkv,
    scale = 1 / (Math.sqrt(o.Dh) * o.T),
    out = [];
  var sink = typeof o.sink === "number" ? o.sink : null;
  for (var h = 0; h < o.H; h++) {
    var g = Math.floor(h / group),
      rows = [];
    for (var i = 0; i < o.Lq; i++) {
      var s = new Array(o.Lk),
        m = sink === null ? -Infinity : sink,
        sum = 0,
        j;
      for (j = 0; j < o.Lk; j++) {
        if (!o.allowed(i, j)) {
          s[j] = -Infinity;
          continue;
        }
        var dot = 0,
          qi = i * o.qStride + h * o.Dh,
          kj = j * o.kStride + g * o.Dh;
        for (var d = 0; d < o.Dh; d++) dot += q[qi + d] * k[kj + d];
        s[j] = dot * scale;
        if (s[j] > m) m = s[j];
      }
      for (j = 0; j < o.Lk; j++) {
        s[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - m);
        sum += s[j];
      }
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
export function windowed(allowed, w) {
  return typeof w !== "number"
    ? allowed
    : function (i, j) {
        return j <= i && j > i - w && allowed(i, j);
      };
}
// the captions' words for a sink s (template: mha_book.explore.SINK_SAID, as its sink_said): the
// share it took, 1 - a row's sum on average over every head and query
export function sinkSaid(grids, s, template) {
  if (typeof s !== "number") return "";
  var kept = 0,
    n = 0;
  grids.forEach(function (rows) {
    rows.forEach(function (r) {
      for (var j = 0; j < r.length; j++) kept += r[j];
      n++;
    });
  });
  kept /= n;
  return fill(template, { s: s, kept: kept, lost: 1 - kept });
}
