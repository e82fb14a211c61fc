import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { mayMoveTo, isTerminal, type ExecutionState } from "../../runtime/execution/state-machine.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { FailureError } from "../../runtime/execution/failure.ts";
import { EDGE, harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";

/** One thing that can happen to the engine, chosen by fast-check. */
type Op =
  | { kind: "start"; capability: "demo.read" | "demo.write" | "demo.timed"; session: string | null; deadline: number | null }
  | { kind: "cancel"; pick: number }
  | { kind: "force"; pick: number }
  | { kind: "progress"; pick: number; count: number }
  | { kind: "finish"; pick: number }
  | { kind: "wrongShape"; pick: number }
  | { kind: "throw"; pick: number }
  | { kind: "stopCancelled"; pick: number }
  | { kind: "loseWorker"; pick: number }
  | { kind: "advance"; ms: number };

const pick = fc.nat(20);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("start" as const),
    capability: fc.constantFrom("demo.read" as const, "demo.write" as const, "demo.timed" as const),
    session: fc.option(fc.constantFrom("a", "b"), { nil: null }),
    deadline: fc.option(fc.integer({ min: 1, max: 500 }), { nil: null }),
  }),
  fc.record({ kind: fc.constant("cancel" as const), pick }),
  fc.record({ kind: fc.constant("force" as const), pick }),
  fc.record({ kind: fc.constant("progress" as const), pick, count: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant("finish" as const), pick }),
  fc.record({ kind: fc.constant("wrongShape" as const), pick }),
  fc.record({ kind: fc.constant("throw" as const), pick }),
  fc.record({ kind: fc.constant("stopCancelled" as const), pick }),
  fc.record({ kind: fc.constant("loseWorker" as const), pick }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 400 }) }),
);

/** Replays an execution's events through mayMoveTo; throws on the first move the contract refuses. */
function checkHistory(events: ExecutionEvent[]): void {
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  expect(events[0]!.type).toBe("execution.created");
  let state: ExecutionState = "queued";
  events.forEach((event, i) => {
    let next: ExecutionState | null = null;
    if (event.type === "execution.started") next = "running";
    if (event.type === "execution.cancel_requested") next = "cancelling";
    if (event.type === "execution.completed") next = (event.data as { state: ExecutionState }).state;
    if (next) {
      if (!mayMoveTo(state, next)) throw new Error(`illegal move ${state} → ${next} at sequence ${event.sequence}`);
      state = next;
    }
    if (event.type === "execution.completed") expect(i).toBe(events.length - 1);
    if (i > 0) expect(event.type).not.toBe("execution.created");
  });
}

describe("engine (property)", () => {
  test("random engine operations never move outside mayMoveTo, keep sequences dense with completed last, and never change a terminal snapshot", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), async (ops) => {
        const h = harness({ max_concurrent: 2, max_queued: 6, grace_ms: 100 });
        const ids: string[] = [];
        const terminal = new Map<string, string>();
        const taskOf = (n: number) => {
          const live = h.pool.tasks.filter((t) => !t.settled);
          return live.length ? live[n % live.length] : undefined;
        };
        for (const o of ops) {
          try {
            switch (o.kind) {
              case "start":
                ids.push(h.engine.start({ capability: o.capability, input: {}, session_key: o.session ?? undefined, deadline_ms: o.deadline ?? undefined }, EDGE).execution.id);
                break;
              case "cancel":
                if (ids.length) h.engine.cancel(ids[o.pick % ids.length]!, EDGE);
                break;
              case "force":
                if (ids.length) h.engine.forceStop(ids[o.pick % ids.length]!);
                break;
              case "progress":
                for (let i = 0; i < o.count; i++) taskOf(o.pick)?.emit({ type: "execution.progress", data: { current: i } });
                break;
              case "finish": {
                const t = taskOf(o.pick);
                t?.succeed(t.task.capability === "demo.read" ? { n: 1 } : { ok: true });
                break;
              }
              case "wrongShape":
                taskOf(o.pick)?.succeed({ wrong: true });
                break;
              case "throw":
                taskOf(o.pick)?.end({ ok: false, error: { kind: "internal", error_class: "Error", message: "boom", stack: "Error: boom" } });
                break;
              case "stopCancelled":
                taskOf(o.pick)?.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
                break;
              case "loseWorker":
                taskOf(o.pick)?.end({ ok: false, error: { kind: "worker_lost", message: "gone" } });
                break;
              case "advance":
                h.clock.advance(o.ms);
                break;
            }
          } catch (error) {
            // Refusals are answers (capacity when the queue is full); anything else is a bug.
            if (!(error instanceof FailureError) || error.failure.error_code !== "capacity") throw error;
          }
          await flush();
          for (const [id, seen] of terminal) expect(JSON.stringify(h.store.get(id))).toBe(seen);
          for (const id of ids) {
            const snapshot = h.store.get(id)!;
            if (isTerminal(snapshot.state) && !terminal.has(id)) terminal.set(id, JSON.stringify(snapshot));
          }
        }
        // Let everything end: finish what runs, then let deadlines and graces expire.
        for (let round = 0; round < 20 && ids.some((id) => !isTerminal(h.store.get(id)!.state)); round++) {
          for (const t of h.pool.tasks) if (!t.settled) t.succeed(t.task.capability === "demo.read" ? { n: 1 } : { ok: true });
          h.clock.advance(1000);
          await flush();
        }
        for (const id of ids) {
          const snapshot = h.store.get(id)!;
          expect(isTerminal(snapshot.state)).toBe(true);
          const events = h.store.events(id, 0, 1000)!.events;
          checkHistory(events);
          expect(events.at(-1)!.type).toBe("execution.completed");
          expect(snapshot.last_sequence).toBe(events.length);
        }
        expect(h.clock.pending).toBe(0);
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});
