import { describe, expect, test } from "bun:test";
import type { EventDraft, ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import type { Limits } from "../../runtime/execution/limits.ts";
import { allEvents, bytes, draft, expectValidEvent, idOf, newExecution, type Fixture } from "./_fixtures.ts";

const LIMIT = 64;
/** 64 bytes exactly, ending in a two-byte character: one byte more is over. */
const FITS = "a".repeat(62) + "é";
const OVER = FITS + "b";

/** One text per limit: how a draft carries it, and where the stored event and the snapshot show it. */
const TEXTS: Array<{ limit: keyof Limits; make: (text: string) => EventDraft; read: (e: ExecutionEvent) => string }> = [
  { limit: "step_title_bytes", make: (t) => draft.step("s", t), read: (e) => (e.data as { title: string }).title },
  { limit: "step_title_bytes", make: (t) => draft.step(t, "title"), read: (e) => (e.data as { id: string }).id },
  { limit: "step_message_bytes", make: (t) => draft.stepDone("s", false, t), read: (e) => (e.data as { message: string }).message },
  { limit: "progress_message_bytes", make: (t) => ({ type: "execution.progress", data: { current: 1, message: t } }), read: (e) => (e.data as { message: string }).message },
  { limit: "diagnostic_message_bytes", make: (t) => draft.diagnostic(t), read: (e) => (e.data as { message: string }).message },
  { limit: "step_title_bytes", make: (t) => ({ type: "execution.diagnostic", data: { severity: "error", message: "m", code: t } }), read: (e) => (e.data as { code: string }).code },
  { limit: "stream_chunk_bytes", make: (t) => draft.stream(t), read: (e) => (e.data as { chunk: string }).chunk },
];

const failureWith = (message: string) => buildFailure({ error_code: "boom", stage: "run", message, request_id: "r", trace_id: "t", correlation_id: "c-0123456789abcdef" });

/** Every text bounded, every execution budgeted (docs/limits.md): each text limit at its edge, the byte budget of the events kept. */
export function textLimitCases(f: Fixture): void {
  describe("text limits and retained bytes", () => {
    for (const { limit, make, read } of TEXTS) {
      test(`store.append keeps a text of exactly ${limit} as it is and cuts one byte more, marked (${make("x").type})`, () => {
        const store = f.make({ [limit]: LIMIT });
        store.create(newExecution(1));
        store.append(idOf(1), [draft.started()]);
        const [kept, cut] = store.append(idOf(1), [make(FITS), make(OVER)]);
        expect(read(kept!)).toBe(FITS);
        expect((kept!.data as { truncated?: boolean }).truncated).toBeUndefined();
        const text = read(cut!);
        expect(bytes(text)).toBeLessThanOrEqual(LIMIT);
        expect(text.endsWith("…")).toBe(true);
        expect(text.startsWith("a".repeat(58))).toBe(true);
        expect(text.isWellFormed()).toBe(true);
        expect((cut!.data as { truncated?: boolean }).truncated).toBe(true);
        expectValidEvent(cut);
        // What a reader of the history gets is what append answered.
        expect(allEvents(store, idOf(1)).at(-1)).toEqual(cut!);
      });
    }

    test("store.append cuts a failure's message and suggestion at failure_message_bytes, and the snapshot shows them cut", () => {
      const store = f.make({ failure_message_bytes: LIMIT });
      store.create(newExecution(1));
      store.create(newExecution(2));
      store.append(idOf(1), [draft.started(), { type: "execution.completed", data: { state: "failed", failure: failureWith(FITS), duration_ms: 1 } }]);
      const failure = { ...failureWith(OVER), suggestion: "ü".repeat(40) };
      store.append(idOf(2), [draft.started(), { type: "execution.completed", data: { state: "failed", failure, duration_ms: 1 } }]);
      expect(store.get(idOf(1))!.failure!.message).toBe(FITS);
      const cut = store.get(idOf(2))!.failure!;
      expect(bytes(cut.message)).toBeLessThanOrEqual(LIMIT);
      expect(cut.message.endsWith("…")).toBe(true);
      expect(bytes(cut.suggestion)).toBeLessThanOrEqual(LIMIT);
      expect(cut.suggestion).toBe("ü".repeat(30) + "…");
      expect(cut.error_code).toBe("boom");
    });

    test("store keeps an execution of 1,000 step titles of 1 MB bounded in its events and its snapshot", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      const huge = "t".repeat(1024 * 1024);
      for (let i = 0; i < 1000; i++) store.append(idOf(1), [draft.step(`s${i}`, huge), draft.stepDone(`s${i}`, true, huge)]);
      store.append(idOf(1), [{ type: "execution.progress", data: { current: 1, message: huge } }, draft.diagnostic(huge), draft.log(huge)]);
      store.append(idOf(1), [{ type: "execution.completed", data: { state: "failed", failure: failureWith(huge), duration_ms: 1 } }]);
      const snapshot = store.get(idOf(1))!;
      expect(snapshot.steps).toHaveLength(1000);
      expect(snapshot.steps[0]!.title).toHaveLength(1021 + 1);
      // 1,000 steps of a 1 KiB title and a 4 KiB message, and a few more texts of a few KiB.
      expect(JSON.stringify(snapshot).length).toBeLessThan(6 * 1024 * 1024);
      const events = allEvents(store, idOf(1));
      expect(events).toHaveLength(2006);
      expect(JSON.stringify(events).length).toBeLessThan(8 * 1024 * 1024);
    });

    test("store.append drops the oldest events beyond events_retained_bytes, keeping the newest; retained_from moves", () => {
      const store = f.make({ events_retained_bytes: 64 * 1024 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      const line = "x".repeat(4000);
      for (let i = 0; i < 40; i++) store.append(idOf(1), [draft.log(`${i} ${line}`)]);
      const snapshot = store.get(idOf(1))!;
      expect(snapshot.last_sequence).toBe(42);
      expect(snapshot.truncated).toBe(true);
      // About 4 KiB an event: fifteen of them fit in 64 KiB, never more.
      expect(snapshot.retained_from).toBeGreaterThan(42 - 16);
      expect(snapshot.retained_from).toBeLessThan(42 - 10);
      const page = store.events(idOf(1), 0)!;
      expect(page).toMatchObject({ retained_from: snapshot.retained_from, truncated: true, last_sequence: 42 });
      expect(page.events.map((e) => e.sequence)).toEqual(Array.from({ length: 43 - snapshot.retained_from }, (_, i) => snapshot.retained_from + i));
      expect((page.events.at(-1)!.data as { message: string }).message.startsWith("39 ")).toBe(true);
      expect(JSON.stringify(page.events).length).toBeLessThanOrEqual(64 * 1024);
      // Small events after the big ones push the big ones out, oldest first.
      store.append(idOf(1), Array.from({ length: 400 }, (_, i) => draft.progress(i)));
      const after = store.events(idOf(1), 0)!;
      expect(after.events[0]!.sequence).toBe(after.retained_from);
      expect(after.events.every((e) => e.type === "execution.progress")).toBe(true);
      expect(after.events).toHaveLength(400);
    });

    test("store.append keeps the newest event even when it alone is larger than events_retained_bytes", () => {
      const store = f.make({ events_retained_bytes: 64 * 1024, stream_chunk_bytes: 1024 * 1024 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), draft.stream("s".repeat(100 * 1024))]);
      const page = store.events(idOf(1), 0)!;
      expect(page.events.map((e) => e.sequence)).toEqual([3]);
      expect(page).toMatchObject({ retained_from: 3, truncated: true });
    });
  });
}
