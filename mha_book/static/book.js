// Built from mha_book/static/src/ by frontend/build.mjs (esbuild 0.28.2); do not edit: run `make frontend`.
(() => {
  // mha/static/src/extend.js
  function extend(name, version, register) {
    var all = window.mhaLiveExtensions = window.mhaLiveExtensions || [];
    var known = all.some(function(e) {
      return e.name === name && e.version >= version;
    });
    if (known) return;
    var ext = { name, version, register };
    all.push(ext);
    if (window.mhaLive && window.mhaLive.extend) window.mhaLive.extend(ext);
  }

  // mha/static/src/format.js
  function plural(n, noun) {
    return n + " " + noun + (n === 1 ? "" : "s");
  }
  function fmt(x, decimals) {
    if (x === null) return "NaN";
    if (x === 0) return "0";
    if (Math.abs(x) < 5e-3) return x.toExponential(0);
    if (decimals !== void 0 && decimals !== null) return x.toFixed(decimals);
    if (Number.isInteger(x) && Math.abs(x) > 1) return grouped(x);
    return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2);
  }
  function grouped(v) {
    return typeof v === "number" && Number.isInteger(v) && Math.abs(v) >= 1e3 ? v.toLocaleString("en") : String(v);
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)(?::([^}]*))?\}/g, function(all, name, spec) {
      if (!(name in values)) throw new Error("template " + template + ": no value for " + name);
      var v = values[name], decimals = /^\.(\d+)f$/.exec(spec || "");
      if (spec === void 0) return String(v);
      if (decimals) return v.toFixed(Number(decimals[1]));
      if (spec === "g") return String(Number(v.toPrecision(6)));
      if (spec === ",") return v.toLocaleString("en");
      throw new Error("template " + template + ": unknown format " + spec);
    });
  }

  // mha_book/static/src/attention.js
  function decode(b64) {
    var s = atob(b64), bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }
  function attention(q, k, o) {
    var group = o.H / o.Hkv, scale = 1 / (Math.sqrt(o.Dh) * o.T), out = [];
    var sink = typeof o.sink === "number" ? o.sink : null;
    for (var h = 0; h < o.H; h++) {
      var g = Math.floor(h / group), rows = [];
      for (var i = 0; i < o.Lq; i++) {
        var s = new Array(o.Lk), m = sink === null ? -Infinity : sink, sum = 0, j;
        for (j = 0; j < o.Lk; j++) {
          if (!o.allowed(i, j)) {
            s[j] = -Infinity;
            continue;
          }
          var dot = 0, qi = i * o.qStride + h * o.Dh, kj = j * o.kStride + g * o.Dh;
          for (var d = 0; d < o.Dh; d++) dot += q[qi + d] * k[kj + d];
          s[j] = dot * scale;
          if (s[j] > m) m = s[j];
        }
        for (j = 0; j < o.Lk; j++) {
          s[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - m);
          sum += s[j];
        }
        if (sink !== null) sum += Math.exp(sink - m);
        for (j = 0; j < o.Lk; j++) s[j] = sum > 0 ? s[j] / sum : 0;
        rows.push(s);
      }
      out.push(rows);
    }
    return out;
  }
  function windowed(allowed, w) {
    return typeof w !== "number" ? allowed : function(i, j) {
      return j <= i && j > i - w && allowed(i, j);
    };
  }
  function sinkSaid(grids, s, template) {
    if (typeof s !== "number") return "";
    var kept = 0, n = 0;
    grids.forEach(function(rows) {
      rows.forEach(function(r) {
        for (var j = 0; j < r.length; j++) kept += r[j];
        n++;
      });
    });
    kept /= n;
    return fill(template, { s, kept, lost: 1 - kept });
  }

  // mha_book/static/src/explorer.js
  function heatmaps(v, data, changed, root) {
    var memo = root.mhaMemo || (root.mhaMemo = { cache: {} }), src = data.sources[v.source];
    var trained = src.kind !== "random", out = { options: {}, disabled: {}, set: {} };
    function got(key2, b64) {
      return memo.cache[key2] || (memo.cache[key2] = decode(b64));
    }
    ["num_heads", "num_kv_heads", "seq_len", "mask", "sentence"].forEach(function(n) {
      out.disabled[n] = trained;
    });
    var cross = trained && !!src.cross, win = cross ? null : v.window;
    out.disabled.window = cross;
    out.disabled.d_model = true;
    var wasRandom = data.sources[memo.lastSource || v.source].kind === "random";
    if (changed === "source" && trained && wasRandom) {
      out.set.temperature = 1;
      memo.readerT = v.temperature;
    }
    if (changed === "source" && !trained && !wasRandom && memo.readerT !== void 0) {
      if (v.temperature === 1) out.set.temperature = memo.readerT;
      memo.readerT = void 0;
    }
    memo.lastSource = v.source;
    var prevH = memo.lastH === void 0 ? v.num_heads : memo.lastH;
    if (changed === "num_heads" && v.num_kv_heads === prevH) out.set.num_kv_heads = v.num_heads;
    memo.lastH = v.num_heads;
    var offered = [1, 2, 4, 8, 16].map(function(h2, i) {
      return v.num_heads % h2 === 0 ? i : -1;
    }).filter(function(i) {
      return i >= 0;
    });
    out.options.num_kv_heads = offered;
    var P = data.captions, windowSaid = win ? fill(P.window, { w: win }) : "", T = v.temperature, seed = String(v.seed), q, k, o, tq, tk, titles, caption, counts, table;
    if (!trained) {
      var H = v.num_heads, Hkv = v.num_kv_heads, L = v.seq_len, Dh = data.d_model / H;
      var key = seed + "|" + v.sentence, valid = Math.min(data.lengths[v.sentence], L);
      if (H % Hkv) Hkv = H;
      q = got("q" + key, src.q[key]);
      k = got("k" + key + Hkv * Dh, src.k[key + "|" + Hkv * Dh]);
      tq = tk = data.tokens[v.sentence].slice(0, L);
      o = {
        H,
        Hkv,
        Dh,
        Lq: L,
        Lk: L,
        qStride: data.d_model,
        kStride: Hkv * Dh,
        T,
        sink: v.sink,
        allowed: windowed(
          v.mask === "causal" ? function(i, j) {
            return j <= i;
          } : v.mask === "padding" ? function(i, j) {
            return j < valid;
          } : function() {
            return true;
          },
          win
        )
      };
      titles = [];
      for (var h = 0; h < H; h++) {
        titles.push(
          Hkv < H ? fill(P.head_kv, { h, g: Math.floor(h / (H / Hkv)) }) : fill(P.head, { h })
        );
      }
      caption = {
        template: P.random,
        heads: count(P.heads, H),
        kv: Hkv < H ? count(P.kv, Hkv) : "",
        L,
        d_model: data.d_model,
        T,
        // with no mask, the window is the mask ("mask: none, causal window 2" read as a
        // contradiction)
        mask: v.mask === "none" && win ? fill(P.window_mask, { w: win }) : v.mask,
        window: v.mask === "none" && win ? "" : windowSaid,
        seed
      };
      var c = data.counts[H + "," + Hkv + "," + L];
      counts = "d_head = " + Dh + ", parameters " + c[0].toLocaleString("en") + ", FLOPs " + c[1].toLocaleString("en") + ", KV cache values " + c[2].toLocaleString("en");
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
        T,
        sink: v.sink,
        allowed: windowed(
          src.causal ? function(i, j) {
            return j <= i;
          } : function() {
            return true;
          },
          win
        )
      };
      titles = src.titles;
      caption = {
        template: P.trained,
        source: v.source,
        sample: view.name ? fill(P.passage, { name: view.name, seed }) : fill(P.sample, { seed }),
        lengths: tk.length === tq.length ? fill(P.length, { L: tq.length }) : fill(P.lengths, { Lq: tq.length, Lk: tk.length }),
        T,
        window: windowSaid
      };
      counts = src.note;
      table = src.table;
    }
    var grids = attention(q, k, o), masked = [], blocked = false;
    caption.sink = sinkSaid(grids, o.sink, P.sink);
    caption = fill(caption.template, caption);
    for (var mi = 0; mi < o.Lq; mi++) {
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
        table,
        heads: {
          grids,
          rows: tq,
          cols: tk,
          titles,
          caption,
          vmin: 0,
          vmax: 1,
          scale: "viridis",
          label: "attention weight",
          masked: blocked ? masked : void 0,
          fit: true,
          cell_min: trained ? src.cell_min : void 0
        }
      },
      // a passage: cells small enough to fit
      readout: caption + ".",
      options: out.options,
      disabled: out.disabled,
      set: out.set,
      unused: trained ? {
        d_model: 1,
        num_heads: 1,
        num_kv_heads: 1,
        seq_len: 1,
        mask: 1,
        sentence: 1,
        window: cross
      } : null,
      state: {
        source: v.source,
        seed: Number(seed),
        temperature: T,
        num_heads: trained ? src.H : v.num_heads,
        num_kv_heads: trained ? src.H : o.Hkv,
        seq_len: tq.length,
        mask_kind: trained ? src.causal ? "causal" : "none" : v.mask,
        window: win,
        sink: v.sink,
        sentence: v.sentence
      }
    };
  }
  function explorer(v, data, changed, root) {
    var st = heatmaps(v, data, changed, root), asLines = v.view === "lines", w = st.views.heads;
    st.views.lines = asLines ? {
      grids: w.grids,
      rows: w.rows,
      cols: w.cols,
      titles: w.titles,
      head: 0,
      focus: null,
      caption: w.caption,
      label: w.label
    } : null;
    if (asLines) st.views.heads = null;
    if (v.view !== void 0) st.state.view = v.view;
    return st;
  }
  function count(template, n) {
    return fill(template, { n, s: n === 1 ? "" : "s" });
  }

  // mha_book/static/src/split_heads.js
  function ints16(b64) {
    var s = atob(b64), out = new Int16Array(s.length / 2);
    for (var i = 0; i < out.length; i++)
      out[i] = (s.charCodeAt(2 * i) | s.charCodeAt(2 * i + 1) << 8) << 16 >> 16;
    return out;
  }
  function splitHeads(v, data, changed, root) {
    var memo = root.mhaSplit || (root.mhaSplit = {}), R = data.rows, C = data.cols, H = v.num_heads;
    var Dh = C / H, key = H + "," + (v.wrong ? 1 : 0), input = memo.input || (memo.input = ints16(data.input));
    if (!memo[key]) {
      var lay = data.layouts[key], split = ints16(lay.split), merged = ints16(lay.merged);
      var pos = new Int32Array(R * C), p, r;
      for (p = 0; p < split.length; p++) pos[split[p] - 1] = p;
      var headOf = function(val) {
        return Math.floor(pos[val - 1] / (R * Dh));
      };
      var grids = [[], [], []];
      for (r = 0; r < R; r++) {
        var a = [], b = [];
        for (var c = 0; c < C; c++) {
          a.push(headOf(input[r * C + c]));
          b.push(headOf(merged[r * C + c]));
        }
        grids[0].push(a);
        grids[2].push(b);
      }
      for (var h0 = 0; h0 < H; h0++)
        for (r = 0; r < R; r++) {
          var row = [];
          for (p = 0; p < Dh; p++) row.push(h0);
          grids[1].push(row);
        }
      var back = 0;
      for (p = 0; p < merged.length; p++) if (merged[p] === input[p]) back++;
      memo[key] = { merged, pos, grids, back };
    }
    var m = memo[key], n = input[v.token * C + v.feature], at = m.pos[n - 1];
    var h = Math.floor(at / (R * Dh)), rw = Math.floor(at / Dh) % R, col = at % Dh;
    var q = m.merged.indexOf(n), t2 = Math.floor(q / C), f2 = q % C;
    var name = v.wrong ? "reshape without transpose" : "split_heads", tok = data.tokens;
    var nn = n.toLocaleString("en"), heads = H + " head" + (H > 1 ? "s" : "") + " of " + Dh;
    var how = v.wrong ? "its position counting from 0, " + (n - 1) + " = " + h + " x " + R * Dh + " + " + rw + " x " + Dh + " + " + col + ": the numbers are dealt out in reading order" : "feature " + v.feature + " = " + h + " x " + Dh + " + " + col;
    var home = t2 === v.token && f2 === v.feature;
    return {
      views: {
        strips: {
          heads: H,
          d_head: Dh,
          rows: R,
          cols: C,
          labels: tok,
          caption: nn + " = input[0, " + v.token + ", " + v.feature + "], " + heads,
          panels: [
            {
              title: "input (1, 9, 512): colour = the head that " + name + " gives each number to",
              grid: m.grids[0],
              focus: [v.token, v.feature]
            },
            {
              title: name + " -> (1, " + H + ", 9, " + Dh + "): the heads side by side",
              grid: m.grids[1],
              focus: [h, rw, col]
            },
            {
              title: "merge_heads -> (1, 9, 512): colour = the head each number came from" + (v.wrong && H > 1 ? " (a correct round trip's stripes, other numbers in them)" : ""),
              grid: m.grids[2],
              focus: [t2, f2]
            }
          ]
        },
        path: {
          columns: ["step", "index", "value"],
          caption: "The number " + nn + ", step by step",
          rows: [
            ["input", "[0, " + v.token + ", " + v.feature + "]", n],
            [name, "[0, " + h + ", " + rw + ", " + col + "]", n],
            ["merge_heads", "[0, " + t2 + ", " + f2 + "]", n]
          ]
        }
      },
      readout: nn + " (token " + v.token + ' "' + tok[v.token] + '", feature ' + v.feature + "): " + name + " puts it in head " + h + ", row " + rw + ", column " + col + " (" + how + "); merge_heads brings it to token " + t2 + ", feature " + f2 + (home ? m.back === R * C ? ", where it started." : ", where it started, by luck: the wrong round trip leaves only " + m.back.toLocaleString("en") + " of the " + (R * C).toLocaleString("en") + " numbers in place." : ", not where it started (token " + v.token + ", feature " + v.feature + ").") + (v.wrong && H > 1 ? " The real harm is inside attention: a row of a head is no longer one token, so the head compares pieces of different tokens." : ""),
      state: {
        num_heads: H,
        token: v.token,
        feature: v.feature,
        wrong: v.wrong,
        number: n,
        head: h,
        row: rw,
        column: col,
        back: [t2, f2]
      }
    };
  }

  // mha_book/static/src/lm_math.js
  function halves(b64) {
    var s = atob(b64), n = s.length >> 1, out = new Float32Array(n), pow = [], e;
    for (e = 0; e < 32; e++) pow.push(Math.pow(2, e - 25));
    for (var i = 0; i < n; i++) {
      var h = s.charCodeAt(2 * i) | s.charCodeAt(2 * i + 1) << 8, f = h & 1023, v;
      e = h >> 10 & 31;
      v = e === 0 ? f * 5960464477539063e-23 : e === 31 ? f ? NaN : Infinity : (1024 + f) * pow[e];
      out[i] = h & 32768 ? -v : v;
    }
    return out;
  }
  var ERF_C = (function() {
    var c = [], f = 1;
    for (var n = 0; n < 30; n++) {
      if (n) f *= n;
      c.push((n % 2 ? -2 : 2) / Math.sqrt(Math.PI) / (f * (2 * n + 1)));
    }
    return c;
  })();
  function erf(x) {
    var a = Math.abs(x), s, k;
    if (a < 2) {
      var z = x * x, top = a < 0.5 ? 10 : a < 1 ? 16 : 29;
      s = ERF_C[top];
      for (k = top - 1; k >= 0; k--) s = s * z + ERF_C[k];
      return x * s;
    }
    if (a > 6) return x > 0 ? 1 : -1;
    for (s = a, k = 40; k > 0; k--) s = a + k / 2 / s;
    s = 1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / s;
    return x > 0 ? s : -s;
  }
  var ERF_TABLE = (function() {
    var n = 6 * 64, v = new Float64Array(2 * n + 2), d = new Float64Array(2 * n + 2);
    for (var i = 0; i < v.length; i++) {
      var x = (i - n) / 64;
      v[i] = erf(x);
      d[i] = 2 / Math.sqrt(Math.PI) * Math.exp(-x * x) / 64;
    }
    return { v, d };
  })();
  function erfTable(x) {
    if (x >= 6) return 1;
    if (x <= -6) return -1;
    var u = (x + 6) * 64, i = u | 0, t = u - i, t2 = t * t, t3 = t2 * t, v = ERF_TABLE.v, d = ERF_TABLE.d;
    return (2 * t3 - 3 * t2 + 1) * v[i] + (t3 - 2 * t2 + t) * d[i] + (3 * t2 - 2 * t3) * v[i + 1] + (t3 - t2) * d[i + 1];
  }
  function linear(x, W, b, n, m, y, r0, r1) {
    var r = r0, o, i, w, v;
    for (; r + 3 < r1; r += 4) {
      var x0 = r * n, x1 = x0 + n, x2 = x1 + n, x3 = x2 + n;
      for (o = 0; o < m; o += 2) {
        var two = o + 1 < m, s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
        w = o * n;
        v = two ? w + n : w;
        for (i = 0; i < n; i++) {
          var wi = W[w + i], vi = W[v + i], a0 = x[x0 + i], a1 = x[x1 + i], a2 = x[x2 + i], a3 = x[x3 + i];
          s0 += a0 * wi;
          s1 += a1 * wi;
          s2 += a2 * wi;
          s3 += a3 * wi;
          t0 += a0 * vi;
          t1 += a1 * vi;
          t2 += a2 * vi;
          t3 += a3 * vi;
        }
        var bw = b ? b[o] : 0, y0 = r * m + o;
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
        var p0 = 0, p1 = 0;
        for (w = o * n, i = 0; i + 1 < n; i += 2) {
          p0 += x[xa + i] * W[w + i];
          p1 += x[xa + i + 1] * W[w + i + 1];
        }
        if (i < n) p0 += x[xa + i] * W[w + i];
        y[r * m + o] = p0 + p1 + (b ? b[o] : 0);
      }
    }
  }
  function layerNorm(x, g, b, D, eps, y, r0, r1) {
    for (var r = r0; r < r1; r++) {
      var o = r * D, mean = 0, v = 0, i;
      for (i = 0; i < D; i++) mean += x[o + i];
      mean /= D;
      for (i = 0; i < D; i++) v += (x[o + i] - mean) * (x[o + i] - mean);
      var inv = 1 / Math.sqrt(v / D + eps);
      for (i = 0; i < D; i++) y[o + i] = (x[o + i] - mean) * inv * g[i] + b[i];
    }
  }

  // mha_book/static/src/lm.js
  function TextModel(data) {
    var c = data.config, w = {}, self = this;
    Object.keys(data.weights).forEach(function(k) {
      w[k] = halves(data.weights[k]);
    });
    var C = c.context_length, D = c.d_model, H = c.num_heads, Hkv = c.num_kv_heads, Dh = c.d_head;
    var NL = c.num_layers;
    Object.assign(this, {
      w,
      C,
      D,
      H,
      Hkv,
      Dh,
      F: c.d_ff,
      NL,
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
      acc: new Float64Array(Dh)
    });
    for (var l = 0; l < NL; l++) {
      this.X.push(new Float32Array(C * D));
      this.K.push(new Float32Array(C * Hkv * Dh));
      this.V.push(new Float32Array(C * Hkv * Dh));
      this.W.push([]);
      for (var h = 0; h < H; h++) this.W[l].push(new Float32Array(C * C));
    }
    this.p = function(l2, name) {
      return w["encoder.layers." + l2 + "." + name] || null;
    };
    this.rope = null;
    if (c.positions === "rotary") {
      var half = Dh >> 1, base = c.rope_base || 1e4, cos = new Float64Array(C * half), sin = new Float64Array(C * half);
      for (var i = 0; i < C; i++) {
        for (var j = 0; j < half; j++) {
          var angle = i * Math.pow(base, -2 * j / Dh);
          cos[i * half + j] = Math.cos(angle);
          sin[i * half + j] = Math.sin(angle);
        }
      }
      this.rope = {
        cos,
        sin,
        half,
        interleaved: !!c.rope_interleaved
      };
    }
    this.index = {};
    c.vocab.split("").forEach(function(ch, i2) {
      self.index[ch] = i2;
    });
  }
  TextModel.prototype.run = function(ids) {
    var L = ids.length, p = 0, D = this.D, i, d, l;
    while (p < L && p < this.n && this.ids[p] === ids[p]) p++;
    if (p === L) return L;
    for (i = p; i < L; i++) this.ids[i] = ids[i];
    this.n = L;
    var tok = this.w["encoder.embed.tokens.weight"], pos = this.w["encoder.embed.positions.weight"], X0 = this.X[0];
    for (i = p; i < L; i++)
      for (d = 0; d < D; d++) X0[i * D + d] = tok[ids[i] * D + d] + pos[i * D + d];
    for (l = 0; l < this.NL; l++) this.layer(l, p, L);
    return p;
  };
  TextModel.prototype.layer = function(l, p, L) {
    var D = this.D, H = this.H, Dh = this.Dh, KD = this.Hkv * Dh, C = this.C, last = l === this.NL - 1;
    var P = this.p.bind(this, l), x = this.X[l], hb = this.h, q = this.q, K = this.K[l], V = this.V[l];
    var scale = 1 / Math.sqrt(Dh), s = this.s, group = H / this.Hkv, i, j, d;
    layerNorm(x, P("res_attn.norm.weight"), P("res_attn.norm.bias"), D, this.eps, hb, p, L);
    linear(hb, P("self_attn.W_q.weight"), P("self_attn.W_q.bias"), D, H * Dh, q, p, L);
    linear(hb, P("self_attn.W_k.weight"), P("self_attn.W_k.bias"), D, KD, K, p, L);
    if (!last) linear(hb, P("self_attn.W_v.weight"), P("self_attn.W_v.bias"), D, KD, V, p, L);
    if (this.rope) {
      this.rotate(q, H, p, L);
      this.rotate(K, this.Hkv, p, L);
    }
    for (var h = 0; h < H; h++) {
      var Wt = this.W[l][h], g = Math.floor(h / group) * Dh;
      for (i = p; i < L; i++) {
        var qo = i * H * Dh + h * Dh, m = -Infinity, sum = 0;
        for (j = 0; j <= i; j++) {
          var ko = j * KD + g, e0 = 0, e1 = 0, e2 = 0, e3 = 0;
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
    for (i = p * F; i < L * F; i++) f[i] = 0.5 * f[i] * (1 + erfTable(f[i] * Math.SQRT1_2));
    linear(f, P("ff.2.weight"), P("ff.2.bias"), F, D, o, p, L);
    for (i = p * D; i < L * D; i++) y[i] += o[i];
  };
  TextModel.prototype.rotate = function(x, n, r0, r1) {
    var rope = this.rope, half = rope.half, Dh = this.Dh;
    var b = rope.interleaved ? 1 : half, st = rope.interleaved ? 2 : 1;
    for (var i = r0; i < r1; i++) {
      for (var h = 0; h < n; h++) {
        var o = (i * n + h) * Dh;
        for (var j = 0; j < half; j++) {
          var c = rope.cos[i * half + j], s = rope.sin[i * half + j], u = o + j * st;
          var x0 = x[u], x1 = x[u + b];
          x[u] = x0 * c - x1 * s;
          x[u + b] = x0 * s + x1 * c;
        }
      }
    }
  };
  TextModel.prototype.scores = function(L, n) {
    var ids = this.ids, C = this.C, targets = [], rows = 0, i, j, k, out = { previous: [], prefix: [] };
    for (i = 0; i < L; i++) {
      var t = [];
      for (j = n; j <= i && i >= n - 1; j++) {
        for (k = 0; k < n && ids[i - k] === ids[j - 1 - k]; k++) ;
        if (k === n) t.push(j);
      }
      targets.push(t);
      if (t.length) rows++;
    }
    for (var l = 0; l < this.NL; l++) {
      var prev = [], pre = [];
      for (var h = 0; h < this.H; h++) {
        var Wt = this.W[l][h], a = 0, b = 0;
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

  // mha_book/static/src/text_heads.js
  function textProblem(text, data) {
    var C = data.model.config.context_length, bad = [];
    if (!text.length) return "the text is empty: type at least one character";
    if (text.length > C)
      return "the text has " + text.length + " characters; the model reads at most " + C;
    text.split("").forEach(function(ch) {
      if (data.vocab.indexOf(ch) < 0 && bad.indexOf(ch) < 0) bad.push(ch);
    });
    if (!bad.length) return null;
    return "the text has characters outside the model's vocabulary: " + bad.sort().map(function(ch) {
      return ch === "	" ? "tab" : ch === "\r" ? "carriage return" : "'" + ch + "'";
    }).join(", ") + "; it reads " + data.allowed;
  }
  function textHeads(v, data, changed, root) {
    var m = root.mhaText, set = {};
    if (!m) {
      m = root.mhaText = {
        model: new TextModel(data.model),
        own: v.passage === data.own ? v.text : null,
        views: null
      };
      m.export = function() {
        return textExport(m);
      };
    }
    if (changed === "passage" && v.passage !== data.own) set.text = data.passages[v.passage];
    else if (changed === "passage" && m.own !== null) set.text = m.own;
    if (set.text === v.text) delete set.text;
    if (changed === "text") {
      var typed = v.text.replace(/[\u2018\u2019]/g, "'").replace(/[\u201c\u201d]/g, '"');
      if (typed !== v.text) set.text = typed;
      var named = data.names.filter(function(n) {
        return data.passages[n] === typed;
      })[0];
      if (named === void 0) m.own = typed;
      if ((named === void 0 ? data.own : named) !== v.passage)
        set.passage = named === void 0 ? data.own : named;
    }
    if (Object.keys(set).length) return { set };
    var problem = textProblem(v.text, data), lm = m.model, text = v.text, L = text.length;
    var state = {
      passage: v.passage,
      text,
      layer: v.layer,
      head: v.head,
      length: L,
      error: problem
    };
    if (problem) {
      return {
        views: m.views || {},
        state,
        alert: "The model cannot read this text: " + problem + ".",
        readout: m.views ? "The pictures are still those of the last text the model could read: \u201C" + (m.text.length > 40 ? m.text.slice(0, 40) + "\u2026" : m.text) + "\u201D (" + plural(m.text.length, "character") + ")." : "No picture yet: the model has not read a text."
      };
    }
    lm.run(
      text.split("").map(function(ch) {
        return lm.index[ch];
      })
    );
    var sc = lm.scores(L, data.n), labels = text.split("").map(function(ch) {
      return data.glyphs[ch] || ch;
    });
    var grids = [], titles = [], rows = [], best = { previous: [], prefix: null };
    for (var l = 0; l < lm.NL; l++) {
      best.previous.push(null);
      for (var h = 0; h < lm.H; h++) {
        var g = [], Wt = lm.W[l][h], name = "layer " + l + ", head " + h;
        for (var i = 0; i < L; i++) g.push(Wt.subarray(i * lm.C, i * lm.C + L));
        grids.push(g);
        titles.push(name + (l === v.layer && h === v.head ? " (lines)" : ""));
        var p = sc.previous[l][h], x = sc.prefix[l][h];
        if (p !== null && (!best.previous[l] || p > best.previous[l][1])) best.previous[l] = [h, p];
        if (x !== null && (!best.prefix || x > best.prefix[1])) best.prefix = [name, x];
        rows.push([
          name + (l === v.layer && h === v.head ? " (lines)" : ""),
          num(sc.previous[l][h]),
          num(sc.prefix[l][h])
        ]);
      }
    }
    m.sc = sc;
    m.L = L;
    m.text = text;
    var where = v.passage === data.own ? "your text" : v.passage;
    m.views = {
      heads: {
        grids,
        rows: labels,
        cols: labels,
        titles,
        raster: true,
        cell_min: 1,
        caption: "Every head on " + where + " (" + plural(L, "character") + ")",
        vmin: 0,
        vmax: 1,
        scale: "viridis",
        label: "attention weight"
      },
      lines: {
        grids: [grids[v.layer * lm.H + v.head]],
        rows: labels,
        cols: labels,
        titles: null,
        head: 0,
        focus: null,
        caption: "layer " + v.layer + ", head " + v.head + " on " + where,
        label: "attention weight",
        max_rows: 14
      },
      scores: {
        columns: ["head", "previous token", "prefix match (n\xA0=\xA0" + data.n + ")"],
        rows,
        caption: "Each head's scores on this text: the mean weight on the character just before, and on the characters that followed an earlier occurrence of the last " + data.n + " characters (" + queries(sc.matches) + " with one)"
      }
    };
    return {
      views: m.views,
      state,
      readout: readout(best, sc, data.n) + " Lines (below the heatmaps): layer " + v.layer + ", head " + v.head + "."
    };
  }
  function num(x) {
    return x === null ? "n/a" : x;
  }
  function queries(k) {
    return k + (k === 1 ? " query" : " queries");
  }
  function readout(best, sc, n) {
    var s = best.previous[0] ? "Previous token, the most weight on the character just before (on average): " + best.previous.map(function(b, l) {
      return "layer " + l + ", head " + b[0] + " (" + fmt(b[1]) + ")";
    }).join("; ") + ". " : "One character: no previous-token score. ";
    if (!best.prefix) {
      return s + "No " + n + " characters occur twice in this text, so no prefix-matching score: type something that repeats (a word twice).";
    }
    return s + "Prefix matching, the most weight on what followed the last " + n + " characters where they came before: " + best.prefix[0] + " (" + fmt(best.prefix[1]) + " over " + queries(sc.matches) + ").";
  }
  function textExport(m) {
    var lm = m.model, w = [];
    for (var l = 0; l < lm.NL; l++) {
      w.push(
        lm.W[l].map(function(Wt) {
          var g = [];
          for (var i = 0; i < m.L; i++) g.push(Array.from(Wt.subarray(i * lm.C, i * lm.C + m.L)));
          return g;
        })
      );
    }
    return {
      text: m.text,
      weights: w,
      previous: m.sc.previous,
      prefix: m.sc.prefix,
      matches: m.sc.matches
    };
  }

  // mha_book/static/src/main.js
  extend("mha_book", 1, function(live) {
    live.compute.explorer = explorer;
    live.compute["split-heads"] = splitHeads;
    live.compute["text-heads"] = textHeads;
    live.attention = attention;
    live.decode = decode;
  });
})();
