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
  var busy = false;

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
    if (busy || document.visibilityState !== "visible") return;
    busy = true;
    fetch(url, { cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (answer) {
        if (!answer || answer.signature === root.getAttribute("data-catalog")) return null;
        return fetch(location.href, { cache: "no-store", credentials: "same-origin" }).then(function (response) {
          return response.ok ? response.text().then(swap) : null;
        });
      })
      .catch(function () {
        // The server is restarting or gone: the live channel's status already says so.
      })
      .then(function () {
        busy = false;
      });
  }

  setInterval(check, every);
  document.addEventListener("visibilitychange", check);
})();
