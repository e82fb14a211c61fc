// format.js — how the cockpit's scripts write times, durations, progress and actors: the same words
// the server renders (cockpit/format.ts), so a live update reads like a reload.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});

  docket.format = {
    /** `2026-09-08 01:02:03 UTC`. */
    time: function (iso) {
      return iso ? String(iso).replace("T", " ").slice(0, 19) + " UTC" : "—";
    },
    /** `01:02:03.456`, for log lines. */
    timeOfDay: function (iso) {
      return String(iso).slice(11, 23);
    },
    /** `250 ms`, `1.25 s`, `3 min 4 s`. */
    duration: function (ms) {
      if (ms === null || ms === undefined || !isFinite(ms)) return "—";
      if (ms < 1000) return Math.round(ms) + " ms";
      if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
      return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
    },
    /** `3 of 10 (30%) — message`, or `17 so far (total unknown)`. */
    progress: function (p) {
      var total = p.total === undefined ? null : p.total;
      var percent = total ? " (" + Math.floor((100 * p.current) / total) + "%)" : "";
      var count = total === null ? p.current + " so far (total unknown)" : p.current + " of " + total + percent;
      return p.message ? count + " — " + p.message : count;
    },
    /** Who started an execution, in words. */
    actor: function (actor) {
      if (!actor) return "—";
      if (actor.kind === "http") return "HTTP API";
      if (actor.kind === "mcp") return actor.client ? "MCP (" + actor.client + ")" : "MCP";
      if (actor.kind === "cli") return "docket run (pid " + actor.pid + ")";
      return String(actor.kind);
    },
    /** A value as indented JSON; nothing reads as null. */
    json: function (value) {
      return JSON.stringify(value === undefined ? null : value, null, 2);
    },
  };
})();
