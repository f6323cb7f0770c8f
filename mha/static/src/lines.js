// The lines view: its head picker, token buttons (keyboard, pointer, touch) and a long text's
// scrolling box; lines_draw.js draws.
import { el, fitSelect } from "./dom.js";
import { LINE_ROW, drawLines } from "./lines_draw.js";
import { nextId } from "./registry.js";

export function lines(box, d, t) {
  var shape = JSON.stringify([d.titles, d.grids.length, d.max_rows]),
    m = box.mhaLines;
  // the head the reader picked stays when the input changes (a new sentence or seed), as long
  // as the data asks for the same head as before and has the reader's
  var had =
    m && m.d && (m.d.head || 0) === (d.head || 0) && m.head < d.grids.length ? m.head : null;
  if (!m || m.shape !== shape) m = box.mhaLines = buildLines(box, d, shape);
  else if (JSON.stringify([d.rows, d.cols]) !== m.tokens) relabel(m, d); // new tokens, same heads
  m.tokens = JSON.stringify([d.rows, d.cols]);
  var base = d.focus || null,
    f = d.focus_from,
    root = box.closest(".mha-live");
  var knob = f && root && root.querySelector('[data-knob="' + f.knob + '"]');
  if (knob) {
    var q = f.queries[Number(knob.value)];
    base = q === null || q === undefined ? null : ["query", q];
  }
  if (JSON.stringify(base) !== JSON.stringify(m.base)) m.pinned = null; // a new step: unpin
  m.head = had === null ? d.head || 0 : had;
  m.d = d;
  m.t = t;
  m.base = base;
  drawLines(m);
}

function buildLines(box, d, shape) {
  var m = {
    shape: shape,
    box: box,
    head: d.head || 0,
    pinned: null,
    hover: null,
    base: null,
    pointer: null,
    buttons: { query: [], key: [] },
  };
  box.textContent = "";
  box.setAttribute("role", "group");
  box.setAttribute(
    "aria-label",
    "lines view: " +
      (d.caption || "one head") +
      "; tokens are buttons: focus one to see only its lines",
  );
  if (d.grids.length > 1) {
    // the head picker
    var id = "mha-lines-" + nextId(),
      wrap = el("div", { class: "mha-control" });
    var sel = el("select", { id: id });
    wrap.appendChild(el("label", { for: id }, "head"));
    d.grids.forEach(function (g, h) {
      sel.appendChild(el("option", { value: String(h) }, d.titles ? d.titles[h] : "head " + h));
    });
    sel.value = String(m.head);
    fitSelect(sel, wrap);
    sel.addEventListener("change", function () {
      m.head = Number(sel.value);
      drawLines(m);
    });
    wrap.appendChild(sel);
    box.appendChild(wrap);
    m.select = sel;
  }
  m.cap = el("p");
  m.cap.style.cssText = "margin:.2em 0;font-weight:600";
  box.appendChild(m.cap);
  m.legend = el("p", { class: "mha-lines-legend" });
  m.legend.style.cssText = "margin:.2em 0;font-size:13px";
  box.appendChild(m.legend);
  m.said = el("p", { class: "mha-lines-readout", "aria-live": "polite" });
  m.said.style.cssText = "margin:.3em 0;min-height:2.6em";
  var row = (m.row = el("div"));
  row.style.cssText = "display:flex;align-items:flex-start";
  scrolls(row, d);
  function column(side, labels) {
    var col = el("div", {
      role: "group",
      "aria-label": side === "query" ? "queries" : "keys",
    });
    col.style.cssText =
      "display:flex;flex-direction:column;flex:none;align-items:" +
      (side === "query" ? "flex-end" : "flex-start");
    var head = el("div", {}, side === "query" ? "queries" : "keys");
    head.style.cssText = "height:22px;line-height:22px;font-size:12px;opacity:.8";
    col.appendChild(head);
    labels.forEach(function (s, i) {
      button(side, i, s, col);
    });
    return col;
  }
  function button(side, i, s, col) {
    // token i of a column, appended to it
    var b = el(
      "button",
      {
        type: "button",
        "aria-pressed": "false",
        tabindex: i ? "-1" : "0",
        "aria-label": side + " " + i + ": " + s,
      },
      s,
    );
    b.style.cssText =
      "height:" +
      LINE_ROW +
      "px;min-width:32px;margin:0;padding:0 6px;" +
      "border:1px solid transparent;border-radius:4px;background:transparent;color:inherit;" +
      "font:inherit;font-size:13px;cursor:pointer;white-space:nowrap";
    // a tap (touch, pen) pins and unpins by click; the focus it gives the button must not show
    // the button's lines as if focused by keyboard (they stayed after a tap had unpinned them):
    // m.pointer is the button being tapped until its click
    b.addEventListener("pointerdown", function (e) {
      m.pointer = e.pointerType !== "mouse" ? b : null;
    });
    b.addEventListener("pointercancel", function () {
      m.pointer = null;
    });
    b.addEventListener("pointerenter", function (e) {
      if (e.pointerType === "mouse") {
        m.hover = [side, i];
        drawLines(m);
      }
    });
    b.addEventListener("pointerleave", function (e) {
      if (e.pointerType === "mouse") {
        m.hover = null;
        drawLines(m);
      }
    });
    b.addEventListener("focus", function () {
      m.buttons[side].forEach(function (o) {
        o.tabIndex = o === b ? 0 : -1;
      }); // roving tab stop
      if (m.pointer !== b) {
        m.hover = [side, i];
        drawLines(m);
      } // a tap pins instead (click)
    });
    b.addEventListener("blur", function () {
      if (m.hover) {
        m.hover = null;
        drawLines(m);
      }
    });
    b.addEventListener("click", function () {
      if (m.pointer === b && m.hover && m.hover[0] === side && m.hover[1] === i) m.hover = null;
      m.pointer = null;
      m.pinned = m.pinned && m.pinned[0] === side && m.pinned[1] === i ? null : [side, i];
      drawLines(m);
    });
    b.addEventListener("keydown", function (e) {
      var list = m.buttons[side],
        other = m.buttons[side === "query" ? "key" : "query"],
        to = null;
      m.pointer = null; // the keyboard again: focus shows a token's lines
      if (e.key === "ArrowDown") to = list[Math.min(list.length - 1, i + 1)];
      else if (e.key === "ArrowUp") to = list[Math.max(0, i - 1)];
      else if (e.key === "Home") to = list[0];
      else if (e.key === "End") to = list[list.length - 1];
      else if (
        (e.key === "ArrowRight" && side === "query") ||
        (e.key === "ArrowLeft" && side === "key")
      )
        to = other[Math.min(other.length - 1, i)];
      else if (e.key === "Escape" && m.pinned) {
        m.pinned = null;
        drawLines(m);
        e.preventDefault();
        return;
      }
      if (to) {
        e.preventDefault();
        to.focus();
      }
    });
    m.buttons[side].push(b);
    col.appendChild(b);
  }
  m.button = button;
  m.left = column("query", d.rows);
  m.canvas = el("canvas", { role: "img" });
  m.canvas.style.cssText = "margin:22px 0 0;flex:none";
  m.right = column("key", d.cols);
  row.appendChild(m.left);
  row.appendChild(m.canvas);
  row.appendChild(m.right);
  box.appendChild(row);
  box.appendChild(m.said);
  return m;
}

// new tokens (another sentence; a reader typing): the buttons are kept, relabelled, and added
// or removed at the end, as a new view would have them (nothing pinned or hovered, one tab stop)
function relabel(m, d) {
  [
    ["query", d.rows, m.left],
    ["key", d.cols, m.right],
  ].forEach(function (p) {
    var side = p[0],
      labels = p[1],
      list = m.buttons[side];
    while (list.length > labels.length) p[2].removeChild(list.pop());
    labels.forEach(function (s, i) {
      if (i >= list.length) m.button(side, i, s, p[2]);
      else if (list[i].textContent !== s) {
        list[i].textContent = s;
        list[i].setAttribute("aria-label", side + " " + i + ": " + s);
      }
    });
    if (
      list.length &&
      !list.some(function (b) {
        return b.tabIndex === 0;
      })
    )
      list[0].tabIndex = 0;
  });
  m.pinned = m.hover = null;
  m.box.setAttribute(
    "aria-label",
    "lines view: " +
      (d.caption || "one head") +
      "; tokens are buttons: focus one to see only its lines",
  );
  scrolls(m.row, d);
}
function scrolls(row, d) {
  // a long text's tokens scroll in a box max_rows tall (also on a phone: chapter 10's passages
  // of 190 characters made the lines 4,900 px tall there without it)
  var on = !!d.max_rows && Math.max(d.rows.length, d.cols.length) > d.max_rows;
  row.style.maxHeight = on ? d.max_rows * LINE_ROW + 22 + "px" : "";
  row.style.overflowY = on ? "auto" : "";
  if (on) row.dataset.scrolls = "1";
  else delete row.dataset.scrolls;
}
