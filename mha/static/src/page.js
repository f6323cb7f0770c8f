// Every figure of the page: mount those not yet mounted, each once.
import { mount } from "./mount.js";
import { placeBars } from "./sticky.js";

export function mountAll() {
  placeBars();
  var failed = null; // a figure that cannot draw says so, and the others still draw
  document.querySelectorAll(".mha-live:not([data-mounted])").forEach(function (root) {
    if (!parsed(root)) return; // mounted by a later call, once the page has parsed it
    root.dataset.mounted = "1";
    try {
      mount(root);
    } catch (err) {
      var e = root.querySelector(".mha-error");
      if (e) e.textContent = "The figure could not draw: " + err;
      failed = failed || err;
    }
  });
  if (failed) throw failed; // in the console, after every other figure has drawn
}
// ---- a root the page has parsed (a self-contained addition): while a page is still loading,
// a timer of soon() may find a later figure's root whose spec and error box the parser has not
// reached yet (a page arrives in chunks); reading that spec threw "Cannot read properties of
// null (reading 'textContent')". A root is ready once the script after its spec (the front
// end, inlined after it) is in the page, or the page is parsed; DOMContentLoaded mounts the rest.
function parsed(root) {
  return document.readyState !== "loading" || !!root.querySelector("script.mha-spec + script");
}
