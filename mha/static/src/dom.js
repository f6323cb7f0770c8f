// DOM helpers: an element, a select that fits, a control's label, what a narrow figure is.

// a figure narrower than this (a phone, a narrow JupyterLab panel) splits a tall bar into pages
// (pages.js)
export var NARROW = 600;
export function narrow(root) {
  return !!root && root.clientWidth > 0 && root.clientWidth < NARROW;
}
export function el(tag, attrs, text) {
  var e = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) {
    e.setAttribute(k, attrs[k]);
  });
  if (text !== undefined) e.textContent = text;
  return e;
}
// a select as wide as its longest option (never clipped), its label above it when the row is
// too narrow for both (a phone), never wider than the figure; its least width is the style's
// (0, and 44 px on a touch screen: mha/live/style.py)
export function fitSelect(sel, wrap) {
  sel.style.maxWidth = "100%";
  wrap.style.flexWrap = "wrap";
}
export function labelOf(c, i) {
  return c.labels ? c.labels[i] : String(c.values[i]);
}
