// log-filter.js — the log's level filter and search, applied in place as the reader types, to
// lines already on the page and to those the live channel adds. The same rule as the server's
// (cockpit/log-filter.ts), which applies it when the form is sent without this script.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});
  var LEVELS = ["debug", "info", "warn", "error"];

  function boot() {
    var form = document.querySelector('[data-slot="log-filter"]');
    if (!form || !list()) return;
    var level = form.querySelector('[name="log_level"]');
    var search = form.querySelector('[name="log_q"]');
    var status = document.querySelector('[data-slot="log-matches"]');

    /** The list as it is now: execution.js may put the server's drawing of it in place. */
    function list() {
      return document.querySelector('[data-slot="log"]');
    }
    function matches(line) {
      var wanted = LEVELS.indexOf(level.value);
      if (LEVELS.indexOf(line.getAttribute("data-level")) < wanted) return false;
      var query = search.value.toLowerCase();
      var message = line.querySelector(".log-message");
      return query === "" || (message ? message.textContent.toLowerCase().indexOf(query) !== -1 : false);
    }
    function apply(line) {
      line.hidden = !matches(line);
    }
    /** Says how many lines on the page match: after the filter changed, and after lines came or went. */
    function count() {
      if (!status) return;
      var lines = list().querySelectorAll(".log-line");
      var shown = 0;
      Array.prototype.forEach.call(lines, function (line) {
        if (!line.hidden) shown += 1;
      });
      status.hidden = level.value === "debug" && search.value === "";
      status.textContent = shown + " of " + lines.length + " line(s) match.";
    }
    function applyAll() {
      Array.prototype.forEach.call(list().querySelectorAll(".log-line"), apply);
      count();
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      applyAll();
    });
    level.addEventListener("change", applyAll);
    search.addEventListener("input", applyAll);
    var button = form.querySelector('button[type="submit"]');
    if (button) button.hidden = true;
    docket.logFilter = { apply: apply, applyAll: applyAll, count: count };
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
