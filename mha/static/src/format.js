// Numbers as the views write them (pure functions, also run by the tests in Node.js): rounding,
// counts, decimals, axis ticks, and captions filled from templates.
export function round(x) {
  return x === null || !isFinite(x) ? null : Math.round(x * 1e6) / 1e6;
}
export function roundDeep(a) {
  return Array.isArray(a) ? a.map(roundDeep) : round(a);
}
export function plural(n, noun) {
  return n + " " + noun + (n === 1 ? "" : "s");
}
// a number as drawn: two decimals, but a small non-zero one (a softmax weight is never 0) in
// exponent form, so that 0.0003 does not read as "0.00"
export function fmt(x, decimals) {
  if (x === null) return "NaN";
  if (x === 0) return "0";
  if (Math.abs(x) < 0.005) return x.toExponential(0);
  if (decimals !== undefined && decimals !== null) return x.toFixed(decimals);
  if (Number.isInteger(x) && Math.abs(x) > 1) return grouped(x); // a count: 16, not 16.00; 9,216
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2);
}
// one view's numbers in one style: counts (every value an integer, some above 1) as 16 and 1;
// any other view's as 1.95 and 2.00 (a weight of 1 is 1.00, never "1" beside "0.97")
export function fmtFor(values) {
  var all = [];
  (function walk(a) {
    if (Array.isArray(a)) a.forEach(walk);
    else if (a !== null) all.push(a);
  })(values);
  var counts =
    all.some(function (v) {
      return Math.abs(v) > 1;
    }) && all.every(Number.isInteger);
  return function (x, decimals) {
    if (x === null || x === 0 || (decimals !== undefined && decimals !== null))
      return fmt(x, decimals);
    if (counts) return grouped(x);
    return Number.isInteger(x) && Math.abs(x) < 100 ? x.toFixed(2) : fmt(x);
  };
}

// axis ticks at "nice" numbers (steps of 1, 2, 2.5 or 5 x 10^k, as D3's ticks()) inside
// [lo, hi], about n of them; every view with an axis labels it with these (tickText)
export function niceTicks(lo, hi, n) {
  if (!isFinite(lo) || !isFinite(hi)) return [];
  if (hi < lo) {
    var sw = lo;
    lo = hi;
    hi = sw;
  }
  if (hi === lo) return [lo];
  var raw = (hi - lo) / (n || 5),
    power = Math.pow(10, Math.floor(Math.log10(raw)));
  var best = 1;
  [1, 2, 2.5, 5, 10].forEach(function (c) {
    if (Math.abs(Math.log((c * power) / raw)) < Math.abs(Math.log((best * power) / raw))) best = c;
  });
  var step = best * power,
    out = [],
    first = Math.ceil(lo / step - 1e-9);
  for (var k = first; k * step <= hi + step * 1e-9; k++) out.push(+(k * step).toPrecision(12));
  out.step = step;
  return out;
}
export function tickText(v, step) {
  // as many decimals as the step needs: 0.25, 2.5, 1, 1,000
  var dec = Math.max(
    0,
    -Math.floor(Math.log10(step) + 1e-9) +
      (Math.round((step / Math.pow(10, Math.floor(Math.log10(step) + 1e-9))) * 10) % 10 ? 1 : 0),
  );
  var x = +v.toFixed(Math.min(dec, 12));
  return Number.isInteger(x) && Math.abs(x) >= 1000 ? x.toLocaleString("en") : String(x);
}

// a log2 axis's ticks (both axes of a log-log plot): exponents k of 2^k from the floor of the
// least value's log2 to the ceiling of the largest's, in steps that keep at most 6 of them
export function log2Ticks(least, most) {
  var lo = Math.floor(Math.log2(least)),
    hi = Math.ceil(Math.log2(most));
  if (hi === lo) hi = lo + 1;
  var step = Math.max(1, Math.ceil((hi - lo) / 5)),
    out = [];
  lo = Math.floor(lo / step) * step;
  hi = Math.ceil(hi / step) * step;
  for (var k = lo; k <= hi; k += step) out.push(k);
  return out;
}
// the tick 2^k on a log2 axis: 65,536 or 1/8 as the bars and tables write them; on an axis in a
// binary unit of bytes (unit "MiB": chapter 14's caches, 4 MiB to 2 TiB) each tick in the unit
// that keeps its number from 1 to 512: "64 MiB", "4 GiB", "2 TiB", never "2,097,152"
export var BYTE_UNITS = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
export function log2Text(k, unit) {
  var u = unit === undefined || unit === null ? -1 : BYTE_UNITS.indexOf(unit);
  if (u < 0) return k >= 0 ? grouped(Math.pow(2, k)) : "1/" + grouped(Math.pow(2, -k));
  var e = k + 10 * u, // 2^k units are 2^e bytes
    at = Math.max(0, Math.min(BYTE_UNITS.length - 1, Math.floor(e / 10)));
  return log2Text(e - 10 * at) + " " + BYTE_UNITS[at];
}

// a whole number from 1,000 up with thousands separators (8,192 tokens, as the slider says it)
export function grouped(v) {
  return typeof v === "number" && Number.isInteger(v) && Math.abs(v) >= 1000
    ? v.toLocaleString("en")
    : String(v);
}

// a caption from its template (Python's mha.live.views.fill fills the same one the same way):
// "{name}" is the value as it is (an int or a string), "{name:.2f}" two decimals, "{name:g}" a
// short number (6 significant digits), "{name:,}" a whole number with thousands separators
export function fill(template, values) {
  return template.replace(/\{(\w+)(?::([^}]*))?\}/g, function (all, name, spec) {
    if (!(name in values)) throw new Error("template " + template + ": no value for " + name);
    var v = values[name],
      decimals = /^\.(\d+)f$/.exec(spec || "");
    if (spec === undefined) return String(v);
    if (decimals) return v.toFixed(Number(decimals[1]));
    if (spec === "g") return String(Number(v.toPrecision(6)));
    if (spec === ",") return v.toLocaleString("en");
    throw new Error("template " + template + ": unknown format " + spec);
  });
}
