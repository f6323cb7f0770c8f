import { el, narrow as isNarrow } from "./dom.js";

// On a narrow figure (a phone, a narrow JupyterLab panel) a bar of many controls would cover
// half the screen or scroll inside itself (chapter 07's twelve controls): there a bar taller
// than SPLIT of the screen is split into pages, each about PAGE of the screen's height, behind
// a row of tabs (role tablist), so that every control is reached with one tap and no
// scrolling inside the bar. A control's group (spec.controls[i].group) keeps its page; controls
// without one are packed in order. Every page takes the height of the tallest, so that a tap on
// a tab never moves the views below.
var SPLIT = 0.4,
  PAGE = 0.3;

export function paginate(root, spec) {
  var bar = root.querySelector(".mha-bar"),
    box = root.querySelector(".mha-controls");
  if (!bar || !box || !root.clientWidth) return;
  var rows = Array.prototype.slice.call(box.children),
    tabs = bar.querySelector(".mha-tabs"),
    narrow = isNarrow(root);
  root.classList.toggle("mha-narrow", narrow);
  rows.forEach(function (r) {
    r.hidden = false;
    delete r.dataset.page; // pages are made again at this width
  });
  box.style.minHeight = "";
  var pages = narrow ? pack(rows, spec, box) : [rows];
  if (tabs) tabs.hidden = pages.length < 2;
  if (pages.length < 2) {
    delete root.dataset.pages;
    return;
  }
  if (!tabs) {
    tabs = el("div", { class: "mha-tabs", role: "tablist", "aria-label": "groups of controls" });
    bar.insertBefore(tabs, box);
  }
  tabs.textContent = "";
  pages.forEach(function (page, p) {
    page.forEach(function (r) {
      r.dataset.page = String(p);
    });
    var b = el("button", { type: "button", role: "tab", "data-page": String(p) }, name(page, spec));
    b.addEventListener("click", function () {
      show(root, p);
    });
    tabs.appendChild(b);
  });
  var active = Number(root.dataset.page || 0),
    tallest = 0; // each page shown alone, measured
  pages.forEach(function (page, p) {
    show(root, p);
    tallest = Math.max(tallest, box.offsetHeight);
  });
  box.style.minHeight = tallest + "px";
  root.dataset.pages = String(pages.length);
  show(root, Math.min(active, pages.length - 1));
}

// show page p of the bar's controls (and select its tab); the page of a focused control
export function show(root, p) {
  root.dataset.page = String(p);
  root.querySelectorAll(".mha-controls > [data-page]").forEach(function (r) {
    r.hidden = r.dataset.page !== String(p);
  });
  root.querySelectorAll(".mha-tabs [role=tab]").forEach(function (b) {
    var on = b.dataset.page === String(p);
    b.setAttribute("aria-selected", String(on));
  });
}

// the rows in pages: one page per group (a row without a group joins the one before it), or,
// when no control names a group, in order, in as few pages of about PAGE of the screen as fit
function pack(rows, spec, box) {
  var gap = parseFloat(getComputedStyle(box).rowGap) || 0,
    heights = rows.map(function (r) {
      return r.offsetHeight + gap;
    }),
    total = heights.reduce(function (s, h) {
      return s + h;
    }, 0);
  if (total <= SPLIT * window.innerHeight) return [rows]; // a bar that fits is not split
  var named = rows.some(function (r, i) {
    return groupOf(spec, i) !== null;
  });
  var pages = [],
    byGroup = {},
    group = null;
  if (named) {
    rows.forEach(function (r, i) {
      group = groupOf(spec, i) || group || groupOf(spec, 0);
      if (!byGroup[group]) pages.push((byGroup[group] = []));
      byGroup[group].push(r);
    });
    return pages;
  }
  var count = Math.ceil(total / (PAGE * window.innerHeight)),
    page = [],
    used = 0;
  rows.forEach(function (r, i) {
    if (page.length && used + heights[i] / 2 > total / count) {
      pages.push(page);
      page = [];
      used = 0;
    }
    page.push(r);
    used += heights[i];
  });
  pages.push(page);
  return pages;
}

function groupOf(spec, i) {
  var c = spec.controls[i];
  return c && c.group ? c.group : null;
}

function name(page, spec) {
  var i = Number(page[0].dataset.index),
    g = groupOf(spec, i);
  if (g) return g;
  return page
    .map(function (r) {
      return r.querySelector("label").textContent;
    })
    .join(", ");
}
