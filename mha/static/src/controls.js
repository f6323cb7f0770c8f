import { measurer } from "./canvas.js";
import { el, fitSelect, labelOf } from "./dom.js";

// A figure's controls: labelled native inputs (slider, select, box, step buttons, text box)
// built from the spec, and what a control the picture does not use shows.
export function buildControl(c, uid, onChange) {
  var wrap = el("div", { class: "mha-control" }),
    id = uid + "-" + c.name,
    input,
    out;
  var lab = el("label", { for: id }, c.label);
  wrap.appendChild(lab);
  if (c.kind === "select") {
    input = el("select", { id: id });
    c.values.forEach(function (v, i) {
      input.appendChild(el("option", { value: String(i) }, labelOf(c, i)));
    });
    input.value = String(c.value);
    fitSelect(input, wrap);
  } else if (c.kind === "toggle") {
    input = el("input", { id: id, type: "checkbox" });
    input.checked = c.value === 1;
    wrap.className += " mha-toggle";
  } else if (c.kind === "text") {
    // the reader's own text: the compute reads it at every key
    input = el("textarea", {
      id: id,
      rows: "6",
      maxlength: String(c.max_length),
      spellcheck: "false",
      autocomplete: "off",
      autocapitalize: "off",
      "aria-describedby": id + "-count",
    });
    input.value = c.value;
    wrap.className += " mha-text";
  } else {
    // range and step: an index into the listed values
    input = el("input", {
      id: id,
      type: "range",
      min: "0",
      max: String(c.values.length - 1),
      step: "1",
      value: String(c.value),
    });
  }
  input.dataset.knob = c.name;
  if (c.disabled) input.disabled = true;
  var prev = null,
    next = null;
  if (c.kind === "step") {
    prev = el("button", { type: "button", "aria-label": c.label + ": previous step" }, "\u25c0");
    next = el("button", { type: "button", "aria-label": c.label + ": next step" }, "\u25b6");
    [
      [prev, -1],
      [next, 1],
    ].forEach(function (p) {
      p[0].addEventListener("click", function () {
        var v = Math.max(0, Math.min(Number(input.max), Number(input.value) + p[1]));
        if (String(v) !== input.value) {
          input.value = String(v);
          onChange(c.name);
        }
      });
    });
    wrap.appendChild(prev);
    wrap.appendChild(input);
    wrap.appendChild(next);
    wrap.className += " mha-step";
  } else {
    wrap.appendChild(input);
  }
  if (c.kind === "range" || c.kind === "step") {
    out = el("output", { for: id });
    wrap.appendChild(out);
  }
  if (c.kind === "text") {
    out = el("output", { id: id + "-count", for: id });
    wrap.appendChild(out);
  }
  input.addEventListener(
    c.kind === "select" || c.kind === "toggle" ? "change" : "input",
    function () {
      onChange(c.name);
    },
  );
  if (c.kind === "range" || c.kind === "step")
    input.addEventListener("change", function () {
      onChange(c.name);
    });
  return { spec: c, input: input, out: out, prev: prev, next: next };
}

// A text that changes as the reader moves controls (a readout) keeps the tallest height it has
// had at this width, so that what lies below it does not jump up and down (chapter 02's
// readout ran to 2 lines, then 3); base: its height at least (a CSS length)
export function neverShrink(e, base) {
  if (e.mhaWidth !== e.clientWidth) {
    e.style.minHeight = base || "";
    e.mhaWidth = e.clientWidth;
  }
  if (e.clientWidth) e.style.minHeight = e.offsetHeight + "px";
}
// the height (px) of the tallest of texts in element e at its width: the longest few on one
// line, measured in an invisible copy of e (a figure lists a few thousand states at most)
export function tallest(e, texts) {
  var m = measurer(getComputedStyle(e).font),
    seen = {},
    most = 0;
  var ranked = texts
    .filter(function (s) {
      return s && !seen[s] && (seen[s] = 1);
    })
    .map(function (s) {
      return [m.measureText(s).width, s];
    })
    .sort(function (a, b) {
      return b[0] - a[0];
    })
    .slice(0, 8);
  var probe = e.cloneNode(false);
  probe.removeAttribute("aria-live");
  probe.setAttribute("aria-hidden", "true");
  probe.style.cssText =
    "position:absolute;visibility:hidden;left:0;top:0;min-height:0;width:" + e.clientWidth + "px";
  e.parentElement.appendChild(probe);
  ranked.forEach(function (r) {
    probe.textContent = r[1];
    most = Math.max(most, probe.offsetHeight);
  });
  e.parentElement.removeChild(probe);
  return most;
}

// A control the picture does not use shows no value that could contradict it: a slider's
// number becomes a dash (redraw), a select shows a dash option while it keeps the reader's
// choice (data-keep, which values() reads; it comes back when the control is used again), a
// box is drawn half-ticked (indeterminate) over the reader's own tick.
export var UNUSED = "unused",
  UNUSED_SAID = "not used by this source";
export function showUnused(k, unused) {
  var input = k.input,
    dash = input.querySelector ? input.querySelector("option[data-unused]") : null;
  if (k.spec.kind === "toggle") {
    input.indeterminate = unused;
    return;
  }
  if (k.spec.kind !== "select") return;
  if (unused) {
    if (!dash) {
      dash = el(
        "option",
        { value: UNUSED, "data-unused": "1", "aria-label": UNUSED_SAID },
        "\u2014",
      );
      dash.hidden = true;
      input.appendChild(dash);
    }
    if (input.value !== UNUSED) {
      input.dataset.keep = input.value;
      input.value = UNUSED;
    }
  } else if (dash) {
    if (input.value === UNUSED) input.value = input.dataset.keep;
    input.removeChild(dash);
    delete input.dataset.keep;
  }
}
