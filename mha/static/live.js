// Built from mha/static/src/ by frontend/build.mjs (esbuild 0.28.2); do not edit: run `make frontend`.
(() => {
  // mha/static/src/canvas.js
  function avail(canvas) {
    var p = canvas.parentElement, w = p && p.clientWidth || 700;
    return Math.max(280, Math.min(w, 1100));
  }
  function setup(canvas, width, height) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(width * dpr);
    canvas.height = Math.ceil(height * dpr);
    canvas.style.width = width + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    record(ctx);
    canvas.mhaTexts = [];
    ctx.clearRect(0, 0, width, height);
    ctx.font = "12px sans-serif";
    ctx.textBaseline = "middle";
    return ctx;
  }
  function record(ctx) {
    if (ctx.mhaRecord) return;
    var fill = ctx.fillText;
    ctx.mhaRecord = true;
    ctx.fillText = function(s, x, y) {
      fill.apply(this, arguments);
      s = String(s);
      if (!s.trim()) return;
      var m = this.measureText(s), k = window.devicePixelRatio || 1, f = this.getTransform();
      var l = x - m.actualBoundingBoxLeft, r = x + m.actualBoundingBoxRight;
      var u = y - m.actualBoundingBoxAscent, b = y + m.actualBoundingBoxDescent;
      (this.canvas.mhaTexts = this.canvas.mhaTexts || []).push({
        text: s,
        font: this.font,
        corners: [
          [l, u],
          [r, u],
          [r, b],
          [l, b]
        ].map(function(p) {
          return [(f.a * p[0] + f.c * p[1] + f.e) / k, (f.b * p[0] + f.d * p[1] + f.f) / k];
        })
      });
    };
  }
  var MEASURE = null;
  function measurer(font) {
    MEASURE = MEASURE || document.createElement("canvas").getContext("2d");
    MEASURE.font = font;
    return MEASURE;
  }
  function widest(list, font) {
    var m = measurer(font), w = 0;
    list.forEach(function(s) {
      w = Math.max(w, m.measureText(String(s)).width);
    });
    return Math.ceil(w);
  }
  function wrap(text, width, font) {
    var m = measurer(font), lines2 = [], line = "";
    function fits(s) {
      return m.measureText(s).width <= width;
    }
    String(text || "").split(/\s+/).filter(Boolean).forEach(function(w) {
      if (fits(line ? line + " " + w : w)) {
        line = line ? line + " " + w : w;
        return;
      }
      if (line) lines2.push(line);
      while (!fits(w) && w.length > 1) {
        var k = w.length - 1;
        while (k > 1 && !fits(w.slice(0, k))) k--;
        lines2.push(w.slice(0, k));
        w = w.slice(k);
      }
      line = w;
    });
    if (line) lines2.push(line);
    return lines2;
  }
  var CAPTION_FONT = "bold 13px sans-serif";
  var CAPTION_LINE = 16;
  function heading(text, width) {
    var lines2 = wrap(text, width - 8, CAPTION_FONT);
    return { lines: lines2, h: Math.max(1, lines2.length) * CAPTION_LINE + 4 };
  }
  function caption(ctx, cap, t) {
    ctx.fillStyle = t.fg;
    ctx.textAlign = "left";
    ctx.font = CAPTION_FONT;
    cap.lines.forEach(function(s, i) {
      ctx.fillText(s, 4, 10 + i * CAPTION_LINE);
    });
    ctx.font = "12px sans-serif";
    ctx.canvas.dataset.caption = JSON.stringify(cap.lines);
  }

  // mha/static/src/format.js
  function round(x) {
    return x === null || !isFinite(x) ? null : Math.round(x * 1e6) / 1e6;
  }
  function roundDeep(a) {
    return Array.isArray(a) ? a.map(roundDeep) : round(a);
  }
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
  function fmtFor(values) {
    var all = [];
    (function walk(a) {
      if (Array.isArray(a)) a.forEach(walk);
      else if (a !== null) all.push(a);
    })(values);
    var counts = all.some(function(v) {
      return Math.abs(v) > 1;
    }) && all.every(Number.isInteger);
    return function(x, decimals) {
      if (x === null || x === 0 || decimals !== void 0 && decimals !== null)
        return fmt(x, decimals);
      if (counts) return grouped(x);
      return Number.isInteger(x) && Math.abs(x) < 100 ? x.toFixed(2) : fmt(x);
    };
  }
  function niceTicks(lo, hi, n) {
    if (!isFinite(lo) || !isFinite(hi)) return [];
    if (hi < lo) {
      var sw = lo;
      lo = hi;
      hi = sw;
    }
    if (hi === lo) return [lo];
    var raw = (hi - lo) / (n || 5), power = Math.pow(10, Math.floor(Math.log10(raw)));
    var best = 1;
    [1, 2, 2.5, 5, 10].forEach(function(c) {
      if (Math.abs(Math.log(c * power / raw)) < Math.abs(Math.log(best * power / raw))) best = c;
    });
    var step = best * power, out = [], first = Math.ceil(lo / step - 1e-9);
    for (var k = first; k * step <= hi + step * 1e-9; k++) out.push(+(k * step).toPrecision(12));
    out.step = step;
    return out;
  }
  function tickText(v, step) {
    var dec = Math.max(
      0,
      -Math.floor(Math.log10(step) + 1e-9) + (Math.round(step / Math.pow(10, Math.floor(Math.log10(step) + 1e-9)) * 10) % 10 ? 1 : 0)
    );
    var x = +v.toFixed(Math.min(dec, 12));
    return Number.isInteger(x) && Math.abs(x) >= 1e3 ? x.toLocaleString("en") : String(x);
  }
  function log2Ticks(least2, most2) {
    var lo = Math.floor(Math.log2(least2)), hi = Math.ceil(Math.log2(most2));
    if (hi === lo) hi = lo + 1;
    var step = Math.max(1, Math.ceil((hi - lo) / 5)), out = [];
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    for (var k = lo; k <= hi; k += step) out.push(k);
    return out;
  }
  var BYTE_UNITS = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function log2Text(k, unit) {
    var u = unit === void 0 || unit === null ? -1 : BYTE_UNITS.indexOf(unit);
    if (u < 0) return k >= 0 ? grouped(Math.pow(2, k)) : "1/" + grouped(Math.pow(2, -k));
    var e = k + 10 * u, at = Math.max(0, Math.min(BYTE_UNITS.length - 1, Math.floor(e / 10)));
    return log2Text(e - 10 * at) + " " + BYTE_UNITS[at];
  }
  function grouped(v) {
    return typeof v === "number" && Number.isInteger(v) && Math.abs(v) >= 1e3 ? v.toLocaleString("en") : String(v);
  }

  // mha/static/src/arrows.js
  function arrows(canvas, d, t) {
    var n = d.panels.length, room = avail(canvas), gap = 8;
    var ncols = Math.max(1, Math.min(n, Math.floor((room + gap) / (120 + gap))));
    var size = Math.min(150, Math.floor((room - gap * (ncols - 1)) / ncols));
    var width = ncols * size + (ncols - 1) * gap, rows = Math.ceil(n / ncols);
    var cap = heading(d.caption || "", width), keys = [], lx = 4, ly = cap.h + 10;
    d.labels.forEach(function(s) {
      var w = 22 + widest([s], "12px sans-serif");
      if (lx > 4 && lx + w > width - 4) {
        lx = 4;
        ly += 16;
      }
      keys.push([lx, ly]);
      lx += w + 8;
    });
    var top = ly + 14, height = top + rows * (size + 18) + 4, ctx = setup(canvas, width, height);
    var colours = [t.bar, t.accent, t.third], r0 = (size / 2 - 12) / (d.radius || 1);
    caption(ctx, cap, t);
    d.labels.forEach(function(s, i) {
      var at = keys[i];
      ctx.strokeStyle = colours[i % 3];
      ctx.lineWidth = 3;
      ctx.setLineDash(i === 2 ? [5, 3] : []);
      ctx.beginPath();
      ctx.moveTo(at[0], at[1]);
      ctx.lineTo(at[0] + 18, at[1]);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      ctx.fillStyle = t.fg;
      ctx.textAlign = "left";
      ctx.fillText(s, at[0] + 22, at[1]);
    });
    d.panels.forEach(function(p, k) {
      var x0 = k % ncols * (size + gap), y0 = top + Math.floor(k / ncols) * (size + 18);
      var cx = x0 + size / 2, cy = y0 + 18 + size / 2 - 6;
      ctx.fillStyle = t.fg;
      ctx.textAlign = "center";
      ctx.fillText(p.title, cx, y0 + 6);
      ctx.strokeStyle = t.muted;
      ctx.beginPath();
      ctx.arc(cx, cy, (d.radius || 1) * r0, 0, 7);
      ctx.moveTo(cx - size / 2 + 6, cy);
      ctx.lineTo(cx + size / 2 - 6, cy);
      ctx.moveTo(cx, cy - size / 2 + 8);
      ctx.lineTo(cx, cy + size / 2 - 8);
      ctx.stroke();
      for (var i = p.arrows.length - 1; i >= 0; i--) {
        var a = p.arrows[i];
        if (a[0] === null || a[1] === null) continue;
        var ex = cx + a[0] * r0, ey = cy - a[1] * r0, ang = Math.atan2(ey - cy, ex - cx);
        ctx.strokeStyle = ctx.fillStyle = colours[i % 3];
        ctx.lineWidth = i === 2 ? 2 : 2.5;
        ctx.setLineDash(i === 2 ? [5, 3] : []);
        ctx.beginPath();
        ctx.moveTo(cx, cy);
        ctx.lineTo(ex, ey);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.beginPath();
        ctx.moveTo(ex, ey);
        ctx.lineTo(ex - 8 * Math.cos(ang - 0.4), ey - 8 * Math.sin(ang - 0.4));
        ctx.lineTo(ex - 8 * Math.cos(ang + 0.4), ey - 8 * Math.sin(ang + 0.4));
        ctx.fill();
        ctx.lineWidth = 1;
      }
    });
    canvas.dataset.values = JSON.stringify(
      d.panels.map(function(p) {
        return roundDeep(p.arrows);
      })
    );
    canvas.dataset.colours = JSON.stringify(colours);
    return (d.caption ? d.caption + ". " : "") + d.panels.map(function(p) {
      return p.title + ": " + p.arrows.map(function(a, i) {
        return d.labels[i] + " (" + fmt(a[0]) + ", " + fmt(a[1]) + ")";
      }).join(", ");
    }).join("; ") + ".";
  }

  // mha/static/src/bars.js
  function bars(canvas, d, t) {
    var n = d.values.length, room = avail(canvas), ph = 170;
    var ticks = niceTicks(d.y_min || 0, d.y_max || 1, 5);
    var x0 = Math.max(
      52,
      widest(
        ticks.map(function(tv) {
          return tickText(tv, ticks.step);
        }),
        "12px sans-serif"
      ) + 26
    );
    var bw = Math.max(18, Math.min(56, Math.floor((room - x0 - 10) / n)));
    var width = x0 + n * bw + 10, cap = heading(d.caption || "", width), y0 = cap.h + 18;
    var upright = bw * Math.SQRT1_2 < 16, sin = upright ? 1 : Math.SQRT1_2;
    var labH = Math.ceil(widest(d.labels, "12px sans-serif") * sin) + 14;
    var height = y0 + ph + labH + 20, lo = d.y_min || 0, hi = d.y_max || 1;
    var ctx = setup(canvas, width, height), hl = d.highlight || [], f = fmtFor(d.values);
    caption(ctx, cap, t);
    function y(v2) {
      return y0 + ph - (Math.max(lo, Math.min(hi, v2)) - lo) / (hi - lo) * ph;
    }
    ctx.strokeStyle = t.muted;
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(x0, y0 + ph);
    ctx.lineTo(x0 + n * bw, y0 + ph);
    ctx.stroke();
    ctx.textAlign = "right";
    ctx.fillStyle = t.fg;
    ticks.forEach(function(tv) {
      ctx.fillText(tickText(tv, ticks.step), x0 - 4, y(tv));
    });
    canvas.dataset.ticks = JSON.stringify(ticks);
    ctx.save();
    ctx.translate(12, y0 + ph / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(d.y_label || "attention weight", 0, 0);
    ctx.restore();
    var said = [];
    for (var j = 0; j < n; j++) {
      var v = d.values[j], x = x0 + j * bw + Math.max(2, bw * 0.15), w = bw - 2 * Math.max(2, bw * 0.15);
      ctx.fillStyle = hl.indexOf(j) >= 0 ? t.accent : t.bar;
      if (v !== null)
        ctx.fillRect(
          x,
          v > lo ? Math.min(y(v), y(lo) - 3) : y(v),
          w,
          v > lo ? Math.max(3, y(lo) - y(v)) : y(lo) - y(v)
        );
      var s = v === null ? d.null_label || "n/a" : f(v, d.decimals), at = y(v === null ? lo : v);
      ctx.fillStyle = t.fg;
      ctx.textAlign = "center";
      ctx.font = "12px sans-serif";
      if (ctx.measureText(s).width <= bw - 4) {
        ctx.fillText(s, x + w / 2, at - 8);
      } else {
        ctx.font = "11px sans-serif";
        var len = ctx.measureText(s).width, inside = at - 4 - len < y0 - 12 && v !== null;
        ctx.save();
        ctx.translate(x + w / 2, inside ? at + 4 : at - 4);
        ctx.rotate(-Math.PI / 2);
        ctx.textAlign = inside ? "right" : "left";
        if (inside) ctx.fillStyle = t.dark ? "#111" : "#fff";
        ctx.fillText(s, 0, 0);
        ctx.restore();
        ctx.font = "12px sans-serif";
      }
      said.push(s);
      ctx.fillStyle = t.fg;
      ctx.save();
      ctx.translate(x + w / 2, y0 + ph + 6);
      ctx.rotate(upright ? -Math.PI / 2 : -Math.PI / 4);
      ctx.textAlign = "right";
      ctx.fillText(d.labels[j], 0, 0);
      ctx.restore();
    }
    ctx.textAlign = "center";
    ctx.fillText(d.x_label || "key", x0 + n * bw / 2, height - 8);
    canvas.dataset.values = JSON.stringify(roundDeep(d.values));
    canvas.dataset.numbers = JSON.stringify(said);
    return (d.caption ? d.caption + ". " : "") + "Bars: " + d.labels.map(function(s2, i) {
      return s2 + " " + (d.values[i] === null ? d.null_label || "n/a" : f(d.values[i], d.decimals));
    }).join(", ") + ".";
  }

  // mha/static/src/colours.js
  var VIRIDIS = "440154470d6048186a482374472e7c4538824241863e4a893a548c365d8d32658e2e6d8e2b758e287d8e25848e228c8d1f948c1e9c8920a38625ab822eb37c3aba7648c16e58c7656ccd5a7fd34e93d741a8db34c0df25d5e21aeae51afde725";
  var RDBU = "2166ac4393c392c5ded1e5f0f7f7f7fddbc7f4a582d6604db2182b";
  function ramp(hex) {
    var out = [];
    for (var c = 0; c < hex.length; c += 6) {
      out.push(
        [0, 2, 4].map(function(o) {
          return parseInt(hex.substr(c + o, 2), 16);
        })
      );
    }
    return out;
  }
  var RAMPS = { viridis: ramp(VIRIDIS), diverging: ramp(RDBU) };
  function colour(v, name2) {
    var rgb = RAMPS[name2 || "viridis"], x = Math.min(1, Math.max(0, v)) * (rgb.length - 1);
    var i = Math.min(rgb.length - 2, Math.floor(x)), f = x - i, a = rgb[i], b = rgb[i + 1];
    return "rgb(" + [0, 1, 2].map(function(k) {
      return Math.round(a[k] + f * (b[k] - a[k]));
    }) + ")";
  }
  function theme(el2) {
    var fg = getComputedStyle(el2).color || "#222";
    var rgb = (fg.match(/[\d.]+/g) || [34, 34, 34]).map(Number);
    var dark = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255 > 0.5;
    var root = el2.closest ? el2.closest(".mha-live") || el2 : el2;
    root.style.colorScheme = dark ? "dark" : "light";
    return {
      fg,
      muted: dark ? "#9aa4ae" : "#666",
      accent: dark ? "#ffa657" : "#c24e00",
      bar: dark ? "#6cb6ff" : "#1f5fa8",
      nan: dark ? "#8c8c8c" : "#737373",
      // a third series (chapter 12's dashed "q at 0"): a grey 3:1 or more against the page and
      // the book's grey output panel (the muted grey is for axes, and faded on that panel)
      third: dark ? "#c4c4c4" : "#474747",
      nanCross: dark ? "#111" : "#fff",
      dark
    };
  }

  // mha/static/src/colourbar.js
  var COLOUR_BAR_BELOW = 50;
  function barTicks(d) {
    if (d.ticks) {
      return {
        values: d.ticks,
        text: d.ticks.map(function(v, i) {
          return d.tick_labels ? d.tick_labels[i] : String(v);
        })
      };
    }
    var ticks = niceTicks(d.vmin, d.vmax, 4);
    return {
      values: ticks,
      text: ticks.map(function(v) {
        return tickText(v, ticks.step);
      })
    };
  }
  function spread(boxes, width) {
    var gap = 6, out = boxes.map(function(b) {
      return Math.max(b.w / 2 + 1, Math.min(width - b.w / 2 - 1, b.c));
    });
    for (var i = 1; i < out.length; i++) {
      out[i] = Math.max(out[i], out[i - 1] + (boxes[i - 1].w + boxes[i].w) / 2 + gap);
    }
    for (i = out.length - 1; i >= 0; i--) {
      var right = i === out.length - 1 ? width - 1 : out[i + 1] - boxes[i + 1].w / 2 - gap;
      out[i] = Math.min(out[i], right - boxes[i].w / 2);
    }
    var last = -Infinity;
    return out.map(function(c, i2) {
      if (c - boxes[i2].w / 2 < Math.max(0, last + gap - 0.5)) return null;
      last = c + boxes[i2].w / 2;
      return c;
    });
  }
  function tickWidth(d) {
    return widest(barTicks(d).text, "12px sans-serif");
  }
  function colourBarWidth(d) {
    return 6 + 24 + tickWidth(d) + 10;
  }
  function colourBar(ctx, x, y, len, d, t, below) {
    var lo = d.vmin, hi = d.vmax, p, ticks = barTicks(d);
    for (p = 0; p < len; p++) {
      ctx.fillStyle = colour(below ? p / (len - 1) : 1 - p / (len - 1), d.scale);
      if (below) ctx.fillRect(x + p, y, 1, 12);
      else ctx.fillRect(x, y + p, 12, 1);
    }
    ctx.strokeStyle = t.muted;
    ctx.strokeRect(x, y, below ? len : 12, below ? 12 : len);
    ctx.fillStyle = t.fg;
    ctx.textAlign = below ? "center" : "left";
    var spots = ticks.values.map(function(v) {
      return (v - lo) / (hi - lo) * (len - 1);
    });
    if (below) {
      var place = spread(
        ticks.text.map(function(s, i) {
          return { c: x + spots[i], w: ctx.measureText(s).width };
        }),
        parseFloat(ctx.canvas.style.width)
      );
      place.forEach(function(c, i) {
        if (c !== null) ctx.fillText(ticks.text[i], c, y + 21);
      });
    } else {
      ticks.values.forEach(function(v, i) {
        ctx.fillText(ticks.text[i], x + 16, y + len - spots[i]);
      });
    }
    ctx.canvas.dataset.ticks = JSON.stringify(ticks.values);
    ctx.canvas.dataset.colourBar = below ? "below" : "right";
    ctx.canvas.dataset.colourBarLength = String(Math.round(len));
    ctx.save();
    ctx.textAlign = "center";
    if (below) ctx.translate(x + len / 2, y + 38);
    else {
      ctx.translate(x + 24 + tickWidth(d), y + len / 2);
      ctx.rotate(-Math.PI / 2);
    }
    ctx.fillText(d.label || "attention weight", 0, 0);
    ctx.restore();
  }

  // mha/static/src/heat_layout.js
  var HEAT_MIN = 9;
  var LABEL_MIN = 9;
  var HEAT_GAP = 14;
  var SHARED_GAP = 8;
  var HEAT_WIDTH = 240;
  function heatLayout(d, room) {
    var H = d.grids.length, Lq = d.rows.length, Lk = d.cols.length, n = Math.max(Lq, Lk, 1);
    var narrow2 = room < 480, bar = colourBarWidth(d), L = { shared: false };
    var lab = widest(d.rows, "12px sans-serif") + 6, texts = {};
    L.fmt = d.raster ? fmt : fmtFor(d.grids);
    if (d.numbers) {
      d.grids.forEach(function(g) {
        g.forEach(function(r) {
          r.forEach(function(v) {
            if (v !== null) texts[L.fmt(v)] = 1;
          });
        });
      });
      texts = Object.keys(texts);
    }
    var most2 = Math.max(Math.floor(264 / n), d.numbers ? widest(texts, "11px sans-serif") + 4 : 0);
    if (d.cell_max) most2 = Math.min(most2, d.cell_max);
    function fit(reserve2, label) {
      return Math.max(
        d.cell_min || HEAT_MIN,
        Math.min(
          d.numbers ? 38 : 22,
          Math.floor((room - label - reserve2 - HEAT_GAP) / Math.max(Lk, 1)),
          most2
        )
      );
    }
    L.below = narrow2;
    L.cell = fit(L.below ? 8 : bar, lab);
    if (!L.below && Lq * L.cell < 100) {
      L.below = true;
      L.cell = fit(8, lab);
    }
    var reserve = L.below ? 8 : bar;
    if (d.numbers) {
      if (L.cell < widest(texts, "9px sans-serif") + 3) {
        var two = d.rows.map(function(s) {
          return wrap(s, Math.ceil(widest(d.rows, "10px sans-serif") * 0.6), "10px sans-serif");
        });
        var cell2 = fit(reserve, widest([].concat.apply([], two), "10px sans-serif") + 6);
        if (cell2 >= 25 && cell2 > L.cell && two.every(function(x) {
          return x.length <= 2;
        })) {
          L.cell = cell2;
          L.rowLines = two;
        }
      }
    }
    var all = d.rows.concat(d.cols).join("");
    function inkHeight(f) {
      var m = measurer(f + "px sans-serif").measureText(all);
      return m.actualBoundingBoxAscent + m.actualBoundingBoxDescent;
    }
    function labels() {
      L.font = 12;
      while (L.font > LABEL_MIN && inkHeight(L.font) > L.cell - 1.5) L.font--;
      L.stride = inkHeight(L.font) > L.cell - 1.5 ? Math.max(2, Math.ceil((inkHeight(L.font) + 1.5) / L.cell)) : 1;
      var f = L.font + "px sans-serif";
      L.rowLab = (L.rowLines ? widest([].concat.apply([], L.rowLines), "10px sans-serif") : widest(d.rows, f)) + 6;
      L.colLab = widest(d.cols, f) + 6;
      L.panelW = L.rowLab + Lk * L.cell + HEAT_GAP;
    }
    labels();
    L.ncols = Math.max(1, Math.min(4, H, Math.floor((room - reserve) / L.panelW)));
    if (H > 1 && L.ncols < 2 && !d.numbers) twoARow(L, d, room, reserve, labels);
    L.step = L.shared ? Lk * L.cell + SHARED_GAP : L.panelW;
    L.gridsW = L.shared ? L.rowLab + L.ncols * L.step - SHARED_GAP + 4 : L.ncols * L.panelW;
    L.extra = L.below ? L.shared ? 0 : 8 : bar;
    L.titles = (d.titles || []).map(function(s) {
      return wrap(
        s,
        Math.max((L.shared ? L.step : Lk * L.cell + HEAT_GAP) - 4, 60),
        "12px sans-serif"
      );
    });
    L.titleH = d.titles ? Math.max.apply(
      null,
      L.titles.map(function(x) {
        return x.length;
      })
    ) * 14 + 6 : 6;
    L.panelH = L.titleH + Lq * L.cell + L.colLab + 8;
    L.numbers = 0;
    if (d.numbers) {
      [11, 10, 9].some(function(f) {
        var ok = f <= L.cell - 4 && widest(texts, f + "px sans-serif") <= L.cell - 3;
        if (ok) L.numbers = f;
        return ok;
      });
    }
    return L;
  }
  function twoARow(L, d, room, reserve, labels) {
    var H = d.grids.length, Lk = d.cols.length, first = L.cell, c;
    for (c = first; c >= 11 && room >= 480 && !L.two; c--) {
      L.cell = c;
      labels();
      if (L.stride === 1 && 2 * L.panelW <= room - reserve) L.two = "own";
    }
    for (c = first; c >= 10 && !L.two; c--) {
      L.cell = c;
      labels();
      if (L.stride === 1 && L.rowLab + 2 * Lk * c + SHARED_GAP + (L.below ? 4 : reserve) <= room)
        L.two = "shared";
    }
    if (!L.two) {
      L.cell = first;
      labels();
      return;
    }
    L.shared = L.two === "shared";
    L.ncols = Math.max(
      2,
      Math.min(
        4,
        H,
        L.shared ? Math.floor(
          (room - L.rowLab - (L.below ? 4 : reserve) + SHARED_GAP) / (Lk * L.cell + SHARED_GAP)
        ) : Math.floor((room - reserve) / L.panelW)
      )
    );
  }
  var FIT_MIN = 12;
  function fitScreen(canvas, d, room, L) {
    var root = canvas.closest ? canvas.closest(".mha-live") : null;
    var bar = root && root.querySelector(".mha-bar"), top = root ? parseFloat(root.style.getPropertyValue("--mha-top")) || 0 : 0;
    var budget = Math.max(300, window.innerHeight - top - (bar ? bar.offsetHeight : 0) - 110);
    function tall(M2) {
      return Math.ceil(d.grids.length / M2.ncols) * M2.panelH;
    }
    var copy = {}, k;
    for (k in d) copy[k] = d[k];
    for (var c = L.cell - 1; tall(L) > budget && c >= FIT_MIN; c--) {
      copy.cell_max = c;
      var M = heatLayout(copy, room);
      if (M.stride > 1) break;
      if (tall(M) < tall(L)) L = M;
    }
    return L;
  }

  // mha/static/src/masked.js
  function maskRows(masked, h) {
    if (!masked || !masked.length) return null;
    return typeof masked[0] === "string" ? masked : masked[h] || null;
  }
  function isMasked(masked, h, i, j) {
    var rows = maskRows(masked, h);
    return !!rows && rows[i].charAt(j) === "1";
  }

  // mha/static/src/heatmap.js
  function heatmap(canvas, d, t) {
    var H = d.grids.length, Lq = d.rows.length, Lk = d.cols.length, lo = d.vmin, hi = d.vmax;
    var room = avail(canvas), L = heatLayout(d, room), h, i, j;
    if (d.fit && H > 1 && !d.raster) L = fitScreen(canvas, d, room, L);
    var cell = L.cell;
    var axes = (d.axes || "rows: queries, columns: keys") + (L.stride > 1 ? " (" + everyNth(L.stride) + " token labelled)" : "") + (d.masked ? "; blank" + (d.raster ? "" : ", struck through") + ": masked" : "");
    var width = Math.min(room, Math.max(L.gridsW + L.extra, HEAT_WIDTH));
    var cap = heading(d.caption || "", width), sub = wrap(axes, width - 8, "12px sans-serif");
    var top = cap.h + sub.length * 15 + 2, nrows = Math.ceil(H / L.ncols);
    var barLen = L.below ? Math.min(220, width - L.rowLab - 20) : Math.min(200, Math.max(100, nrows * L.panelH - L.titleH - 12));
    var height = top + nrows * L.panelH + (L.below ? COLOUR_BAR_BELOW + 4 : 6);
    if (!L.below) height = Math.max(height, top + L.titleH + barLen + 10);
    var ctx = setup(canvas, width, height), panels = [];
    caption(ctx, cap, t);
    ctx.fillStyle = t.muted;
    ctx.textAlign = "left";
    sub.forEach(function(s, k) {
      ctx.fillText(s, 4, cap.h + 6 + k * 15);
    });
    var labelFont = L.font + "px sans-serif";
    for (h = 0; h < H; h++) {
      var c = h % L.ncols, x0 = L.shared ? L.rowLab + c * L.step : c * L.panelW + L.rowLab;
      var y0 = top + Math.floor(h / L.ncols) * L.panelH + L.titleH;
      panels.push([x0, y0]);
      ctx.fillStyle = t.fg;
      ctx.textAlign = "center";
      (L.titles[h] || []).forEach(function(s, k, all) {
        ctx.fillText(s, x0 + Lk * cell / 2, y0 - 10 - (all.length - 1 - k) * 14);
      });
      if (d.raster) raster(ctx, d, h, x0, y0, cell, t);
      for (i = 0; i < Lq && !d.raster; i++) {
        for (j = 0; j < Lk; j++) {
          var v = d.grids[h][i][j], cx = x0 + j * cell, cy = y0 + i * cell;
          if (isMasked(d.masked, h, i, j)) {
            ctx.strokeStyle = t.muted;
            ctx.lineWidth = 1;
            ctx.beginPath();
            ctx.moveTo(cx + 2, cy + cell - 2);
            ctx.lineTo(cx + cell - 2, cy + 2);
            ctx.stroke();
            continue;
          }
          if (v === null) {
            ctx.fillStyle = t.nan;
            ctx.fillRect(cx, cy, cell, cell);
            ctx.strokeStyle = t.nanCross;
            ctx.lineWidth = 1.5;
            ctx.beginPath();
            ctx.moveTo(cx + 2, cy + 2);
            ctx.lineTo(cx + cell - 2, cy + cell - 2);
            ctx.moveTo(cx + cell - 2, cy + 2);
            ctx.lineTo(cx + 2, cy + cell - 2);
            ctx.stroke();
            ctx.lineWidth = 1;
            continue;
          }
          var u = (v - lo) / (hi - lo);
          ctx.fillStyle = colour(u, d.scale);
          ctx.fillRect(cx, cy, cell, cell);
          if (L.numbers) {
            var light = d.scale === "diverging" ? Math.abs(u - 0.5) < 0.3 : u > 0.55;
            ctx.fillStyle = light ? "#111" : "#fff";
            ctx.font = L.numbers + "px sans-serif";
            ctx.fillText(L.fmt(v), cx + cell / 2, cy + cell / 2);
            ctx.font = "12px sans-serif";
          }
        }
      }
      (d.marks || []).forEach(function(m) {
        if (m[0] !== h) return;
        ctx.strokeStyle = t.accent;
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 + m[2] * cell + 1, y0 + m[1] * cell + 1, cell - 2, cell - 2);
        ctx.lineWidth = 1;
      });
      ctx.fillStyle = t.fg;
      ctx.textAlign = "right";
      ctx.font = labelFont;
      for (i = 0; i < Lq && (!L.shared || c === 0); i += L.stride) {
        if (!L.rowLines) {
          ctx.fillText(d.rows[i], x0 - 3, y0 + (i + 0.5) * cell);
          continue;
        }
        ctx.font = "10px sans-serif";
        L.rowLines[i].forEach(function(s, k, all) {
          ctx.fillText(s, x0 - 3, y0 + (i + 0.5) * cell + (k - (all.length - 1) / 2) * 12);
        });
        ctx.font = labelFont;
      }
      for (j = 0; j < Lk; j += L.stride) {
        ctx.save();
        ctx.translate(x0 + (j + 0.5) * cell, y0 + Lq * cell + 3);
        ctx.rotate(-Math.PI / 2);
        ctx.fillText(d.cols[j], 0, 0);
        ctx.restore();
      }
      ctx.font = "12px sans-serif";
    }
    if (L.below) colourBar(ctx, L.rowLab, height - COLOUR_BAR_BELOW, barLen, d, t, true);
    else colourBar(ctx, L.gridsW + 6, top + L.titleH, barLen, d, t, false);
    if (d.raster) delete canvas.dataset.values;
    else canvas.dataset.values = JSON.stringify(roundDeep(d.grids));
    canvas.dataset.heads = String(H);
    canvas.dataset.columns = String(L.ncols);
    canvas.dataset.labelStride = String(L.stride);
    canvas.dataset.numbers = String(L.numbers);
    canvas.mhaGeom = {
      cell,
      panels,
      labelFont: L.font,
      shared: L.shared
    };
    return (d.caption ? d.caption + ". " : "") + H + (H === 1 ? " heatmap" : " heatmaps") + (d.titles ? " (" + d.titles.join("; ") + ")" : "") + "; rows: " + d.rows.join(" ") + "; columns: " + d.cols.join(" ") + "; colour from " + lo + " to " + hi + "." + (d.masked ? " Blank cells: masked." : "") + (L.stride > 1 ? " " + everyNth(L.stride).replace("e", "E") + " token is labelled." : "");
  }
  function everyNth(k) {
    var end = Math.floor(k / 10) % 10 === 1 ? "th" : ["th", "st", "nd", "rd"][k % 10] || "th";
    return k === 2 ? "every other" : "every " + k + end;
  }
  var RASTER = { luts: {} };
  function raster(ctx, d, h, x0, y0, cell, t) {
    var g = d.grids[h], Lq = d.rows.length, Lk = d.cols.length, lo = d.vmin, k = 255 / (d.vmax - lo);
    var lut = RASTER.luts[d.scale] || (RASTER.luts[d.scale] = new Uint8Array(768).map(function(x, i2) {
      return Number(colour((i2 / 3 | 0) / 255, d.scale).match(/\d+/g)[i2 % 3]);
    }));
    var c = RASTER.canvas || (RASTER.canvas = document.createElement("canvas"));
    c.width = Math.max(1, Lk);
    c.height = Math.max(1, Lq);
    var cx = c.getContext("2d"), img = cx.createImageData(c.width, c.height), px = img.data, nan = t.dark ? 140 : 115;
    for (var i = 0; i < Lq; i++) {
      for (var j = 0, row = g[i]; j < Lk; j++) {
        var v = row[j], p = (i * Lk + j) * 4, u = v === null ? -1 : Math.round((v - lo) * k);
        u = u < 0 ? 0 : u > 255 ? 255 : u;
        px[p] = v === null ? nan : lut[3 * u];
        px[p + 1] = v === null ? nan : lut[3 * u + 1];
        px[p + 2] = v === null ? nan : lut[3 * u + 2];
        px[p + 3] = isMasked(d.masked, h, i, j) ? 0 : 255;
      }
    }
    cx.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(c, x0, y0, Lk * cell, Lq * cell);
    ctx.imageSmoothingEnabled = true;
  }

  // mha/static/src/dom.js
  var NARROW = 600;
  function narrow(root) {
    return !!root && root.clientWidth > 0 && root.clientWidth < NARROW;
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function(k) {
      e.setAttribute(k, attrs[k]);
    });
    if (text !== void 0) e.textContent = text;
    return e;
  }
  function fitSelect(sel, wrap2) {
    sel.style.maxWidth = "100%";
    wrap2.style.flexWrap = "wrap";
  }
  function labelOf(c, i) {
    return c.labels ? c.labels[i] : String(c.values[i]);
  }

  // mha/static/src/controls.js
  function buildControl(c, uid, onChange) {
    var wrap2 = el("div", { class: "mha-control" }), id = uid + "-" + c.name, input, out;
    var lab = el("label", { for: id }, c.label);
    wrap2.appendChild(lab);
    if (c.kind === "select") {
      input = el("select", { id });
      c.values.forEach(function(v, i) {
        input.appendChild(el("option", { value: String(i) }, labelOf(c, i)));
      });
      input.value = String(c.value);
      fitSelect(input, wrap2);
    } else if (c.kind === "toggle") {
      input = el("input", { id, type: "checkbox" });
      input.checked = c.value === 1;
      wrap2.className += " mha-toggle";
    } else if (c.kind === "text") {
      input = el("textarea", {
        id,
        rows: "6",
        maxlength: String(c.max_length),
        spellcheck: "false",
        autocomplete: "off",
        autocapitalize: "off",
        "aria-describedby": id + "-count"
      });
      input.value = c.value;
      wrap2.className += " mha-text";
    } else {
      input = el("input", {
        id,
        type: "range",
        min: "0",
        max: String(c.values.length - 1),
        step: "1",
        value: String(c.value)
      });
    }
    input.dataset.knob = c.name;
    if (c.disabled) input.disabled = true;
    var prev = null, next = null;
    if (c.kind === "step") {
      prev = el("button", { type: "button", "aria-label": c.label + ": previous step" }, "\u25C0");
      next = el("button", { type: "button", "aria-label": c.label + ": next step" }, "\u25B6");
      [
        [prev, -1],
        [next, 1]
      ].forEach(function(p) {
        p[0].addEventListener("click", function() {
          var v = Math.max(0, Math.min(Number(input.max), Number(input.value) + p[1]));
          if (String(v) !== input.value) {
            input.value = String(v);
            onChange(c.name);
          }
        });
      });
      wrap2.appendChild(prev);
      wrap2.appendChild(input);
      wrap2.appendChild(next);
      wrap2.className += " mha-step";
    } else {
      wrap2.appendChild(input);
    }
    if (c.kind === "range" || c.kind === "step") {
      out = el("output", { for: id });
      wrap2.appendChild(out);
    }
    if (c.kind === "text") {
      out = el("output", { id: id + "-count", for: id });
      wrap2.appendChild(out);
    }
    input.addEventListener(
      c.kind === "select" || c.kind === "toggle" ? "change" : "input",
      function() {
        onChange(c.name);
      }
    );
    if (c.kind === "range" || c.kind === "step")
      input.addEventListener("change", function() {
        onChange(c.name);
      });
    return { spec: c, input, out, prev, next };
  }
  function neverShrink(e, base) {
    if (e.mhaWidth !== e.clientWidth) {
      e.style.minHeight = base || "";
      e.mhaWidth = e.clientWidth;
    }
    if (e.clientWidth) e.style.minHeight = e.offsetHeight + "px";
  }
  function tallest(e, texts) {
    var m = measurer(getComputedStyle(e).font), seen = {}, most2 = 0;
    var ranked = texts.filter(function(s) {
      return s && !seen[s] && (seen[s] = 1);
    }).map(function(s) {
      return [m.measureText(s).width, s];
    }).sort(function(a, b) {
      return b[0] - a[0];
    }).slice(0, 8);
    var probe = e.cloneNode(false);
    probe.removeAttribute("aria-live");
    probe.setAttribute("aria-hidden", "true");
    probe.style.cssText = "position:absolute;visibility:hidden;left:0;top:0;min-height:0;width:" + e.clientWidth + "px";
    e.parentElement.appendChild(probe);
    ranked.forEach(function(r) {
      probe.textContent = r[1];
      most2 = Math.max(most2, probe.offsetHeight);
    });
    e.parentElement.removeChild(probe);
    return most2;
  }
  var UNUSED = "unused";
  var UNUSED_SAID = "not used by this source";
  function showUnused(k, unused) {
    var input = k.input, dash = input.querySelector ? input.querySelector("option[data-unused]") : null;
    if (k.spec.kind === "toggle") {
      input.indeterminate = unused;
      return;
    }
    if (k.spec.kind !== "select") return;
    if (unused) {
      if (!dash) {
        dash = el(
          "option",
          { value: UNUSED, "data-unused": "1", "aria-label": UNUSED_SAID },
          "\u2014"
        );
        dash.hidden = true;
        input.appendChild(dash);
      }
      if (input.value !== UNUSED) {
        input.dataset.keep = input.value;
        input.value = UNUSED;
      }
    } else if (dash) {
      if (input.value === UNUSED) input.value = input.dataset.keep;
      input.removeChild(dash);
      delete input.dataset.keep;
    }
  }

  // mha/static/src/lines_draw.js
  var LINE_ROW = 26;
  var LINE_CUT = 0.05;
  var LINE_ALPHA = 0.25;
  function drawLines(m) {
    var start = performance.now(), d = m.d, t = m.t, h = m.head, w = d.grids[h];
    var Lq = d.rows.length, Lk = d.cols.length, f = m.hover || m.pinned || m.base, drawn = [];
    var cut = d.threshold === void 0 ? LINE_CUT : d.threshold;
    if (m.select) m.select.value = String(h);
    ["query", "key"].forEach(function(side) {
      m.buttons[side].forEach(function(b, i2) {
        var on = f && f[0] === side && f[1] === i2, pin = m.pinned && m.pinned[0] === side && m.pinned[1] === i2;
        b.style.background = on ? t.dark ? "rgba(255,166,87,.22)" : "rgba(194,78,0,.12)" : "transparent";
        b.style.borderColor = on ? t.accent : "transparent";
        b.setAttribute("aria-pressed", pin ? "true" : "false");
      });
    });
    var room = m.box.parentElement && m.box.parentElement.clientWidth || 700;
    var width = Math.max(80, Math.min(260, room - m.left.offsetWidth - m.right.offsetWidth - 8));
    var height = Math.max(Lq, Lk) * LINE_ROW, ctx = setup(m.canvas, width, height), i, j;
    function yq(i2) {
      return (i2 + 0.5) * LINE_ROW;
    }
    ctx.strokeStyle = t.bar;
    ctx.lineCap = "round";
    for (i = 0; i < Lq; i++) {
      if (f && f[0] === "query" && f[1] !== i) continue;
      for (j = 0; j < Lk; j++) {
        if (f && f[0] === "key" && f[1] !== j) continue;
        if (isMasked(d.masked, h, i, j)) continue;
        var v = w[i][j] === null ? 0 : w[i][j], a = Math.max(0, Math.min(1, v));
        drawn.push([i, j, round(v)]);
        if (a < cut) continue;
        ctx.globalAlpha = Math.min(1, LINE_ALPHA + 1.5 * a);
        ctx.lineWidth = 1 + 4.5 * a;
        ctx.beginPath();
        ctx.moveTo(2, yq(i));
        ctx.lineTo(width - 2, yq(j));
        ctx.stroke();
      }
    }
    ctx.globalAlpha = 1;
    ctx.lineWidth = 1;
    var head = d.titles ? d.titles[h] : "", who = f ? f[0] + " " + tokenName(f[0] === "query" ? d.rows : d.cols, f[1]) : null;
    m.cap.textContent = (d.caption || "") + (head && d.grids.length > 1 ? " (" + head + ")" : "");
    var words;
    if (f) {
      words = who + ": " + drawn.map(function(l) {
        return (f[0] === "query" ? tokenName(d.cols, l[1]) : tokenName(d.rows, l[0])) + " " + fmt(l[2]);
      }).join(", ");
    } else {
      words = "the strongest line of each query: " + w.map(function(r, i2) {
        var best = -1;
        r.forEach(function(x, j2) {
          if (!isMasked(d.masked, h, i2, j2) && (best < 0 || x > r[best])) best = j2;
        });
        if (best < 0) return tokenName(d.rows, i2) + " to no key (all masked)";
        return tokenName(d.rows, i2) + " to " + tokenName(d.cols, best) + " " + fmt(r[best]);
      }).join(", ");
    }
    m.canvas.setAttribute(
      "aria-label",
      "Lines from queries (left) to keys (right), width and opacity the " + (d.label || "attention weight") + (head ? ", " + head : "") + "; " + words + "."
    );
    var said = linesSaid(d, f, drawn, cut);
    m.legend.textContent = "Line width and opacity: the " + (d.label || "attention weight") + " (thin and light near " + cut + ", solid from 0.5, thickest at 1); lines under " + cut + " are not drawn" + (d.masked ? ", nor those the mask blocks." : ".");
    m.said.textContent = said.text + whose(m, f);
    neverShrink(m.said, "2.6em");
    m.box.dataset.values = JSON.stringify({
      head: h,
      focus: f ? {
        side: f[0],
        index: f[1],
        label: (f[0] === "query" ? d.rows : d.cols)[f[1]]
      } : null,
      lines: drawn,
      threshold: cut,
      shown: said.shown,
      largest: said.largest
    });
    m.box.dataset.focusDraws = String(+(m.box.dataset.focusDraws || 0) + 1);
    m.box.dataset.drawnAt = String(performance.now());
    m.box.dataset.drawMs = String(+m.box.dataset.drawnAt - start);
  }
  function tokenName(list, i) {
    return list.indexOf(list[i]) !== list.lastIndexOf(list[i]) ? list[i] + " (" + i + ")" : list[i];
  }
  function whose(m, f) {
    var d = m.d, base = m.base;
    if (!base || !f || !d.focus_from) return "";
    function name2(g) {
      return g[0] + " " + tokenName(g[0] === "query" ? d.rows : d.cols, g[1]);
    }
    if (base[0] === f[0] && base[1] === f[1])
      return " These are the lines of the step's " + name2(base) + ".";
    return " These are the lines of the " + name2(f) + " you " + (m.hover ? "focus or point at" : "pinned") + ", not of the step's " + name2(base) + ", which come back when " + (m.hover ? "the focus or pointer leaves." : "you tap the token again or press Escape.");
  }
  function linesSaid(d, f, drawn, cut) {
    var shown = drawn.filter(function(l) {
      return l[2] !== null && l[2] >= cut;
    }).length;
    if (!f)
      return {
        shown,
        largest: [],
        text: "Focus, hover or tap a token to see only its lines and their weights."
      };
    var name2 = (f[0] === "query" ? d.rows : d.cols)[f[1]];
    var top = drawn.slice().sort(function(a, b) {
      return b[2] - a[2];
    }).slice(0, 3).filter(function(l) {
      return l[2] >= cut;
    });
    if (!top.length) {
      return {
        shown: 0,
        largest: [],
        text: f[0] === "key" ? "No query puts more than " + cut + " on key " + name2 + " (" + f[1] + "): no line is drawn." : "Query " + name2 + " (" + f[1] + ") puts no weight above " + cut + " on any key: no line is drawn."
      };
    }
    var largest = top.map(function(l) {
      return [l[0], l[1], l[2]];
    });
    return {
      shown,
      largest,
      text: (f[0] === "query" ? "Query " : "Key ") + name2 + " (" + f[1] + "), largest weights: " + top.map(function(l) {
        return tokenName(d.rows, l[0]) + " \u2192 " + tokenName(d.cols, l[1]) + ": " + fmt(l[2]);
      }).join(", ") + (shown > top.length ? " (" + shown + " lines over " + cut + ")" : "") + "."
    };
  }

  // mha/static/src/registry.js
  var CANVAS_VIEWS = {};
  var DOM_VIEWS = {};
  var COMPUTE = {};
  var counter = 0;
  function nextId() {
    return ++counter;
  }

  // mha/static/src/lines.js
  function lines(box, d, t) {
    var shape = JSON.stringify([d.titles, d.grids.length, d.max_rows]), m = box.mhaLines;
    var had = m && m.d && (m.d.head || 0) === (d.head || 0) && m.head < d.grids.length ? m.head : null;
    if (!m || m.shape !== shape) m = box.mhaLines = buildLines(box, d, shape);
    else if (JSON.stringify([d.rows, d.cols]) !== m.tokens) relabel(m, d);
    m.tokens = JSON.stringify([d.rows, d.cols]);
    var base = d.focus || null, f = d.focus_from, root = box.closest(".mha-live");
    var knob = f && root && root.querySelector('[data-knob="' + f.knob + '"]');
    if (knob) {
      var q = f.queries[Number(knob.value)];
      base = q === null || q === void 0 ? null : ["query", q];
    }
    if (JSON.stringify(base) !== JSON.stringify(m.base)) m.pinned = null;
    m.head = had === null ? d.head || 0 : had;
    m.d = d;
    m.t = t;
    m.base = base;
    drawLines(m);
  }
  function buildLines(box, d, shape) {
    var m = {
      shape,
      box,
      head: d.head || 0,
      pinned: null,
      hover: null,
      base: null,
      pointer: null,
      buttons: { query: [], key: [] }
    };
    box.textContent = "";
    box.setAttribute("role", "group");
    box.setAttribute(
      "aria-label",
      "lines view: " + (d.caption || "one head") + "; tokens are buttons: focus one to see only its lines"
    );
    if (d.grids.length > 1) {
      var id = "mha-lines-" + nextId(), wrap2 = el("div", { class: "mha-control" });
      var sel = el("select", { id });
      wrap2.appendChild(el("label", { for: id }, "head"));
      d.grids.forEach(function(g, h) {
        sel.appendChild(el("option", { value: String(h) }, d.titles ? d.titles[h] : "head " + h));
      });
      sel.value = String(m.head);
      fitSelect(sel, wrap2);
      sel.addEventListener("change", function() {
        m.head = Number(sel.value);
        drawLines(m);
      });
      wrap2.appendChild(sel);
      box.appendChild(wrap2);
      m.select = sel;
    }
    m.cap = el("p");
    m.cap.style.cssText = "margin:.2em 0;font-weight:600";
    box.appendChild(m.cap);
    m.legend = el("p", { class: "mha-lines-legend" });
    m.legend.style.cssText = "margin:.2em 0;font-size:13px";
    box.appendChild(m.legend);
    m.said = el("p", { class: "mha-lines-readout", "aria-live": "polite" });
    m.said.style.cssText = "margin:.3em 0;min-height:2.6em";
    var row = m.row = el("div");
    row.style.cssText = "display:flex;align-items:flex-start";
    scrolls(row, d);
    function column(side, labels) {
      var col = el("div", {
        role: "group",
        "aria-label": side === "query" ? "queries" : "keys"
      });
      col.style.cssText = "display:flex;flex-direction:column;flex:none;align-items:" + (side === "query" ? "flex-end" : "flex-start");
      var head = el("div", {}, side === "query" ? "queries" : "keys");
      head.style.cssText = "height:22px;line-height:22px;font-size:12px;opacity:.8";
      col.appendChild(head);
      labels.forEach(function(s, i) {
        button(side, i, s, col);
      });
      return col;
    }
    function button(side, i, s, col) {
      var b = el(
        "button",
        {
          type: "button",
          "aria-pressed": "false",
          tabindex: i ? "-1" : "0",
          "aria-label": side + " " + i + ": " + s
        },
        s
      );
      b.style.cssText = "height:" + LINE_ROW + "px;min-width:32px;margin:0;padding:0 6px;border:1px solid transparent;border-radius:4px;background:transparent;color:inherit;font:inherit;font-size:13px;cursor:pointer;white-space:nowrap";
      b.addEventListener("pointerdown", function(e) {
        m.pointer = e.pointerType !== "mouse" ? b : null;
      });
      b.addEventListener("pointercancel", function() {
        m.pointer = null;
      });
      b.addEventListener("pointerenter", function(e) {
        if (e.pointerType === "mouse") {
          m.hover = [side, i];
          drawLines(m);
        }
      });
      b.addEventListener("pointerleave", function(e) {
        if (e.pointerType === "mouse") {
          m.hover = null;
          drawLines(m);
        }
      });
      b.addEventListener("focus", function() {
        m.buttons[side].forEach(function(o) {
          o.tabIndex = o === b ? 0 : -1;
        });
        if (m.pointer !== b) {
          m.hover = [side, i];
          drawLines(m);
        }
      });
      b.addEventListener("blur", function() {
        if (m.hover) {
          m.hover = null;
          drawLines(m);
        }
      });
      b.addEventListener("click", function() {
        if (m.pointer === b && m.hover && m.hover[0] === side && m.hover[1] === i) m.hover = null;
        m.pointer = null;
        m.pinned = m.pinned && m.pinned[0] === side && m.pinned[1] === i ? null : [side, i];
        drawLines(m);
      });
      b.addEventListener("keydown", function(e) {
        var list = m.buttons[side], other = m.buttons[side === "query" ? "key" : "query"], to = null;
        m.pointer = null;
        if (e.key === "ArrowDown") to = list[Math.min(list.length - 1, i + 1)];
        else if (e.key === "ArrowUp") to = list[Math.max(0, i - 1)];
        else if (e.key === "Home") to = list[0];
        else if (e.key === "End") to = list[list.length - 1];
        else if (e.key === "ArrowRight" && side === "query" || e.key === "ArrowLeft" && side === "key")
          to = other[Math.min(other.length - 1, i)];
        else if (e.key === "Escape" && m.pinned) {
          m.pinned = null;
          drawLines(m);
          e.preventDefault();
          return;
        }
        if (to) {
          e.preventDefault();
          to.focus();
        }
      });
      m.buttons[side].push(b);
      col.appendChild(b);
    }
    m.button = button;
    m.left = column("query", d.rows);
    m.canvas = el("canvas", { role: "img" });
    m.canvas.style.cssText = "margin:22px 0 0;flex:none";
    m.right = column("key", d.cols);
    row.appendChild(m.left);
    row.appendChild(m.canvas);
    row.appendChild(m.right);
    box.appendChild(row);
    box.appendChild(m.said);
    return m;
  }
  function relabel(m, d) {
    [
      ["query", d.rows, m.left],
      ["key", d.cols, m.right]
    ].forEach(function(p) {
      var side = p[0], labels = p[1], list = m.buttons[side];
      while (list.length > labels.length) p[2].removeChild(list.pop());
      labels.forEach(function(s, i) {
        if (i >= list.length) m.button(side, i, s, p[2]);
        else if (list[i].textContent !== s) {
          list[i].textContent = s;
          list[i].setAttribute("aria-label", side + " " + i + ": " + s);
        }
      });
      if (list.length && !list.some(function(b) {
        return b.tabIndex === 0;
      }))
        list[0].tabIndex = 0;
    });
    m.pinned = m.hover = null;
    m.box.setAttribute(
      "aria-label",
      "lines view: " + (d.caption || "one head") + "; tokens are buttons: focus one to see only its lines"
    );
    scrolls(m.row, d);
  }
  function scrolls(row, d) {
    var on = !!d.max_rows && Math.max(d.rows.length, d.cols.length) > d.max_rows;
    row.style.maxHeight = on ? d.max_rows * LINE_ROW + 22 + "px" : "";
    row.style.overflowY = on ? "auto" : "";
    if (on) row.dataset.scrolls = "1";
    else delete row.dataset.scrolls;
  }

  // mha/static/src/pages.js
  var SPLIT = 0.4;
  var PAGE = 0.3;
  function paginate(root, spec) {
    var bar = root.querySelector(".mha-bar"), box = root.querySelector(".mha-controls");
    if (!bar || !box || !root.clientWidth) return;
    var rows = Array.prototype.slice.call(box.children), tabs = bar.querySelector(".mha-tabs"), narrow2 = narrow(root);
    root.classList.toggle("mha-narrow", narrow2);
    rows.forEach(function(r) {
      r.hidden = false;
      delete r.dataset.page;
    });
    box.style.minHeight = "";
    var pages = narrow2 ? pack(rows, spec, box) : [rows];
    if (tabs) tabs.hidden = pages.length < 2;
    if (pages.length < 2) {
      delete root.dataset.pages;
      return;
    }
    if (!tabs) {
      tabs = el("div", { class: "mha-tabs", role: "tablist", "aria-label": "groups of controls" });
      bar.insertBefore(tabs, box);
    }
    tabs.textContent = "";
    pages.forEach(function(page, p) {
      page.forEach(function(r) {
        r.dataset.page = String(p);
      });
      var b = el("button", { type: "button", role: "tab", "data-page": String(p) }, name(page, spec));
      b.addEventListener("click", function() {
        show(root, p);
      });
      tabs.appendChild(b);
    });
    var active = Number(root.dataset.page || 0), tallest2 = 0;
    pages.forEach(function(page, p) {
      show(root, p);
      tallest2 = Math.max(tallest2, box.offsetHeight);
    });
    box.style.minHeight = tallest2 + "px";
    root.dataset.pages = String(pages.length);
    show(root, Math.min(active, pages.length - 1));
  }
  function show(root, p) {
    root.dataset.page = String(p);
    root.querySelectorAll(".mha-controls > [data-page]").forEach(function(r) {
      r.hidden = r.dataset.page !== String(p);
    });
    root.querySelectorAll(".mha-tabs [role=tab]").forEach(function(b) {
      var on = b.dataset.page === String(p);
      b.setAttribute("aria-selected", String(on));
    });
  }
  function pack(rows, spec, box) {
    var gap = parseFloat(getComputedStyle(box).rowGap) || 0, heights = rows.map(function(r) {
      return r.offsetHeight + gap;
    }), total = heights.reduce(function(s, h) {
      return s + h;
    }, 0);
    if (total <= SPLIT * window.innerHeight) return [rows];
    var named = rows.some(function(r, i) {
      return groupOf(spec, i) !== null;
    });
    var pages = [], byGroup = {}, group = null;
    if (named) {
      rows.forEach(function(r, i) {
        group = groupOf(spec, i) || group || groupOf(spec, 0);
        if (!byGroup[group]) pages.push(byGroup[group] = []);
        byGroup[group].push(r);
      });
      return pages;
    }
    var count = Math.ceil(total / (PAGE * window.innerHeight)), page = [], used = 0;
    rows.forEach(function(r, i) {
      if (page.length && used + heights[i] / 2 > total / count) {
        pages.push(page);
        page = [];
        used = 0;
      }
      page.push(r);
      used += heights[i];
    });
    pages.push(page);
    return pages;
  }
  function groupOf(spec, i) {
    var c = spec.controls[i];
    return c && c.group ? c.group : null;
  }
  function name(page, spec) {
    var i = Number(page[0].dataset.index), g = groupOf(spec, i);
    if (g) return g;
    return page.map(function(r) {
      return r.querySelector("label").textContent;
    }).join(", ");
  }

  // mha/static/src/sticky.js
  function stickyTop() {
    var h = document.querySelector(".bd-header-article");
    if (!h || getComputedStyle(h).position !== "sticky") return 0;
    return Math.round(h.getBoundingClientRect().height);
  }
  function placeBars() {
    var top = stickyTop() + "px";
    document.querySelectorAll(".mha-live").forEach(function(r) {
      r.style.setProperty("--mha-top", top);
      if (r.mhaPaginate) r.mhaPaginate();
    });
  }
  function keepInView(root) {
    var bar = root.querySelector(".mha-bar"), views = root.querySelector(".mha-views");
    if (!bar || !views || !root.getBoundingClientRect) return;
    root.style.setProperty("--mha-bar-h", bar.offsetHeight + "px");
    var top = parseFloat(root.style.getPropertyValue("--mha-top")) || 0, r = root.getBoundingClientRect();
    if (r.top < top && r.bottom < top + bar.offsetHeight + 40) {
      window.scrollBy(0, views.getBoundingClientRect().top - top - bar.offsetHeight - 8);
    }
  }

  // mha/static/src/table.js
  function table(el2, d) {
    el2.textContent = "";
    if (!d) return;
    var tab = document.createElement("table");
    if (d.caption) {
      var cap = document.createElement("caption");
      cap.textContent = d.caption;
      tab.appendChild(cap);
    }
    var tr = document.createElement("tr");
    d.columns.forEach(function(c) {
      var th = document.createElement(c === "" ? "td" : "th");
      if (c !== "") th.scope = "col";
      th.textContent = c;
      tr.appendChild(th);
    });
    tab.appendChild(tr);
    var fractional = d.columns.map(function(c, i) {
      return d.rows.some(function(r) {
        return typeof r[i] === "number" && !Number.isInteger(r[i]);
      });
    });
    d.rows.forEach(function(r) {
      var row = document.createElement("tr");
      r.forEach(function(v, i) {
        var td = document.createElement(i ? "td" : "th");
        if (!i) td.scope = "row";
        td.textContent = typeof v !== "number" ? v : fractional[i] || !Number.isInteger(v) ? v.toFixed(2) : v.toLocaleString("en");
        row.appendChild(td);
      });
      tab.appendChild(row);
    });
    el2.appendChild(tab);
    fitTable(el2, tab);
  }
  function fitTable(el2, tab) {
    el2.style.maxWidth = "100%";
    el2.style.minWidth = "0";
    el2.style.overflowX = "auto";
    var room = el2.parentElement && el2.parentElement.clientWidth;
    var tight = room && tab.offsetWidth > room;
    tab.querySelectorAll("th, td").forEach(function(c) {
      c.style.padding = tight ? "0 .3em" : "";
    });
    el2.dataset.compact = tight ? "1" : "0";
  }

  // mha/static/src/mount.js
  function mount(root) {
    var spec = JSON.parse(root.querySelector("script.mha-spec").textContent), uid = "mha-live-" + nextId();
    var ctl = {}, views = {}, last = null;
    var box = root.querySelector(".mha-controls");
    function index(name2) {
      var c = ctl[name2], input = c.input;
      if (c.spec.kind === "toggle") return input.checked ? 1 : 0;
      return Number(input.value === UNUSED ? input.dataset.keep : input.value);
    }
    function values() {
      var v = {};
      spec.controls.forEach(function(c) {
        v[c.name] = c.kind === "text" ? ctl[c.name].input.value : c.values[index(c.name)];
      });
      return v;
    }
    spec.controls.forEach(function(c, i) {
      ctl[c.name] = buildControl(c, uid, redraw);
      var row = ctl[c.name].input.parentElement;
      row.dataset.index = String(i);
      box.appendChild(row);
    });
    var area = root.querySelector(".mha-views");
    spec.views.forEach(function(v) {
      var e = CANVAS_VIEWS[v.kind] ? el("canvas", { role: "img", "aria-label": v.label || v.name }) : el("div", { class: "mha-" + v.kind });
      e.dataset.view = v.name;
      area.appendChild(e);
      views[v.name] = { spec: v, el: e };
    });
    var readout = root.querySelector(".mha-readout"), alert = root.querySelector(".mha-alert");
    function apply(st) {
      Object.keys(st.options || {}).forEach(function(name2) {
        var c = ctl[name2], offered = st.options[name2], sel = c.input, old = index(name2);
        var now = Array.prototype.filter.call(sel.options, function(o) {
          return o.value !== UNUSED;
        }).map(function(o) {
          return Number(o.value);
        });
        if (now.join() !== offered.join()) {
          sel.textContent = "";
          offered.forEach(function(i) {
            sel.appendChild(el("option", { value: String(i) }, labelOf(c.spec, i)));
          });
        }
        var pick = offered.indexOf(old) >= 0 ? old : offered.filter(function(i) {
          return i <= old;
        }).pop();
        sel.value = String(pick === void 0 ? offered[0] : pick);
      });
      Object.keys(st.disabled || {}).forEach(function(name2) {
        ctl[name2].input.disabled = st.disabled[name2];
      });
      Object.keys(st.set || {}).forEach(function(name2) {
        var c = ctl[name2], i = c.spec.values.indexOf(st.set[name2]);
        if (c.spec.kind === "text") {
          var box2 = c.input, from = box2.selectionStart, to = box2.selectionEnd, text = String(st.set[name2]);
          var keep = document.activeElement === box2 && text.length === box2.value.length;
          box2.value = text;
          if (keep) box2.setSelectionRange(from, to);
        } else if (i >= 0) c.input.value = String(i);
      });
    }
    function state(changed) {
      if (spec.compute) {
        var f = COMPUTE[spec.compute], made = f(values(), spec.data, changed, root);
        if (made.options || made.disabled || made.set) {
          apply(made);
          made = f(values(), spec.data, null, root);
        }
        return made;
      }
      var key = spec.controls.map(function(c) {
        return index(c.name);
      }).join(",");
      var st = spec.states[key];
      if (st && st.limits && limit(st.limits, changed)) {
        st = spec.states[spec.controls.map(function(c) {
          return index(c.name);
        }).join(",")];
      }
      return st;
    }
    function limit(limits, changed) {
      var moved = false;
      Object.keys(limits).forEach(function(name2) {
        var c = ctl[name2], lim = limits[name2], old = c.input.value;
        c.input.max = String(lim.max);
        if (lim.reset && changed === lim.reset)
          c.input.value = lim.to === "max" ? String(lim.max) : "0";
        if (Number(c.input.value) > lim.max) c.input.value = String(lim.max);
        if (c.input.value !== old) moved = true;
      });
      return moved;
    }
    function redraw(changed) {
      var start = performance.now(), st = state(changed), t = theme(root);
      spec.controls.forEach(function(c) {
        var k = ctl[c.name];
        if (c.kind === "text") {
          k.out.textContent = plural(k.input.value.length, "character") + " of " + c.max_length;
          return;
        }
        var i = index(c.name), unused = !!(st.unused && st.unused[c.name]);
        var shown = unused ? "\u2014" : labelOf(c, i);
        if (k.out) k.out.textContent = shown;
        if (k.prev) {
          k.prev.setAttribute("aria-disabled", String(k.input.disabled || i <= 0));
          k.next.setAttribute("aria-disabled", String(k.input.disabled || i >= Number(k.input.max)));
        }
        if (c.kind === "range" || c.kind === "step") {
          k.input.setAttribute("aria-valuetext", unused ? UNUSED_SAID : shown);
        } else {
          showUnused(k, unused);
        }
      });
      spec.views.forEach(function(v) {
        var d = st.views[v.name], e = views[v.name].el;
        if (typeof d === "number") d = spec.pool[d];
        e.hidden = d === null || d === void 0;
        if (e.hidden) return;
        if (CANVAS_VIEWS[v.kind]) e.setAttribute("aria-label", CANVAS_VIEWS[v.kind](e, d, t));
        else if (v.kind === "table") table(e, d);
        else if (DOM_VIEWS[v.kind]) DOM_VIEWS[v.kind](e, d, t);
        else e.textContent = d.text;
      });
      readout.textContent = st.readout || "";
      if (alert && alert.textContent !== (st.alert || "")) alert.textContent = st.alert || "";
      steady();
      keepInView(root);
      root.dataset.state = JSON.stringify(st.state || values());
      last = st;
      root.dataset.drawnAt = String(performance.now());
      root.dataset.drawMs = String(+root.dataset.drawnAt - start);
      root.dataset.draws = String(+(root.dataset.draws || 0) + 1);
    }
    function steady() {
      if (!spec.states) {
        neverShrink(readout);
        return;
      }
      if (readout.mhaWidth === readout.clientWidth || !readout.clientWidth) return;
      readout.mhaWidth = readout.clientWidth;
      readout.style.minHeight = tallest(
        readout,
        Object.keys(spec.states).map(function(k) {
          return spec.states[k].readout;
        })
      ) + "px";
    }
    root.mhaRedraw = function() {
      redraw(void 0);
    };
    redraw(null);
    if (!last) throw new Error("no state drawn");
    root.mhaPaginate = function() {
      paginate(root, spec);
    };
    root.mhaPaginate();
  }

  // mha/static/src/page.js
  function mountAll() {
    placeBars();
    var failed = null;
    document.querySelectorAll(".mha-live:not([data-mounted])").forEach(function(root) {
      if (!parsed(root)) return;
      root.dataset.mounted = "1";
      try {
        mount(root);
      } catch (err) {
        var e = root.querySelector(".mha-error");
        if (e) e.textContent = "The figure could not draw: " + err;
        failed = failed || err;
      }
    });
    if (failed) throw failed;
  }
  function parsed(root) {
    return document.readyState !== "loading" || !!root.querySelector("script.mha-spec + script");
  }

  // mha/static/src/plot.js
  var XPAD = 10;
  function ringed(d, n) {
    return !d.marker_series || d.marker_series.indexOf(n) >= 0;
  }
  var XTICK_GAP = 8;
  function xTicks(xs, raw, at, log) {
    var n = xs.length, space = Infinity, even = xs.every(function(v, i2) {
      if (i2) space = Math.min(space, at(v) - at(xs[i2 - 1]));
      return !i2 || Math.abs(v - xs[i2 - 1] - (xs[1] - xs[0])) < 1e-9 * (Math.abs(xs[1] - xs[0]) || 1);
    });
    if (n <= 2 || even || log) {
      var w = widest(raw.map(grouped), "12px sans-serif") + XTICK_GAP, k = 1;
      [1, 2, 5, 10, 20, 50, 100].some(function(c) {
        k = c;
        return c * space >= w;
      });
      var out = [];
      for (var i = 0; i < n; i += k) out.push({ s: grouped(raw[i]), x: at(xs[i]) });
      if ((n - 1) % k) {
        var clash = (n - 1) % k * space < w;
        if (clash && out.length > 1) {
          out.pop();
          clash = false;
        }
        if (!clash) out.push({ s: grouped(raw[n - 1]), x: at(xs[n - 1]) });
      }
      return out;
    }
    var ticks = niceTicks(
      least(xs),
      most(xs),
      Math.max(2, Math.min(6, Math.floor((at(most(xs)) - at(least(xs))) / 100)))
    );
    return ticks.map(function(v) {
      return { s: tickText(v, ticks.step), x: at(v) };
    });
  }
  function xTickLabels(ctx, ticks, y, width) {
    ctx.textAlign = "center";
    ticks.forEach(function(b) {
      ctx.fillText(b.s, Math.min(b.x, width - 2 - ctx.measureText(b.s).width / 2), y);
    });
  }
  var LEGEND_FONT = "12px sans-serif";
  var LEGEND_ROW = 16;
  function legendLayout(labels, width) {
    var m = measurer(LEGEND_FONT), rows = [[]], x = 4;
    labels.forEach(function(s, n) {
      var w = 22 + m.measureText(s).width;
      if (x > 4 && x + w > width - 4) {
        rows.push([]);
        x = 4;
      }
      rows[rows.length - 1].push({ n, s, x });
      x += w + 14;
    });
    return { rows, h: rows.length * LEGEND_ROW };
  }
  function legend(ctx, lay, top, colours, t) {
    ctx.font = LEGEND_FONT;
    ctx.textAlign = "left";
    lay.rows.forEach(function(row, r) {
      var y = top + (r + 0.5) * LEGEND_ROW;
      row.forEach(function(e) {
        ctx.strokeStyle = colours[e.n % colours.length];
        ctx.lineWidth = 2;
        ctx.setLineDash(e.n ? [5, 3] : []);
        ctx.beginPath();
        ctx.moveTo(e.x, y);
        ctx.lineTo(e.x + 18, y);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.lineWidth = 1;
        ctx.fillStyle = t.fg;
        ctx.fillText(e.s, e.x + 22, y);
      });
    });
  }
  function least(a) {
    return Math.min.apply(null, a);
  }
  function most(a) {
    return Math.max.apply(null, a);
  }
  function plot(canvas, d, t) {
    var loglog = !!d.y_log, room = avail(canvas), width = Math.min(room, 560), x0 = 56;
    var cap = heading(d.caption || "", width);
    var lg = legendLayout(
      d.series.map(function(s) {
        return s.label;
      }),
      width
    );
    var y0 = cap.h + lg.h + 10, ph = 170, height = y0 + ph + 52, pw = width - x0 - 12;
    var ctx = setup(canvas, width, height), colours = [t.bar, t.accent, t.muted, t.third];
    caption(ctx, cap, t);
    legend(ctx, lg, cap.h + 2, colours, t);
    function ok(v) {
      return v !== null && (!loglog || v > 0);
    }
    var xs = d.x.map(function(v) {
      return d.x_log || loglog ? Math.log2(v) : v;
    }), all = [];
    d.series.forEach(function(s) {
      all = all.concat(s.y.filter(ok));
    });
    var xlo = least(xs), xhi = most(xs), lo, hi, ticks, tickY, text;
    if (loglog) {
      ticks = log2Ticks(least(all), most(all));
      lo = ticks[0];
      hi = ticks[ticks.length - 1];
      tickY = function(k) {
        return Y(Math.pow(2, k));
      };
      text = function(k) {
        return log2Text(k, d.y_unit);
      };
    } else {
      lo = d.y_min !== void 0 ? d.y_min : least(all);
      hi = d.y_max !== void 0 ? d.y_max : most(all);
      if (hi === lo) hi = lo + 1;
      ticks = niceTicks(lo, hi, 5);
      tickY = function(v) {
        return Y(v);
      };
      text = function(v) {
        return tickText(v, ticks.step);
      };
      canvas.dataset.ticks = JSON.stringify(ticks);
    }
    x0 = Math.max(x0, widest(ticks.map(text), "12px sans-serif") + 26);
    pw = width - x0 - 12;
    if (loglog && d.square && xhi > xlo) {
      var per = Math.min((pw - 2 * XPAD) / (xhi - xlo), 240 / (hi - lo));
      ph = per * (hi - lo);
      pw = per * (xhi - xlo) + 2 * XPAD;
      height = y0 + ph + 52;
      ctx = setup(canvas, width, height);
      caption(ctx, cap, t);
      legend(ctx, lg, cap.h + 2, colours, t);
    }
    function at(v) {
      return x0 + XPAD + (v - xlo) / (xhi - xlo || 1) * (pw - 2 * XPAD);
    }
    function X(i) {
      return at(xs[i]);
    }
    function Y(v) {
      return y0 + ph - ((loglog ? Math.log2(v) : v) - lo) / (hi - lo) * ph;
    }
    ctx.strokeStyle = t.muted;
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(x0, y0 + ph);
    ctx.lineTo(x0 + pw, y0 + ph);
    ctx.stroke();
    ctx.fillStyle = t.fg;
    ctx.textAlign = "right";
    ticks.forEach(function(v) {
      ctx.fillText(text(v), x0 - 4, tickY(v));
    });
    xTickLabels(ctx, xTicks(xs, d.x, at, d.x_log || loglog), y0 + ph + 12, width);
    ctx.fillText(d.x_label || "", x0 + pw / 2, height - 10);
    ctx.save();
    ctx.translate(12, y0 + ph / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(d.y_label || "", 0, 0);
    ctx.restore();
    d.series.forEach(function(s, n) {
      ctx.strokeStyle = ctx.fillStyle = colours[n % colours.length];
      ctx.lineWidth = 2;
      ctx.setLineDash(n ? [5, 3] : []);
      ctx.beginPath();
      s.y.forEach(function(v, i) {
        if (ok(v)) {
          if (i && ok(s.y[i - 1])) ctx.lineTo(X(i), Y(v));
          else ctx.moveTo(X(i), Y(v));
        }
      });
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      s.y.forEach(function(v, i) {
        if (ok(v)) {
          ctx.beginPath();
          ctx.arc(X(i), Y(v), 2.5, 0, 7);
          ctx.fill();
        }
      });
    });
    var rings = [];
    if (d.marker !== void 0 && d.marker !== null) {
      d.series.forEach(function(s, n) {
        var v = s.y[d.marker];
        if (!ok(v) || !ringed(d, n)) return;
        ctx.strokeStyle = colours[n % colours.length];
        ctx.lineWidth = 2;
        ctx.beginPath();
        ctx.arc(X(d.marker), Y(v), 6, 0, 7);
        ctx.stroke();
        ctx.lineWidth = 1;
        rings.push([X(d.marker), Y(v), 7]);
      });
    }
    canvas.mhaGeom = { axisX: x0, firstX: X(0), rings };
    canvas.dataset.values = JSON.stringify(
      d.series.map(function(s) {
        return roundDeep(s.y);
      })
    );
    return (d.caption ? d.caption + ". " : "") + (loglog ? "Both axes on a log scale. " : "") + d.series.map(function(s) {
      return s.label + ": " + d.x.map(function(x, i) {
        return x + " " + fmt(s.y[i]) + (d.y_unit ? " " + d.y_unit : "");
      }).join(", ");
    }).join("; ") + ".";
  }

  // mha/static/src/strips.js
  var HEAD_COLOURS = [
    "#1f77b4",
    "#fab72a",
    "#bb0522",
    "#eb76e9",
    "#55d7f6",
    "#24af32",
    "#2b5b07",
    "#700e99",
    "#be8073",
    "#7edf7f",
    "#a355b4",
    "#0f3bb7",
    "#70394b",
    "#9ca2f5",
    "#53a298",
    "#877d09"
  ];
  function headColour(h, H) {
    if (H <= HEAD_COLOURS.length) return HEAD_COLOURS[h];
    return "hsl(" + Math.round(h * 360 / H) + ",65%,50%)";
  }
  function strips(canvas, d, t) {
    var H = d.heads, Dh = d.d_head, R = d.rows, C = d.cols, gap = 3, rowH = 14, r, c;
    var width = avail(canvas), lab = widest(d.labels.concat(["row " + (R - 1)]), "11px sans-serif") + 6;
    var cw = (width - lab - 8 - (H - 1) * gap) / C, cap = heading(d.caption || "", width);
    var titles = d.panels.map(function(q) {
      return wrap(q.title, width - 8, "bold 12px sans-serif");
    });
    var tops = [], y = cap.h + 2;
    titles.forEach(function(tl) {
      y += tl.length * 15 + 4;
      tops.push(y);
      y += R * rowH + 20;
    });
    var ctx = setup(canvas, width, y);
    caption(ctx, cap, t);
    function xOf(p, col, head) {
      return lab + (p === 1 ? head * (Dh * cw + gap) + col * cw : col * cw);
    }
    d.panels.forEach(function(panel, p) {
      var y0 = tops[p], g = panel.grid, f = panel.focus;
      ctx.font = "bold 12px sans-serif";
      ctx.fillStyle = t.fg;
      ctx.textAlign = "left";
      titles[p].forEach(function(s, k, all) {
        ctx.fillText(s, 4, y0 - 10 - (all.length - 1 - k) * 15);
      });
      ctx.font = "11px sans-serif";
      ctx.textAlign = "right";
      for (r = 0; r < R; r++)
        ctx.fillText(p === 1 ? "row " + r : d.labels[r], lab - 4, y0 + (r + 0.5) * rowH);
      for (var head = 0; head < (p === 1 ? H : 1); head++) {
        for (r = 0; r < R; r++) {
          var line = g[p === 1 ? head * R + r : r], start = 0;
          for (c = 1; c <= line.length; c++) {
            if (c < line.length && line[c] === line[start]) continue;
            ctx.fillStyle = headColour(line[start], H);
            var x = xOf(p, start, head);
            ctx.fillRect(x, y0 + r * rowH, xOf(p, c, head) - x + 0.4, rowH - 1);
            start = c;
          }
        }
      }
      ctx.textAlign = "center";
      ctx.fillStyle = t.fg;
      if (p === 1) {
        for (head = 0; head < H; head++) {
          if (Dh * cw >= 24 || head === f[0])
            ctx.fillText("h" + head, xOf(1, Dh / 2, head), y0 + R * rowH + 9);
        }
      } else {
        [0, 128, 256, 384, 511].forEach(function(col) {
          ctx.fillText(String(col), Math.min(xOf(0, col + 0.5), width - 12), y0 + R * rowH + 9);
        });
      }
      var fr = f.length === 3 ? f[1] : f[0], fc = f.length === 3 ? f[2] : f[1], fh = f.length === 3 ? f[0] : 0;
      var fx = xOf(p, fc + 0.5, fh), fy = y0 + (fr + 0.5) * rowH;
      ctx.strokeStyle = t.fg;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(lab, fy);
      ctx.lineTo(xOf(p, C / (p === 1 ? H : 1), p === 1 ? H - 1 : 0), fy);
      ctx.moveTo(fx, y0);
      ctx.lineTo(fx, y0 + R * rowH);
      ctx.stroke();
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 2.5;
      ctx.beginPath();
      ctx.arc(fx, fy, 6, 0, 7);
      ctx.stroke();
      ctx.lineWidth = 1;
    });
    ctx.font = "12px sans-serif";
    canvas.dataset.values = JSON.stringify(
      d.panels.map(function(q) {
        return { grid: q.grid, focus: q.focus };
      })
    );
    canvas.dataset.titles = JSON.stringify(titles);
    canvas.mhaGeom = { lab, cw, gap, rowH, tops };
    return (d.caption ? d.caption + ". " : "") + d.panels.map(function(q) {
      return q.title + ", the number at [" + q.focus.join(", ") + "]";
    }).join("; ") + ". Colour: the head (" + H + " heads).";
  }

  // mha/static/src/main.js
  var VERSION = 5;
  CANVAS_VIEWS.heatmap = heatmap;
  CANVAS_VIEWS.bars = bars;
  CANVAS_VIEWS.plot = plot;
  CANVAS_VIEWS.arrows = arrows;
  CANVAS_VIEWS.strips = strips;
  DOM_VIEWS.lines = lines;
  function soon(mount2) {
    mount2();
    [0, 50, 250, 1e3].forEach(function(t) {
      setTimeout(mount2, t);
    });
  }
  function install() {
    window.addEventListener("resize", placeBars);
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function() {
        mountAll();
      });
    }
    if (window.MutationObserver) {
      new MutationObserver(function() {
        document.querySelectorAll(".mha-live[data-mounted]").forEach(function(r) {
          if (r.mhaRedraw) r.mhaRedraw();
        });
      }).observe(document.documentElement, {
        attributes: true,
        attributeFilter: ["data-theme"]
      });
    }
    var live = {
      version: VERSION,
      mountAll,
      compute: COMPUTE,
      views: CANVAS_VIEWS,
      domViews: DOM_VIEWS,
      table,
      colour,
      extend: function(ext) {
        ext.register(live);
      }
    };
    window.mhaLive = live;
    (window.mhaLiveExtensions || []).forEach(live.extend);
    soon(mountAll);
  }
  if (window.mhaLive && window.mhaLive.version >= VERSION) soon(window.mhaLive.mountAll);
  else install();
})();
