import { avail, caption, heading, setup, widest } from "./canvas.js";
import { fmtFor, niceTicks, roundDeep, tickText } from "./format.js";

// The bars view.
// bars: d = {values, labels, highlight (indices), caption, y_label, x_label, y_max, y_min}
// Every bar's number is written: above the bar, or on a narrow bar (a phone) upright in a
// smaller font, above it or, where the caption is near, inside its top; key labels at 45
// degrees, upright where the bars are too narrow for slanted ones to clear each other.
export function bars(canvas, d, t) {
  var n = d.values.length,
    room = avail(canvas),
    ph = 170;
  // wide tick labels (chapter 14's 3,000 KiB) push the axis right, clear of the y label
  var ticks = niceTicks(d.y_min || 0, d.y_max || 1, 5);
  var x0 = Math.max(
    52,
    widest(
      ticks.map(function (tv) {
        return tickText(tv, ticks.step);
      }),
      "12px sans-serif",
    ) + 26,
  );
  var bw = Math.max(18, Math.min(56, Math.floor((room - x0 - 10) / n)));
  var width = x0 + n * bw + 10,
    cap = heading(d.caption || "", width),
    y0 = cap.h + 18;
  var upright = bw * Math.SQRT1_2 < 16,
    sin = upright ? 1 : Math.SQRT1_2;
  var labH = Math.ceil(widest(d.labels, "12px sans-serif") * sin) + 14;
  var height = y0 + ph + labH + 20,
    lo = d.y_min || 0,
    hi = d.y_max || 1;
  var ctx = setup(canvas, width, height),
    hl = d.highlight || [],
    f = fmtFor(d.values);
  caption(ctx, cap, t);
  function y(v) {
    return y0 + ph - ((Math.max(lo, Math.min(hi, v)) - lo) / (hi - lo)) * ph;
  }
  ctx.strokeStyle = t.muted;
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x0, y0 + ph);
  ctx.lineTo(x0 + n * bw, y0 + ph);
  ctx.stroke();
  ctx.textAlign = "right";
  ctx.fillStyle = t.fg;
  ticks.forEach(function (tv) {
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
    var v = d.values[j],
      x = x0 + j * bw + Math.max(2, bw * 0.15),
      w = bw - 2 * Math.max(2, bw * 0.15);
    ctx.fillStyle = hl.indexOf(j) >= 0 ? t.accent : t.bar;
    // a bar above 0 stays at least 3 px tall (chapter 11's MQA bar beside GPT-3's 96 heads was
    // a sliver); its number says how tall it is
    if (v !== null)
      ctx.fillRect(
        x,
        v > lo ? Math.min(y(v), y(lo) - 3) : y(v),
        w,
        v > lo ? Math.max(3, y(lo) - y(v)) : y(lo) - y(v),
      );
    // a bar with no value (a configuration that cannot exist) says so, not "NaN"
    var s = v === null ? d.null_label || "n/a" : f(v, d.decimals),
      at = y(v === null ? lo : v);
    ctx.fillStyle = t.fg;
    ctx.textAlign = "center";
    ctx.font = "12px sans-serif";
    if (ctx.measureText(s).width <= bw - 4) {
      ctx.fillText(s, x + w / 2, at - 8);
    } else {
      // upright, 11 px: above the bar, or inside its top if the caption is too near
      ctx.font = "11px sans-serif";
      var len = ctx.measureText(s).width,
        inside = at - 4 - len < y0 - 12 && v !== null;
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
  ctx.fillText(d.x_label || "key", x0 + (n * bw) / 2, height - 8);
  canvas.dataset.values = JSON.stringify(roundDeep(d.values));
  canvas.dataset.numbers = JSON.stringify(said); // the number written at each bar
  return (
    (d.caption ? d.caption + ". " : "") +
    "Bars: " +
    d.labels
      .map(function (s, i) {
        return (
          s + " " + (d.values[i] === null ? d.null_label || "n/a" : f(d.values[i], d.decimals))
        );
      })
      .join(", ") +
    "."
  );
}
