// Colours: the scales (viridis, a diverging ramp) and the page's theme.
// viridis, 32 steps (matplotlib), interpolated linearly; -1..1 values: a blue-white-red ramp
var VIRIDIS =
  "440154470d6048186a482374472e7c4538824241863e4a893a548c365d8d32658e2e6d8e2b758e" +
  "287d8e25848e228c8d1f948c1e9c8920a38625ab822eb37c3aba7648c16e58c7656ccd5a7fd34e93d741a8db34c0" +
  "df25d5e21aeae51afde725";
var RDBU = "2166ac4393c392c5ded1e5f0f7f7f7fddbc7f4a582d6604db2182b";
function ramp(hex) {
  var out = [];
  for (var c = 0; c < hex.length; c += 6) {
    out.push(
      [0, 2, 4].map(function (o) {
        return parseInt(hex.substr(c + o, 2), 16);
      }),
    );
  }
  return out;
}
var RAMPS = { viridis: ramp(VIRIDIS), diverging: ramp(RDBU) };
export function colour(v, name) {
  // v in 0..1
  var rgb = RAMPS[name || "viridis"],
    x = Math.min(1, Math.max(0, v)) * (rgb.length - 1);
  var i = Math.min(rgb.length - 2, Math.floor(x)),
    f = x - i,
    a = rgb[i],
    b = rgb[i + 1];
  return (
    "rgb(" +
    [0, 1, 2].map(function (k) {
      return Math.round(a[k] + f * (b[k] - a[k]));
    }) +
    ")"
  );
}
// Text and line colours for the figure's actual background. Dark means light text: the
// page's dark mode, a dark Jupyter theme; but the book's dark mode draws HTML outputs on a light
// panel with dark text (MyST-NB), where the light palette is the legible one. Form controls
// follow (color-scheme), so that an unticked box does not look ticked.
export function theme(el) {
  var fg = getComputedStyle(el).color || "#222";
  var rgb = (fg.match(/[\d.]+/g) || [34, 34, 34]).map(Number);
  var dark = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255 > 0.5;
  var root = el.closest ? el.closest(".mha-live") || el : el;
  root.style.colorScheme = dark ? "dark" : "light";
  // a NaN cell: a mid grey with 3:1 or more against both the page and the book's light grey
  // output panel (#ced6dd in its dark mode), crossed in a colour that stands out on the grey
  return {
    fg: fg,
    muted: dark ? "#9aa4ae" : "#666",
    accent: dark ? "#ffa657" : "#c24e00",
    bar: dark ? "#6cb6ff" : "#1f5fa8",
    nan: dark ? "#8c8c8c" : "#737373",
    // a third series (chapter 12's dashed "q at 0"): a grey 3:1 or more against the page and
    // the book's grey output panel (the muted grey is for axes, and faded on that panel)
    third: dark ? "#c4c4c4" : "#474747",
    nanCross: dark ? "#111" : "#fff",
    dark: dark,
  };
}
