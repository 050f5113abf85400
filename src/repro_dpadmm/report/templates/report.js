/* The report's only script (inlined into each page by report/html.py): sort a table by a column, and show or hide
   claims by verdict. No library; nothing is loaded from anywhere. */
(function () {
  "use strict";
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[data-verdict-filter]"));
  function apply() {
    var off = {};
    boxes.forEach(function (b) { if (!b.checked) { off[b.getAttribute("data-verdict-filter")] = true; } });
    document.querySelectorAll("[data-verdict]").forEach(function (el) {
      el.hidden = off[el.getAttribute("data-verdict")] === true;
    });
  }
  boxes.forEach(function (b) { b.addEventListener("change", apply); });
  document.querySelectorAll("button[data-filter-set]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var all = btn.getAttribute("data-filter-set") === "all";
      boxes.forEach(function (b) { b.checked = all || b.hasAttribute("data-failing"); });
      apply();
    });
  });
  function key(cell) {
    var v = cell.hasAttribute("data-sort-value") ? cell.getAttribute("data-sort-value") : cell.textContent.trim();
    var n = parseFloat(v);
    return isNaN(n) ? [1, v.toLowerCase()] : [0, n];
  }
  function sortBy(th) {
    var table = th.closest("table"), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      var c = x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable th[data-sort]").forEach(function (th) {
    th.tabIndex = 0;
    th.title = "sort by this column";
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th); } });
  });
})();
