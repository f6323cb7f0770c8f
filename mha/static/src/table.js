// The table view (a DOM table).
// table: d = {columns, rows: [[label, v1, ...]], caption}; text: d = {text}
export function table(el, d) {
  el.textContent = "";
  if (!d) return;
  var tab = document.createElement("table");
  if (d.caption) {
    var cap = document.createElement("caption");
    cap.textContent = d.caption;
    tab.appendChild(cap);
  }
  var tr = document.createElement("tr");
  d.columns.forEach(function (c) {
    // an empty corner is a plain cell (axe: empty-table-header)
    var th = document.createElement(c === "" ? "td" : "th");
    if (c !== "") th.scope = "col";
    th.textContent = c;
    tr.appendChild(th);
  });
  tab.appendChild(tr);
  // a column with a fraction in it writes every number with two decimals (a weight of exactly
  // 0 is "0.00" beside "0.47", not "0"); a column of whole numbers writes them whole
  var fractional = d.columns.map(function (c, i) {
    return d.rows.some(function (r) {
      return typeof r[i] === "number" && !Number.isInteger(r[i]);
    });
  });
  d.rows.forEach(function (r) {
    var row = document.createElement("tr");
    r.forEach(function (v, i) {
      var td = document.createElement(i ? "td" : "th");
      if (!i) td.scope = "row";
      td.textContent =
        typeof v !== "number"
          ? v
          : fractional[i] || !Number.isInteger(v)
            ? v.toFixed(2)
            : v.toLocaleString("en");
      row.appendChild(td);
    });
    tab.appendChild(row);
  });
  el.appendChild(tab);
  fitTable(el, tab);
}
// A table fits its figure: headers wrap; on a narrow screen (chapter 12's six columns were 4 px
// too wide for a phone, and the whole figure could be panned) the cells' padding shrinks, and a
// table still too wide scrolls inside its own box, never the figure's views
function fitTable(el, tab) {
  el.style.maxWidth = "100%";
  el.style.minWidth = "0";
  el.style.overflowX = "auto";
  var room = el.parentElement && el.parentElement.clientWidth;
  var tight = room && tab.offsetWidth > room;
  tab.querySelectorAll("th, td").forEach(function (c) {
    c.style.padding = tight ? "0 .3em" : "";
  });
  el.dataset.compact = tight ? "1" : "0";
}
