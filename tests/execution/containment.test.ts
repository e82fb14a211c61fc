// The engine's side of containment (docs/containment.md): direct calls have a deadline and end
// with their caller; a cancelled handler that cannot notice is stopped by force after the grace.
import { describe, expect, test } from "bun:test";
import { FailureError, type FailureDescriptor } from "../../runtime/execution/failure.ts";
import { EDGE, harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";

async function failureOf(call: Promise<unknown>): Promise<FailureDescriptor> {
  try {
    await call;
  } catch (error) {
    if (error instanceof FailureError) return error.failure;
    throw error;
  }
  throw new Error("the call succeeded");
}

describe("direct call deadline", () => {
  test("a direct call past direct_deadline_ms is cancelled, terminated grace_ms later, and fails deadline_exceeded", async () => {
    const h = harness({ direct_deadline_ms: 500, grace_ms: 100 });
    const call = failureOf(h.engine.call("demo.read", {}, EDGE));
    await flush();
    const task = h.pool.tasks[0]!;
    h.clock.advance(499);
    expect(task.cancelRequested).toBe(false);
    h.clock.advance(1);
    expect(task.cancelRequested).toBe(true);
    expect(task.terminated).toBe(false);
    h.clock.advance(100);
    expect(task.terminated).toBe(true);
    const failure = await call;
    expect(failure).toMatchObject({ error_code: "deadline_exceeded", stage: "run", outcome_certainty: "not_applied", context: { deadline_ms: 500, terminated: true } });
    // Its advice is about the bound that stopped it, not a start's deadline_ms.
    expect(failure.suggestion).toStartWith("Start it as an execution instead (docket run, POST /api/v1/executions/start), which direct_deadline_ms does not bound");
    expect(failure.suggestion).not.toContain("the start's deadline_ms");
    expect(h.clock.pending).toBe(0);
  });

  test("a capability's own timeout_ms wins over direct_deadline_ms when it is shorter", async () => {
    const h = harness({ direct_deadline_ms: 60_000, grace_ms: 10 });
    const call = failureOf(h.engine.call("demo.timed", {}, EDGE));
    await flush();
    h.clock.advance(1000);
    expect(h.pool.tasks[0]!.cancelRequested).toBe(true);
    h.pool.tasks[0]!.end({ ok: false, error: { kind: "cancelled", message: "stopped" } });
    expect(await call).toMatchObject({ error_code: "deadline_exceeded", context: { deadline_ms: 1000, terminated: false } });
  });

  test("in a direct call too, timeout_ms counts from the handler's start and direct_deadline_ms from the call: the earlier wins", async () => {
    const h = harness({ direct_deadline_ms: 3000, grace_ms: 10 });
    h.pool.beginsAtOnce = false;
    const timed = failureOf(h.engine.call("demo.timed", {}, EDGE));
    await flush();
    const task = h.pool.tasks[0]!;
    // Its worker imports the file (its top level awaits), or waits to be free of a leftover.
    h.clock.advance(1500);
    expect(task.cancelRequested).toBe(false);
    task.begin();
    h.clock.advance(999);
    expect(task.cancelRequested).toBe(false);
    h.clock.advance(1);
    expect(task.cancelRequested).toBe(true);
    task.end({ ok: false, error: { kind: "cancelled", message: "stopped" } });
    expect(await timed).toMatchObject({ error_code: "deadline_exceeded", stage: "run", context: { deadline_ms: 1000, bound: "timeout_ms", terminated: false } });
    // Begun late, its timeout_ms would end after the caller's bound: direct_deadline_ms ends it.
    const late = failureOf(h.engine.call("demo.timed", {}, EDGE));
    await flush();
    const second = h.pool.tasks[1]!;
    h.clock.advance(2500);
    second.begin();
    h.clock.advance(499);
    expect(second.cancelRequested).toBe(false);
    h.clock.advance(1);
    expect(second.cancelRequested).toBe(true);
    second.end({ ok: false, error: { kind: "cancelled", message: "stopped" } });
    expect(await late).toMatchObject({ error_code: "deadline_exceeded", context: { deadline_ms: 3000, bound: "direct_deadline_ms" } });
  });

  test("a write a deadline stopped with its effect unknown is told to be reconciled first, whichever bound stopped it", async () => {
    const h = harness({ direct_deadline_ms: 3000, grace_ms: 10 });
    const call = failureOf(h.engine.call("demo.write", {}, EDGE));
    await flush();
    h.clock.advance(3000);
    expect(h.pool.tasks[0]!.cancelRequested).toBe(true);
    h.clock.advance(10);
    const failure = await call;
    expect(failure).toMatchObject({ error_code: "deadline_exceeded", outcome_certainty: "unknown", retryability: "manual_reconcile", context: { bound: "direct_deadline_ms", terminated: true } });
    expect(failure.suggestion).toContain("executions.reconcile");
    expect(h.clock.pending).toBe(0);
  });

  test("a direct call whose caller went away is cancelled, and terminated when it does not stop", async () => {
    const h = harness({ grace_ms: 100 });
    const gone = new AbortController();
    const call = failureOf(h.engine.call("demo.read", {}, EDGE, { signal: gone.signal }));
    await flush();
    const task = h.pool.tasks[0]!;
    expect(task.cancelRequested).toBe(false);
    gone.abort();
    expect(task.cancelRequested).toBe(true);
    h.clock.advance(100);
    expect(task.terminated).toBe(true);
    expect(await call).toMatchObject({ error_code: "cancelled", context: { terminated: true } });
  });

  test("a direct call that waited for a worker past direct_deadline_ms fails at stage queue, told to call again or raise that bound", async () => {
    const h = harness({ direct_deadline_ms: 500, grace_ms: 10 });
    h.pool.beginsAtOnce = false;
    const call = failureOf(h.engine.call("demo.read", {}, EDGE));
    await flush();
    h.clock.advance(500);
    // The pool takes a task not begun back at its cancel: it never ran.
    const task = h.pool.tasks[0]!;
    expect(task.cancelRequested).toBe(true);
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled before the handler started.", never_began: true } });
    const failure = await call;
    expect(failure).toMatchObject({ error_code: "deadline_exceeded", stage: "queue", outcome_certainty: "not_applied", context: { bound: "direct_deadline_ms", deadline_ms: 500 } });
    expect(failure.suggestion).toStartWith("It did not begin within direct_deadline_ms");
    // The setting that lets one slow call not hold the others is named (foundation tester, session 44).
    expect(failure.suggestion).toContain("--direct-workers");
  });

  test("a direct call whose caller left before it began never waits for its deadline", async () => {
    const h = harness({ grace_ms: 0 });
    const call = failureOf(h.engine.call("demo.read", {}, EDGE, { signal: AbortSignal.abort() }));
    await flush();
    expect(h.pool.tasks[0]!.cancelRequested).toBe(true);
    h.clock.advance(0);
    expect((await call).error_code).toBe("cancelled");
  });

  test("a direct call that answers in time leaves no timer behind", async () => {
    const h = harness();
    const call = h.engine.call("demo.read", { n: 2 }, EDGE, { signal: new AbortController().signal });
    await flush();
    h.pool.tasks[0]!.succeed({ n: 2 });
    expect(await call).toEqual({ n: 2 });
    expect(h.clock.pending).toBe(0);
  });
});

describe("cancel grace", () => {
  test("a running execution that does not stop within grace_ms of its cancel is terminated and ends cancelled", async () => {
    const h = harness({ grace_ms: 300 });
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    expect(h.engine.cancel(id, EDGE).state).toBe("cancelling");
    expect(task.cancelRequested).toBe(true);
    h.clock.advance(299);
    expect(task.terminated).toBe(false);
    h.clock.advance(1);
    expect(task.terminated).toBe(true);
    await flush();
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", outcome_certainty: "not_applied", context: { terminated: true } } });
  });

  test("a handler that stops within the grace is never terminated", async () => {
    const h = harness({ grace_ms: 300 });
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    h.engine.cancel(id, EDGE);
    task.end({ ok: false, error: { kind: "cancelled", message: "stopped" } });
    await flush();
    h.clock.advance(300);
    expect(task.terminated).toBe(false);
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { context: { terminated: false } } });
    expect(h.clock.pending).toBe(0);
  });
});
