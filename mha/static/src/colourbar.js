import { widest } from "./canvas.js";
import { colour } from "./colours.js";
import { niceTicks, tickText } from "./format.js";

// the colour scale: upright at the right of the grids (len px tall), or lying under them
// (below: len px wide, its ticks and label under it; COLOUR_BAR_BELOW px tall in all)
export var COLOUR_BAR_BELOW = 50;
// the colour bar's ticks: the view's own (d.ticks, labelled d.tick_labels: e.g. a 0/1 mask's
// "blocked" and "may attend"), or nice numbers
function barTicks(d) {
  if (d.ticks) {
    return {
      values: d.ticks,
      text: d.ticks.map(function (v, i) {
        return d.tick_labels ? d.tick_labels[i] : String(v);
      }),
    };
  }
  var ticks = niceTicks(d.vmin, d.vmax, 4);
  return {
    values: ticks,
    text: ticks.map(function (v) {
      return tickText(v, ticks.step);
    }),
  };
}
// the centres of labels laid along a line (a colour bar lying under the grids): each at its
// tick, moved in from the canvas's edges and apart from its neighbours (6 px: the view's own
// "blocked" and "may attend" at 0 and 1 stay whole); a label with no room left is dropped (null)
function spread(boxes, width) {
  var gap = 6,
    out = boxes.map(function (b) {
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
  return out.map(function (c, i) {
    if (c - boxes[i].w / 2 < Math.max(0, last + gap - 0.5)) return null;
    last = c + boxes[i].w / 2;
    return c;
  });
}
function tickWidth(d) {
  // the widest tick label of the colour bar (12px)
  return widest(barTicks(d).text, "12px sans-serif");
}
export function colourBarWidth(d) {
  return 6 + 24 + tickWidth(d) + 10;
} // upright, from the grids
export function colourBar(ctx, x, y, len, d, t, below) {
  var lo = d.vmin,
    hi = d.vmax,
    p,
    ticks = barTicks(d);
  for (p = 0; p < len; p++) {
    ctx.fillStyle = colour(below ? p / (len - 1) : 1 - p / (len - 1), d.scale);
    if (below) ctx.fillRect(x + p, y, 1, 12);
    else ctx.fillRect(x, y + p, 12, 1);
  }
  ctx.strokeStyle = t.muted;
  ctx.strokeRect(x, y, below ? len : 12, below ? 12 : len);
  ctx.fillStyle = t.fg;
  ctx.textAlign = below ? "center" : "left";
  var spots = ticks.values.map(function (v) {
    return ((v - lo) / (hi - lo)) * (len - 1);
  });
  if (below) {
    var place = spread(
      ticks.text.map(function (s, i) {
        return { c: x + spots[i], w: ctx.measureText(s).width };
      }),
      parseFloat(ctx.canvas.style.width),
    );
    place.forEach(function (c, i) {
      if (c !== null) ctx.fillText(ticks.text[i], c, y + 21);
    });
  } else {
    ticks.values.forEach(function (v, i) {
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
