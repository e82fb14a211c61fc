// output-table.js — sorts a table of rows (an output shown as a table) by the column whose
// header is pressed: numbers as numbers, the rest as text; pressing again reverses. The header
// says the order in words (aria-sort), not by an arrow alone.
(function () {
  "use strict";

  function valueOf(cell) {
    var text = cell ? cell.textContent : "";
    var number = text.trim() === "" ? NaN : Number(text);
    return { text: text, number: number };
  }
  function compare(a, b) {
    if (!isNaN(a.number) && !isNaN(b.number)) return a.number - b.number;
    return a.text.localeCompare(b.text, undefined, { numeric: true });
  }

  function wire(table) {
    // Wired once: a re-read section brings its table new, and the others keep their buttons (and focus).
    if (table.hasAttribute("data-sort-wired")) return;
    table.setAttribute("data-sort-wired", "");
    var headers = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(headers, function (th, index) {
      var label = th.textContent;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort-button";
      button.textContent = label;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var descending = th.getAttribute("aria-sort") === "ascending";
        Array.prototype.forEach.call(headers, function (other) {
          other.removeAttribute("aria-sort");
        });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (x, y) {
          var order = compare(valueOf(x.cells[index]), valueOf(y.cells[index]));
          return descending ? -order : order;
        });
        rows.forEach(function (row) {
          body.appendChild(row);
        });
      });
    });
  }

  function boot() {
    Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), wire);
  }
  window.docket = window.docket || {};
  window.docket.wireSortableTables = boot;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
