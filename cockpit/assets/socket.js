// socket.js — the only place in the cockpit's browser code that opens a socket (README.md).
//
// docket.openChannel(options) follows the live channel at a URL the server rendered into the page:
// - reconnects with exponential backoff, capped, with jitter;
// - resubscribes from the sequence the page was rendered at, then from the last one seen;
// - on an every-execution channel, which replays nothing, says when it is ready (the first time,
//   after each reconnect, and after it lagged), so the page re-reads what it may have missed;
// - drops an event at or below the last sequence seen;
// - on a one-execution channel, an event beyond the next number reconnects with after=<last seen>,
//   and the same gap a second time is read over HTTP (executions.events) instead;
// - on a one-execution channel refused before a word, asks over HTTP whether the server still knows
//   the execution, and stops for good when it does not (onGone);
// - says a channel is stalled once it said nothing for 1.25 heartbeats (the server promises to be
//   heard within that: docs/protocol.md), and drops it after two, as `--follow` does, and reconnects;
// - shows the connection by word and shape in the page's indicator.
// Every URL comes from the options (the page's data attributes); none is written here.
// `window.docketEnv` may supply WebSocket, fetch, setTimeout, clearTimeout and random (tests do).
(function () {
  "use strict";
  var docket = (window.docket = window.docket || {});

  /** The first retry waits about this long; each later one doubles. */
  var BASE_MS = 500;
  /** No retry waits longer than this. */
  var CAP_MS = 15000;
  /** Events arriving this much later than the quickest did: the indicator says the page is behind. */
  var BEHIND_MS = 2000;
  /**
   * A page behind has a backlog that arrives frame after frame: once none has come for this long,
   * it has read everything there was, and the indicator stops saying it is behind.
   */
  var CAUGHT_UP_MS = 1000;
  /**
   * A channel quiet for this many heartbeats has broken the server's promise (a heartbeat once it
   * has been quiet for 1.25): the page says so. The margin is the server's timer drift: at exactly
   * 1.25 a healthy idle page said "Stalled" for a few milliseconds at every heartbeat, and a screen
   * reader announced it.
   */
  var STALLED_HEARTBEATS = 1.5;
  /** A channel quiet for this many heartbeats is taken for dead (`docket executions events --follow` gives up then too). */
  var SILENT_HEARTBEATS = 2;

  /** The indicator's word and shape per connection state; the colour only repeats them. */
  var LOOK = {
    connecting: { shape: "◌", word: "Connecting…" },
    live: { shape: "●", word: "Live" },
    reconnecting: { shape: "↻", word: "Reconnecting" },
    "catching-up": { shape: "⇣", word: "Catching up over HTTP" },
    stalled: { shape: "◐", word: "Stalled — no word from the server" },
    ended: { shape: "■", word: "Finished — nothing more to follow" },
    closed: { shape: "■", word: "Not following" },
    gone: { shape: "■", word: "Not following — this server no longer knows this execution" },
  };

  /**
   * What the page's scripts call that a test replaces (`window.docketEnv`): the socket, requests,
   * timers and frames, the random source, and where a page goes. Also docket.environment, for the
   * scripts loaded after this one.
   */
  function environment() {
    var given = window.docketEnv || {};
    return {
      WebSocket: given.WebSocket || window.WebSocket,
      fetch:
        given.fetch ||
        function (url, init) {
          return window.fetch(url, init);
        },
      setTimeout:
        given.setTimeout ||
        function (fn, ms) {
          return window.setTimeout(fn, ms);
        },
      clearTimeout:
        given.clearTimeout ||
        function (handle) {
          window.clearTimeout(handle);
        },
      random: given.random || Math.random,
      // A hidden tab gets no frames: null where there are none to ask for.
      requestAnimationFrame: given.requestAnimationFrame || (typeof window.requestAnimationFrame === "function" ? window.requestAnimationFrame.bind(window) : null),
      cancelAnimationFrame:
        given.cancelAnimationFrame ||
        function (handle) {
          if (typeof window.cancelAnimationFrame === "function") window.cancelAnimationFrame(handle);
        },
      navigate:
        given.navigate ||
        function (url) {
          window.location.assign(url);
        },
    };
  }
  docket.environment = environment;

  /** Milliseconds before retry `attempt` (0-based): min(cap, base·2^attempt), jittered within its upper half. */
  function backoffDelay(attempt, random) {
    var ceiling = Math.min(CAP_MS, BASE_MS * Math.pow(2, attempt));
    return Math.round(ceiling / 2 + random() * (ceiling / 2));
  }

  /** The rendered path as an absolute ws: / wss: URL of this page's origin, with `after` when given. */
  function socketUrl(path, after) {
    var url = new URL(path, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (after !== null) url.searchParams.set("after", String(after));
    return url.href;
  }

  function isEvent(frame) {
    return frame && typeof frame.sequence === "number" && typeof frame.execution_id === "string" && typeof frame.type === "string";
  }

  /**
   * Opens and keeps open one live-channel subscription.
   * options: url (rendered socket path), eventsUrl (rendered HTTP events URL: makes it a
   * one-execution channel with gap mending), after (the rendered sequence), heartbeatMs,
   * indicator (element), onEvent(event), onMissed(from, to) (history no longer retained),
   * onSubscribed() (an every-execution channel is ready, or lagged: what happened before it, or
   * what it dropped, is not replayed — the page re-reads it), onGone() (the server no longer knows
   * the one execution followed: nothing more will come), onBehind(seconds) (the events arrive that
   * many seconds after they were made: a flood faster than the page reads).
   */
  function openChannel(options) {
    var env = environment();
    var single = Boolean(options.eventsUrl);
    var lastSeen = single ? Number(options.after) || 0 : 0;
    var seenBy = {};
    var heartbeatMs = Number(options.heartbeatMs) || 20000;
    var attempt = 0;
    var socket = null;
    var watchdog = null;
    var stalledTimer = null;
    /** The state a stalled channel shows again once it is heard. */
    var beforeStalled = null;
    var retry = null;
    var gapAt = null;
    var filling = false;
    var held = [];
    var everReady = false;
    var done = false;
    var state = null;
    /** The least age of an event on arrival (noteLag), and the seconds behind the indicator says. */
    var leastAge = null;
    var shownBehind = 0;
    /** Clears "behind" once no event came for CAUGHT_UP_MS. */
    var caughtUpTimer = null;

    function show(name, detail) {
      state = name;
      var el = options.indicator;
      if (!el) return;
      var look = LOOK[name];
      el.setAttribute("data-state", name);
      var shape = el.querySelector("[data-connection-shape]");
      var word = el.querySelector("[data-connection-word]");
      if (shape) shape.textContent = look.shape;
      if (word) word.textContent = detail ? look.word + " " + detail : look.word;
    }

    function armWatchdog() {
      if (watchdog !== null) env.clearTimeout(watchdog);
      if (stalledTimer !== null) env.clearTimeout(stalledTimer);
      if (state === "stalled") show(beforeStalled);
      stalledTimer = env.setTimeout(function () {
        stalledTimer = null;
        if (state !== "live" && state !== "catching-up") return;
        beforeStalled = state;
        show("stalled");
      }, STALLED_HEARTBEATS * heartbeatMs);
      watchdog = env.setTimeout(function () {
        watchdog = null;
        drop();
        schedule();
      }, SILENT_HEARTBEATS * heartbeatMs);
    }

    /** Forgets the current socket: its late messages and close are ignored from now on. */
    function drop() {
      if (watchdog !== null) env.clearTimeout(watchdog);
      if (stalledTimer !== null) env.clearTimeout(stalledTimer);
      watchdog = stalledTimer = null;
      var old = socket;
      socket = null;
      if (old) {
        old.onopen = old.onmessage = old.onclose = old.onerror = null;
        try {
          old.close();
        } catch (ignored) {
          // Closing a socket that never opened may throw; it is gone either way.
        }
      }
      // Frames held for an HTTP read belong to the dropped socket; the next one replays them.
      filling = false;
      held = [];
    }

    function connect() {
      retry = null;
      if (done) return;
      show(attempt === 0 && !everReady ? "connecting" : "reconnecting");
      var ws = new env.WebSocket(socketUrl(options.url, single ? lastSeen : null));
      var heard = false;
      socket = ws;
      ws.onmessage = function (message) {
        if (ws !== socket) return;
        heard = true;
        armWatchdog();
        var frame;
        try {
          frame = JSON.parse(String(message.data));
        } catch (ignored) {
          return;
        }
        receive(frame);
      };
      ws.onclose = function () {
        if (ws !== socket) return;
        drop();
        schedule();
        // Refused before a word (a browser is told no status): the server may be down, or up and
        // without this execution (restarted with the memory store, or it forgot it). HTTP says which.
        if (single && !heard) probe();
      };
      ws.onerror = function () {
        // A close always follows an error; reconnecting is decided there.
      };
      armWatchdog();
    }

    /** Reconnects after the backoff delay of the next attempt. */
    function schedule() {
      if (done || retry !== null) return;
      var delay = backoffDelay(attempt, env.random);
      attempt += 1;
      show("reconnecting", "in " + Math.max(1, Math.round(delay / 1000)) + " s");
      retry = env.setTimeout(connect, delay);
    }

    /**
     * Asks the events URL, while the retry waits, whether the server still knows the execution: a
     * 404 ends the following for good (the page says why, instead of showing its last state as
     * current while it retries for ever); any other answer, or none, leaves the retry as it was.
     */
    function probe() {
      var url = new URL(options.eventsUrl, window.location.href);
      url.searchParams.set("after", String(lastSeen));
      url.searchParams.set("limit", "1");
      env
        .fetch(url.href, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (done || response.status !== 404) return;
          done = true;
          if (retry !== null) env.clearTimeout(retry);
          retry = null;
          drop();
          show("gone");
          if (options.onGone) options.onGone();
        })
        .catch(function () {});
    }

    /** Reconnects at once from the last sequence seen (a gap or lag, not a failure). */
    function resubscribe() {
      drop();
      connect();
    }

    function receive(frame) {
      if (!frame || typeof frame.type !== "string") return;
      switch (frame.type) {
        case "stream.ready":
          if (typeof frame.heartbeat_ms === "number" && frame.heartbeat_ms > 0) heartbeatMs = frame.heartbeat_ms;
          armWatchdog();
          attempt = 0;
          show("live");
          shownBehind = 0;
          if (!single && options.onSubscribed) options.onSubscribed();
          everReady = true;
          return;
        case "stream.heartbeat":
          return;
        case "stream.lagged":
          // Events were dropped for this client alone: a one-execution channel asks again from its cursor.
          if (single) resubscribe();
          else if (options.onSubscribed) options.onSubscribed();
          return;
        case "stream.closing":
          drop();
          schedule();
          return;
      }
      if (!isEvent(frame)) return;
      if (single) receiveOne(frame);
      else receiveAny(frame);
    }

    function receiveAny(event) {
      var last = seenBy[event.execution_id] || 0;
      if (event.sequence <= last) return;
      seenBy[event.execution_id] = event.sequence;
      options.onEvent(event);
    }

    function receiveOne(event) {
      if (filling) {
        held.push(event);
        return;
      }
      if (event.sequence <= lastSeen) return;
      if (event.sequence === lastSeen + 1) {
        deliver(event);
        return;
      }
      if (gapAt === lastSeen) {
        // The same gap twice: the channel cannot mend it, so read it over HTTP.
        held.push(event);
        fill(event.sequence);
        return;
      }
      gapAt = lastSeen;
      resubscribe();
    }

    function deliver(event) {
      lastSeen = event.sequence;
      noteLag(event.timestamp);
      options.onEvent(event);
      if (event.type === "execution.completed") finish();
    }

    /**
     * How far behind the server this page reads: an event's age when it arrives, less the least age
     * seen (the clocks' offset, and the path's own time). A browser takes a few thousand frames a
     * second; a flood beyond that arrives later and later, and the page says so ("Live — 4 s behind")
     * rather than show its last events as now.
     */
    function noteLag(timestamp) {
      var at = Date.parse(timestamp);
      if (!isFinite(at)) return;
      var age = Date.now() - at;
      if (leastAge === null || age < leastAge) leastAge = age;
      var lag = age - leastAge;
      var behind = lag >= BEHIND_MS ? Math.round(lag / 1000) : 0;
      if (caughtUpTimer !== null) env.clearTimeout(caughtUpTimer);
      caughtUpTimer = behind > 0 ? env.setTimeout(caughtUp, CAUGHT_UP_MS) : null;
      if (behind === shownBehind || state !== "live") return;
      shownBehind = behind;
      show("live", behind > 0 ? "— " + behind + " s behind the server" : "");
      if (behind > 0 && options.onBehind) options.onBehind(behind);
    }

    /** Nothing came for CAUGHT_UP_MS while the page said it was behind: it has read all there was. */
    function caughtUp() {
      caughtUpTimer = null;
      if (shownBehind === 0 || state !== "live") return;
      shownBehind = 0;
      show("live");
    }

    /** Delivers an event that HTTP could not supply the history before: that history is no longer retained. */
    function deliverAfterRead(event) {
      if (done || event.sequence <= lastSeen) return;
      if (event.sequence > lastSeen + 1 && options.onMissed) options.onMissed(lastSeen + 1, event.sequence - 1);
      deliver(event);
    }

    /** Reads the events after the last seen over HTTP until `target` is next, then releases what the socket held. */
    function fill(target) {
      filling = true;
      var reading = socket;
      show("catching-up");
      function page() {
        var url = new URL(options.eventsUrl, window.location.href);
        url.searchParams.set("after", String(lastSeen));
        env
          .fetch(url.href, { headers: { Accept: "application/json" }, credentials: "same-origin" })
          .then(function (response) {
            if (!response.ok) throw new Error("HTTP " + response.status);
            return response.json();
          })
          .then(function (body) {
            if (done || socket !== reading || !filling) return;
            var events = (body && body.events) || [];
            for (var i = 0; i < events.length && !done; i++) deliverAfterRead(events[i]);
            if (!done && events.length > 0 && lastSeen < target - 1 && lastSeen < body.last_sequence) return page();
            release(target);
          })
          .catch(function () {
            if (done || socket !== reading) return;
            drop();
            schedule();
          });
      }
      page();
    }

    /**
     * Hands on the frames held during a read, in order. One at or below `target` that still does
     * not follow was not retained; a new gap beyond `target` is read over HTTP in turn.
     */
    function release(target) {
      filling = false;
      var frames = held;
      held = [];
      for (var i = 0; i < frames.length && !done; i++) {
        var event = frames[i];
        if (event.sequence <= lastSeen) continue;
        if (event.sequence === lastSeen + 1 || event.sequence <= target) {
          deliverAfterRead(event);
          continue;
        }
        held = frames.slice(i);
        fill(event.sequence);
        return;
      }
      gapAt = null;
      if (!done && socket) {
        show("live");
        shownBehind = 0;
      }
    }

    function finish() {
      done = true;
      if (retry !== null) env.clearTimeout(retry);
      retry = null;
      drop();
      show("ended");
    }

    connect();
    return {
      /** Stops following: no socket, no timer. */
      close: function () {
        if (done) return;
        done = true;
        if (retry !== null) env.clearTimeout(retry);
        retry = null;
        drop();
        show("closed");
      },
      /** The last sequence delivered (one-execution channel). */
      lastSeen: function () {
        return lastSeen;
      },
      /** The connection state's name. */
      state: function () {
        return state;
      },
    };
  }

  docket.openChannel = openChannel;
  docket.backoffDelay = backoffDelay;
})();
