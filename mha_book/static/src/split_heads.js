// Chapter 05's split-heads figure (mha_book.figures.batched_heads.split_explorer): where
// split_heads and merge_heads put one number.
function ints16(b64) {
  // base64 of little-endian int16 -> Int16Array
  var s = atob(b64),
    out = new Int16Array(s.length / 2);
  for (var i = 0; i < out.length; i++)
    out[i] = ((s.charCodeAt(2 * i) | (s.charCodeAt(2 * i + 1) << 8)) << 16) >> 16;
  return out;
}
// split-heads: the numbers 1..rows*cols, split into heads by mha.split_heads (or the reshape
// without transpose) and merged back by mha.merge_heads, as Python exported them; the page
// only finds the chosen number in them (mha_book.figures.batched_heads.split_state draws the
// same in Python)
export function splitHeads(v, data, changed, root) {
  var memo = root.mhaSplit || (root.mhaSplit = {}),
    R = data.rows,
    C = data.cols,
    H = v.num_heads;
  var Dh = C / H,
    key = H + "," + (v.wrong ? 1 : 0),
    input = memo.input || (memo.input = ints16(data.input));
  if (!memo[key]) {
    var lay = data.layouts[key],
      split = ints16(lay.split),
      merged = ints16(lay.merged);
    var pos = new Int32Array(R * C),
      p,
      r;
    for (p = 0; p < split.length; p++) pos[split[p] - 1] = p;
    var headOf = function (val) {
      return Math.floor(pos[val - 1] / (R * Dh));
    };
    var grids = [[], [], []];
    for (r = 0; r < R; r++) {
      var a = [],
        b = [];
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
    var back = 0; // numbers the round trip leaves where they were
    for (p = 0; p < merged.length; p++) if (merged[p] === input[p]) back++;
    memo[key] = { merged: merged, pos: pos, grids: grids, back: back };
  }
  var m = memo[key],
    n = input[v.token * C + v.feature],
    at = m.pos[n - 1];
  var h = Math.floor(at / (R * Dh)),
    rw = Math.floor(at / Dh) % R,
    col = at % Dh;
  var q = m.merged.indexOf(n),
    t2 = Math.floor(q / C),
    f2 = q % C;
  var name = v.wrong ? "reshape without transpose" : "split_heads",
    tok = data.tokens;
  var nn = n.toLocaleString("en"),
    heads = H + " head" + (H > 1 ? "s" : "") + " of " + Dh;
  var how = v.wrong
    ? "its position counting from 0, " +
      (n - 1) +
      " = " +
      h +
      " x " +
      R * Dh +
      " + " +
      rw +
      " x " +
      Dh +
      " + " +
      col +
      ": the numbers are dealt out in reading order"
    : "feature " + v.feature + " = " + h + " x " + Dh + " + " + col;
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
            focus: [v.token, v.feature],
          },
          {
            title: name + " -> (1, " + H + ", 9, " + Dh + "): the heads side by side",
            grid: m.grids[1],
            focus: [h, rw, col],
          },
          {
            title:
              "merge_heads -> (1, 9, 512): colour = the head each number came from" +
              (v.wrong && H > 1 ? " (a correct round trip's stripes, other numbers in them)" : ""),
            grid: m.grids[2],
            focus: [t2, f2],
          },
        ],
      },
      path: {
        columns: ["step", "index", "value"],
        caption: "The number " + nn + ", step by step",
        rows: [
          ["input", "[0, " + v.token + ", " + v.feature + "]", n],
          [name, "[0, " + h + ", " + rw + ", " + col + "]", n],
          ["merge_heads", "[0, " + t2 + ", " + f2 + "]", n],
        ],
      },
    },
    readout:
      nn +
      " (token " +
      v.token +
      ' "' +
      tok[v.token] +
      '", feature ' +
      v.feature +
      "): " +
      name +
      " puts it in head " +
      h +
      ", row " +
      rw +
      ", column " +
      col +
      " (" +
      how +
      "); merge_heads brings it to token " +
      t2 +
      ", feature " +
      f2 +
      (home
        ? m.back === R * C
          ? ", where it started."
          : ", where it started, by luck:" +
            " the wrong round trip leaves only " +
            m.back.toLocaleString("en") +
            " of the " +
            (R * C).toLocaleString("en") +
            " numbers in place."
        : ", not where it started (token " + v.token + ", feature " + v.feature + ").") +
      (v.wrong && H > 1
        ? " The real harm is inside attention: a row of a head is" +
          " no longer one token, so the head compares pieces of different tokens."
        : ""),
    state: {
      num_heads: H,
      token: v.token,
      feature: v.feature,
      wrong: v.wrong,
      number: n,
      head: h,
      row: rw,
      column: col,
      back: [t2, f2],
    },
  };
}
