import { describe, expect, test } from "bun:test";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import type { ExecutionStore, Subscription } from "../../runtime/store/store.ts";
import { draft, idOf, newExecution, type Fixture } from "./_fixtures.ts";

/** What one listener saw: `<n>:<sequence>` per event, n being the execution's number in the test. */
function recorder() {
  const seen: string[] = [];
  const listener = (event: ExecutionEvent, json: string | undefined) => {
    // The JSON, when the store made it, is the event's.
    if (json !== undefined) expect(json).toBe(JSON.stringify(event));
    seen.push(`${Number.parseInt(event.execution_id.slice(-8), 16)}:${event.sequence}`);
  };
  return { seen, listener };
}

/** `<n>:<from>` … `<n>:<to>`. */
function range(n: number, from: number, to: number): string[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => `${n}:${from + i}`);
}

/** Creates execution n and appends `count` more events (sequence 1 + count in all). */
function withEvents(store: ExecutionStore, n: number, count: number): void {
  store.create(newExecution(n));
  if (count > 0) store.append(idOf(n), [draft.started(), ...Array.from({ length: count - 1 }, (_, i) => draft.progress(i))]);
}

/**
 * Lets every commit happen and be delivered (a listener's appends make another): subscribers hear
 * of events once they are committed (docs/durability.md), at once in memory, a tick later in sqlite.
 */
export async function settled(store: ExecutionStore): Promise<void> {
  for (let i = 0; i < 5; i++) await store.durable();
}

/** `subscribe`: history then live, cursors, several executions, re-entrancy, unsubscribe, errors. */
export function subscribeCases(f: Fixture): void {
  describe("subscribe", () => {
    test("store.subscribe to all without a cursor delivers live events only, from every execution", async () => {
      const store = f.make();
      withEvents(store, 1, 3);
      const r = recorder();
      const sub = store.subscribe({ executions: "all" }, r.listener);
      expect(sub).toMatchObject({ replayed: 0, truncated: false, missing: [] });
      store.append(idOf(1), [draft.progress(9)]);
      store.create(newExecution(2));
      store.append(idOf(2), [draft.started()]);
      await settled(store);
      expect(r.seen).toEqual(["1:5", "2:1", "2:2"]);
    });

    test("store.subscribe to a named execution replays its history past a page, then live, with no gap or duplicate", async () => {
      const store = f.make();
      withEvents(store, 1, 2500);
      const r = recorder();
      const sub = store.subscribe({ executions: [idOf(1)] }, r.listener);
      expect(sub).toMatchObject({ replayed: 2501, truncated: false, missing: [] });
      store.append(idOf(1), [draft.progress(1), draft.progress(2)]);
      await settled(store);
      expect(r.seen).toEqual(range(1, 1, 2503));
    });

    test("store.subscribe from a cursor replays only what follows it", async () => {
      const store = f.make();
      withEvents(store, 1, 1500);
      const r = recorder();
      expect(store.subscribe({ executions: [idOf(1)], after: 1200 }, r.listener).replayed).toBe(301);
      store.append(idOf(1), [draft.progress(1)]);
      await settled(store);
      expect(r.seen).toEqual(range(1, 1201, 1502));
      const late = recorder();
      expect(store.subscribe({ executions: [idOf(1)], after: 5000 }, late.listener).replayed).toBe(0);
    });

    test("store.subscribe to several executions seeds every cursor with the one after", async () => {
      const store = f.make();
      withEvents(store, 1, 9);
      withEvents(store, 2, 4);
      withEvents(store, 3, 0);
      const r = recorder();
      const sub = store.subscribe({ executions: [idOf(1), idOf(2), idOf(3)], after: 3 }, r.listener);
      expect(sub.replayed).toBe(7 + 2);
      store.append(idOf(3), [draft.started(), draft.progress(1), draft.progress(2)]);
      store.append(idOf(2), [draft.progress(1)]);
      await settled(store);
      expect(r.seen).toEqual([...range(1, 4, 10), ...range(2, 4, 5), "3:4", "2:6"]);
    });

    test("store.subscribe follows an execution named twice once", async () => {
      const store = f.make();
      withEvents(store, 1, 2);
      const r = recorder();
      expect(store.subscribe({ executions: [idOf(1), idOf(1)] }, r.listener).replayed).toBe(3);
      store.append(idOf(1), [draft.progress(1)]);
      await settled(store);
      expect(r.seen).toEqual(range(1, 1, 4));
    });

    test("store.subscribe lists the named executions it does not hold as missing", async () => {
      const store = f.make();
      withEvents(store, 1, 2);
      const r = recorder();
      const sub = store.subscribe({ executions: [idOf(7), idOf(1), idOf(8)] }, r.listener);
      expect(sub).toMatchObject({ replayed: 3, truncated: false });
      expect(sub.missing).toEqual([idOf(7), idOf(8)]);
      // Still followed: if it appears (a report from another process), it arrives live.
      store.create(newExecution(7));
      await settled(store);
      expect(r.seen).toEqual([...range(1, 1, 3), "7:1"]);
    });

    test("store.subscribe says truncated when requested history was already dropped, and replays what is left", async () => {
      const store = f.make({ events_retained: 10 });
      withEvents(store, 1, 24);
      withEvents(store, 2, 3);
      const r = recorder();
      const sub = store.subscribe({ executions: [idOf(2), idOf(1)] }, r.listener);
      expect(sub).toMatchObject({ replayed: 4 + 10, truncated: true });
      expect(r.seen).toEqual([...range(2, 1, 4), ...range(1, 16, 25)]);
      expect(store.subscribe({ executions: [idOf(1)], after: 15 }, () => {}).truncated).toBe(false);
      expect(store.subscribe({ executions: [idOf(1)], after: 14 }, () => {}).truncated).toBe(true);
    });

    test("store.subscribe to all with a cursor replays every execution's history after it, then live", async () => {
      const store = f.make();
      withEvents(store, 1, 4);
      withEvents(store, 2, 1);
      const r = recorder();
      const sub = store.subscribe({ executions: "all", after: 2 }, r.listener);
      expect(sub).toMatchObject({ replayed: 3, truncated: false, missing: [] });
      expect([...r.seen].sort()).toEqual([...range(1, 3, 5)].sort());
      store.append(idOf(2), [draft.progress(1)]);
      store.create(newExecution(3));
      await settled(store);
      expect(r.seen.slice(3)).toEqual(["2:3", "3:1"]);
    });

    test("store delivers what a listener appends only after the current event reached every listener, in order", async () => {
      const store = f.make();
      withEvents(store, 1, 1);
      const first = recorder();
      const second = recorder();
      store.subscribe({ executions: "all" }, (event, json) => {
        first.listener(event, json);
        if (event.sequence === 3) store.append(idOf(1), [draft.progress(10), draft.progress(11)]);
      });
      store.subscribe({ executions: [idOf(1)], after: 2 }, second.listener);
      const stored = store.append(idOf(1), [draft.progress(1)]);
      expect(stored.map((e) => e.sequence)).toEqual([3]);
      await settled(store);
      expect(first.seen).toEqual(range(1, 3, 5));
      expect(second.seen).toEqual(range(1, 3, 5));
    });

    test("store.subscribe made inside a listener while events are appended from inside another listener: no gap, no duplicate", async () => {
      const store = f.make();
      withEvents(store, 1, 2);
      const late = recorder();
      let lateSub: Subscription | null = null;
      store.subscribe({ executions: "all" }, (event) => {
        if (event.sequence === 4) store.append(idOf(1), [draft.progress(40), draft.progress(41)]);
      });
      store.subscribe({ executions: "all" }, (event) => {
        if (event.sequence === 5 && lateSub === null) {
          lateSub = store.subscribe({ executions: [idOf(1)] }, late.listener);
          store.append(idOf(1), [draft.progress(70)]);
        }
      });
      store.append(idOf(1), [draft.progress(3), draft.progress(4)]);
      store.append(idOf(1), [draft.progress(8)]);
      await settled(store);
      // It subscribed while event 5 was delivered: at least that much was replayed (memory also
      // replays the 6 and 7 stored meanwhile; sqlite delivers them live, as what it commits next).
      expect(lateSub!.replayed).toBeGreaterThanOrEqual(5);
      expect(late.seen).toEqual(range(1, 1, 9));
    });

    test("store.subscribe whose listener appends during its own replay gets those events once, after the history", async () => {
      const store = f.make();
      withEvents(store, 1, 3);
      const r = recorder();
      const other = recorder();
      store.subscribe({ executions: [idOf(1)], after: 4 }, other.listener);
      let appended = false;
      store.subscribe({ executions: [idOf(1)] }, (event, json) => {
        r.listener(event, json);
        if (event.sequence === 2 && !appended) {
          appended = true;
          store.append(idOf(1), [draft.progress(5), draft.progress(6)]);
        }
      });
      store.append(idOf(1), [draft.progress(7)]);
      await settled(store);
      expect(r.seen).toEqual(range(1, 1, 7));
      expect(other.seen).toEqual(range(1, 5, 7));
    });

    test("store.subscribe made inside a listener to all, live, starts after what was stored before it", async () => {
      const store = f.make();
      withEvents(store, 1, 1);
      const late = recorder();
      let subscribed = false;
      store.subscribe({ executions: "all" }, (event) => {
        if (event.sequence === 3) store.append(idOf(1), [draft.progress(4)]);
        if (event.sequence === 3 && !subscribed) {
          subscribed = true;
          store.subscribe({ executions: "all" }, late.listener);
        }
      });
      store.append(idOf(1), [draft.progress(3)]);
      await settled(store);
      store.append(idOf(1), [draft.progress(5)]);
      await settled(store);
      expect(late.seen).toEqual(["1:5"]);
    });

    test("store.subscribe live replays nothing, writes nothing first, and gets each event handed out after it once", async () => {
      const store = f.make();
      withEvents(store, 1, 3);
      await settled(store);
      const other = recorder();
      store.subscribe({ executions: [idOf(1)] }, other.listener);
      // Handed out at once (memory), or once committed on a turn of its own (sqlite).
      store.append(idOf(1), [draft.progress(4)]);
      const handedOut = other.seen.includes("1:5");
      const r = recorder();
      const sub = store.subscribe({ executions: [idOf(1)], live: true }, r.listener);
      expect(sub).toMatchObject({ replayed: 0, truncated: false, missing: [] });
      store.append(idOf(1), [draft.progress(5)]);
      await settled(store);
      // Not written first: what was not handed out yet (sqlite) comes once committed, after it.
      expect(r.seen).toEqual(handedOut ? ["1:6"] : ["1:5", "1:6"]);
      expect(other.seen).toEqual(range(1, 1, 6));
    });

    test("store.subscribe live made inside a listener gets the rest of the batch being handed out, once", async () => {
      const store = f.make();
      withEvents(store, 1, 1);
      await settled(store);
      const moved = recorder();
      let subscribed = false;
      const first = store.subscribe({ executions: [idOf(1)] }, (event) => {
        // What a live connection does when it leaves a shared topic in the middle of a batch.
        if (event.sequence === 4 && !subscribed) {
          subscribed = true;
          first.unsubscribe();
          store.subscribe({ executions: [idOf(1)], live: true }, moved.listener);
        }
      });
      store.append(idOf(1), [draft.progress(3), draft.progress(4), draft.progress(5), draft.progress(6)]);
      await settled(store);
      expect(moved.seen).toEqual(["1:5", "1:6"]);
      const all = recorder();
      store.subscribe({ executions: "all", live: true }, all.listener);
      store.append(idOf(1), [draft.progress(7)]);
      await settled(store);
      expect(all.seen).toEqual(["1:7"]);
      expect(moved.seen).toEqual(["1:5", "1:6", "1:7"]);
    });

    test("store.unsubscribe inside a listener stops delivery at once, even within one batch", async () => {
      const store = f.make();
      withEvents(store, 1, 1);
      const r = recorder();
      const others = recorder();
      const sub: Subscription = store.subscribe({ executions: [idOf(1)], after: 1 }, (event, json) => {
        r.listener(event, json);
        if (event.sequence === 3) sub.unsubscribe();
      });
      store.subscribe({ executions: [idOf(1)], after: 1 }, others.listener);
      store.append(idOf(1), [draft.progress(2), draft.progress(3), draft.progress(4)]);
      store.append(idOf(1), [draft.progress(5)]);
      await settled(store);
      sub.unsubscribe();
      expect(r.seen).toEqual(range(1, 2, 3));
      expect(others.seen).toEqual(range(1, 2, 6));
    });

    test("store keeps working, and keeps delivering to the others, when a listener throws", async () => {
      const store = f.make();
      withEvents(store, 1, 1);
      const others = recorder();
      let thrown = 0;
      store.subscribe({ executions: "all" }, () => {
        thrown++;
        throw new Error("listener bug");
      });
      store.subscribe({ executions: [idOf(1)], after: 2 }, others.listener);
      const stored = store.append(idOf(1), [draft.progress(1), draft.progress(2)]);
      store.append(idOf(1), [draft.completed("succeeded")]);
      expect(stored.map((e) => e.sequence)).toEqual([3, 4]);
      await settled(store);
      expect(thrown).toBe(3);
      expect(others.seen).toEqual(range(1, 3, 5));
      expect(store.get(idOf(1))!.state).toBe("succeeded");
    });
  });
}
