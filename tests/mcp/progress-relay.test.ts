import { describe, expect, test } from "bun:test";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { EVENT_META_KEY, ProgressRelay, type ProgressParams } from "../../runtime/mcp/progress-relay.ts";

const ID = "x-20260908T010203Z-0a1b2c3d";
let sequence = 0;

function progress(current: number, total?: number | null, message?: string): ExecutionEvent {
  sequence++;
  return {
    schema_version: "1",
    event_id: `${ID}#${sequence}`,
    execution_id: ID,
    sequence,
    timestamp: new Date(0).toISOString(),
    type: "execution.progress",
    data: { current, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) },
  } as ExecutionEvent;
}

describe("ProgressRelay", () => {
  test("ProgressRelay maps current/total/message onto progress/total/message, with the event as a cursor in _meta", async () => {
    const sent: ProgressParams[] = [];
    const relay = new ProgressRelay(async (p) => void sent.push(p));
    const event = progress(2, 5, "two of five");
    relay.push(event);
    await relay.drained();
    expect(sent).toEqual([{ progress: 2, total: 5, message: "two of five", _meta: { [EVENT_META_KEY]: { execution_id: ID, sequence: event.sequence } } }]);
  });

  test("ProgressRelay continues from the last count when a counter restarts, so progress always increases", async () => {
    const sent: ProgressParams[] = [];
    const relay = new ProgressRelay(async (p) => void sent.push(p));
    for (const [current, total] of [[1, 3], [2, 3], [3, 3], [1, 2], [2, 2], [1, null]] as const) {
      relay.push(progress(current, total));
      await relay.drained();
    }
    expect(sent.map((p) => [p.progress, p.total])).toEqual([[1, 3], [2, 3], [3, 3], [4, 5], [5, 5], [6, undefined]]);
  });

  test("ProgressRelay skips a count that did not move and ignores events that are not progress", async () => {
    const sent: ProgressParams[] = [];
    const relay = new ProgressRelay(async (p) => void sent.push(p));
    relay.push(progress(4, 10, "a"));
    await relay.drained();
    relay.push(progress(4, 10, "b"));
    relay.push({ ...progress(0), type: "execution.log", data: { level: "info", message: "x" } } as ExecutionEvent);
    await relay.drained();
    expect(sent.map((p) => p.message)).toEqual(["a"]);
  });

  test("ProgressRelay keeps one notification in flight and only the newest waiting, in order, the last always delivered", async () => {
    const sent: ProgressParams[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The first send is held until the test opens the gate; the rest complete at once.
    const relay = new ProgressRelay((p) => {
      sent.push(p);
      return sent.length === 1 ? gate : Promise.resolve();
    });
    for (let i = 1; i <= 1000; i++) relay.push(progress(i, 1000));
    expect(sent.map((p) => p.progress)).toEqual([1]);
    open();
    await relay.drained();
    // Everything between the first and the newest was superseded while the first was in flight.
    expect(sent.map((p) => p.progress)).toEqual([1, 1000]);
  });

  test("ProgressRelay stops after a failed send and never leaves drained() waiting", async () => {
    let calls = 0;
    const relay = new ProgressRelay(async () => {
      calls++;
      throw new Error("stream closed");
    });
    relay.push(progress(1));
    await relay.drained();
    relay.push(progress(2));
    await relay.drained();
    expect(calls).toBe(1);
  });
});
