// Part 9 of 9: the controls and a figure's mounting and redraw; what the page can reach
// (window.mhaLive).
function buildControl(c, uid, onChange) {
  var wrap = el("div", { "class": "mha-control" }), id = uid + "-" + c.name, input, out;
  var lab = el("label", { "for": id }, c.label);
  wrap.appendChild(lab);
  if (c.kind === "select") {
    input = el("select", { id: id });
    c.values.forEach(function (v, i) { input.appendChild(el("option", { value: String(i) }, labelOf(c, i))); });
    input.value = String(c.value);
    fitSelect(input, wrap);
  } else if (c.kind === "toggle") {
    input = el("input", { id: id, type: "checkbox" });
    input.checked = c.value === 1;
    wrap.className += " mha-toggle";
  } else if (c.kind === "text") { // the reader's own text: the compute reads it at every key
    input = el("textarea", { id: id, rows: "6", maxlength: String(c.max_length), spellcheck: "false",
      autocomplete: "off", autocapitalize: "off", "aria-describedby": id + "-count" });
    input.value = c.value;
    wrap.className += " mha-text";
  } else { // range and step: an index into the listed values
    input = el("input", { id: id, type: "range", min: "0", max: String(c.values.length - 1), step: "1",
      value: String(c.value) });
  }
  input.dataset.knob = c.name;
  if (c.disabled) input.disabled = true;
  var prev = null, next = null;
  if (c.kind === "step") {
    prev = el("button", { type: "button", "aria-label": c.label + ": previous step" }, "\u25c0");
    next = el("button", { type: "button", "aria-label": c.label + ": next step" }, "\u25b6");
    [[prev, -1], [next, 1]].forEach(function (p) {
      p[0].addEventListener("click", function () {
        var v = Math.max(0, Math.min(Number(input.max), Number(input.value) + p[1]));
        if (String(v) !== input.value) { input.value = String(v); onChange(c.name); }
      });
    });
    wrap.appendChild(prev); wrap.appendChild(input); wrap.appendChild(next);
    wrap.className += " mha-step";
  } else {
    wrap.appendChild(input);
  }
  if (c.kind === "range" || c.kind === "step") { out = el("output", { "for": id }); wrap.appendChild(out); }
  if (c.kind === "text") { out = el("output", { id: id + "-count", "for": id }); wrap.appendChild(out); }
  input.addEventListener(c.kind === "select" || c.kind === "toggle" ? "change" : "input",
    function () { onChange(c.name); });
  if (c.kind === "range" || c.kind === "step") input.addEventListener("change", function () { onChange(c.name); });
  return { spec: c, input: input, out: out, prev: prev, next: next };
}

// A text that changes as the reader moves controls (a readout) keeps the tallest height it has
// had at this width, so that what lies below it does not jump up and down (chapter 02's
// readout ran to 2 lines, then 3); base: its height at least (a CSS length)
function neverShrink(e, base) {
  if (e.mhaWidth !== e.clientWidth) { e.style.minHeight = base || ""; e.mhaWidth = e.clientWidth; }
  if (e.clientWidth) e.style.minHeight = e.offsetHeight + "px";
}
// the height (px) of the tallest of texts in element e at its width: the longest few on one
// line, measured in an invisible copy of e (a figure lists a few thousand states at most)
function tallest(e, texts) {
  var m = measurer(getComputedStyle(e).font), seen = {}, most = 0;
  var ranked = texts.filter(function (s) { return s && !seen[s] && (seen[s] = 1); })
    .map(function (s) { return [m.measureText(s).width, s]; })
    .sort(function (a, b) { return b[0] - a[0]; }).slice(0, 8);
  var probe = e.cloneNode(false);
  probe.removeAttribute("aria-live"); probe.setAttribute("aria-hidden", "true");
  probe.style.cssText = "position:absolute;visibility:hidden;left:0;top:0;min-height:0;width:" +
    e.clientWidth + "px";
  e.parentElement.appendChild(probe);
  ranked.forEach(function (r) { probe.textContent = r[1]; most = Math.max(most, probe.offsetHeight); });
  e.parentElement.removeChild(probe);
  return most;
}

// A control the picture does not use shows no value that could contradict it: a slider's
// number becomes a dash (redraw), a select shows a dash option while it keeps the reader's
// choice (data-keep, which values() reads; it comes back when the control is used again), a
// box is drawn half-ticked (indeterminate) over the reader's own tick.
var UNUSED = "unused", UNUSED_SAID = "not used by this source";
function showUnused(k, unused) {
  var input = k.input, dash = input.querySelector ? input.querySelector("option[data-unused]") : null;
  if (k.spec.kind === "toggle") { input.indeterminate = unused; return; }
  if (k.spec.kind !== "select") return;
  if (unused) {
    if (!dash) {
      dash = el("option", { value: UNUSED, "data-unused": "1", "aria-label": UNUSED_SAID }, "\u2014");
      dash.hidden = true; input.appendChild(dash);
    }
    if (input.value !== UNUSED) { input.dataset.keep = input.value; input.value = UNUSED; }
  } else if (dash) {
    if (input.value === UNUSED) input.value = input.dataset.keep;
    input.removeChild(dash); delete input.dataset.keep;
  }
}

// ---------------------------------------------------------------- a figure
function mount(root) {
  var spec = JSON.parse(root.querySelector("script.mha-spec").textContent), uid = "mha-live-" + (++counter);
  var ctl = {}, views = {}, last = null;
  var box = root.querySelector(".mha-controls");
  function index(name) { // a select showing its dash (unused) still holds the reader's choice
    var c = ctl[name], input = c.input;
    if (c.spec.kind === "toggle") return input.checked ? 1 : 0;
    return Number(input.value === UNUSED ? input.dataset.keep : input.value);
  }
  function values() { // a text box's value is its text
    var v = {}; spec.controls.forEach(function (c) {
      v[c.name] = c.kind === "text" ? ctl[c.name].input.value : c.values[index(c.name)]; });
    return v;
  }
  spec.controls.forEach(function (c) { ctl[c.name] = buildControl(c, uid, redraw); box.appendChild(ctl[c.name].input.parentElement); });
  var area = root.querySelector(".mha-views");
  spec.views.forEach(function (v) {
    var e = CANVAS_VIEWS[v.kind] ? el("canvas", { role: "img", "aria-label": v.label || v.name })
      : el("div", { "class": "mha-" + v.kind });
    e.dataset.view = v.name; area.appendChild(e); views[v.name] = { spec: v, el: e };
  });
  var readout = root.querySelector(".mha-readout");

  function apply(st) { // options and disabled controls a state asks for
    Object.keys(st.options || {}).forEach(function (name) {
      var c = ctl[name], offered = st.options[name], sel = c.input, old = index(name);
      var now = Array.prototype.filter.call(sel.options, function (o) { return o.value !== UNUSED; })
        .map(function (o) { return Number(o.value); });
      if (now.join() !== offered.join()) {
        sel.textContent = "";
        offered.forEach(function (i) { sel.appendChild(el("option", { value: String(i) }, labelOf(c.spec, i))); });
      }
      var pick = offered.indexOf(old) >= 0 ? old : offered.filter(function (i) { return i <= old; }).pop();
      sel.value = String(pick === undefined ? offered[0] : pick);
    });
    Object.keys(st.disabled || {}).forEach(function (name) { ctl[name].input.disabled = st.disabled[name]; });
    Object.keys(st.set || {}).forEach(function (name) { // set a control to the value given
      var c = ctl[name], i = c.spec.values.indexOf(st.set[name]);
      if (c.spec.kind === "text") {
        var box = c.input, from = box.selectionStart, to = box.selectionEnd, text = String(st.set[name]);
        var keep = document.activeElement === box && text.length === box.value.length;
        box.value = text;
        if (keep) box.setSelectionRange(from, to); // the same length: the caret stays where it was
      } else if (i >= 0) c.input.value = String(i);
    });
  }

  function state(changed) {
    if (spec.compute) {
      var f = COMPUTE[spec.compute], st = f(values(), spec.data, changed, root);
      if (st.options || st.disabled || st.set) { apply(st); st = f(values(), spec.data, null, root); }
      return st;
    }
    var key = spec.controls.map(function (c) { return index(c.name); }).join(",");
    var st = spec.states[key];
    if (st && st.limits && limit(st.limits, changed)) {
      st = spec.states[spec.controls.map(function (c) { return index(c.name); }).join(",")];
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
      var c = ctl[name], lim = limits[name], old = c.input.value;
      c.input.max = String(lim.max);
      if (lim.reset && changed === lim.reset) c.input.value = lim.to === "max" ? String(lim.max) : "0";
      if (Number(c.input.value) > lim.max) c.input.value = String(lim.max);
      if (c.input.value !== old) moved = true;
    });
    return moved;
  }

  function redraw(changed) {
    var start = performance.now(), st = state(changed), t = theme(root);
    spec.controls.forEach(function (c) {
      var k = ctl[c.name];
      if (c.kind === "text") { k.out.textContent = plural(k.input.value.length, "character") + " of " + c.max_length; return; }
      var i = index(c.name), unused = !!(st.unused && st.unused[c.name]);
      // a control the picture does not use (a trained layer's own sizes) shows no stale value
      var shown = unused ? "\u2014" : labelOf(c, i);
      if (k.out) k.out.textContent = shown;
      if (k.prev) { // a step's buttons at the ends say they go no further (aria-disabled keeps the focus)
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
      var d = st.views[v.name], e = views[v.name].el;
      if (typeof d === "number") d = spec.pool[d]; // listed states share their views' data
      e.hidden = d === null || d === undefined;
      if (e.hidden) return;
      if (CANVAS_VIEWS[v.kind]) e.setAttribute("aria-label", CANVAS_VIEWS[v.kind](e, d, t));
      else if (v.kind === "table") table(e, d);
      else if (DOM_VIEWS[v.kind]) DOM_VIEWS[v.kind](e, d, t);
      else e.textContent = d.text;
    });
    readout.textContent = st.readout || ""; // announced when it changes (aria-live)
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
    if (!spec.states) { neverShrink(readout); return; }
    if (readout.mhaWidth === readout.clientWidth || !readout.clientWidth) return;
    readout.mhaWidth = readout.clientWidth;
    readout.style.minHeight = tallest(readout, Object.keys(spec.states).map(function (k) {
      return spec.states[k].readout; })) + "px";
  }
  root.mhaRedraw = function () { redraw(undefined); };
  redraw(null);
  if (!last) throw new Error("no state drawn");
}

// A figure's bar of controls (.mha-bar, CSS position: sticky) stays in view while the reader
// scrolls to the view a control changes; in the book it sticks below the theme's own sticky
// bar at the top of the article (its height differs on a phone), elsewhere at the top.
function stickyTop() {
  var h = document.querySelector(".bd-header-article");
  if (!h || getComputedStyle(h).position !== "sticky") return 0;
  return Math.round(h.getBoundingClientRect().height);
}
function placeBars() {
  var top = stickyTop() + "px";
  document.querySelectorAll(".mha-live").forEach(function (r) { r.style.setProperty("--mha-top", top); });
}
window.addEventListener("resize", placeBars);

// A redraw that shortens a figure the reader has scrolled into (a tall heatmap grid replaced
// by one head's lines) would leave the page showing what follows the figure, the figure above
// the screen: scroll back so that its views start just below its bar.
function keepInView(root) {
  var bar = root.querySelector(".mha-bar"), views = root.querySelector(".mha-views");
  if (!bar || !views || !root.getBoundingClientRect) return;
  // what the bar covers: a token button focused from the keyboard, or scrolled to, stops below
  // it (scroll-margin-top in the styles), never under it
  root.style.setProperty("--mha-bar-h", bar.offsetHeight + "px");
  var top = parseFloat(root.style.getPropertyValue("--mha-top")) || 0, r = root.getBoundingClientRect();
  if (r.top < top && r.bottom < top + bar.offsetHeight + 40) {
    window.scrollBy(0, views.getBoundingClientRect().top - top - bar.offsetHeight - 8);
  }
}

function mountAll() {
  placeBars();
  var failed = null; // a figure that cannot draw says so, and the others still draw
  document.querySelectorAll(".mha-live:not([data-mounted])").forEach(function (root) {
    if (!parsed(root)) return; // mounted by a later call, once the page has parsed it
    root.dataset.mounted = "1";
    try { mount(root); } catch (err) {
      var e = root.querySelector(".mha-error"); if (e) e.textContent = "The figure could not draw: " + err;
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
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { mountAll(); });

// the book's theme switch: redraw in the new colours
if (window.MutationObserver) {
  new MutationObserver(function () {
    document.querySelectorAll(".mha-live[data-mounted]").forEach(function (r) { if (r.mhaRedraw) r.mhaRedraw(); });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
}

window.mhaLive = { version: VERSION, mountAll: mountAll, compute: COMPUTE, attention: attention,
  decode: decode, views: CANVAS_VIEWS, table: table, colour: colour };
soon(mountAll);
