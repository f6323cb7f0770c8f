// A figure's bar of controls (.mha-bar, CSS position: sticky) stays in view while the reader
// scrolls to the view a control changes; in the book it sticks below the theme's own sticky
// bar at the top of the article (its height differs on a phone), elsewhere at the top.
function stickyTop() {
  var h = document.querySelector(".bd-header-article");
  if (!h || getComputedStyle(h).position !== "sticky") return 0;
  return Math.round(h.getBoundingClientRect().height);
}
export function placeBars() {
  var top = stickyTop() + "px";
  document.querySelectorAll(".mha-live").forEach(function (r) {
    r.style.setProperty("--mha-top", top);
    if (r.mhaPaginate) r.mhaPaginate(); // the controls' pages at the new width (pages.js)
  });
}
// A redraw that shortens a figure the reader has scrolled into (a tall heatmap grid replaced
// by one head's lines) would leave the page showing what follows the figure, the figure above
// the screen: scroll back so that its views start just below its bar.
export function keepInView(root) {
  var bar = root.querySelector(".mha-bar"),
    views = root.querySelector(".mha-views");
  if (!bar || !views || !root.getBoundingClientRect) return;
  // what the bar covers: a token button focused from the keyboard, or scrolled to, stops below
  // it (scroll-margin-top in the styles), never under it
  root.style.setProperty("--mha-bar-h", bar.offsetHeight + "px");
  var top = parseFloat(root.style.getPropertyValue("--mha-top")) || 0,
    r = root.getBoundingClientRect();
  if (r.top < top && r.bottom < top + bar.offsetHeight + 40) {
    window.scrollBy(0, views.getBoundingClientRect().top - top - bar.offsetHeight - 8);
  }
}
