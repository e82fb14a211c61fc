import { afterEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ASSETS } from "../../cockpit/assets.ts";
import { fakeFetch, loadPage, ORIGIN, type LoadedPage } from "./_support/dom.ts";
import { event, executionHtml, ID, runningSnapshot } from "./_support/fixtures.ts";

const pages: LoadedPage[] = [];

afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
});

/** The execution page at sequence 2, followed by socket.js against a fake socket and clock. */
function openExecution(options: { random?: () => number; history?: ReturnType<typeof event>[] } = {}) {
  const history = options.history ?? [];
  const fetch = fakeFetch((url) => {
    const after = Number(url.searchParams.get("after"));
    // Pages of two, to make the reader ask more than once.
    const events = history.filter((e) => e.sequence > after).slice(0, 2);
    return { events, retained_from: 1, truncated: false, last_sequence: history.length ? history[history.length - 1]!.sequence : 2 };
  });
  const page = loadPage(executionHtml(runningSnapshot()), { path: `/cockpit/executions/${ID}`, scripts: ["socket.js", "format.js", "execution.js"], fetch, random: options.random });
  pages.push(page);
  return { page, fetch };
}

const log = (sequence: number) => event(sequence, "execution.log", { level: "info", message: `line ${sequence}` });
const ready = (heartbeat_ms = 1000) => ({ type: "stream.ready", schema_version: "1", subscribed: [ID], replayed: 0, truncated: false, heartbeat_ms });
const shownLines = (page: LoadedPage) => [...page.document.querySelectorAll('[data-slot="log"] .log-message')].map((e) => e.textContent);
const indicator = (page: LoadedPage) => {
  const el = page.document.querySelector("[data-docket-connection]")!;
  return { state: el.getAttribute("data-state"), text: (el.textContent ?? "").replace(/\s+/g, " ").trim() };
};

describe("socket.js", () => {
  test("socket.js opens the rendered socket URL from the rendered sequence and shows the connection by word and shape", () => {
    const { page } = openExecution();
    expect(page.sockets).toHaveLength(1);
    expect(page.sockets[0]!.url).toBe(`${ORIGIN.replace("http", "ws")}/events?execution=${ID}&after=2`);
    expect(indicator(page)).toEqual({ state: "connecting", text: "◌ Connecting…" });
    page.sockets[0]!.open();
    page.sockets[0]!.receive(ready());
    expect(indicator(page)).toEqual({ state: "live", text: "● Live" });
  });

  test("socket.js drops an event at or below the last sequence seen", () => {
    const { page } = openExecution();
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive(ready());
    for (const n of [3, 3, 2, 1, 4, 3, 4, 5]) socket.receive(log(n));
    expect(shownLines(page)).toEqual(["line 3", "line 4", "line 5"]);
  });

  test("socket.js reconnects with exponential backoff, capped, with jitter, and resubscribes from the last sequence seen", () => {
    let jitter = 0;
    const { page } = openExecution({ random: () => jitter });
    page.sockets[0]!.open();
    page.sockets[0]!.receive(ready());
    page.sockets[0]!.receive(log(3));
    // Lowest jitter: each wait is half its ceiling; the ceiling doubles from 500 ms up to 15 s.
    const waits: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      const before = page.sockets.length;
      page.current()!.lose();
      let waited = 0;
      while (page.sockets.length === before) {
        page.clock.advance(1);
        waited++;
      }
      waits.push(waited);
      expect(indicator(page).state).toBe("reconnecting");
    }
    expect(waits).toEqual([250, 500, 1000, 2000, 4000, 7500, 7500, 7500]);
    // Every reconnect asked from the last sequence seen.
    expect(page.sockets.slice(1).map((s) => s.after())).toEqual(new Array(8).fill(3));
    // A ready connection resets the backoff; the highest jitter waits the whole ceiling.
    page.current()!.open();
    page.current()!.receive(ready());
    page.current()!.receive(log(4));
    jitter = 0.999999;
    const before = page.sockets.length;
    page.current()!.lose();
    page.clock.advance(499);
    expect(page.sockets.length).toBe(before);
    page.clock.advance(1);
    expect(page.sockets.length).toBe(before + 1);
    expect(page.current()!.after()).toBe(4);
  });

  test("socket.js's backoff stays within [ceiling/2, ceiling] and never above the cap, for any attempt and jitter", async () => {
    const { page } = openExecution();
    const backoff = (page.window as any).docket.backoffDelay as (attempt: number, random: () => number) => number;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const ceiling = Math.min(15_000, 500 * 2 ** attempt);
        const delay = backoff(attempt, () => r);
        return delay >= ceiling / 2 && delay <= ceiling && delay <= 15_000;
      }),
    );
  });

  test("socket.js reconnects with after=<last seen> on a gap, and reads the same gap a second time over HTTP", async () => {
    const history = [3, 4, 5, 6, 7, 8, 9].map(log);
    const { page, fetch } = openExecution({ history });
    const first = page.sockets[0]!;
    first.open();
    first.receive(ready());
    first.receive(log(3));
    first.receive(log(9));
    // At once, no backoff: a gap is not a failure.
    expect(first.closedByClient).toBe(true);
    expect(page.sockets).toHaveLength(2);
    expect(page.sockets[1]!.after()).toBe(3);
    expect(fetch.urls).toEqual([]);
    const second = page.sockets[1]!;
    second.open();
    second.receive(ready());
    second.receive(log(9));
    expect(indicator(page).state).toBe("catching-up");
    // What arrives while the gap is read waits its turn.
    second.receive(log(10));
    await page.settle();
    const read = (after: number) => `${ORIGIN}/api/v1/executions/events?id=${ID}&after=${after}`;
    expect(fetch.urls).toEqual([read(3), read(5), read(7)]);
    expect(shownLines(page)).toEqual([3, 4, 5, 6, 7, 8, 9, 10].map((n) => `line ${n}`));
    expect(page.sockets).toHaveLength(2);
    expect(indicator(page).state).toBe("live");
  });

  test("socket.js says a channel is stalled once it said nothing for 1.5 heartbeats (the server's 1.25 and a margin for its timers), and live again when it is heard", () => {
    const { page } = openExecution({ random: () => 0 });
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive(ready(1000));
    // A heartbeat a little late (the server's quiet time is 1.25 heartbeats, its timers drift) is no stall.
    page.clock.advance(1270);
    expect(indicator(page)).toEqual({ state: "live", text: "● Live" });
    page.clock.advance(229);
    expect(indicator(page)).toEqual({ state: "live", text: "● Live" });
    page.clock.advance(1);
    expect(indicator(page)).toEqual({ state: "stalled", text: "◐ Stalled — no word from the server" });
    expect(socket.closedByClient).toBe(false);
    socket.receive({ type: "stream.heartbeat", timestamp: new Date().toISOString() });
    expect(indicator(page)).toEqual({ state: "live", text: "● Live" });
  });

  test("socket.js drops a channel that said nothing for two heartbeats, as --follow does, and reconnects", () => {
    const { page } = openExecution({ random: () => 0 });
    const socket = page.sockets[0]!;
    socket.open();
    socket.receive(ready(1000));
    page.clock.advance(1900);
    socket.receive({ type: "stream.heartbeat", timestamp: new Date().toISOString() });
    page.clock.advance(1999);
    expect(socket.closedByClient).toBe(false);
    page.clock.advance(1);
    expect(socket.closedByClient).toBe(true);
    expect(indicator(page).state).toBe("reconnecting");
    page.clock.advance(250);
    expect(page.sockets).toHaveLength(2);
    expect(page.sockets[1]!.after()).toBe(2);
  });

  test("socket.js treats stream.lagged and stream.closing on a one-execution channel as a reason to ask again from the last seen", () => {
    const { page } = openExecution({ random: () => 0 });
    page.sockets[0]!.open();
    page.sockets[0]!.receive(ready());
    page.sockets[0]!.receive(log(3));
    page.sockets[0]!.receive({ type: "stream.lagged", dropped: 5, message: "behind" });
    expect(page.sockets).toHaveLength(2);
    expect(page.sockets[1]!.after()).toBe(3);
    page.sockets[1]!.open();
    page.sockets[1]!.receive(ready());
    page.sockets[1]!.receive({ type: "stream.closing", reason: "server stopping" });
    expect(page.sockets[1]!.closedByClient).toBe(true);
    page.clock.advance(250);
    expect(page.sockets).toHaveLength(3);
  });

  test("socket.js stops following once the execution completed: no socket, no timer", () => {
    const { page } = openExecution();
    page.sockets[0]!.open();
    page.sockets[0]!.receive(ready());
    page.sockets[0]!.receive(event(3, "execution.completed", { state: "succeeded", output: { ok: true }, duration_ms: 5 }));
    expect(page.sockets[0]!.closedByClient).toBe(true);
    expect(indicator(page)).toEqual({ state: "ended", text: "■ Finished — nothing more to follow" });
    // The one timer left is format.js's, which writes "Created 1 min ago" again as time passes.
    expect(page.clock.pending).toBe(1);
    page.clock.advance(120_000);
    expect(page.sockets).toHaveLength(1);
    expect(page.clock.pending).toBe(1);
  });

  test("socket.js does not say finished while a gap past the execution's last event leaves history unseen: the silent socket is dropped and the reconnect replays it", async () => {
    // The interleaving the property below once failed on (seed -890562684): its fake server's
    // cursor was carried past the last event and its behaving phase let no time pass.
    const history = [...[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14].map(log), event(15, "execution.completed", { state: "succeeded", output: { n: 12 }, duration_ms: 1 })];
    const { page, fetch } = openExecution({ history, random: () => 0 });
    const accept = (socket: ReturnType<LoadedPage["current"]>) => {
      socket!.open();
      socket!.receive(ready(1000));
      return socket!;
    };
    const sendAll = async (socket: ReturnType<LoadedPage["current"]>, sequences: number[]) => {
      for (const n of sequences) {
        socket!.receive(history[n - 3]);
        await page.settle();
      }
    };
    // 3, 4, 5, then a gap (7): reconnect from 5.
    await sendAll(accept(page.current()), [3, 4, 5, 7]);
    // The same gap (8): read over HTTP, then a new gap (10): reconnect from 8.
    await sendAll(accept(page.current()), [8, 10]);
    // The same gap again (11), read over HTTP; then the server lost 12..15 and says nothing more.
    const third = accept(page.current());
    await sendAll(third, [11]);
    const read = (after: number) => `${ORIGIN}/api/v1/executions/events?id=${ID}&after=${after}`;
    expect(fetch.urls).toEqual([read(5), read(8)]);
    expect(shownLines(page)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11].map((n) => `line ${n}`));
    expect(indicator(page).state).toBe("live");
    expect(page.document.querySelector("[data-docket-execution]")!.getAttribute("data-state")).toBe("running");
    // Two heartbeats of silence: the socket is taken for dead and the page asks again from 11.
    page.clock.advance(2000);
    expect(third.closedByClient).toBe(true);
    expect(indicator(page).state).toBe("reconnecting");
    page.clock.advance(250);
    const fourth = accept(page.current());
    expect(fourth.after()).toBe(11);
    await sendAll(fourth, [12, 13, 14, 15]);
    expect(shownLines(page)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14].map((n) => `line ${n}`));
    expect(page.document.querySelector("[data-docket-execution]")!.getAttribute("data-state")).toBe("succeeded");
    expect(indicator(page).state).toBe("ended");
  });

  test("socket.js mends a gap that ends at the completion before it says finished: by reconnecting the first time, over HTTP the second", async () => {
    const history = [...[3, 4, 5, 6].map(log), event(7, "execution.completed", { state: "succeeded", output: {}, duration_ms: 1 })];
    const { page, fetch } = openExecution({ history, random: () => 0 });
    const first = page.current()!;
    first.open();
    first.receive(ready());
    first.receive(log(3));
    first.receive(history[4]);
    expect(indicator(page).state).toBe("reconnecting");
    expect(page.current()!.after()).toBe(3);
    const second = page.current()!;
    second.open();
    second.receive(ready());
    second.receive(history[4]);
    expect(indicator(page).state).toBe("catching-up");
    expect(page.document.querySelector("[data-docket-execution]")!.getAttribute("data-state")).toBe("running");
    await page.settle();
    expect(fetch.urls).toEqual([`${ORIGIN}/api/v1/executions/events?id=${ID}&after=3`, `${ORIGIN}/api/v1/executions/events?id=${ID}&after=5`]);
    expect(shownLines(page)).toEqual(["line 3", "line 4", "line 5", "line 6"]);
    expect(page.document.querySelector("[data-docket-execution]")!.getAttribute("data-state")).toBe("succeeded");
    expect(indicator(page).state).toBe("ended");
  });

  test("socket.js: random interleavings of reconnects, duplicates, gaps, lag and silence still render every sequence once, in order", async () => {
    const N = 12;
    const last = N + 3;
    const history = [...Array.from({ length: N }, (_, i) => log(i + 3)), event(last, "execution.completed", { state: "succeeded", output: { n: N }, duration_ms: 1 })];
    const action = fc.oneof(
      fc.constant({ kind: "next" as const }),
      fc.constant({ kind: "next" as const }),
      fc.constant({ kind: "next" as const }),
      fc.record({ kind: fc.constant("duplicate" as const), back: fc.nat(5) }),
      fc.record({ kind: fc.constant("gap" as const), skip: fc.integer({ min: 1, max: 4 }) }),
      fc.constant({ kind: "lose" as const }),
      fc.constant({ kind: "lagged" as const }),
      fc.constant({ kind: "silence" as const }),
      fc.constant({ kind: "wait" as const }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 60 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), async (actions, jitter) => {
        const { page } = openExecution({ history, random: () => jitter });
        // The fake server: each socket has its own cursor, from the `after` it was opened with.
        const cursors = new Map<object, number>();
        const serve = () => {
          const socket = page.current();
          if (!socket) return null;
          if (!cursors.has(socket)) {
            socket.open();
            socket.receive(ready(1000));
            cursors.set(socket, socket.after() ?? 0);
          }
          return socket;
        };
        const send = (socket: NonNullable<ReturnType<typeof serve>>, sequence: number) => {
          if (sequence >= 3 && sequence <= last) socket.receive(history[sequence - 3]);
        };
        for (const step of actions) {
          const socket = serve();
          if (socket) {
            const cursor = cursors.get(socket)!;
            if (step.kind === "next") {
              cursors.set(socket, cursor + 1);
              send(socket, cursor + 1);
            } else if (step.kind === "duplicate") send(socket, cursor - step.back);
            else if (step.kind === "gap") {
              cursors.set(socket, cursor + step.skip + 1);
              send(socket, cursor + step.skip + 1);
            } else if (step.kind === "lose") socket.lose();
            else if (step.kind === "lagged") socket.receive({ type: "stream.lagged", dropped: 1, message: "behind" });
            else if (step.kind === "silence") page.clock.advance(2500);
          }
          if (step.kind === "wait") page.clock.advance(16_000);
          await page.settle();
        }
        // Then the server behaves: it sends what it has, in order, until the page says it is done.
        // A socket a gap carried past the last event has nothing left to send, and this fake sends
        // no heartbeat: time passes, as in a browser, until the page takes the silence for a dead
        // channel and asks again from what it saw. (A real server announces what it dropped with
        // stream.lagged and sends heartbeats: docs/protocol.md.) Time passes a second at a time: in
        // one long step a socket the page opened could also be given up by its own watchdog (a
        // heartbeat of 1 s) before this fake server ever served it, step after step (CI, seed
        // 1993384420: one "lose", then every reconnect opened and dropped inside the same 16 s).
        for (let guard = 0; indicator(page).state !== "ended" && guard < 2000; guard++) {
          const socket = serve();
          const cursor = socket ? cursors.get(socket)! : last;
          if (socket && cursor < last) {
            cursors.set(socket, cursor + 1);
            send(socket, cursor + 1);
          } else page.clock.advance(1000);
          await page.settle();
        }
        const expected = Array.from({ length: N }, (_, i) => `line ${i + 3}`);
        expect(shownLines(page)).toEqual(expected);
        expect(page.document.querySelector("[data-docket-execution]")!.getAttribute("data-state")).toBe("succeeded");
        expect(indicator(page).state).toBe("ended");
        await page.close();
        pages.splice(pages.indexOf(page), 1);
      }),
      { numRuns: 100 },
    );
  }, 120_000);

  test("socket.js is the only script that opens a socket", () => {
    for (const name of ["format.js", "execution.js", "live-list.js", "run-form.js"] as const) expect(ASSETS[name].body).not.toContain("WebSocket");
  });
});
