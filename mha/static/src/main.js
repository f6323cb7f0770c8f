/* The live figures' engine: one front end for every figure (mha.live; no dependencies, nothing
 * from a network). Python writes a figure as
 *   a div.mha-live[data-figure=NAME] holding a JSON script element (class mha-spec)
 * holding its spec; these modules build the controls, look the state up, draw the views and
 * say in words what changed. The same code runs in the built book (no kernel), JupyterLab,
 * Notebook, VS Code and Colab: a figure is plain HTML with the bundle of these modules
 * (mha/static/live.js, built by frontend/build.mjs) inlined.
 *
 * spec = {name, title, note, controls: [{name, label, kind: range|select|toggle|step|text,
 *         values, labels, value (an index; a text box's: its text, and max_length),
 *         disabled}], views: [{name, kind: heatmap|bars|plot|table|text|lines|arrows|strips,
 *         label}], states: {"i,j,...": state} | compute: NAME, data}
 * state = {views: {NAME: data}, readout: "what the picture shows", state: {...}, disabled:
 *          {control: bool}, options: {control: [indices offered]}, limits: {control: {max,
 *          reset, to}} (a slider's last index here, and the control that sends it back to 0,
 *          or to max with to: "max")}; with listed states a view's data is an index into
 *          spec.pool (each distinct picture stored once)
 * A state is looked up by the controls' indices joined with ","; a figure whose states are too
 * many to list names a compute (registry.js's COMPUTE, filled by an extension: extend.js) that
 * makes one from spec.data. Every canvas carries data-values (the numbers it drew, JSON, NaN as
 * null) and data-caption (its caption's lines) for the tests, and canvas.mhaTexts (every text
 * drawn, with its ink's corners: no two may overlap, none may be cut); the root carries
 * data-draws, data-drawn-at, data-draw-ms (the redraw's own time) and data-state.
 *
 * Modules: format (numbers, ticks), colours (scales, the page's theme), canvas (sizing, text,
 * captions), colourbar, dom, registry, heat_layout + heatmap, bars, plot, table, arrows,
 * strips, lines + lines_draw (one head as lines), controls, mount (a figure's mounting and
 * redraw), sticky (the bar of controls), page (every figure of the page), extend, and this
 * entry, which registers the views and starts the engine once per page (window.mhaLive).
 */
import { arrows } from "./arrows.js";
import { bars } from "./bars.js";
import { colour } from "./colours.js";
import { heatmap } from "./heatmap.js";
import { lines } from "./lines.js";
import { mountAll } from "./page.js";
import { plot } from "./plot.js";
import { CANVAS_VIEWS, COMPUTE, DOM_VIEWS } from "./registry.js";
import { placeBars } from "./sticky.js";
import { strips } from "./strips.js";
import { table } from "./table.js";

// 3: text boxes and the in-page Shakespeare language model; 4: sticky bars; 5: extensions
var VERSION = 5;

CANVAS_VIEWS.heatmap = heatmap;
CANVAS_VIEWS.bars = bars;
CANVAS_VIEWS.plot = plot;
CANVAS_VIEWS.arrows = arrows;
CANVAS_VIEWS.strips = strips;
DOM_VIEWS.lines = lines;

// a front end may run an output's script before the output is in the page: mount again shortly
function soon(mount) {
  mount();
  [0, 50, 250, 1000].forEach(function (t) {
    setTimeout(mount, t);
  });
}

function install() {
  window.addEventListener("resize", placeBars);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      mountAll();
    });
  }
  // the book's theme switch: redraw in the new colours
  if (window.MutationObserver) {
    new MutationObserver(function () {
      document.querySelectorAll(".mha-live[data-mounted]").forEach(function (r) {
        if (r.mhaRedraw) r.mhaRedraw();
      });
    }).observe(document.documentElement, {
      attributes: true,
      attributeFilter: ["data-theme"],
    });
  }
  var live = {
    version: VERSION,
    mountAll: mountAll,
    compute: COMPUTE,
    views: CANVAS_VIEWS,
    domViews: DOM_VIEWS,
    table: table,
    colour: colour,
    extend: function (ext) {
      ext.register(live);
    },
  };
  window.mhaLive = live;
  (window.mhaLiveExtensions || []).forEach(live.extend); // those whose scripts ran first
  soon(mountAll);
}

// a page's later copies of the engine (one per output) find it there and only mount
if (window.mhaLive && window.mhaLive.version >= VERSION) soon(window.mhaLive.mountAll);
else install();
