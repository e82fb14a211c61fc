import { describe, expect, test } from "bun:test";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { PendingEvents } from "../../runtime/store/_sqlite-pending.ts";
import { idOf } from "./_fixtures.ts";

/** What a chunk row reads back as: the JSON array of its records, envelopes rebuilt as the store's reads do. */
function readBack(id: string, json: Uint8Array): unknown[] {
  const records = JSON.parse(`[${new TextDecoder().decode(json)}]`) as ExecutionEvent[];
  return records.map((e) => ({ schema_version: "1", event_id: `${id}#${e.sequence}`, execution_id: id, sequence: e.sequence, timestamp: e.timestamp, type: e.type, data: e.data }));
}

function event(sequence: number, data: Record<string, unknown>): ExecutionEvent {
  const id = idOf(1);
  return { schema_version: "1", event_id: `${id}#${sequence}`, execution_id: id, sequence, timestamp: "2026-09-08T01:02:03.000Z", type: "execution.progress", data } as ExecutionEvent;
}

/** The pending buffer of the sqlite store: what a chunk holds reads back as the events given. */
export function chunkCases(): void {
  describe("sqlite store event chunks", () => {
    test("sqlite store chunks read back as the events, the same when a failed write makes them again, and hand over each event's JSON", () => {
      const pending = new PendingEvents();
      const events = Array.from({ length: 600 }, (_, i) => event(i + 1, { current: i, message: i % 7 === 0 ? `ünïcödé ${"😀".repeat(i % 5)} "quoted" \\ ${i}` : `${i} file(s)` }));
      for (const e of events.slice(0, 300)) pending.add(e);
      // A write that failed made the first chunks; more events came before the next try.
      pending.chunks(1, 256, 64 * 1024);
      for (const e of events.slice(300)) pending.add(e);
      const chunks = pending.chunks(5, 256, 64 * 1024);
      expect(pending.chunks(5, 256, 64 * 1024).map((c) => [c.first, c.last])).toEqual(chunks.map((c) => [c.first, c.last]));
      expect(chunks.map((c) => [c.first, c.last])).toEqual([
        [5, 260],
        [261, 516],
        [517, 600],
      ]);
      expect(chunks.flatMap((c) => readBack(idOf(1), c.json))).toEqual(events.slice(4));
      const taken = pending.take(true);
      expect(taken.events).toEqual(events);
      expect(taken.jsons).toEqual(events.map((e) => JSON.stringify(e)));
      expect(pending.first).toBe(Infinity);
      // A chunk stops short of the byte bound, unless one event alone is larger.
      const big = new PendingEvents();
      const large = [event(1, { message: "x".repeat(40_000) }), event(2, { message: "y".repeat(40_000) }), event(3, { message: "z" })];
      for (const e of large) big.add(e);
      expect(big.chunks(1, 256, 64 * 1024).map((c) => [c.first, c.last])).toEqual([
        [1, 1],
        [2, 3],
      ]);
      big.take(false);
      expect(big.first).toBe(Infinity);
      expect(big.chunks(1, 256, 64 * 1024)).toEqual([]);
    });
  });
}
