// execution.js — makes an execution page live: applies each event of the live channel to the
// markup the server rendered (README.md). Text reaches the page through textContent only; rows and
// badges are cloned from <template>s the server rendered, so words and shapes are written once.
// An event type this page does not know is listed under "Other events", never dropped.
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});
  /** Unknown-type events kept on the page. */
  var OTHER_EVENTS_SHOWN = 200;

  var format = docket.format;

  /** The view of one execution page: `apply(event)` changes the markup as the event says. */
  function executionView(root) {
    function slot(name) {
      return root.querySelector('[data-slot="' + name + '"]');
    }
    function section(name) {
      return root.querySelector('[data-section="' + name + '"]');
    }
    /** What the page says of a cancel nobody asked for, by its reason (the server's words, runtime/execution/cancel-words.ts). */
    function cancelWords(past) {
      try {
        return JSON.parse(root.getAttribute(past ? "data-cancel-words-past" : "data-cancel-words") || "{}");
      } catch (error) {
        return {};
      }
    }
    /** The summary's "Asked to stop", as the server draws it for an ended execution (shown by complete). */
    function setAskedToStop(reason, actor, at) {
      setFact("cancel-asked", (reason ? cancelWords(true)[reason] : "by " + format.actor(actor)) + " (" + format.time(at) + ")");
    }
    /** The page's templates by name, looked up once: a search per clone walked every row before them. */
    var templates = new Map();
    function clone(name) {
      if (!templates.has(name)) templates.set(name, root.querySelector('template[data-template="' + name + '"]'));
      var template = templates.get(name);
      // A row's template wraps it in a table (a bare <tr> is not parsed inside <template> everywhere).
      if (!template) return null;
      var element = template.content.querySelector("[data-root]") || template.content.firstElementChild;
      return element.cloneNode(true);
    }
    function field(element, name) {
      return element.querySelector('[data-field="' + name + '"]');
    }
    function setFact(name, text) {
      var element = root.querySelector('[data-fact="' + name + '"]');
      if (element) element.textContent = text;
    }
    function hideEmpty(container) {
      var empty = container.querySelector("[data-empty]");
      if (empty) empty.hidden = true;
    }
    /** Raw text of each stream as received, colour codes included (the page shows it painted). */
    var streamText = new Map();
    function paint(element, text) {
      if (docket.renderColoured) docket.renderColoured(element, text);
      else element.textContent = text;
    }

    // The output by its shape, the artifacts and the timeline are drawn by the server alone.
    var refresher = docket.sectionRefresher ? docket.sectionRefresher(root, root.getAttribute("data-page"), { replaced: replaced }) : { refresh: function () {}, throttled: function () { return function () {}; }, wait: function () {} };
    var refresh = refresher.refresh;
    /** The server's log lines are in place (the execution ended): the reader's filter applies to them too. */
    function replaced(names) {
      if (names.indexOf("log-lines") !== -1 && docket.logFilter) docket.logFilter.applyAll();
    }
    /** A step began or ended since the timeline was last read. */
    var timelineStale = false;
    function refreshTimelineSoon() {
      timelineStale = true;
    }

    /**
     * The timeline's one clock while the execution runs: once a second it is re-read when a step
     * began or ended, and while a step runs, whose bar grows with no event to say so
     * (docs/cockpit.md). A hidden tab waits until it is shown; the end of the execution stops it
     * (completion re-reads the timeline itself).
     */
    function followTimeline() {
      // Ended, or a server that no longer knows it (gone): no step will move again.
      if (root.getAttribute("data-terminal") === "true" || root.getAttribute("data-state") === "unknown") return;
      var steps = slot("steps");
      var running = steps && steps.querySelector('[data-step-state="running"]');
      // Read while the live channel is heard: a server that is down or restarting answers nothing,
      // and the timeline is read again once the channel is back (its steps' ends come with it).
      if ((timelineStale || running) && document.visibilityState !== "hidden" && channelHeard()) {
        timelineStale = false;
        refresh(["timeline"]);
      }
      refresher.wait(followTimeline, 1000);
    }

    /** How often a running execution's artifacts are re-read: no event says a file was written. */
    var ARTIFACTS_EVERY_MS = 5000;
    /**
     * The artifacts' clock while the execution runs: a handler's `ctx.artifacts.write` sends no
     * event, so the panel is re-read every ARTIFACTS_EVERY_MS (docs/cockpit.md) while the tab is
     * shown and the channel heard; the end of the execution stops it (completion re-reads them).
     */
    function followArtifacts() {
      if (root.getAttribute("data-terminal") === "true" || root.getAttribute("data-state") === "unknown") return;
      if (document.visibilityState !== "hidden" && channelHeard()) refresh(["artifacts"]);
      refresher.wait(followArtifacts, ARTIFACTS_EVERY_MS);
    }

    /** Whether the page's live channel is heard now (its indicator says so); true on a page without one. */
    function channelHeard() {
      var indicator = document.querySelector("[data-docket-connection]");
      var state = indicator && indicator.getAttribute("data-state");
      return !state || state === "snapshot" || state === "live" || state === "catching-up" || state === "connecting";
    }

    function notice(kind, text) {
      var box = slot("notice");
      if (!box) return;
      box.hidden = false;
      box.className = "notice notice-" + kind;
      box.setAttribute("role", kind === "error" ? "alert" : "status");
      box.textContent = text;
    }

    /** The page's state; `at`, the event's time, ends the steps a terminal state stops. */
    function setState(state, at) {
      var terminal = state === "succeeded" || state === "failed" || state === "cancelled";
      root.setAttribute("data-state", state);
      // Whether or not it could be cancelled: the timeline's clock stops on it.
      if (terminal) root.setAttribute("data-terminal", "true");
      if (terminal) stopRunningSteps(at);
      var holder = slot("state");
      var badge = clone("state-" + state);
      if (holder && badge) holder.replaceChildren(badge);
      var note = slot("cancel-note");
      if (terminal && note) note.remove();
      var cancel = slot("cancel");
      if (!cancel) return;
      if (terminal) {
        cancel.remove();
      } else if (state === "cancelling") {
        var button = cancel.querySelector("button");
        if (button) {
          button.disabled = true;
          button.textContent = "Cancel requested";
        }
      }
    }

    /** A step still running when its execution ended will never finish: it reads "Stopped", and lasted until the end. */
    function stopRunningSteps(at) {
      var running = slot("steps") ? slot("steps").querySelectorAll('[data-step-state="running"]') : [];
      Array.prototype.forEach.call(running, function (badge) {
        var row = badge.closest("tr[data-step-id]");
        runningRows.delete(row);
        var stopped = clone("step-stopped");
        if (stopped) badge.replaceWith(stopped);
        if (row && at) field(row, "duration").textContent = format.duration(Date.parse(at) - Date.parse(row.getAttribute("data-started")));
      });
    }

    /**
     * The latest row of each step id, and the rows whose step runs: looked up, not searched for (a
     * flood of 20,000 steps, each a search of the table, held a page's thread for seconds).
     */
    var latestStep = new Map();
    var runningRows = new Set();
    var stepsEmpty = slot("steps") ? slot("steps").querySelector("[data-empty]") : null;
    if (slot("steps")) {
      Array.prototype.forEach.call(slot("steps").querySelectorAll("tr[data-step-id]"), function (row) {
        latestStep.set(row.getAttribute("data-step-id"), row);
        if (row.querySelector('[data-step-state="running"]')) runningRows.add(row);
      });
    }

    /** The latest step with this id, if it still runs (as the server's snapshot finds it). */
    function runningStep(id) {
      var row = latestStep.get(id);
      return row && runningRows.has(row) ? row : null;
    }
    var stepCount = latestStep.size === 0 ? 0 : slot("steps").querySelectorAll("tr[data-step-id]").length;
    function newStep(id, title, timestamp) {
      var body = slot("steps");
      var row = clone("step");
      row.setAttribute("data-step-id", id);
      row.setAttribute("data-started", timestamp);
      field(row, "title").textContent = format.cut(title, format.titleChars);
      field(row, "id").textContent = format.text(id);
      field(row, "state").replaceChildren(clone("step-running"));
      body.insertBefore(row, stepsEmpty && stepsEmpty.parentNode === body ? stepsEmpty : null);
      if (stepsEmpty) stepsEmpty.hidden = true;
      latestStep.set(id, row);
      runningRows.add(row);
      stepCount += 1;
      boundSteps(body);
      return row;
    }

    /**
     * Keeps the steps table to the snapshot's bound (steps_retained) by the snapshot's rule, so a
     * reload shows the same steps: the oldest finished step goes first, the oldest running one only
     * when every step kept runs. What goes is counted, the failed ones too, in the server's words.
     */
    function boundSteps(body) {
      var limit = Number(body.getAttribute("data-limit")) || 1000;
      if (stepCount <= limit) return;
      var dropped = Number(body.getAttribute("data-dropped")) || 0;
      var knownFailed = body.getAttribute("data-dropped-failed");
      var failed = knownFailed === "" || knownFailed === null ? null : Number(knownFailed);
      while (stepCount > limit) {
        var first = body.querySelector("tr[data-step-id]");
        var gone = first;
        // Every step kept runs: the oldest goes, with no walk over them all.
        for (var row = runningRows.size < stepCount ? first : null; row; row = row.nextElementSibling) {
          if (row.hasAttribute("data-step-id") && !runningRows.has(row)) {
            gone = row;
            break;
          }
        }
        if (failed !== null && gone.querySelector('[data-step-state="failed"]')) failed += 1;
        gone.remove();
        runningRows.delete(gone);
        if (latestStep.get(gone.getAttribute("data-step-id")) === gone) latestStep.delete(gone.getAttribute("data-step-id"));
        stepCount -= 1;
        dropped += 1;
      }
      body.setAttribute("data-dropped", String(dropped));
      body.setAttribute("data-dropped-failed", failed === null ? "" : String(failed));
      var note = slot("steps-dropped");
      if (note) {
        note.hidden = false;
        note.textContent = format.stepsDropped(dropped, failed);
      }
    }

    /** Log lines, a batch at a time: one look at the scroll position, one trim, one scroll. */
    function appendLogs(events) {
      if (events.length === 0) return;
      var list = slot("log");
      var box = slot("log-box");
      var atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
      // The browser keeps the same bound as the server's snapshot, counting what it lets go.
      var limit = Number(list.getAttribute("data-limit")) || 1000;
      var dropped = Number(list.getAttribute("data-dropped")) || 0;
      // Lines of a flood beyond the bound would be made only to be let go: counted instead.
      var first = Math.max(0, events.length - limit);
      dropped += first;
      var lines = document.createDocumentFragment();
      for (var i = first; i < events.length; i++) {
        var event = events[i];
        var line = clone("log-line");
        line.setAttribute("data-level", event.data.level);
        line.setAttribute("data-sequence", String(event.sequence));
        var time = line.querySelector("time");
        time.setAttribute("datetime", event.timestamp);
        time.textContent = format.timeOfDay(event.timestamp);
        line.querySelector(".log-level").textContent = event.data.level;
        paint(line.querySelector(".log-message"), event.data.message);
        if (event.data.truncated) {
          var cut = document.createElement("span");
          cut.className = "log-cut";
          cut.textContent = "(cut)";
          line.appendChild(cut);
        }
        if (docket.logFilter) docket.logFilter.apply(line);
        lines.appendChild(line);
      }
      list.appendChild(lines);
      slot("log-empty").hidden = true;
      while (list.children.length > limit) {
        list.removeChild(list.firstElementChild);
        dropped += 1;
      }
      // The count of matching lines covers the lines just added and those let go.
      if (docket.logFilter) docket.logFilter.count();
      list.setAttribute("data-dropped", String(dropped));
      showLogDropped();
      if (atBottom) box.scrollTop = box.scrollHeight;
    }

    /**
     * Says how many earlier lines the page let go: in the server's words, and besides those, the
     * events it skipped (no longer retained), which may have held lines. Once the execution ended
     * the server's lines and count take their place.
     */
    function showLogDropped() {
      var list = slot("log");
      var dropped = Number(list.getAttribute("data-dropped")) || 0;
      if (dropped === 0 && skipped === 0) return;
      var note = slot("log-dropped");
      note.hidden = false;
      note.textContent = dropped + " earlier line(s) not shown" + (skipped > 0 ? ", not counting any among the " + skipped + " skipped event(s)." : ".");
    }

    /** Ranges of events the server no longer retained when this page asked for them, and how many. */
    var missedRanges = [];
    var skipped = 0;
    /** Ranges named in the notice; more are counted. */
    var RANGES_NAMED = 3;
    function missed(from, to) {
      missedRanges.push(from === to ? String(from) : from + " to " + to);
      skipped += to - from + 1;
      var named = missedRanges.slice(0, RANGES_NAMED);
      var more = missedRanges.length - named.length;
      var box = slot("missed");
      if (box) {
        box.hidden = false;
        box.textContent =
          "Event(s) " +
          named.join(", ") +
          (more > 0 ? " and " + more + " more range(s)" : "") +
          (missedRanges.length > 1 ? " (" + skipped + " in all)" : "") +
          " are no longer retained by the server, so this page skipped them.";
      }
      showLogDropped();
    }

    /** A stream's chunks of a batch, joined: painted once, not once per chunk. */
    /**
     * Each stream's block by name, and when it was last written to (the sequence of its last chunk):
     * found in a map, not by a search of every block (16,000 names once held a page's thread for
     * seconds). A count of draws tied every stream of a flood's batch, and the bound then let go of
     * the one written last (a tester's finding): the page must keep what a reload shows.
     */
    var streamBlocks = new Map();
    var streamWritten = new Map();
    if (slot("streams")) {
      Array.prototype.forEach.call(slot("streams").querySelectorAll("[data-stream]"), function (element) {
        streamBlocks.set(element.getAttribute("data-stream"), element);
        streamWritten.set(element.getAttribute("data-stream"), Number(element.getAttribute("data-written")) || 0);
      });
    }
    /** Keeps the streams shown to the server's bound (data-shown): the one written to least lately goes, counted. */
    function boundStreams(holder) {
      var shown = Number(holder.getAttribute("data-shown")) || 100;
      if (streamBlocks.size <= shown) return;
      var oldest = null;
      streamWritten.forEach(function (at, name) {
        if (oldest === null || at < streamWritten.get(oldest)) oldest = name;
      });
      streamBlocks.get(oldest).remove();
      streamBlocks.delete(oldest);
      streamWritten.delete(oldest);
      streamText.delete(oldest);
      streamsDropped.add(oldest);
      countDroppedStreams(holder, 1);
    }
    /** Streams this page let go: one written again is shown again, and no longer counted. */
    var streamsDropped = new Set();
    function countDroppedStreams(holder, change) {
      var dropped = Math.max(0, (Number(holder.getAttribute("data-dropped")) || 0) + change);
      holder.setAttribute("data-dropped", String(dropped));
      var note = slot("streams-dropped");
      if (note) {
        note.hidden = dropped === 0;
        note.textContent = format.streamsDropped(dropped);
      }
    }

    function appendStream(name, chunk, sequence) {
      var holder = slot("streams");
      var block = streamBlocks.get(name);
      if (!block) {
        block = clone("stream");
        block.setAttribute("data-stream", name);
        block.querySelector("h3").textContent = format.text(name);
        holder.appendChild(block);
        streamBlocks.set(name, block);
        if (streamsDropped.delete(name)) countDroppedStreams(holder, -1);
      }
      streamWritten.set(name, sequence);
      boundStreams(holder);
      if (!streamBlocks.has(name)) return;
      var pre = block.querySelector("[data-stream-text]");
      var limit = Number(holder.getAttribute("data-limit")) || 65536;
      // The raw text (colour codes included) is kept aside: the page shows it painted.
      var text = (streamText.has(name) ? streamText.get(name) : pre.textContent) + chunk;
      if (text.length > limit) text = text.slice(text.length - limit);
      streamText.set(name, text);
      paint(pre, text);
      section("streams").hidden = false;
    }

    /**
     * Diagnostics, a batch at a time, kept to the snapshot's bound (diagnostics_retained) as log
     * lines are: the oldest go first, counted in the server's words; those of a flood beyond the
     * bound are counted without being made.
     */
    function appendDiagnostics(events) {
      if (events.length === 0) return;
      var body = slot("diagnostics");
      var limit = Number(body.getAttribute("data-limit")) || 500;
      var dropped = Number(body.getAttribute("data-dropped")) || 0;
      var first = Math.max(0, events.length - limit);
      dropped += first;
      var rows = document.createDocumentFragment();
      for (var i = first; i < events.length; i++) {
        var d = events[i].data;
        var row = clone("diagnostic");
        field(row, "severity").replaceChildren(clone("severity-" + d.severity) || clone("severity-info"));
        field(row, "message").textContent = format.cut(d.message, format.messageChars);
        var where = d.file ? format.text(d.file) + (d.line !== undefined ? ":" + d.line + (d.column !== undefined ? ":" + d.column : "") : "") : "—";
        field(row, "location").textContent = where;
        field(row, "code").textContent = d.code ? format.text(d.code) : "—";
        rows.appendChild(row);
      }
      body.insertBefore(rows, body.querySelector("[data-empty]"));
      hideEmpty(body);
      var kept = body.querySelectorAll("tr[data-diagnostic]");
      for (var k = 0; k < kept.length - limit; k++) {
        kept[k].remove();
        dropped += 1;
      }
      if (dropped > 0) {
        body.setAttribute("data-dropped", String(dropped));
        var note = slot("diagnostics-dropped");
        note.hidden = false;
        note.textContent = dropped + " earlier diagnostic(s) not kept.";
      }
    }

    function appendOther(event) {
      var list = slot("other-events");
      var item = clone("other-event");
      item.setAttribute("data-sequence", String(event.sequence));
      field(item, "type").textContent = event.type;
      field(item, "sequence").textContent = "#" + event.sequence;
      field(item, "data").textContent = format.json(event.data);
      list.appendChild(item);
      while (list.children.length > OTHER_EVENTS_SHOWN) list.removeChild(list.firstElementChild);
      section("other-events").hidden = false;
    }

    function complete(event) {
      var data = event.data;
      setState(data.state, event.timestamp);
      // "Cancel requested … this page shows when it has": it has now; the state says how it ended
      // (cockpit tester: the notice stayed until a reload). A refusal or a fault stays.
      var told = slot("notice");
      if (told && !told.hidden && /\bnotice-success\b/.test(told.className)) told.hidden = true;
      setFact("finished_at", format.time(event.timestamp));
      setFact("duration", format.duration(data.duration_ms));
      // Who asked it to stop, shown once it ended, as a reload shows it (cockpit tester, session 50):
      // its cancel_requested, or — cancelled while queued, with no such event — the failure's cancelled_by.
      var asked = root.querySelector('[data-fact="cancel-asked"]');
      var by = data.state === "cancelled" && data.failure && data.failure.context ? data.failure.context.cancelled_by : null;
      if (asked && asked.textContent === "" && by && typeof by.kind === "string") setAskedToStop(null, by, event.timestamp);
      if (asked && asked.textContent !== "") root.querySelector('[data-fact-holder="cancel-asked"]').hidden = false;
      // A finished execution that never reported progress shows none, as the server draws it.
      var progress = section("progress");
      if (progress && progress.getAttribute("data-reported") !== "true") progress.remove();
      // What events drew is drawn again by the server once they are all in: exact even where the
      // page skipped events, and what a reload shows.
      // Once per execution, so at once: not a second after the last re-read.
      refresh(["output", "failure", "artifacts", "timeline", "reconciliation", "steps", "diagnostics", "log-dropped", "log-lines"], true);
      if (data.state === "succeeded") {
        // Until the server's drawing of the output takes the section's place (above), the event's
        // value; one too large for the live channel says so there, and goes with it.
        var withheld = data.output && data.output.withheld === "too_large";
        slot("output").textContent = withheld ? "The output is too large for the live channel; it is read from the server (reload the page if it does not appear)." : format.json(data.output);
        section("output").hidden = false;
      }
      if (data.failure) {
        var fields = root.querySelectorAll("[data-failure-field]");
        Array.prototype.forEach.call(fields, function (element) {
          var key = element.getAttribute("data-failure-field");
          var value = data.failure[key];
          element.textContent = key === "context" ? format.json(value || {}) : value === undefined ? "—" : format.text(value);
        });
        section("failure").hidden = false;
      }
    }

    var handlers = {
      // Sequence 1 is part of every rendered page.
      "execution.created": function () {},
      "execution.started": function (event) {
        setState("running");
        setFact("started_at", format.time(event.timestamp));
      },
      "execution.step": function (event) {
        var row = runningStep(event.data.id);
        if (row) field(row, "title").textContent = format.cut(event.data.title, format.titleChars);
        else newStep(event.data.id, event.data.title, event.timestamp);
        refreshTimelineSoon();
      },
      "execution.step_done": function (event) {
        var row = runningStep(event.data.id) || newStep(event.data.id, event.data.id, event.timestamp);
        runningRows.delete(row);
        field(row, "state").replaceChildren(clone(event.data.ok ? "step-succeeded" : "step-failed"));
        field(row, "message").textContent = format.cut(event.data.message || "", format.messageChars);
        field(row, "duration").textContent = format.duration(Date.parse(event.timestamp) - Date.parse(row.getAttribute("data-started")));
        refreshTimelineSoon();
      },
      "execution.progress": function (event) {
        var p = { current: event.data.current, total: event.data.total === undefined ? null : event.data.total, message: event.data.message || null };
        var bar = slot("progress");
        if (p.total === null) {
          bar.removeAttribute("value");
        } else {
          var max = p.total > 0 ? p.total : 1;
          bar.setAttribute("max", String(max));
          bar.setAttribute("value", String(Math.min(p.current, max)));
        }
        bar.textContent = format.progress(p);
        slot("progress-text").textContent = format.progress(p);
        section("progress").setAttribute("data-reported", "true");
      },
      "execution.cancel_requested": function (event) {
        setState("cancelling");
        // Nobody asked (a deadline passed, the handler stopped itself): the control says why, as the server draws it.
        var reason = event.data && event.data.reason;
        var words = reason ? cancelWords()[reason] : null;
        setAskedToStop(reason, event.data && event.data.actor, event.timestamp);
        var control = slot("cancel") || slot("cancel-note");
        if (words && control) {
          var note = document.createElement("p");
          note.className = "muted small";
          note.setAttribute("data-slot", "cancel-note");
          note.textContent = words + ".";
          control.replaceWith(note);
        }
      },
      "execution.completed": complete,
      // How an unknown outcome was settled: drawn by the server (docs/reconciliation.md).
      "execution.reconciled": function () {
        refresh(["reconciliation"]);
      },
    };

    /** Events not drawn yet, in sequence order; drawn together once a frame (flush). */
    var pending = [];
    var scheduled = false;
    /** The frame and the timer a scheduled draw waits for: whichever comes first draws, and the other is called off. */
    var frameHandle = null;
    var timerHandle = null;
    var clock = docket.environment();
    /**
     * A flood: the last draw took FLOOD_EVENTS or more. The next waits FLOOD_MS instead of a frame:
     * each draw's layout of the log costs about as much for 100 lines as for 1,000, and lines past
     * the log's bound are never built, so fewer, larger draws keep up with a flood that one draw a
     * frame fell seconds behind (a page 6 s late on an 8,000-event/s run, still showing "Running").
     */
    var flooding = false;
    var FLOOD_EVENTS = 200;
    var FLOOD_MS = 250;

    /**
     * Draws what came since the last frame. A flood (a test runner's output, thousands of events a
     * second) is drawn a batch at a time: log lines and diagnostics added and trimmed together, each
     * stream painted once with all its new text, only the last progress shown. One event at a
     * time, the page fell minutes behind and froze its tab.
     */
    function flush() {
      scheduled = false;
      // The draw left waiting would come a moment after this one with the few events since, and
      // take the page out of its flood pace (a tester saw draws 17 ms apart after large ones).
      if (frameHandle !== null) clock.cancelAnimationFrame(frameHandle);
      if (timerHandle !== null) clock.clearTimeout(timerHandle);
      frameHandle = timerHandle = null;
      if (pending.length === 0) return;
      var batch = pending;
      pending = [];
      flooding = batch.length >= FLOOD_EVENTS;
      var logs = [];
      var diagnostics = [];
      var streams = new Map();
      var progress = null;
      // An event whose whole `data` the server withheld (its ids alone were more than a frame:
      // docs/protocol.md, "Too large") holds none of its fields: the sections it would have
      // changed are read from the server instead (checking tester: "✕ Failed undefined" steps).
      var withheld = false;
      for (var i = 0; i < batch.length; i++) {
        var event = batch[i];
        if (event.data && event.data.withheld === "too_large" && event.type !== "execution.completed") {
          withheld = true;
          continue;
        }
        if (event.type === "execution.log") logs.push(event);
        else if (event.type === "execution.diagnostic") diagnostics.push(event);
        else if (event.type === "execution.stream") {
          var name = String(event.data.name);
          var written = streams.get(name);
          // Moved to the end: the batch's streams are added in the order of their last chunk.
          streams.delete(name);
          streams.set(name, { text: (written ? written.text : "") + event.data.chunk, sequence: event.sequence });
        } else if (event.type === "execution.progress") progress = event;
        else {
          // What a terminal event draws comes after every line, chunk and progress before it.
          if (event.type === "execution.completed") {
            appendLogs(logs.splice(0));
            appendDiagnostics(diagnostics.splice(0));
            streams.forEach(function (written, stream) {
              appendStream(stream, written.text, written.sequence);
            });
            streams.clear();
            if (progress) handlers["execution.progress"](progress);
            progress = null;
          }
          var handler = Object.prototype.hasOwnProperty.call(handlers, event.type) ? handlers[event.type] : appendOther;
          handler(event);
        }
      }
      appendLogs(logs);
      appendDiagnostics(diagnostics);
      streams.forEach(function (written, stream) {
        appendStream(stream, written.text, written.sequence);
      });
      if (progress) handlers["execution.progress"](progress);
      if (withheld) refresh(["steps", "timeline", "diagnostics", "log-dropped", "log-lines"]);
      var last = slot("last-sequence");
      if (last) last.textContent = String(batch[batch.length - 1].sequence);
    }

    function schedule() {
      if (scheduled) return;
      scheduled = true;
      if (flooding) {
        timerHandle = clock.setTimeout(flush, FLOOD_MS);
        return;
      }
      // Once a frame; a hidden tab gets no frames, so a timer draws there too (whichever comes first).
      if (clock.requestAnimationFrame && document.visibilityState !== "hidden") frameHandle = clock.requestAnimationFrame(flush);
      timerHandle = clock.setTimeout(flush, 200);
    }

    return {
      /** Takes one event, in sequence order (socket.js guarantees the order); it is drawn at the next frame. */
      apply: function (event) {
        pending.push(event);
        schedule();
      },
      /** Draws every event taken so far, now. */
      flush: flush,
      /** Says that events from..to were dropped by the server before this page could read them. */
      missed: missed,
      /**
       * The server no longer knows this execution (socket.js, onGone): what the page shows is what
       * it knew last, so its state is no longer shown as current and nothing can be cancelled.
       */
      gone: function () {
        flush();
        var state = slot("state");
        if (state && root.getAttribute("data-terminal") !== "true") {
          state.textContent = "? Unknown";
          root.setAttribute("data-state", "unknown");
        }
        var cancel = slot("cancel");
        if (cancel) cancel.remove();
        notice(
          "error",
          "This server no longer knows this execution: it restarted with the memory store (which keeps nothing), or forgot it (it keeps the executions_retained most recent). The page shows what it knew last.",
        );
      },
      notice: notice,
      /** Starts the timeline's clock (see followTimeline): the page was just drawn, so the first look is a second away. */
      followTimeline: function () {
        refresher.wait(followTimeline, 1000);
        refresher.wait(followArtifacts, ARTIFACTS_EVERY_MS);
      },
    };
  }

  /** A page this many seconds behind its events asks the server whether the execution ended (endWatcher). */
  var BEHIND_WATCH_S = 5;

  function isEnded(state) {
    return state === "succeeded" || state === "failed" || state === "cancelled";
  }

  /**
   * A page that may draw the execution's end late (behind a flood, or a Cancel it asked for) asks
   * the server for the execution once a second instead, and shows the server's page once it has
   * ended there; less and less often while the server does not answer. `watch()` starts it, once.
   */
  function endWatcher(root) {
    var env = docket.environment();
    var watching = false;
    return function watch() {
      var url = root.getAttribute("data-snapshot");
      if (watching || !url) return;
      watching = true;
      var wait = 1000;
      var look = function () {
        if (root.getAttribute("data-terminal") === "true" || root.getAttribute("data-state") === "unknown") return;
        env
          .fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
          .then(function (response) {
            return response.ok ? response.json() : null;
          })
          .then(function (snapshot) {
            if (root.getAttribute("data-terminal") === "true") return;
            if (snapshot && isEnded(snapshot.state)) return env.navigate(root.getAttribute("data-page") || window.location.href);
            wait = 1000;
            env.setTimeout(look, wait);
          })
          .catch(function () {
            wait = Math.min(15000, wait * 2);
            env.setTimeout(look, wait);
          });
      };
      env.setTimeout(look, wait);
    };
  }

  /** The Cancel form posts in the background and reports the receipt; without a script it posts normally. */
  function wireCancel(root, view, watchEnd) {
    var form = root.querySelector('[data-slot="cancel"]');
    if (!form) return;
    var env = docket.environment();
    var request = env.fetch;
    var navigate = env.navigate;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var button = form.querySelector("button");
      var label = button ? button.textContent : "";
      if (button) {
        button.disabled = true;
        button.textContent = "Cancel requested";
      }
      request(form.action, { method: "POST", headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          return response.json().then(function (receipt) {
            var requested = response.ok && receipt.requested;
            view.notice(requested ? "success" : "error", receipt.message || (receipt.error && receipt.error.message) || "Cancel was not requested.");
            // Not requested: the button says so no more (a cancel that can be asked again, is).
            if (!requested && button && button.isConnected) {
              button.disabled = false;
              button.textContent = label;
            }
            // The receipt says it ended while the page shows it running: the page is behind its events
            // (a flood). The server's page says what is true now.
            var ended = isEnded(receipt.state);
            // It says why the Cancel button is gone, as the page a Cancel without a script lands on does.
            if (ended && root.getAttribute("data-terminal") !== "true") {
              var page = new URL(root.getAttribute("data-page") || window.location.href, window.location.href);
              // The notice the server gave for this cancel (a page shows only those: notices.ts).
              var given = response.headers && response.headers.get ? response.headers.get("X-Docket-Notice") : null;
              if (given) page.searchParams.set("notice", given);
              else page.searchParams.delete("notice");
              navigate(page.pathname + page.search);
            }
            // Requested: the handler stops soon, but a page behind a flood would draw that seconds
            // later. The server is asked once a second, and its page shown once it has ended there.
            if (requested) watchEnd();
          });
        })
        .catch(function () {
          form.submit();
        });
    });
  }

  function boot() {
    var root = document.querySelector("[data-docket-execution]");
    if (!root) return;
    var view = executionView(root);
    docket.executionView = view;
    var watchEnd = endWatcher(root);
    wireCancel(root, view, watchEnd);
    // A finished execution takes no more events: nothing to follow.
    if (root.getAttribute("data-terminal") === "true") return;
    view.followTimeline();
    docket.channel = docket.openChannel({
      url: root.getAttribute("data-socket"),
      eventsUrl: root.getAttribute("data-events"),
      after: Number(root.getAttribute("data-after")),
      heartbeatMs: Number(root.getAttribute("data-heartbeat-ms")),
      indicator: root.querySelector("[data-docket-connection]"),
      onEvent: view.apply,
      onMissed: view.missed,
      onGone: view.gone,
      // Seconds behind a flood: its end would be drawn that late, so the server is asked for it.
      onBehind: function (seconds) {
        if (seconds >= BEHIND_WATCH_S) watchEnd();
      },
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
