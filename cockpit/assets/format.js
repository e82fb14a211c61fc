// format.js — how the cockpit's scripts write times, durations, progress and actors: the same words
// the server renders (cockpit/format.ts), so a live update reads like a reload.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});
  /** The bidirectional embeddings, overrides and isolates: never shown (cockpit/format.ts says why). */
  // In JSON text, where JSON.stringify writes them raw: DEL, the C1 controls and the bidi controls (format.ts).
  var RAW_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
  /** Escape sequences: CSI (a colour among them), and OSC and the other strings, with their terminator. */
  var CSI = /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]/g;
  var STRINGS = /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)/g;
  var OTHER_ESCAPES = /\u001b[\u0020-\u002f]*[\u0030-\u007e]?/g;
  /** Controls but \t and \n, and the bidi controls: never shown. */
  var HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

  /** A string a handler gave, as shown text: no escape sequence, control or bidi control (cockpit/format.ts, shownText). */
  function shownText(text) {
    return String(text).replace(STRINGS, "").replace(CSI, "").replace(OTHER_ESCAPES, "").replace(HIDDEN, "");
  }

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
      return p.message ? count + " — " + shownText(p.message) : count;
    },
    /** Who started an execution, in words. */
    actor: function (actor) {
      if (!actor) return "—";
      if (actor.kind === "http") return "HTTP API";
      if (actor.kind === "mcp") return actor.client ? "MCP (" + actor.client + ")" : "MCP";
      if (actor.kind === "cli") return "docket run (pid " + actor.pid + ")";
      return String(actor.kind);
    },
    /** `2026-09-08 03:02:03 (Europe/Prague)`: an instant in the reader's own zone. */
    localTime: function (iso) {
      var date = new Date(iso);
      if (isNaN(date.getTime())) return "—";
      var pad = function (n) {
        return String(n).padStart(2, "0");
      };
      var zone = "";
      try {
        zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
      } catch (e) {
        zone = "";
      }
      var text = date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " + pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds());
      return zone ? text + " (" + zone + ")" : text + " (local time)";
    },
    /** The steps the page let go, and the failed ones among them when known (null: not known); cockpit/format.ts's words. */
    stepsDropped: function (dropped, failed) {
      var which = failed === null ? "" : failed === 0 ? ", none of them failed" : ", " + failed + " of them failed";
      return dropped + " earlier step(s) not kept" + which + ".";
    },
    /** The streams the page does not show (only the latest written are); cockpit/format.ts's words. */
    streamsDropped: function (dropped) {
      return dropped + " more stream(s) not shown: only those written to last are. docket executions events has every chunk.";
    },
    /** A value as indented JSON; nothing reads as null; a bidirectional control as its escape (still the exact JSON). */
    json: function (value) {
      return JSON.stringify(value === undefined ? null : value, null, 2).replace(RAW_IN_JSON, function (c) {
        return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
      });
    },
    /** A string a handler gave, as shown text: without escape sequences, controls or bidirectional controls. */
    text: shownText,
    /** Shown text cut at `max` characters with an ellipsis: cockpit/format.ts shownCut, the same cut. */
    cut: function (text, max) {
      var shown = shownText(text);
      if (shown.length <= max) return shown;
      var end = /[\ud800-\udbff]/.test(shown.charAt(max - 2)) ? max - 2 : max - 1;
      return shown.slice(0, end) + "\u2026";
    },
    /** cockpit/format.ts SHOWN_TITLE_CHARS and SHOWN_MESSAGE_CHARS. */
    titleChars: 200,
    messageChars: 500,
  };

  /** `5 min ago`, `just now`, `in 3 s`: cockpit/format.ts's relativeTime, the same words. */
  docket.format.relative = function (iso, now) {
    var ms = now - Date.parse(iso);
    if (!isFinite(ms)) return "—";
    var s = Math.abs(ms) / 1000;
    if (s < 5) return "just now";
    var words = s < 60 ? Math.floor(s) + " s" : s < 3600 ? Math.floor(s / 60) + " min" : s < 86400 ? Math.floor(s / 3600) + " h" : Math.floor(s / 86400) + " day" + (s < 172800 ? "" : "s");
    return ms < 0 ? "in " + words : words + " ago";
  };

  // What a test replaces (window.docketEnv, as socket.js reads it): the clock and the timers.
  var env = window.docketEnv || {};
  var now = env.now || Date.now;
  var later =
    env.setTimeout ||
    function (fn, ms) {
      return window.setTimeout(fn, ms);
    };
  /** How often "5 min ago" is written again: a page left open keeps saying how long ago (cockpit tester). */
  var RELATIVE_EVERY_MS = 15000;

  // Every <time data-local-time> the server rendered — on load, or later in rows a live list put
  // in — says its absolute time in the reader's zone on hover, once.
  function localiseTimes(root) {
    if (!root || typeof root.querySelectorAll !== "function") return;
    var found = Array.prototype.slice.call(root.querySelectorAll("time[data-local-time]:not([data-localised])"));
    if (root.matches && root.matches("time[data-local-time]:not([data-localised])")) found.push(root);
    found.forEach(function (element) {
      var utc = element.getAttribute("title") || "";
      element.setAttribute("title", docket.format.localTime(element.getAttribute("datetime")) + (utc ? " · " + utc : ""));
      element.setAttribute("data-localised", "");
    });
  }
  docket.format.localiseTimes = localiseTimes;

  // Written again only while the page shows one: a page without relative times keeps no timer.
  var refreshing = false;
  function refreshRelative() {
    var at = now();
    var times = document.querySelectorAll("time[data-local-time]");
    Array.prototype.forEach.call(times, function (element) {
      var text = docket.format.relative(element.getAttribute("datetime"), at);
      if (element.textContent !== text) element.textContent = text;
    });
    refreshing = times.length > 0;
    if (refreshing) later(refreshRelative, RELATIVE_EVERY_MS);
  }
  function keepRefreshing() {
    if (refreshing || !document.querySelector("time[data-local-time]")) return;
    refreshing = true;
    later(refreshRelative, RELATIVE_EVERY_MS);
  }

  function start() {
    localiseTimes(document);
    if (typeof MutationObserver === "function" && document.body) {
      new MutationObserver(function (changes) {
        changes.forEach(function (change) {
          Array.prototype.forEach.call(change.addedNodes, function (node) {
            if (node.nodeType === 1) localiseTimes(node);
          });
        });
        keepRefreshing();
      }).observe(document.body, { childList: true, subtree: true });
    }
    keepRefreshing();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
