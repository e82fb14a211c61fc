import { describe, expect, test } from "bun:test";
import { executionAt, frameAt, LiveLog, sequenceAt } from "../../runtime/server/_live-log.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";

/** An event of execution `id` at `sequence` (only what the log reads of it). */
const event = (id: string, sequence: number, type = "execution.progress") => ({ execution_id: id, sequence, type }) as unknown as ExecutionEvent;

/** A log holding `count` frames of execution "a", frame i being "f<i>". */
function logOf(count: number): LiveLog {
  const log = new LiveLog();
  for (let i = 0; i < count; i++) log.append(event("a", i + 1), `f${i}`, `f${i}`.length);
  return log;
}

describe("LiveLog", () => {
  test("positions run across chunks; a backlog is the bytes from a position to the end", () => {
    const log = logOf(3000);
    expect(log.end).toBe(3000);
    expect([frameAt(log, 0), frameAt(log, 1023), frameAt(log, 1024), frameAt(log, 2999)]).toEqual(["f0", "f1023", "f1024", "f2999"]);
    expect(executionAt(log, 2048)).toBe("a");
    expect(sequenceAt(log, 2048)).toBe(2049);
    expect(log.bytesFrom(2990)).toBe(10 * 5);
    expect(log.bytesFrom(3000)).toBe(0);
    expect(log.bytesFrom(0)).toBe(log.bytes);
  });

  test("an execution's last event is recorded with a negative sequence: its completion, or the reconciliation an unknown outcome awaits", () => {
    const log = new LiveLog();
    const completed = (id: string, sequence: number, outcome_certainty: string) =>
      ({ execution_id: id, sequence, type: "execution.completed", data: { state: "failed", failure: { outcome_certainty } } }) as unknown as ExecutionEvent;
    log.append(completed("a", 7, "not_applied"), "x", 1);
    log.append(completed("b", 4, "unknown"), "x", 1);
    log.append(event("b", 5, "execution.reconciled"), "x", 1);
    expect([sequenceAt(log, 0), sequenceAt(log, 1), sequenceAt(log, 2)]).toEqual([-7, 4, -5]);
  });

  test("trim lets go of whole chunks and of frames before the position in the first one; a view keeps what it holds", () => {
    const log = logOf(3000);
    const view = log.view(1500);
    log.trim(2100);
    expect(log.start).toBe(2048);
    // The view still reads everything it was given, up to its end, though the log let go of it.
    expect(view.end).toBe(3000);
    expect([frameAt(view, 1500), frameAt(view, 2047), frameAt(view, 2999)]).toEqual(["f1500", "f2047", "f2999"]);
    const log2 = logOf(3000);
    log2.trim(2100);
    expect(log2.start).toBe(2100);
    expect(frameAt(log2, 2100)).toBe("f2100");
  });

  test("a caught-up member trimming after every append keeps filling one chunk: no chunk is made per event", () => {
    const log = new LiveLog();
    const chunks = new Set<unknown>();
    for (let i = 0; i < 1000; i++) {
      log.append(event("a", i + 1), `f${i}`, `f${i}`.length);
      chunks.add(log.chunkAt(i));
      expect(frameAt(log, i)).toBe(`f${i}`);
      log.trim(log.end);
      expect(log.start).toBe(log.end);
      expect(log.bytesFrom(log.end)).toBe(0);
    }
    expect(chunks.size).toBe(1);
  });

  test("after letting go of everything, appends go on where the log ends, across the chunk grid", () => {
    const log = logOf(1500);
    log.trim(1500);
    expect(log.start).toBe(1500);
    for (let i = 1500; i < 2600; i++) log.append(event("a", i + 1), `f${i}`, `f${i}`.length);
    expect([frameAt(log, 1500), frameAt(log, 2047), frameAt(log, 2048), frameAt(log, 2599)]).toEqual(["f1500", "f2047", "f2048", "f2599"]);
    expect(log.bytesFrom(2590)).toBe(10 * 5);
  });

  test("a lag names the first and last sequence lost of each execution appended after it began, and counts them", () => {
    const log = new LiveLog();
    log.append(event("a", 1), "x", 1);
    const early = log.startLag();
    log.append(event("a", 2), "x", 1);
    log.append(event("b", 5), "x", 1);
    const late = log.startLag();
    log.append(event("b", 6), "x", 1);
    log.append(event("c", 1), "x", 1);
    log.append(event("b", 7), "x", 1);
    expect(log.endLag(late)).toEqual({ dropped: 3, lost: new Map([["b", { first: 6, last: 7 }], ["c", { first: 1, last: 1 }]]) });
    expect(log.endLag(early)).toEqual({ dropped: 5, lost: new Map([["a", { first: 2, last: 2 }], ["b", { first: 5, last: 7 }], ["c", { first: 1, last: 1 }]]) });
    expect(log.epochsHeld).toBe(0);
  });

  test("a lag held for ever (a stalled connection) keeps the epochs bounded: older ones merge, counts stay each member's own", () => {
    const log = new LiveLog();
    const stalled = log.startLag();
    let last = null;
    for (let i = 0; i < 200; i++) {
      log.append(event(`x${i}`, 1), "x", 1);
      if (last !== null) log.endLag(last);
      last = log.startLag();
      // Two holders at once, so an epoch is never released before the next begins.
      log.startLag();
    }
    expect(log.epochsHeld).toBeLessThanOrEqual(33);
    log.append(event("z", 3), "x", 1);
    const { dropped, lost } = log.endLag(last!);
    expect(dropped).toBe(1);
    // A merged epoch may name more than was lost, never less.
    expect(lost.get("z")).toEqual({ first: 3, last: 3 });
    const all = log.endLag(stalled);
    expect(all.dropped).toBe(201);
    expect(all.lost.size).toBe(201);
    expect(all.lost.get("x0")).toEqual({ first: 1, last: 1 });
  });
});
