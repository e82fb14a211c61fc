// catalog-watch.js — keeps what a page shows of the registry current while `docket serve` reloads
// capability files (docs/authoring.md, "Live reload"): it asks the cheap signature now and then,
// and when it changed, fetches the page again and swaps in its [data-catalog-slot] parts (the
// server's own rendering, so nothing is built here). The live channel carries executions only.
(function () {
  "use strict";
  var root = document.querySelector("[data-catalog]");
  if (!root) return;
  var url = root.getAttribute("data-catalog-url");
  var every = Number(root.getAttribute("data-catalog-ms")) || 1500;
  /** A server that does not answer (stopped, restarting) is asked less and less often, down to once in this long. */
  var SLOWEST_MS = 15000;
  var delay = every;
  var busy = false;
  // socket.js's, which tests replace (window.docketEnv).
  var env = window.docket.environment();
  var ask = env.fetch;
  var later = env.setTimeout;

  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    var next = fresh.querySelector("[data-catalog]");
    if (!next) return;
    Array.prototype.forEach.call(root.querySelectorAll("[data-catalog-slot]"), function (slot) {
      var name = slot.getAttribute("data-catalog-slot");
      var replacement = next.querySelector('[data-catalog-slot="' + name + '"]');
      if (replacement) slot.replaceWith(document.importNode(replacement, true));
    });
    root.setAttribute("data-catalog", next.getAttribute("data-catalog"));
  }

  function check() {
    if (busy || document.visibilityState !== "visible") return null;
    busy = true;
    return ask(url, { cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        // A proxy's 502 while the server restarts is no answer from it either.
        if (!response.ok) throw new Error("HTTP " + response.status);
        delay = every;
        return response.json();
      })
      .then(function (answer) {
        if (!answer || answer.signature === root.getAttribute("data-catalog")) return null;
        return ask(location.href, { cache: "no-store", credentials: "same-origin" }).then(function (response) {
          return response.ok ? response.text().then(swap) : null;
        });
      })
      .catch(function () {
        // The server is restarting or gone (the live channel's status already says so): asked
        // again after twice the wait, not every second and a half for as long as the tab is open.
        delay = Math.min(SLOWEST_MS, delay * 2);
      })
      .then(function () {
        busy = false;
      });
  }

  /** Asks, then waits: the wait after an answer is the usual one again, after none twice the last. */
  function tick() {
    Promise.resolve(check()).then(function () {
      later(tick, delay);
    });
  }

  later(tick, every);
  document.addEventListener("visibilitychange", check);
})();
