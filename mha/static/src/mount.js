import { theme } from "./colours.js";
import { UNUSED, UNUSED_SAID, buildControl, neverShrink, showUnused, tallest } from "./controls.js";
import { el, labelOf } from "./dom.js";
import { plural } from "./format.js";
import { CANVAS_VIEWS, COMPUTE, DOM_VIEWS, nextId } from "./registry.js";
import { paginate } from "./pages.js";
import { keepInView } from "./sticky.js";
import { table } from "./table.js";

// A figure: its controls and views built from its spec, its state looked up (or computed) and
// drawn at every change of a control.
export function mount(root) {
  var spec = JSON.parse(root.querySelector("script.mha-spec").textContent),
    uid = "mha-live-" + nextId();
  var ctl = {},
    views = {},
    last = null;
  var box = root.querySelector(".mha-controls");
  function index(name) {
    // a select showing its dash (unused) still holds the reader's choice
    var c = ctl[name],
      input = c.input;
    if (c.spec.kind === "toggle") return input.checked ? 1 : 0;
    return Number(input.value === UNUSED ? input.dataset.keep : input.value);
  }
  function values() {
    // a text box's value is its text
    var v = {};
    spec.controls.forEach(function (c) {
      v[c.name] = c.kind === "text" ? ctl[c.name].input.value : c.values[index(c.name)];
    });
    return v;
  }
  spec.controls.forEach(function (c, i) {
    ctl[c.name] = buildControl(c, uid, redraw);
    var row = ctl[c.name].input.parentElement;
    row.dataset.index = String(i);
    box.appendChild(row);
  });
  var area = root.querySelector(".mha-views");
  spec.views.forEach(function (v) {
    var e = CANVAS_VIEWS[v.kind]
      ? el("canvas", { role: "img", "aria-label": v.label || v.name })
      : el("div", { class: "mha-" + v.kind });
    e.dataset.view = v.name;
    area.appendChild(e);
    views[v.name] = { spec: v, el: e };
  });
  var readout = root.querySelector(".mha-readout"),
    alert = root.querySelector(".mha-alert");

  function apply(st) {
    // options and disabled controls a state asks for
    Object.keys(st.options || {}).forEach(function (name) {
      var c = ctl[name],
        offered = st.options[name],
        sel = c.input,
        old = index(name);
      var now = Array.prototype.filter
        .call(sel.options, function (o) {
          return o.value !== UNUSED;
        })
        .map(function (o) {
          return Number(o.value);
        });
      if (now.join() !== offered.join()) {
        sel.textContent = "";
        offered.forEach(function (i) {
          sel.appendChild(el("option", { value: String(i) }, labelOf(c.spec, i)));
        });
      }
      var pick =
        offered.indexOf(old) >= 0
          ? old
          : offered
              .filter(function (i) {
                return i <= old;
              })
              .pop();
      sel.value = String(pick === undefined ? offered[0] : pick);
    });
    Object.keys(st.disabled || {}).forEach(function (name) {
      ctl[name].input.disabled = st.disabled[name];
    });
    Object.keys(st.set || {}).forEach(function (name) {
      // set a control to the value given
      var c = ctl[name],
        i = c.spec.values.indexOf(st.set[name]);
      if (c.spec.kind === "text") {
        var box = c.input,
          from = box.selectionStart,
          to = box.selectionEnd,
          text = String(st.set[name]);
        var keep = document.activeElement === box && text.length === box.value.length;
        box.value = text;
        if (keep) box.setSelectionRange(from, to); // the same length: the caret stays where it was
      } else if (i >= 0) c.input.value = String(i);
    });
  }

  function state(changed) {
    if (spec.compute) {
      var f = COMPUTE[spec.compute],
        made = f(values(), spec.data, changed, root);
      if (made.options || made.disabled || made.set) {
        apply(made);
        made = f(values(), spec.data, null, root);
      }
      return made;
    }
    var key = spec.controls
      .map(function (c) {
        return index(c.name);
      })
      .join(",");
    var st = spec.states[key];
    if (st && st.limits && limit(st.limits, changed)) {
      st =
        spec.states[
          spec.controls
            .map(function (c) {
              return index(c.name);
            })
            .join(",")
        ];
    }
    return st;
  }
  // a listed state may limit a slider to its first max + 1 values (chapter 13: the block
  // slider runs to the last block of this block size) and send it back to 0 when the control
  // named in reset moves, or to max with to: "max" (chapter 11: a model's own context):
  // {limits: {control: {max, reset, to}}}; true when a value changed
  function limit(limits, changed) {
    var moved = false;
    Object.keys(limits).forEach(function (name) {
      var c = ctl[name],
        lim = limits[name],
        old = c.input.value;
      c.input.max = String(lim.max);
      if (lim.reset && changed === lim.reset)
        c.input.value = lim.to === "max" ? String(lim.max) : "0";
      if (Number(c.input.value) > lim.max) c.input.value = String(lim.max);
      if (c.input.value !== old) moved = true;
    });
    return moved;
  }

  function redraw(changed) {
    var start = performance.now(),
      st = state(changed),
      t = theme(root);
    spec.controls.forEach(function (c) {
      var k = ctl[c.name];
      if (c.kind === "text") {
        k.out.textContent = plural(k.input.value.length, "character") + " of " + c.max_length;
        return;
      }
      var i = index(c.name),
        unused = !!(st.unused && st.unused[c.name]);
      // a control the picture does not use (a trained layer's own sizes) shows no stale value
      var shown = unused ? "\u2014" : labelOf(c, i);
      if (k.out) k.out.textContent = shown;
      if (k.prev) {
        // a step's buttons at the ends say they go no further (aria-disabled keeps the focus)
        k.prev.setAttribute("aria-disabled", String(k.input.disabled || i <= 0));
        k.next.setAttribute("aria-disabled", String(k.input.disabled || i >= Number(k.input.max)));
      }
      if (c.kind === "range" || c.kind === "step") {
        k.input.setAttribute("aria-valuetext", unused ? UNUSED_SAID : shown);
      } else {
        showUnused(k, unused);
      }
    });
    spec.views.forEach(function (v) {
      var d = st.views[v.name],
        e = views[v.name].el;
      if (typeof d === "number") d = spec.pool[d]; // listed states share their views' data
      e.hidden = d === null || d === undefined;
      if (e.hidden) return;
      if (CANVAS_VIEWS[v.kind]) e.setAttribute("aria-label", CANVAS_VIEWS[v.kind](e, d, t));
      else if (v.kind === "table") table(e, d);
      else if (DOM_VIEWS[v.kind]) DOM_VIEWS[v.kind](e, d, t);
      else e.textContent = d.text;
    });
    readout.textContent = st.readout || ""; // announced when it changes (aria-live)
    // what cannot be drawn, stuck under the bar: where the reader is looking, wherever the
    // figure is scrolled (announced at once: role alert)
    if (alert && alert.textContent !== (st.alert || "")) alert.textContent = st.alert || "";
    steady();
    keepInView(root);
    root.dataset.state = JSON.stringify(st.state || values());
    last = st;
    root.dataset.drawnAt = String(performance.now());
    root.dataset.drawMs = String(+root.dataset.drawnAt - start); // look-up (or compute) + draw
    root.dataset.draws = String(+(root.dataset.draws || 0) + 1);
  }
  // the readout keeps one height while the reader moves controls: as tall as the longest of
  // the listed states' readouts (measured again when the figure's width changes), or, with an
  // in-page compute, never shorter than it has been
  function steady() {
    if (!spec.states) {
      neverShrink(readout);
      return;
    }
    if (readout.mhaWidth === readout.clientWidth || !readout.clientWidth) return;
    readout.mhaWidth = readout.clientWidth;
    readout.style.minHeight =
      tallest(
        readout,
        Object.keys(spec.states).map(function (k) {
          return spec.states[k].readout;
        }),
      ) + "px";
  }
  root.mhaRedraw = function () {
    redraw(undefined);
  };
  redraw(null);
  if (!last) throw new Error("no state drawn");
  root.mhaPaginate = function () {
    paginate(root, spec);
  };
  root.mhaPaginate();
}
