// The Shakespeare figure (mha_book.figures.shakespeare_heads.text_heads): the compute "text-heads"
// that runs lm.js's model at every change, what a text the model cannot read says, the readout.
import { TextModel } from "./lm.js";
import { fmt, plural } from "../../../mha/static/src/format.js";

// Why the model cannot read a text (a sentence), or null; the same words as
// mha_book.figures.shakespeare_heads's text_problem
function textProblem(text, data) {
  var C = data.model.config.context_length,
    bad = [];
  if (!text.length) return "the text is empty: type at least one character";
  if (text.length > C)
    return "the text has " + text.length + " characters; the model reads at most " + C;
  text.split("").forEach(function (ch) {
    if (data.vocab.indexOf(ch) < 0 && bad.indexOf(ch) < 0) bad.push(ch);
  });
  if (!bad.length) return null;
  return (
    "the text has characters outside the model's vocabulary: " +
    bad
      .sort()
      .map(function (ch) {
        return ch === "\t" ? "tab" : ch === "\r" ? "carriage return" : "'" + ch + "'";
      })
      .join(", ") +
    "; it reads " +
    data.allowed
  );
}

// the figure (mha_book.figures.shakespeare_heads.text_heads): choosing a passage puts its text in
// the box; typing a text names the passage it equals, or "your own text" (kept, to come back to it)
export function textHeads(v, data, changed, root) {
  var m = root.mhaText,
    set = {};
  if (!m) {
    m = root.mhaText = {
      model: new TextModel(data.model),
      own: v.passage === data.own ? v.text : null,
      views: null,
    };
    m.export = function () {
      return textExport(m);
    };
  }
  if (changed === "passage" && v.passage !== data.own) set.text = data.passages[v.passage];
  else if (changed === "passage" && m.own !== null) set.text = m.own;
  if (set.text === v.text) delete set.text;
  if (changed === "text") {
    // a phone's curly quotes become the straight ones the model reads (same length: the caret
    // stays)
    var typed = v.text.replace(/[\u2018\u2019]/g, "'").replace(/[\u201c\u201d]/g, '"');
    if (typed !== v.text) set.text = typed;
    var named = data.names.filter(function (n) {
      return data.passages[n] === typed;
    })[0];
    if (named === undefined) m.own = typed;
    if ((named === undefined ? data.own : named) !== v.passage)
      set.passage = named === undefined ? data.own : named;
  }
  if (Object.keys(set).length) return { set: set };
  var problem = textProblem(v.text, data),
    lm = m.model,
    text = v.text,
    L = text.length;
  var state = {
    passage: v.passage,
    text: text,
    layer: v.layer,
    head: v.head,
    length: L,
    error: problem,
  };
  if (problem) {
    return {
      views: m.views || {},
      state: state,
      alert: "The model cannot read this text: " + problem + ".",
      readout: m.views
        ? "The pictures are still those of the last text the model could read: \u201c" +
          (m.text.length > 40 ? m.text.slice(0, 40) + "\u2026" : m.text) +
          "\u201d (" +
          plural(m.text.length, "character") +
          ")."
        : "No picture yet: the model has not read a text.",
    };
  }
  lm.run(
    text.split("").map(function (ch) {
      return lm.index[ch];
    }),
  );
  var sc = lm.scores(L, data.n),
    labels = text.split("").map(function (ch) {
      return data.glyphs[ch] || ch;
    });
  var grids = [],
    titles = [],
    rows = [],
    best = { previous: [], prefix: null }; // previous: each layer's top head
  for (var l = 0; l < lm.NL; l++) {
    best.previous.push(null);
    for (var h = 0; h < lm.H; h++) {
      var g = [],
        Wt = lm.W[l][h],
        name = "layer " + l + ", head " + h;
      for (var i = 0; i < L; i++) g.push(Wt.subarray(i * lm.C, i * lm.C + L));
      grids.push(g);
      titles.push(name + (l === v.layer && h === v.head ? " (lines)" : ""));
      var p = sc.previous[l][h],
        x = sc.prefix[l][h];
      if (p !== null && (!best.previous[l] || p > best.previous[l][1])) best.previous[l] = [h, p];
      if (x !== null && (!best.prefix || x > best.prefix[1])) best.prefix = [name, x];
      rows.push([
        name + (l === v.layer && h === v.head ? " (lines)" : ""),
        num(sc.previous[l][h]),
        num(sc.prefix[l][h]),
      ]);
    }
  }
  m.sc = sc;
  m.L = L;
  m.text = text;
  var where = v.passage === data.own ? "your text" : v.passage;
  m.views = {
    heads: {
      grids: grids,
      rows: labels,
      cols: labels,
      titles: titles,
      raster: true,
      cell_min: 1,
      caption: "Every head on " + where + " (" + plural(L, "character") + ")",
      vmin: 0,
      vmax: 1,
      scale: "viridis",
      label: "attention weight",
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
      max_rows: 14,
    },
    scores: {
      columns: ["head", "previous token", "prefix match (n\u00a0=\u00a0" + data.n + ")"],
      rows: rows,
      caption:
        "Each head's scores on this text: the mean weight on the character just before, " +
        "and on the " +
        "characters that followed an earlier occurrence of the last " +
        data.n +
        " characters (" +
        queries(sc.matches) +
        " with one)",
    },
  };
  return {
    views: m.views,
    state: state,
    readout:
      readout(best, sc, data.n) +
      " Lines (below the heatmaps): layer " +
      v.layer +
      ", head " +
      v.head +
      ".",
  };
}
function num(x) {
  return x === null ? "n/a" : x;
}
function queries(k) {
  return k + (k === 1 ? " query" : " queries");
}
// the top previous-token head of each layer (chapter 10 names a head within its layer) and the
// top prefix-matching head
function readout(best, sc, n) {
  var s = best.previous[0]
    ? "Previous token, the most weight on the character just before (on average): " +
      best.previous
        .map(function (b, l) {
          return "layer " + l + ", head " + b[0] + " (" + fmt(b[1]) + ")";
        })
        .join("; ") +
      ". "
    : "One character: no previous-token score. ";
  if (!best.prefix) {
    return (
      s +
      "No " +
      n +
      " characters occur twice in this text, so no prefix-matching score: type something " +
      "that repeats (a word twice)."
    );
  }
  return (
    s +
    "Prefix matching, the most weight on what followed the last " +
    n +
    " characters where they came before: " +
    best.prefix[0] +
    " (" +
    fmt(best.prefix[1]) +
    " over " +
    queries(sc.matches) +
    ")."
  );
}
// for the tests: the weights (num_layers, H, L, L) and scores the page drew, as plain numbers
function textExport(m) {
  var lm = m.model,
    w = [];
  for (var l = 0; l < lm.NL; l++) {
    w.push(
      lm.W[l].map(function (Wt) {
        var g = [];
        for (var i = 0; i < m.L; i++) g.push(Array.from(Wt.subarray(i * lm.C, i * lm.C + m.L)));
        return g;
      }),
    );
  }
  return {
    text: m.text,
    weights: w,
    previous: m.sc.previous,
    prefix: m.sc.prefix,
    matches: m.sc.matches,
  };
}
