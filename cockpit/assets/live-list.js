// live-list.js — keeps the overview and the executions list current over the live channel (every
// execution, live only): state badges, counts per state, progress and duration of the rows shown.
// On the overview a new execution gets a row; on the filtered list a notice offers a reload.
// Rows and badges are cloned from the server's <template>s; text is set with textContent.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});
  var TERMINAL = { succeeded: true, failed: true, cancelled: true };

  var format = docket.format;

  /** The list view: `apply(event)` for each event of any execution. */
  function listView(root) {
    var overview = root.getAttribute("data-mode") === "overview";
    var known = {};

    function clone(name) {
      var template = root.querySelector('template[data-template="' + name + '"]');
      // A row's template wraps it in a table (a bare <tr> is not parsed inside <template> everywhere).
      if (!template) return null;
      var element = template.content.querySelector("[data-root]") || template.content.firstElementChild;
      return element.cloneNode(true);
    }
    function rows(id) {
      return Array.prototype.filter.call(root.querySelectorAll("tr[data-execution-row]"), function (row) {
        return row.getAttribute("data-execution-row") === id;
      });
    }
    function cell(row, name) {
      return row.querySelector('[data-cell="' + name + '"]');
    }
    function table(name) {
      var element = root.querySelector('[data-execution-table="' + name + '"] tbody');
      return element;
    }
    function syncEmpty(body) {
      var empty = body.querySelector("[data-empty]");
      if (empty) empty.hidden = body.querySelectorAll("tr[data-execution-row]").length > 0;
    }
    function count(state, delta) {
      var element = root.querySelector('[data-count="' + state + '"]');
      if (element) element.textContent = String(Math.max(0, (Number(element.textContent) || 0) + delta));
    }
    function resync() {
      var note = root.querySelector('[data-slot="resync"]');
      if (note) note.hidden = false;
    }

    /** The state an execution had before this event: tracked, else its row's, else what the event implies. */
    function previous(id, implied) {
      if (known[id]) return known[id];
      var shown = rows(id)[0];
      return shown ? shown.getAttribute("data-state") : implied;
    }

    function move(id, to, implied) {
      var from = previous(id, implied);
      if (from === to) return;
      if (from) count(from, -1);
      count(to, 1);
      known[id] = to;
      rows(id).forEach(function (row) {
        row.setAttribute("data-state", to);
        var badge = clone("state-" + to);
        if (badge) cell(row, "state").replaceChildren(badge);
      });
    }

    function insert(event) {
      [table("active"), table("recent")].forEach(function (body) {
        if (!body) return;
        var row = clone("execution-row");
        var id = event.execution_id;
        row.setAttribute("data-execution-row", id);
        var link = cell(row, "link");
        link.setAttribute("href", root.getAttribute("data-execution-url").replace(root.getAttribute("data-id-placeholder"), encodeURIComponent(id)));
        link.textContent = id;
        cell(row, "capability").textContent = event.data.capability;
        cell(row, "actor").textContent = format.actor(event.data.actor);
        cell(row, "created").textContent = format.time(event.timestamp);
        cell(row, "state").replaceChildren(clone("state-queued"));
        body.insertBefore(row, body.firstChild);
        var limit = Number(root.getAttribute("data-recent-limit")) || 20;
        var all = body.querySelectorAll("tr[data-execution-row]");
        for (var i = limit; i < all.length; i++) all[i].remove();
        syncEmpty(body);
      });
    }

    // The overview's chart is the server's drawing: re-read at most every 2 s while executions come and go.
    var refresher = overview && docket.sectionRefresher ? docket.sectionRefresher(root, root.getAttribute("data-page")) : null;
    var refreshChart = refresher ? refresher.throttled(["activity"], 2000) : function () {};

    return {
      apply: function (event) {
        var id = event.execution_id;
        if (event.type === "execution.created" || event.type === "execution.completed") refreshChart();
        switch (event.type) {
          case "execution.created":
            known[id] = "queued";
            count("queued", 1);
            if (overview) insert(event);
            else resync();
            return;
          case "execution.started":
            move(id, "running", "queued");
            return;
          case "execution.cancel_requested":
            move(id, "cancelling", "running");
            return;
          case "execution.completed":
            move(id, event.data.state, "running");
            rows(id).forEach(function (row) {
              cell(row, "duration").textContent = format.duration(event.data.duration_ms);
            });
            if (overview && TERMINAL[event.data.state]) {
              var active = table("active");
              if (active) {
                rows(id).forEach(function (row) {
                  if (active.contains(row)) row.remove();
                });
                syncEmpty(active);
              }
            }
            return;
          case "execution.progress":
            rows(id).forEach(function (row) {
              cell(row, "progress").textContent = format.progress(event.data);
            });
            return;
          default:
          // Other types change nothing a list shows; the execution's own page lists them.
        }
      },
      resync: resync,
    };
  }

  function boot() {
    var root = document.querySelector("[data-docket-list]");
    if (!root) return;
    var view = listView(root);
    docket.listView = view;
    docket.channel = docket.openChannel({
      url: root.getAttribute("data-socket"),
      heartbeatMs: Number(root.getAttribute("data-heartbeat-ms")),
      indicator: root.querySelector("[data-docket-connection]"),
      onEvent: view.apply,
      onResubscribed: view.resync,
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
