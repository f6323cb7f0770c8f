// The widget entry (mha.live.picture): an anywidget ES module is the page's script (the
// bundles: they run once per page, or find a front end already there) and this module's
// bundle, which draws a widget's picture. The kernel sends only the figure, its markup and its
// spec (the model's "html": mha.live.picture.markup), or a message; the front end never
// travels again.

// run then() once el is in the page (a view is drawn before its output is attached; a canvas
// needs the page's width and colours), trying for ~20 s
function attached(el, then, frames) {
  if (el.isConnected) {
    then();
    return;
  }
  if ((frames || 0) > 1200) return;
  requestAnimationFrame(function () {
    attached(el, then, (frames || 0) + 1);
  });
}

// mount this one figure: the front end's mountAll mounts every figure of the page not yet
// mounted, and one it cannot draw (an untrusted output whose script Lab took out) would stop
// it before this one; the others are left to their own script's call
function mountOne(root) {
  var others = [].filter.call(
    document.querySelectorAll(".mha-live:not([data-mounted])"),
    function (r) {
      return r !== root;
    },
  );
  others.forEach(function (r) {
    r.dataset.mounted = "later";
  });
  try {
    window.mhaLive.mountAll();
  } catch (err) {
    console.error(err);
  } finally {
    others.forEach(function (r) {
      delete r.dataset.mounted;
    });
  }
}

// the figure's markup and spec (JSON, never run) replace the old picture (a message has no
// figure to mount)
function draw(el, html) {
  el.innerHTML = html;
  var root = el.querySelector(".mha-live");
  if (root) {
    attached(el, function () {
      mountOne(root);
    });
  }
}

export default {
  render({ model, el }) {
    el.classList.add("mha-picture");
    const redraw = () => draw(el, model.get("html"));
    model.on("change:html", redraw);
    redraw();
    return () => model.off("change:html", redraw);
  },
};
