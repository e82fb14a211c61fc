// live-list.js — keeps the overview and the executions list current over the live channel (every
// execution, live only): state badges, progress and duration of the rows shown, and the counts
// per state. The counts are the server's, re-read whenever a state changes: an execution's
// previous state is not in its event, and one the store forgets sends none.
// The channel replays nothing, so each time it is ready (first, after a reconnect, after it
// lagged) the counts and the tables are re-read: what changed between the page's drawing and the
// subscription is not lost. Events that arrive while a re-read is on its way are applied again to
// what it brings; each row carries the sequence it was drawn at, so none is applied twice or
// backwards. On the overview a new execution gets a row; on the list a notice offers a reload
// ("2 new executions match this list") for each execution a reload would show that the page does
// not: a new one on the first page when its filters take a queued execution, and one that since
// reached the state the list is filtered by. An event names its execution's capability only when
// it is created, and not where the execution sits among the pages, so for the latter the page asks
// the server what a reload shows: the list section, read with the counts' re-reads (refresh.js:
// one request in flight, one a second) and not put in place. Rows and badges are cloned from the
// server's <template>s; text is set with textContent.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});
  var TERMINAL = { succeeded: true, failed: true, cancelled: true };
  /** At most this many executions' events are kept to apply again after a re-read; the oldest go first. */
  var REMEMBERED = 500;

  var format = docket.format;

  /** The list view: `apply(event)` for each event of any execution, `subscribed()` at each `stream.ready`. */
  function listView(root) {
    var overview = root.getAttribute("data-mode") === "overview";
    /**
     * The sections re-read when the channel (re)subscribes: the counts and the tables, and the
     * overview's chart (an execution a restarted server ended meanwhile sends no event).
     */
    var tables = overview ? ["counts", "active", "recent", "activity"] : ["counts", "list"];
    /**
     * Per execution, its creation and latest state-changing and progress events that arrived since
     * the last re-read was asked for (a Map: insertion order is age). What came before it is in the
     * server's drawing.
     */
    var latest = new Map();

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
      return root.querySelector('[data-execution-table="' + name + '"] tbody');
    }
    function syncEmpty(body) {
      var empty = body.querySelector("[data-empty]");
      if (empty) empty.hidden = body.querySelectorAll("tr[data-execution-row]").length > 0;
    }
    var filterState = root.getAttribute("data-filter-state") || "";
    var filterCapability = root.getAttribute("data-filter-capability") || "";
    var pageUrl = root.getAttribute("data-page") || "";
    var pageSize = Number(root.getAttribute("data-page-size")) || 0;
    // A page after the first (a cursor) holds older executions only: a new one is never on it.
    var firstPage = !new URL(pageUrl, window.location.href).searchParams.get("cursor");
    /** Executions a reload would show that the page may not: id → when it arrived (`arrivals`; insertion order is age). */
    var arrived = new Map();
    var arrivals = 0;
    /**
     * Arrivals before the list read now on its way was asked for (null: none on its way): those
     * its answer does not list are no longer what a reload shows — forgotten past
     * executions_retained since (cockpit tester: "5 new" where a reload showed 3).
     */
    var listedBefore = null;
    /** Capabilities of the executions created since the page loaded, by id (bounded as `latest`). */
    var capabilities = new Map();

    function drawn(id) {
      var list = table("list");
      return rows(id).some(function (row) {
        return list !== null && list.contains(row);
      });
    }
    /** Shows the notice with how many arrived executions the page does not show, or hides it. */
    function showArrived() {
      var note = root.querySelector('[data-slot="resync"]');
      if (!note) return;
      var count = 0;
      arrived.forEach(function (_, id) {
        if (!drawn(id)) count++;
      });
      // A reload shows one page: no more new executions than that.
      if (pageSize > 0) count = Math.min(count, pageSize);
      var words = note.querySelector('[data-slot="new-count"]');
      if (words) words.textContent = count === 1 ? "1 new execution matches this list" : count + " new executions match this list";
      note.hidden = count === 0;
    }
    /** One that left the filtered state again (a running one ended) is no longer shown by a reload. */
    function left(id) {
      asking.delete(id);
      if (asked) asked.delete(id);
      if (arrived.delete(id)) showArrived();
    }
    function arrive(id) {
      arrived.delete(id);
      arrived.set(id, ++arrivals);
      if (arrived.size > REMEMBERED) arrived.delete(arrived.keys().next().value);
      showArrived();
    }

    /** Whether the list would show a new (queued) execution of this capability: first page, filters that take it. */
    function takesCreated(capability) {
      return firstPage && (!filterState || filterState === "queued") && (!filterCapability || filterCapability === capability);
    }

    /**
     * Executions that reached the filtered state, whose place in the list only the server knows:
     * asked about together, with the next re-read (the list section read alone, not put in place).
     */
    var asking = new Map();
    /** The ids of the question on its way (null when none is): one that leaves meanwhile is dropped from it. */
    var asked = null;
    function reached(id) {
      if (drawn(id) || arrived.has(id)) return;
      var capability = capabilities.get(id);
      if (filterCapability && capability !== undefined && capability !== filterCapability) return;
      // Created since the page loaded: on the first page, and on no other.
      if (capability !== undefined) {
        if (firstPage) arrive(id);
        return;
      }
      asking.set(id, true);
      if (asking.size > REMEMBERED) asking.delete(asking.keys().next().value);
      readList();
    }
    /** The answer to the question on its way: those of its executions the list a reload draws lists. */
    function answered(fresh) {
      var listed = {};
      Array.prototype.forEach.call(fresh.querySelectorAll('[data-execution-table="list"] tr[data-execution-row]'), function (row) {
        listed[row.getAttribute("data-execution-row")] = true;
      });
      asked.forEach(function (_, id) {
        if (listed[id]) arrive(id);
      });
      asked = null;
    }

    function remember(event) {
      var id = event.execution_id;
      var kept = latest.get(id) || {};
      latest.delete(id);
      if (event.type === "execution.progress") kept.progress = event;
      else if (event.type === "execution.created") kept.created = event;
      else kept.state = event;
      latest.set(id, kept);
      if (latest.size > REMEMBERED) latest.delete(latest.keys().next().value);
    }

    /** The state an event moves its execution to, or null for one that moves none. */
    function stateAfter(event) {
      if (event.type === "execution.created") return "queued";
      if (event.type === "execution.started") return "running";
      if (event.type === "execution.cancel_requested") return "cancelling";
      if (event.type === "execution.completed") return event.data.state;
      return null;
    }

    /** Applies an event to the rows drawn before it (a row drawn at or after its sequence already shows it). */
    function applyToRows(event) {
      var id = event.execution_id;
      var to = stateAfter(event);
      rows(id).forEach(function (row) {
        if (Number(row.getAttribute("data-sequence")) >= event.sequence) return;
        row.setAttribute("data-sequence", String(event.sequence));
        if (event.type === "execution.progress") {
          cell(row, "progress").textContent = format.progress(event.data);
          return;
        }
        if (to === null) return;
        row.setAttribute("data-state", to);
        var badge = clone("state-" + to);
        if (badge) cell(row, "state").replaceChildren(badge);
        if (event.type === "execution.completed") cell(row, "duration").textContent = format.duration(event.data.duration_ms);
      });
      var active = table("active");
      if (overview && active && TERMINAL[to]) {
        rows(id).forEach(function (row) {
          if (active.contains(row)) row.remove();
        });
        syncEmpty(active);
      }
    }

    function insert(event) {
      [table("active"), table("recent")].forEach(function (body) {
        if (!body) return;
        var id = event.execution_id;
        if (rows(id).some(function (row) { return body.contains(row); })) return;
        var row = clone("execution-row");
        row.setAttribute("data-execution-row", id);
        row.setAttribute("data-sequence", String(event.sequence));
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

    /** Re-read sections are in place, drawn at some moment after they were asked for: apply again what came since. */
    function replaced(names, fresh) {
      if (asked !== null && names.indexOf("list") !== -1) answered(fresh);
      if (listedBefore !== null && names.indexOf("list") !== -1) {
        var listed = {};
        Array.prototype.forEach.call(fresh.querySelectorAll('[data-execution-table="list"] tr[data-execution-row]'), function (row) {
          listed[row.getAttribute("data-execution-row")] = true;
        });
        var before = listedBefore;
        arrived.forEach(function (at, id) {
          if (at <= before && !listed[id]) arrived.delete(id);
        });
        listedBefore = null;
      }
      // A re-read list may now show what the notice counted.
      if (!overview) showArrived();
      latest.forEach(function (kept) {
        if (kept.created && overview) insert(kept.created);
        // In their order: a row takes no event older than the last it took.
        [kept.state, kept.progress]
          .filter(Boolean)
          .sort(function (a, b) {
            return a.sequence - b.sequence;
          })
          .forEach(applyToRows);
      });
    }

    function sent(names) {
      latest = new Map();
      // A question whose request failed is not answered; the list read now asks what is asked since.
      if (names.indexOf("list") === -1) return;
      listedBefore = arrivals;
      asked = asking;
      asking = new Map();
    }

    // The counts, the tables and the overview's chart are the server's drawing (refresh.js).
    var refresher = docket.sectionRefresher ? docket.sectionRefresher(root, root.getAttribute("data-page"), { sent: sent, replaced: replaced }) : null;
    var refresh = refresher ? refresher.refresh : function () {};
    var readList = refresher ? function () { refresher.read(["list"]); } : function () {};
    // The chart is re-read at most every 2 s while executions come and go.
    var refreshChart = refresher && overview ? refresher.throttled(["activity"], 2000) : function () {};

    return {
      apply: function (event) {
        var to = stateAfter(event);
        if (to === null && event.type !== "execution.progress") return;
        remember(event);
        if (to !== null) refresh(["counts"]);
        // While the notice counts new executions, what a reload shows is asked of the server with
        // the counts' re-reads (one a second at most): the store may have forgotten some since.
        if (!overview && to !== null && arrived.size > 0) readList();
        if (event.type === "execution.created" || event.type === "execution.completed") refreshChart();
        if (event.type === "execution.created") {
          if (overview) insert(event);
          else {
            capabilities.set(event.execution_id, event.data.capability);
            if (capabilities.size > REMEMBERED) capabilities.delete(capabilities.keys().next().value);
            if (takesCreated(event.data.capability)) arrive(event.execution_id);
          }
          return;
        }
        applyToRows(event);
        // One that reached the state the list is filtered by may belong on it now.
        if (!overview && filterState && to === filterState) reached(event.execution_id);
        else if (!overview && filterState && to !== null) left(event.execution_id);
      },
      /** The channel is (again) following every execution: what happened before is re-read. */
      subscribed: function () {
        refresh(tables);
      },
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
      onSubscribed: view.subscribed,
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
