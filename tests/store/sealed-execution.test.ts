import { describe, expect, test } from "bun:test";
import type { EventDraft, ExecutionEvent } from "../../runtime/execution/protocol.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { initialSnapshot } from "../../runtime/store/_fold.ts";
import { keep } from "../../runtime/store/_kept-values.ts";
import { createdEvent, numberEvents } from "../../runtime/store/_numbering.ts";
import { SEAL_MAX_EVENTS, SealedExecution } from "../../runtime/store/_sealed-execution.ts";
import { RecordShapes } from "../../runtime/store/_sealed-records.ts";
import { TextSlabs } from "../../runtime/store/_text-slabs.ts";
import { createMemoryStore } from "../../runtime/store/index.ts";
import { unknownEnd, reconciled } from "./_contract-reconcile.ts";
import { allEvents, draft, idOf, limitsWith, newExecution } from "./_fixtures.ts";

const limits = limitsWith({ log_tail_lines: 3, diagnostics_retained: 2 });
const T0 = Date.UTC(2026, 8, 8, 1, 2, 3, 456);

/** A finished execution as the memory store holds it live: its snapshot and every event, batch by batch, each batch stamped `gapMs` after the one before. */
function liveExecution(batches: EventDraft[][], gapMs = 7): { snapshot: ExecutionSnapshot; events: ExecutionEvent[] } {
  const execution = newExecution(1, { input: { path: "src", list: [1, 2, { deep: "ü ✓" }] }, run_id: "run-1", session_key: "s" });
  const snapshot = initialSnapshot({ ...execution, input: keep(execution.input), actor: keep(execution.actor) }, new Date(T0).toISOString());
  const events: ExecutionEvent[] = [createdEvent(execution, snapshot)];
  batches.forEach((batch, i) => numberEvents(execution.id, snapshot, batch, new Date(T0 + (i + 1) * gapMs).toISOString(), limits, (event) => events.push(event)));
  return { snapshot, events };
}

/** Every event type with and without its optional members, texts cut and not, over several milliseconds. */
const VARIED: EventDraft[][] = [
  [draft.started()],
  [draft.log("first"), draft.step("read", "Read the files"), draft.progress(1), draft.progress(2, 10), { type: "execution.progress", data: { current: 3, total: null, message: "three", truncated: undefined } }],
  [draft.log("x".repeat(5000), "warn"), draft.stream("out ✓\n"), draft.diagnostic("one"), draft.diagnostic("two"), draft.diagnostic("three")],
  [draft.stepDone("read"), draft.step("write"), draft.stepDone("write", false, "disk full"), draft.log("second", "debug"), draft.log("third", "error")],
  [draft.completed("failed")],
];

describe("SealedExecution", () => {
  test("SealedExecution reads back a finished execution's events and snapshot exactly: members in order, timestamps, frozen values", () => {
    const storage = { shapes: new RecordShapes(), texts: new TextSlabs() };
    const { snapshot, events } = liveExecution(VARIED);
    const sealed = SealedExecution.seal(snapshot, events, storage);
    const read = sealed.events(idOf(1), 0, 1000, storage);
    expect(read.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)));
    expect(read).toEqual(events);
    const rebuilt = sealed.snapshot(idOf(1), limits, storage);
    expect(JSON.stringify(rebuilt)).toBe(JSON.stringify(snapshot));
    expect(rebuilt).toEqual(snapshot);
    // What the store kept frozen reads back frozen; everything else is the reader's to change.
    expect(Object.isFrozen(rebuilt.input)).toBe(true);
    expect(Object.isFrozen(rebuilt.failure)).toBe(true);
    expect(Object.isFrozen(read[0]!.data)).toBe(false);
    expect(Object.isFrozen((read[0]!.data as { input: object }).input)).toBe(true);
    expect(Object.isFrozen(read.at(-1)!.data)).toBe(true);
    rebuilt.steps.pop();
    expect(sealed.snapshot(idOf(1), limits, storage).steps).toHaveLength(2);
  });

  test("SealedExecution pages across its chunks: any cursor and limit answers the live events' slice", () => {
    const storage = { shapes: new RecordShapes(), texts: new TextSlabs() };
    const many = Array.from({ length: 9 }, (_, b) => Array.from({ length: 80 }, (_, i): EventDraft => (i % 3 === 0 ? draft.log(`line ${b}.${i}`) : draft.progress(b * 80 + i, 720))));
    const { snapshot, events } = liveExecution([[draft.started()], ...many, [draft.completed("succeeded", { n: 1 })]], 1);
    const sealed = SealedExecution.seal(snapshot, events, storage);
    expect(sealed.last).toBe(events.length);
    for (const [after, limit] of [[0, 1000], [0, 1], [255, 2], [256, 1], [300, 300], [511, 100], [events.length - 1, 10], [events.length, 10]] as const) {
      const expected = events.slice(after, after + limit);
      expect(sealed.events(idOf(1), after, limit, storage).map((e) => JSON.stringify(e))).toEqual(expected.map((e) => JSON.stringify(e)));
    }
    // Longer than a rebuild is worth: the snapshot is kept, and reads back the same.
    expect(JSON.stringify(sealed.snapshot(idOf(1), limits, storage))).toBe(JSON.stringify(snapshot));
  });

  test("SealedExecution of a history that lost its oldest events starts at the first retained one and keeps its snapshot", () => {
    const storage = { shapes: new RecordShapes(), texts: new TextSlabs() };
    const { snapshot, events } = liveExecution(VARIED);
    snapshot.retained_from = 6;
    snapshot.truncated = true;
    const sealed = SealedExecution.seal(snapshot, events.slice(5), storage);
    expect(sealed.first).toBe(6);
    expect(sealed.events(idOf(1), 0, 3, storage).map((e) => e.sequence)).toEqual([6, 7, 8]);
    expect(sealed.events(idOf(1), 0, 1000, storage)).toEqual(events.slice(5));
    expect(JSON.stringify(sealed.snapshot(idOf(1), limits, storage))).toBe(JSON.stringify(snapshot));
  });

  test("RecordShapes names a bounded number of shapes, and data of any other shape reads back as it was", () => {
    const shapes = new RecordShapes();
    const data = Array.from({ length: 1100 }, (_, i) => ({ [`member_${i}`]: i, same: "text" }));
    const records = data.map((d) => shapes.encode("execution.stream", d, 0));
    expect(records[0]).toEqual([0, 0, 0, "text"]);
    expect(records[1099]![0]).toBeLessThan(0);
    for (let i = 0; i < data.length; i++) expect(shapes.decode(JSON.parse(JSON.stringify(records[i])))).toEqual({ type: "execution.stream", data: data[i]! });
  });
});

describe("TextSlabs", () => {
  test("TextSlabs reads back every text it keeps, across slabs, whatever its characters or size", () => {
    const texts = new TextSlabs();
    const kept = Array.from({ length: 400 }, (_, i) => (i % 50 === 7 ? "ü✓😀".repeat(30_000) : `[${i},"text ${i} ${"x".repeat(i * 3)}"]`));
    const refs = kept.map((text) => texts.put(text));
    expect(texts.slabCount).toBeGreaterThan(1);
    refs.forEach((ref, i) => expect(texts.get(ref)).toBe(kept[i]!));
  });

  test("TextSlabs drops a slab once every text in it is released, and only then", () => {
    const texts = new TextSlabs();
    const refs = Array.from({ length: 600 }, (_, i) => texts.put(`${i}`.padEnd(1000, ".")));
    const held = texts.slabCount;
    expect(held).toBeGreaterThanOrEqual(3);
    // Releasing all but the last text of the first slab keeps it; the last one drops it.
    const firstSlab = refs.filter((ref) => Math.floor(ref / 2 ** 32) === Math.floor(refs[0]! / 2 ** 32));
    for (const ref of firstSlab.slice(0, -1)) texts.release(ref);
    expect(texts.slabCount).toBe(held);
    texts.release(firstSlab.at(-1)!);
    expect(texts.slabCount).toBe(held - 1);
    expect(texts.get(refs.at(-1)!)).toBe("599".padEnd(1000, "."));
    expect(() => texts.get(refs[0]!)).toThrow(/released already/);
  });
});

describe("memory store, sealed executions", () => {
  test("memory store answers a finished execution's events exactly as they were delivered live, page by page", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    const delivered: string[] = [];
    store.subscribe({ executions: "all" }, (event) => delivered.push(JSON.stringify(event)));
    store.create(newExecution(1));
    store.append(idOf(1), [draft.started()]);
    for (let i = 1; i <= 600; i++) store.append(idOf(1), [i % 5 === 0 ? draft.log(`line ${i}`) : draft.progress(i, 600)]);
    store.append(idOf(1), [draft.completed("succeeded")]);
    expect(allEvents(store, idOf(1)).map((e) => JSON.stringify(e))).toEqual(delivered);
    const page = store.events(idOf(1), 250, 10)!;
    expect(page.events.map((e) => JSON.stringify(e))).toEqual(delivered.slice(250, 260));
    expect(page).toMatchObject({ retained_from: 1, truncated: false, last_sequence: 603 });
    expect(store.get(idOf(1))).toMatchObject({ state: "succeeded", last_sequence: 603, progress: { current: 599, total: 600 } });
  });

  test("memory store reconciles a sealed execution whose oldest events were dropped: the history goes on from where it was", () => {
    const store = createMemoryStore({ limits: limitsWith({ events_retained: 10 }) });
    store.create(newExecution(1));
    store.append(idOf(1), [draft.started()]);
    for (let i = 1; i <= 25; i++) store.append(idOf(1), [draft.progress(i)]);
    store.append(idOf(1), [unknownEnd]);
    const before = allEvents(store, idOf(1));
    expect(before.map((e) => e.sequence)).toEqual(Array.from({ length: 10 }, (_, i) => 19 + i));
    const [event] = store.append(idOf(1), [reconciled("applied")]);
    expect(event!.sequence).toBe(29);
    expect(allEvents(store, idOf(1))).toEqual([...before.slice(1), event!]);
    expect(store.get(idOf(1))).toMatchObject({ state: "failed", last_sequence: 29, retained_from: 20, truncated: true, reconciliation: { outcome: "applied" } });
  });

  test("memory store keeps the reconciliation that makes a sealed history too long to seal again", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1));
    // created, started, the progress, the completion: SEAL_MAX_EVENTS in all, so it is sealed.
    store.append(idOf(1), [draft.started(), ...Array.from({ length: SEAL_MAX_EVENTS - 3 }, (_, i) => draft.progress(i)), unknownEnd]);
    const [event] = store.append(idOf(1), [reconciled("not_applied")]);
    expect(store.events(idOf(1), SEAL_MAX_EVENTS - 1, 10)!.events).toEqual([allEvents(store, idOf(1)).at(-2)!, event!]);
    expect(store.get(idOf(1))).toMatchObject({ last_sequence: SEAL_MAX_EVENTS + 1, reconciliation: { outcome: "not_applied" } });
  });

  test("memory store forgets finished executions with their text, and reads back the ones it keeps", () => {
    const store = createMemoryStore({ limits: limitsWith({ executions_retained: 10 }) });
    const drafts = Array.from({ length: 200 }, (_, i) => draft.log(`line ${i} `.padEnd(200, "-")));
    for (let i = 1; i <= 2000; i++) {
      store.create(newExecution(i));
      store.append(idOf(i), [draft.started(), ...drafts, draft.completed("succeeded")]);
    }
    expect(store.list().items).toHaveLength(10);
    expect(allEvents(store, idOf(2000))).toHaveLength(203);
    expect(store.events(idOf(1990), 0, 1)).toBeNull();
  });

  test(`memory store keeps a history longer than ${SEAL_MAX_EVENTS} events as it is, and reads it the same`, () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1));
    const drafts = Array.from({ length: SEAL_MAX_EVENTS + 10 }, (_, i) => draft.progress(i));
    store.append(idOf(1), [draft.started(), ...drafts, draft.completed("succeeded")]);
    expect(allEvents(store, idOf(1))).toHaveLength(SEAL_MAX_EVENTS + 13);
    expect(store.get(idOf(1))!.state).toBe("succeeded");
  });
});
