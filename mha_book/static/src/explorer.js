import { attention, decode, sinkSaid, windowed } from "./attention.js";
import { fill } from "../../../mha/static/src/format.js";

// Chapter 07's explorer (mha_book.figures.explorer): too many settings to list, so the page
// computes the weights from the queries and keys Python exported (split into heads, mask and
// window, temperature, softmax with the sink), the same arithmetic as
// mha_book.explore.explore_once
function heatmaps(v, data, changed, root) {
  var memo = root.mhaMemo || (root.mhaMemo = { cache: {} }),
    src = data.sources[v.source];
  var trained = src.kind !== "random",
    out = { options: {}, disabled: {}, set: {} };
  function got(key, b64) {
    return memo.cache[key] || (memo.cache[key] = decode(b64));
  }
  ["num_heads", "num_kv_heads", "seq_len", "mask", "sentence"].forEach(function (n) {
    out.disabled[n] = trained;
  });
  var cross = trained && !!src.cross,
    win = cross ? null : v.window; // cross-attention: no window
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
  var offered = [1, 2, 4, 8, 16]
    .map(function (h, i) {
      return v.num_heads % h === 0 ? i : -1;
    })
    .filter(function (i) {
      return i >= 0;
    });
  out.options.num_kv_heads = offered;
  var P = data.captions, // the captions' templates (mha_book.figures.explorer.CAPTIONS)
    windowSaid = win ? fill(P.window, { w: win }) : "",
    T = v.temperature,
    seed = String(v.seed),
    q,
    k,
    o,
    tq,
    tk,
    titles,
    caption,
    counts,
    table;
  if (!trained) {
    var H = v.num_heads,
      Hkv = v.num_kv_heads,
      L = v.seq_len,
      Dh = data.d_model / H;
    var key = seed + "|" + v.sentence,
      valid = Math.min(data.lengths[v.sentence], L);
    if (H % Hkv) Hkv = H; // a moment before the options follow
    q = got("q" + key, src.q[key]);
    k = got("k" + key + Hkv * Dh, src.k[key + "|" + Hkv * Dh]);
    tq = tk = data.tokens[v.sentence].slice(0, L);
    o = {
      H: H,
      Hkv: Hkv,
      Dh: Dh,
      Lq: L,
      Lk: L,
      qStride: data.d_model,
      kStride: Hkv * Dh,
      T: T,
      sink: v.sink,
      allowed: windowed(
        v.mask === "causal"
          ? function (i, j) {
              return j <= i;
            }
          : v.mask === "padding"
            ? function (i, j) {
                return j < valid;
              }
            : function () {
                return true;
              },
        win,
      ),
    };
    titles = [];
    for (var h = 0; h < H; h++) {
      titles.push(
        Hkv < H ? fill(P.head_kv, { h: h, g: Math.floor(h / (H / Hkv)) }) : fill(P.head, { h: h }),
      );
    }
    caption = {
      template: P.random,
      heads: count(P.heads, H),
      kv: Hkv < H ? count(P.kv, Hkv) : "",
      L: L,
      d_model: data.d_model,
      T: T,
      // with no mask, the window is the mask ("mask: none, causal window 2" read as a
      // contradiction)
      mask: v.mask === "none" && win ? fill(P.window_mask, { w: win }) : v.mask,
      window: v.mask === "none" && win ? "" : windowSaid,
      seed: seed,
    };
    var c = data.counts[H + "," + Hkv + "," + L];
    counts =
      "d_head = " +
      Dh +
      ", parameters " +
      c[0].toLocaleString("en") +
      ", FLOPs " +
      c[1].toLocaleString("en") +
      ", KV cache values " +
      c[2].toLocaleString("en");
    table = null;
  } else {
    var view = src.views[seed];
    q = got("q" + v.source + seed, view.q);
    k = got("k" + v.source + seed, view.k);
    tq = view.tokens_q;
    tk = view.tokens_k;
    o = {
      H: src.H,
      Hkv: src.H,
      Dh: src.Dh,
      Lq: tq.length,
      Lk: tk.length,
      qStride: src.H * src.Dh,
      kStride: src.H * src.Dh,
      T: T,
      sink: v.sink,
      allowed: windowed(
        src.causal
          ? function (i, j) {
              return j <= i;
            }
          : function () {
              return true;
            },
        win,
      ),
    };
    titles = src.titles;
    caption = {
      template: P.trained,
      source: v.source,
      sample: view.name
        ? fill(P.passage, { name: view.name, seed: seed })
        : fill(P.sample, { seed: seed }),
      lengths:
        tk.length === tq.length
          ? fill(P.length, { L: tq.length })
          : fill(P.lengths, { Lq: tq.length, Lk: tk.length }),
      T: T,
      window: windowSaid,
    };
    counts = src.note;
    table = src.table;
  }
  var grids = attention(q, k, o),
    masked = [],
    blocked = false;
  caption.sink = sinkSaid(grids, o.sink, P.sink);
  caption = fill(caption.template, caption);
  for (var mi = 0; mi < o.Lq; mi++) {
    // the cells the mask blocks: drawn blank, struck through
    var mrow = "";
    for (var mj = 0; mj < o.Lk; mj++) {
      mrow += o.allowed(mi, mj) ? "0" : "1";
      blocked = blocked || !o.allowed(mi, mj);
    }
    masked.push(mrow);
  }
  return {
    views: {
      counts: { text: counts },
      table: table,
      heads: {
        grids: grids,
        rows: tq,
        cols: tk,
        titles: titles,
        caption: caption,
        vmin: 0,
        vmax: 1,
        scale: "viridis",
        label: "attention weight",
        masked: blocked ? masked : undefined,
        fit: true,
        cell_min: trained ? src.cell_min : undefined,
      },
    }, // a passage: cells small enough to fit
    readout: caption + ".",
    options: out.options,
    disabled: out.disabled,
    set: out.set,
    unused: trained
      ? {
          d_model: 1,
          num_heads: 1,
          num_kv_heads: 1,
          seq_len: 1,
          mask: 1,
          sentence: 1,
          window: cross,
        }
      : null,
    state: {
      source: v.source,
      seed: Number(seed),
      temperature: T,
      num_heads: trained ? src.H : v.num_heads,
      num_kv_heads: trained ? src.H : o.Hkv,
      seq_len: tq.length,
      mask_kind: trained ? (src.causal ? "causal" : "none") : v.mask,
      window: win,
      sink: v.sink,
      sentence: v.sentence,
    },
  };
}

// the explorer's second view, one head as lines (mha_book.figures.explorer's "view" control
// picks the heatmaps or the lines of the same weights; the lines view has its own head picker)
export function explorer(v, data, changed, root) {
  var st = heatmaps(v, data, changed, root),
    asLines = v.view === "lines",
    w = st.views.heads;
  st.views.lines = asLines
    ? {
        grids: w.grids,
        rows: w.rows,
        cols: w.cols,
        titles: w.titles,
        head: 0,
        focus: null,
        caption: w.caption,
        label: w.label,
      }
    : null;
  if (asLines) st.views.heads = null;
  if (v.view !== undefined) st.state.view = v.view;
  return st;
}

// "1 head", "2 key/value heads": a count's template ({n}, {s})
function count(template, n) {
  return fill(template, { n: n, s: n === 1 ? "" : "s" });
}
