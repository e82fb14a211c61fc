// refresh.js — re-reads named sections of the current page from the server and puts them in
// place (`data-section="…"`). What only the server draws (an output by its shape, a timeline, a
// chart) is then never drawn twice, in TypeScript and again in the browser. Requests are
// coalesced and spaced: an ask goes out at once when the last answer came a second ago or more;
// otherwise it waits, with every other ask made meanwhile, and they go out together once that
// second is over — at most one request in flight and one a second, however many events come.
// An ask that cannot wait (`refresh(names, true)`: an execution's end, drawn once) skips the
// second but still waits for the request in flight.
// The request names the sections (`?section=…`), so a page able to draw them alone sends only them.
// A section can also be asked only to be read (`read(names)`: the page looks at what the server
// would draw and leaves its own in place); it goes out with the same requests, so reading does not
// add to them. `hooks.sent(names)` runs as a request goes out and `hooks.replaced(names, fresh)`
// once its sections are in place (`fresh`: the document they came in, read sections included):
// what a page applied in between may predate the server's drawing, and can be applied again.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});

  /** A refresher for `root` reading `pageUrl`; `refresh(names)` asks for those sections. */
  docket.sectionRefresher = function (root, pageUrl, hooks) {
    hooks = hooks || {};
    var inFlight = false;
    // True for a second after each answer: asks made then wait for the end of it.
    var coolingDown = false;
    /** Section name → "draw" (put in place) or "read" (only handed to `hooks.replaced`). */
    var wanted = {};
    // An ask made meanwhile cannot wait for the second to pass.
    var urgent = false;
    // Requests and timers from socket.js's environment (loaded first), which tests replace with a
    // clock they move by hand (window.docketEnv).
    var env = docket.environment();
    var request = env.fetch;
    var wait = env.setTimeout;
    /** Asks for the sections `names`; `now`: without waiting for the second since the last answer. */
    function refresh(names, now) {
      names.forEach(function (name) {
        wanted[name] = "draw";
      });
      if (now) urgent = true;
      send();
    }
    /** Asks for the sections `names` to read alone, not put in place (one asked to be drawn as well is). */
    function read(names) {
      names.forEach(function (name) {
        if (!wanted[name]) wanted[name] = "read";
      });
      send();
    }
    function send() {
      if (inFlight || (coolingDown && !urgent) || !pageUrl || typeof DOMParser === "undefined") return;
      var asked = Object.keys(wanted);
      if (asked.length === 0) return;
      var modes = wanted;
      wanted = {};
      urgent = false;
      inFlight = true;
      if (hooks.sent) hooks.sent(asked);
      // A page that can draw sections alone answers only those (`?section=`); another, the page.
      var url = new URL(pageUrl, window.location.href);
      asked.forEach(function (name) {
        url.searchParams.append("section", name);
      });
      request(url.pathname + url.search, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (response) {
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (!html) return;
          var fresh = new DOMParser().parseFromString(html, "text/html");
          asked.forEach(function (name) {
            if (modes[name] !== "draw") return;
            var selector = '[data-section="' + name + '"]';
            var next = fresh.querySelector(selector);
            var current = root.querySelector(selector);
            // A section the server draws the same is left in place: a reader's focus or
            // selection in it (a download link, say) survives a re-read that changed nothing.
            if (!next || !current) return;
            var imported = document.importNode(next, true);
            if (!current.isEqualNode(imported)) current.replaceWith(imported);
          });
          if (docket.wireSortableTables) docket.wireSortableTables();
          if (docket.wireForms) docket.wireForms(root);
          if (hooks.replaced) hooks.replaced(asked, fresh);
        })
        .catch(function () {})
        .then(function () {
          inFlight = false;
          coolingDown = true;
          wait(function () {
            coolingDown = false;
            send();
          }, 1000);
          if (urgent) send();
        });
    }
    /** Asks for `names` at most once per `ms`, however often called. */
    function throttled(names, ms) {
      var timer = null;
      return function () {
        if (timer !== null) return;
        timer = wait(function () {
          timer = null;
          refresh(names);
        }, ms);
      };
    }
    return { refresh: refresh, read: read, throttled: throttled, wait: wait };
  };
})();
