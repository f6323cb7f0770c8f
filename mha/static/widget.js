// Built from mha/static/src/ by frontend/build.mjs (esbuild 0.28.2); do not edit: run `make frontend`.

// mha/static/src/widget.js
function attached(el, then, frames) {
  if (el.isConnected) {
    then();
    return;
  }
  if ((frames || 0) > 1200) return;
  requestAnimationFrame(function() {
    attached(el, then, (frames || 0) + 1);
  });
}
function mountOne(root) {
  var others = [].filter.call(
    document.querySelectorAll(".mha-live:not([data-mounted])"),
    function(r) {
      return r !== root;
    }
  );
  others.forEach(function(r) {
    r.dataset.mounted = "later";
  });
  try {
    window.mhaLive.mountAll();
  } catch (err) {
    console.error(err);
  } finally {
    others.forEach(function(r) {
      delete r.dataset.mounted;
    });
  }
}
function draw(el, html) {
  el.innerHTML = html;
  var root = el.querySelector(".mha-live");
  if (root) {
    attached(el, function() {
      mountOne(root);
    });
  }
}
var widget_default = {
  render({ model, el }) {
    el.classList.add("mha-picture");
    const redraw = () => draw(el, model.get("html"));
    model.on("change:html", redraw);
    redraw();
    return () => model.off("change:html", redraw);
  }
};
export {
  widget_default as default
};
