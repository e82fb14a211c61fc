import { describe, expect, spyOn, test } from "bun:test";
import { canonicalHash } from "../../runtime/execution/canonical-json.ts";
import { FailureError } from "../../runtime/execution/failure.ts";
import { isExecutionId } from "../../runtime/execution/execution-id.ts";
import { thrownClass, thrownMessage } from "../../runtime/execution/thrown.ts";
import type { StartResult } from "../../runtime/execution/plane.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { EDGE, harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";
import { arrivedAsJsonText, type TaskOutcome } from "../../runtime/worker/task.ts";
import { fromWorkerWire } from "../../runtime/worker/_messages.ts";
import { AUTOMATON_MAX_UNITS } from "../../runtime/execution/_secret-index.ts";

function failureOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    if (error instanceof FailureError) return error.failure;
    throw error;
  }
  throw new Error("expected a FailureError");
}

/** The snapshot of a start's answer; fails the test when only an expired identity came back. */
const snapshotOf = (result: StartResult): ExecutionSnapshot => {
  if (!("state" in result.execution)) throw new Error(`expected a snapshot, got the identity of ${result.execution.id}`);
  return result.execution;
};

const types = (h: ReturnType<typeof harness>, id: string) => h.store.events(id, 0, 1000)!.events.map((e) => e.type);
const stored = (h: ReturnType<typeof harness>, id: string) => JSON.stringify(h.store.events(id, 0, 1000));

describe("engine.start", () => {
  test("a write whose input holds a field its schema drops is refused, naming it and the one meant, and nothing is stored; a read runs", () => {
    const h = harness();
    for (const [input, named] of [
      [{ env: "prod", dryRun: true }, '"dryRun" (did you mean "dry_run"?)'],
      [{ env: "prod", target: { region: "eu", regoin: "us" } }, '"target.regoin" (did you mean "region"?)'],
      // Inside an array's items, and beside a declared field named as docket's own markers.
      [{ env: "prod", items: [{ name: "a" }, { name: "b", dryRun: true }] }, '"items.1.dryRun" (did you mean "dry_run"?)'],
      [{ env: "prod", withheld: true, dryRun: true }, '"dryRun" (did you mean "dry_run"?)'],
      // A record's key that no check keeps (valibot drops it to keep prototypes out), as JSON sends it.
      [JSON.parse('{"env":"prod","labels":{"team":"a","__proto__":"x"}}'), '"labels.__proto__" (no object of an input keeps a key named __proto__, constructor, prototype: rename it)'],
      [{ env: "prod", labels: { constructor: "x" } }, '"labels.constructor" (no object'],
    ] as const) {
      const refused = failureOf(() => h.engine.start({ capability: "demo.deploy", input }, EDGE));
      expect(refused).toMatchObject({ error_code: "invalid_input", stage: "validate", context: { reason: "unknown_fields" } });
      expect(refused.message).toContain(`its input has no field ${named}`);
    }
    expect(h.store.list().items).toEqual([]);
    // A transform, a record, a loose object's own extra field, a field of a union's second branch: all declared (or kept).
    for (const input of [
      { env: "prod", when: { y: 2024, m: 5 } },
      { env: "prod", labels: { team: "a", tier: "b" } },
      { env: "prod", extra: { a: "x", more: 1 } },
      { env: "prod", route: { host: "h", port: 1 } },
    ]) expect(snapshotOf(h.engine.start({ capability: "demo.deploy", input }, EDGE)).state).toBe("queued");
    // Declared fields only, or a read with one it does not know: it runs.
    expect(snapshotOf(h.engine.start({ capability: "demo.deploy", input: { env: "prod", dry_run: true } }, EDGE)).state).toBe("queued");
    expect(snapshotOf(h.engine.start({ capability: "demo.read", input: { n: 2, extra: 1 } }, EDGE)).state).toBe("queued");
  });

  test("executions.start answers queued at once, then runs and completes with the output on the last event", async () => {
    const h = harness();
    const started = h.engine.start({ capability: "demo.read", input: { n: 7 } }, EDGE);
    const { execution, deduplicated } = { execution: snapshotOf(started), deduplicated: started.deduplicated };
    expect(deduplicated).toBe(false);
    expect(isExecutionId(execution.id)).toBe(true);
    expect(execution.state).toBe("queued");
    expect(execution.request_id).toBe("req-1");
    expect(execution.trace_id).toBe(EDGE.trace_id);
    expect(execution.repository).toBe("/checkout");
    expect(h.pool.tasks).toHaveLength(0);
    await flush();
    const task = h.pool.of(execution.id)!;
    expect(task.task.input).toEqual({ n: 7 });
    expect(task.task.execution).toEqual({ id: execution.id, run_id: null, session_key: null, attempt: 1 });
    expect(h.store.get(execution.id)!.state).toBe("running");
    task.emit({ type: "execution.progress", data: { current: 1, total: 2 } });
    task.succeed({ n: 7 });
    await flush();
    const done = h.store.get(execution.id)!;
    expect(done.state).toBe("succeeded");
    expect(done.output).toEqual({ n: 7 });
    const events = h.store.events(execution.id)!.events;
    expect(events.map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.progress", "execution.completed"]);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
    expect(events.at(-1)!.data).toMatchObject({ state: "succeeded", output: { n: 7 } });
  });

  test("engine.start applies input defaults before the handler sees the input", async () => {
    const h = harness();
    const { execution } = h.engine.start({ capability: "demo.read", input: {} }, EDGE);
    await flush();
    expect(h.pool.of(execution.id)!.task.input).toEqual({ n: 1 });
  });

  test("engine.start refuses input that fails the schema, naming each path, and stores nothing", () => {
    const h = harness();
    const failure = failureOf(() => h.engine.start({ capability: "demo.read", input: { n: "ten" } }, EDGE));
    expect(failure.error_code).toBe("invalid_input");
    expect(failure.stage).toBe("validate");
    expect(failure.message).toContain("input.n");
    expect(failure.message).toContain('"ten"');
    expect(failure.request_id).toBe("req-1");
    expect(h.store.list().items).toHaveLength(0);
  });

  test("engine.start refuses an input larger than the limit", () => {
    const h = harness({ input_bytes: 1024 });
    const failure = failureOf(() => h.engine.start({ capability: "demo.secret", input: { user: "x".repeat(2000) } }, EDGE));
    expect(failure.error_code).toBe("invalid_input");
    expect(failure.context).toMatchObject({ reason: "too_large", limit: 1024 });
  });

  test("an output the worker found longer than output_bytes fails the execution at stage complete, naming both sizes and what to do; the task carries the limit", async () => {
    const h = harness({ output_bytes: 2048 });
    const { execution } = h.engine.start({ capability: "demo.read", input: { n: 1 } }, EDGE);
    await flush();
    const task = h.pool.of(execution.id)!;
    expect(task.task.output_bytes).toBe(2048);
    task.end({ ok: false, error: { kind: "output_too_large", message: "an output of 9000 characters of JSON, over output_bytes (2048)", bytes: 9000, limit: 2048 } });
    await flush();
    const done = h.store.get(execution.id)!;
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({
      error_code: "internal",
      stage: "complete",
      message: "demo.read returned an output of 9000 characters of JSON, more than the output_bytes limit of 2048; it was not kept.",
      context: { reason: "output_too_large", bytes: 9000, limit: 2048 },
    });
    expect(done.failure!.suggestion).toContain("ctx.artifacts.write");
  });

  test("engine.start refuses an unknown capability with not_found and a plane capability with not_runnable", () => {
    const h = harness();
    expect(failureOf(() => h.engine.start({ capability: "nope.nothing", input: {} }, EDGE)).error_code).toBe("not_found");
    expect(failureOf(() => h.engine.start({ capability: "plane.echo", input: {} }, EDGE)).error_code).toBe("not_runnable");
  });

  test("engine.start of a capability that never runs as an execution answers not_runnable before its input is looked at", () => {
    const h = harness();
    // Both input mistakes are invalid_input for a capability that may run; here correcting them would only be refused again.
    for (const input of [{ fail: "yes" }, [1, 2], { answer: "nope", extra: 1 }]) {
      expect(failureOf(() => h.engine.start({ capability: "plane.echo", input }, EDGE))).toMatchObject({ error_code: "not_runnable", context: { capability: "plane.echo" } });
    }
  });

  test("engine.start with the same run_id and input returns the original; different input is run_id_conflict", async () => {
    const h = harness();
    const first = h.engine.start({ capability: "demo.read", input: { n: 1 }, run_id: "build-42" }, EDGE);
    const again = h.engine.start({ capability: "demo.read", input: { n: 1 }, run_id: "build-42" }, EDGE);
    expect(again.deduplicated).toBe(true);
    expect(again.execution.id).toBe(first.execution.id);
    const conflict = failureOf(() => h.engine.start({ capability: "demo.read", input: { n: 2 }, run_id: "build-42" }, EDGE));
    expect(conflict.error_code).toBe("run_id_conflict");
    expect(conflict.context).toMatchObject({ run_id: "build-42", execution_id: first.execution.id });
    expect(failureOf(() => h.engine.start({ capability: "demo.write", input: {}, run_id: "build-42" }, EDGE)).error_code).toBe("run_id_conflict");
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: {}, run_id: "has space" }, EDGE)).error_code).toBe("invalid_input");
    expect(h.store.list().items).toHaveLength(1);
  });

  test("engine.start refuses an input a transform made NaN of, naming the field and what it became, never the value (tester)", () => {
    const h = harness();
    const refused = failureOf(() => h.engine.start({ capability: "demo.numeric", input: { n: "abc" } }, EDGE));
    expect(refused).toMatchObject({ error_code: "invalid_input", context: { reason: "transform_not_json", path: "input.n" } });
    expect(refused.message).toBe("Cannot start demo.numeric: a transform of its input schema made input.n NaN, which JSON writes as null; the input is kept and handed over as JSON.");
    expect(snapshotOf(h.engine.start({ capability: "demo.numeric", input: { n: "42" } }, EDGE)).state).toBe("queued");
    // Where the input has a sensitive field, a path (whose keys a transform may have made of a secret) is not named.
    const secret = failureOf(() => h.engine.start({ capability: "demo.keyed", input: { pin: "MYSECRETPIN" } }, EDGE));
    expect(secret.message).toBe("Cannot start demo.keyed: a transform of its input schema made a value NaN, which JSON writes as null; the input is kept and handed over as JSON.");
    expect(JSON.stringify(secret)).not.toContain("MYSECRETPIN");
  });

  test("engine.start's run identity is the input as sent: a default computed at each start (a timestamp) does not make the same request sent again a conflict (tester)", () => {
    const h = harness();
    const first = h.engine.start({ capability: "demo.stamped", input: { label: "a" }, run_id: "stamped-1" }, EDGE);
    const again = h.engine.start({ capability: "demo.stamped", input: { label: "a" }, run_id: "stamped-1" }, EDGE);
    expect(again).toMatchObject({ deduplicated: true, execution: { id: first.execution.id } });
    // The stored input holds the default the first start computed; the identity, what was sent.
    expect(h.store.findRun("stamped-1")!.input_hash).toBe(canonicalHash({ label: "a" }));
    // What the client sends still tells runs apart, the default's field included.
    expect(failureOf(() => h.engine.start({ capability: "demo.stamped", input: { label: "b" }, run_id: "stamped-1" }, EDGE)).error_code).toBe("run_id_conflict");
    expect(failureOf(() => h.engine.start({ capability: "demo.stamped", input: { label: "a", at: "t9" }, run_id: "stamped-1" }, EDGE)).error_code).toBe("run_id_conflict");
    // A default's value sent is another input than the field left out, in either order: the identity is what was sent.
    h.engine.start({ capability: "demo.read", input: { n: 1 }, run_id: "read-1" }, EDGE);
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: {}, run_id: "read-1" }, EDGE)).error_code).toBe("run_id_conflict");
    h.engine.start({ capability: "demo.read", input: {}, run_id: "read-2" }, EDGE);
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: { n: 1 }, run_id: "read-2" }, EDGE)).error_code).toBe("run_id_conflict");
    expect(h.store.list().items).toHaveLength(3);
  });

  test("engine.start's run identity leaves secrets out: the same run_id with another secret is that run, and the stored hash is of the redacted input (tester: pin.pay)", () => {
    const h = harness();
    const input = (user: string, token: string) => ({ user, auth: { token }, keys: [{ name: "k", key: `key-${token}` }] });
    const first = h.engine.start({ capability: "demo.secret", input: input("ada", "493817"), run_id: "payment-1" }, EDGE);
    for (const token of ["493817", "000000", "999999"]) {
      const again = h.engine.start({ capability: "demo.secret", input: input("ada", token), run_id: "payment-1" }, EDGE);
      expect({ token, deduplicated: again.deduplicated, id: again.execution.id }).toEqual({ token, deduplicated: true, id: first.execution.id });
    }
    // What is not secret still tells runs apart.
    expect(failureOf(() => h.engine.start({ capability: "demo.secret", input: input("bob", "493817"), run_id: "payment-1" }, EDGE)).error_code).toBe("run_id_conflict");
    const identity = h.store.findRun("payment-1")!;
    expect(identity.input_hash).toBe(canonicalHash({ user: "ada", auth: { token: "[redacted]" }, keys: [{ name: "k", key: "[redacted]" }] }));
    expect(identity.input_hash).not.toBe(canonicalHash(input("ada", "493817")));
    expect(h.store.list().items).toHaveLength(1);
  });

  test("engine.start answers a run_id an older docket recorded with the secret in its hash run_id_conflict, whatever secret is sent (docs/security.md)", () => {
    const h = harness();
    const input = (token: string) => ({ user: "ada", auth: { token }, keys: [] });
    h.store.recordRun({ run_id: "payment-old", execution_id: "x-20260101T000000Z-0a1b2c3d", capability: "demo.secret", input_hash: canonicalHash(input("493817")) });
    for (const token of ["493817", "000000"]) {
      expect({ token, code: failureOf(() => h.engine.start({ capability: "demo.secret", input: input(token), run_id: "payment-old" }, EDGE)).error_code }).toEqual({ token, code: "run_id_conflict" });
    }
    expect(h.store.list().items).toHaveLength(0);
  });

  test("engine.start refuses new run_ids once the identity limit is reached, while plain starts still work", () => {
    const h = harness({ run_identities: 2 });
    h.engine.start({ capability: "demo.read", input: {}, run_id: "a" }, EDGE);
    h.engine.start({ capability: "demo.read", input: {}, run_id: "b" }, EDGE);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {}, run_id: "c" }, EDGE));
    expect(refused.error_code).toBe("capacity");
    expect(h.engine.start({ capability: "demo.read", input: {}, run_id: "a" }, EDGE).deduplicated).toBe(true);
    expect(snapshotOf(h.engine.start({ capability: "demo.read", input: {} }, EDGE)).state).toBe("queued");
  });

  test("with max_queued 0, a start while every execution slot is taken is refused saying no queue is kept, not '0 executions are already waiting' (lifecycle tester, session 42)", () => {
    const h = harness({ max_concurrent: 1, max_queued: 0 });
    h.engine.start({ capability: "demo.read", input: {} }, EDGE);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE));
    expect(refused).toMatchObject({ error_code: "capacity", message: "Cannot start demo.read: the one execution this server runs at once is running, and it queues none (max_queued 0)." });
  });

  test("engine.start refuses with capacity when the queue is full, and runs at most max_concurrent at once", async () => {
    const h = harness({ max_concurrent: 1, max_queued: 2 });
    const ids = [0, 1, 2].map(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE));
    expect(refused.error_code).toBe("capacity");
    expect(refused.retryability).toBe("after_delay");
    expect(refused.stage).toBe("admit");
    await flush();
    expect(h.pool.tasks).toHaveLength(1);
    expect(ids.map((id) => h.store.get(id)!.state)).toEqual(["running", "queued", "queued"]);
    h.pool.of(ids[0]!)!.succeed({ n: 1 });
    await flush();
    expect(ids.map((id) => h.store.get(id)!.state)).toEqual(["succeeded", "running", "queued"]);
    expect(snapshotOf(h.engine.start({ capability: "demo.read", input: {} }, EDGE)).state).toBe("queued");
  });

  test("engine.start runs executions sharing a session_key one at a time in admission order", async () => {
    const h = harness({ max_concurrent: 4 });
    const a1 = h.engine.start({ capability: "demo.read", input: {}, session_key: "s" }, EDGE).execution.id;
    const a2 = h.engine.start({ capability: "demo.read", input: {}, session_key: "s" }, EDGE).execution.id;
    const b = h.engine.start({ capability: "demo.read", input: {}, session_key: "t" }, EDGE).execution.id;
    await flush();
    expect([a1, a2, b].map((id) => h.store.get(id)!.state)).toEqual(["running", "queued", "running"]);
    h.pool.of(a1)!.succeed({ n: 1 });
    await flush();
    expect(h.store.get(a2)!.state).toBe("running");
  });
});

describe("engine.cancel", () => {
  test("engine.cancel of a queued execution cancels it at once, not_applied, and it never starts", async () => {
    const h = harness({ max_concurrent: 1 });
    h.engine.start({ capability: "demo.read", input: {} }, EDGE);
    const queued = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const receipt = h.engine.cancel(queued, EDGE);
    expect(receipt).toMatchObject({ id: queued, state: "cancelled", requested: true, cancellable: true });
    const snapshot = h.store.get(queued)!;
    // Who asked is in the failure: a queued execution has no execution.cancel_requested to say it (checking tester, session 43).
    expect(snapshot.failure).toMatchObject({ error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied", context: { cancelled_by: EDGE.actor } });
    expect(types(h, queued)).toEqual(["execution.created", "execution.completed"]);
    h.pool.tasks[0]!.succeed({ n: 1 });
    await flush();
    expect(h.pool.of(queued)).toBeUndefined();
  });

  test("engine.cancel of a running cancellable execution moves it to cancelling and asks the handler", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const receipt = h.engine.cancel(id, { ...EDGE, actor: { kind: "cockpit" } });
    expect(receipt).toMatchObject({ state: "cancelling", requested: true });
    const task = h.pool.of(id)!;
    expect(task.cancelRequested).toBe(true);
    expect(h.store.events(id)!.events.at(-1)).toMatchObject({ type: "execution.cancel_requested", data: { actor: { kind: "cockpit" } } });
    expect(h.engine.cancel(id, EDGE)).toMatchObject({ state: "cancelling", requested: true });
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", outcome_certainty: "not_applied", retryability: "safe" } });
  });

  test("engine.cancel of a cancelling execution that finishes before it noticed ends succeeded", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.engine.cancel(id, EDGE);
    h.pool.of(id)!.succeed({ n: 5 });
    await flush();
    expect(h.store.get(id)).toMatchObject({ state: "succeeded", output: { n: 5 } });
  });

  test("engine.cancel of a running non-cancellable execution says so and changes nothing", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    const receipt = h.engine.cancel(id, EDGE);
    expect(receipt).toMatchObject({ state: "running", cancellable: false, requested: false });
    expect(receipt.message).toContain("not cancellable");
    expect(h.pool.of(id)!.cancelRequested).toBe(false);
    expect(types(h, id)).toEqual(["execution.created", "execution.started"]);
  });

  test("engine.cancel of a non-cancellable execution handed to a worker that has not begun its handler takes it back: cancelled at stage queue, not_applied", async () => {
    const h = harness();
    h.pool.beginsAtOnce = false;
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    const receipt = h.engine.cancel(id, EDGE);
    expect(receipt).toMatchObject({ cancellable: false, requested: true });
    expect(receipt.message).toContain("before its handler began");
    await flush();
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied", retryability: "safe" } });
    expect(types(h, id)).toEqual(["execution.created", "execution.started", "execution.cancel_requested", "execution.completed"]);
    // Once its handler began, a second one runs to its end as before.
    const begun = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(begun)!.begin();
    expect(h.engine.cancel(begun, EDGE)).toMatchObject({ state: "running", requested: false });
    expect(h.pool.of(begun)!.settled).toBe(false);
  });

  test("engine.cancel of a terminal execution answers what is true and changes nothing", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.succeed({ n: 1 });
    await flush();
    const before = JSON.stringify(h.store.get(id));
    expect(h.engine.cancel(id, EDGE)).toMatchObject({ state: "succeeded", requested: false });
    expect(JSON.stringify(h.store.get(id))).toBe(before);
  });

  test("engine.cancel refuses a malformed id before any look-up and an unknown one with not_found", () => {
    const h = harness();
    expect(failureOf(() => h.engine.cancel("x-nope", EDGE)).error_code).toBe("invalid_input");
    expect(failureOf(() => h.engine.cancel("x-20260908T010203Z-0a1b2c3d", EDGE)).error_code).toBe("not_found");
  });

  test("engine.forceStop terminates a running handler; the execution ends cancelled with the forced certainty", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.engine.forceStop(id);
    await flush();
    expect(h.pool.of(id)!.terminated).toBe(true);
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { outcome_certainty: "unknown", retryability: "manual_reconcile" } });
  });
});

describe("engine deadlines", () => {
  test("a write handler that ignores its deadline is terminated after grace and fails deadline_exceeded, unknown", async () => {
    const h = harness({ grace_ms: 200 });
    const id = h.engine.start({ capability: "demo.timed", input: {} }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    h.clock.advance(999);
    expect(task.cancelRequested).toBe(false);
    h.clock.advance(1);
    expect(task.cancelRequested).toBe(true);
    expect(task.terminated).toBe(false);
    h.clock.advance(200);
    expect(task.terminated).toBe(true);
    await flush();
    expect(h.store.get(id)).toMatchObject({
      state: "failed",
      failure: { error_code: "deadline_exceeded", outcome_certainty: "unknown", retryability: "manual_reconcile", context: { deadline_ms: 1000, terminated: true } },
    });
  });

  test("a passed deadline is an execution.cancel_requested naming the bound: the execution is cancelling, and a handler finishing within the grace succeeded (lifecycle tester, session 42)", async () => {
    const h = harness({ grace_ms: 200 });
    const id = h.engine.start({ capability: "demo.read", input: {}, deadline_ms: 100 }, EDGE).execution.id;
    await flush();
    h.clock.advance(100);
    // It stayed running, with nothing to show the deadline had passed.
    expect(h.store.get(id)!.state).toBe("cancelling");
    expect(h.store.events(id)!.events.at(-1)).toMatchObject({ type: "execution.cancel_requested", data: { actor: EDGE.actor, reason: "deadline_ms" } });
    // The snapshot says so too, which outlives the event's retention (checking tester, session 42).
    const asked = { actor: EDGE.actor, at: h.store.events(id)!.events.at(-1)!.timestamp, reason: "deadline_ms" as const };
    expect(h.store.get(id)!.cancel_requested).toEqual(asked);
    // A cancel asked now is told why the execution is cancelling already, and adds nothing.
    const receipt = h.engine.cancel(id, EDGE);
    expect(receipt).toMatchObject({ requested: true, state: "cancelling" });
    expect(receipt.message).toStartWith(`${id} passed its deadline_ms of 100 ms and was asked to stop already`);
    h.pool.of(id)!.succeed({ n: 1 });
    await flush();
    expect(types(h, id)).toEqual(["execution.created", "execution.started", "execution.cancel_requested", "execution.completed"]);
    expect(h.store.get(id)).toMatchObject({ state: "succeeded", output: { n: 1 }, cancel_requested: asked });
  });

  test("a passed timeout_ms says so too, and a cancel asked before the deadline is not followed by a second event", async () => {
    const h = harness({ grace_ms: 200 });
    const timed = h.engine.start({ capability: "demo.timed", input: {} }, EDGE).execution.id;
    const asked = h.engine.start({ capability: "demo.read", input: {}, deadline_ms: 100 }, EDGE).execution.id;
    await flush();
    h.engine.cancel(asked, EDGE);
    h.clock.advance(1000);
    expect(h.store.events(timed)!.events.at(-1)).toMatchObject({ type: "execution.cancel_requested", data: { reason: "timeout_ms" } });
    expect(types(h, asked).filter((type) => type === "execution.cancel_requested")).toHaveLength(1);
    expect(h.store.events(asked)!.events.at(-1)!.data).not.toHaveProperty("reason");
    expect(h.store.get(asked)!.cancel_requested).toEqual({ actor: EDGE.actor, at: h.store.events(asked)!.events.at(-1)!.timestamp });
    expect(h.store.get(timed)!.cancel_requested!.reason).toBe("timeout_ms");
  });

  test("a cancel asked before the deadline is why the execution ends, not the deadline passing during its grace (checking tester, session 42)", async () => {
    const h = harness({ grace_ms: 200 });
    const id = h.engine.start({ capability: "demo.read", input: {}, deadline_ms: 100 }, EDGE).execution.id;
    await flush();
    h.clock.advance(30);
    h.engine.cancel(id, EDGE);
    h.clock.advance(70);
    h.clock.advance(130);
    expect(h.pool.of(id)!.terminated).toBe(true);
    await flush();
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", context: { terminated: true } } });
    expect(types(h, id).filter((type) => type === "execution.cancel_requested")).toHaveLength(1);
  });

  test("a handler that throws its own cancellation unasked is cancelling by reason handler, and its message says nobody asked (lifecycle tester, session 42)", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    expect(h.store.events(id)!.events.at(-2)).toMatchObject({ type: "execution.cancel_requested", data: { reason: "handler" } });
    expect(h.store.get(id)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled" } });
    expect(h.store.get(id)!.failure!.message).toBe("demo.read stopped itself as cancelled (its handler threw its cancellation) without anyone asking.");
  });

  test("a read handler past deadline_ms of the start request fails deadline_exceeded with a safe retry", async () => {
    const h = harness({ grace_ms: 10 });
    const id = h.engine.start({ capability: "demo.read", input: {}, deadline_ms: 50 }, EDGE).execution.id;
    await flush();
    h.clock.advance(50);
    const task = h.pool.of(id)!;
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    expect(task.terminated).toBe(false);
    expect(h.store.get(id)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", outcome_certainty: "not_applied", retryability: "safe", context: { terminated: false } } });
    expect(h.clock.pending).toBe(0);
  });

  test("deadline_ms counts from admission: an execution still queued when it passes ends cancelled, deadline_exceeded, and never runs", async () => {
    const h = harness({ max_concurrent: 1 });
    const first = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    const second = h.engine.start({ capability: "demo.read", input: {}, deadline_ms: 100 }, EDGE).execution.id;
    await flush();
    h.clock.advance(100);
    await flush();
    expect(h.pool.of(second)).toBeUndefined();
    expect(h.store.get(second)).toMatchObject({
      state: "cancelled",
      failure: { error_code: "deadline_exceeded", stage: "queue", outcome_certainty: "not_applied", retryability: "safe", context: { deadline_ms: 100, bound: "deadline_ms" } },
    });
    expect(h.store.get(second)!.failure!.message).toContain("counted from admission");
    h.pool.of(first)!.succeed({ n: 1 });
    await flush();
    expect(h.pool.tasks.length).toBe(1);
  });

  test("deadline_ms counts the time queued: what is left of it bounds the run", async () => {
    const h = harness({ max_concurrent: 1, grace_ms: 10 });
    const first = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    const second = h.engine.start({ capability: "demo.read", input: {}, deadline_ms: 100 }, EDGE).execution.id;
    await flush();
    h.clock.advance(60);
    h.pool.of(first)!.succeed({ n: 1 });
    await flush();
    const task = h.pool.of(second)!;
    h.clock.advance(39);
    expect(task.cancelRequested).toBe(false);
    h.clock.advance(1);
    expect(task.cancelRequested).toBe(true);
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    expect(h.store.get(second)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", stage: "run", context: { bound: "deadline_ms", deadline_ms: 100 } } });
    expect(h.store.get(second)!.failure!.suggestion).toStartWith("Start it again with a larger deadline_ms");
  });

  test("a capability's timeout_ms counts from its start, not its admission; the earlier bound wins", async () => {
    const h = harness({ max_concurrent: 1, grace_ms: 10 });
    const first = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    const timed = h.engine.start({ capability: "demo.timed", input: {}, deadline_ms: 5000 }, EDGE).execution.id;
    await flush();
    h.clock.advance(500);
    h.pool.of(first)!.succeed({ n: 1 });
    await flush();
    const task = h.pool.of(timed)!;
    h.clock.advance(999);
    expect(task.cancelRequested).toBe(false);
    h.clock.advance(1);
    expect(task.cancelRequested).toBe(true);
    h.clock.advance(10);
    await flush();
    expect(h.store.get(timed)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", context: { bound: "timeout_ms", deadline_ms: 1000, terminated: true } } });
    expect(h.store.get(timed)!.failure!.message).toContain("timeout_ms of 1000 ms");
  });

  test("a capability's timeout_ms counts from when its handler begins, not when it is handed to the pool: time its worker spends importing the file is not the handler's", async () => {
    // Begun before the timer's first look, between two looks, and after several.
    for (const preparing of [400, 1000, 1030, 3700]) {
      const h = harness({ grace_ms: 10 });
      h.pool.beginsAtOnce = false;
      const id = h.engine.start({ capability: "demo.timed", input: {} }, EDGE).execution.id;
      await flush();
      const task = h.pool.of(id)!;
      h.clock.advance(preparing);
      expect(task.cancelRequested).toBe(false);
      task.begin();
      h.clock.advance(999);
      expect(task.cancelRequested).toBe(false);
      h.clock.advance(1);
      expect(task.cancelRequested).toBe(true);
      h.clock.advance(10);
      await flush();
      expect(h.store.get(id)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", stage: "run", context: { bound: "timeout_ms", deadline_ms: 1000, terminated: true } } });
      expect(h.clock.pending).toBe(0);
    }
  });

  test("a task that never begins is never failed by its timeout_ms: its file's failure is its own, and no timer is left", async () => {
    const h = harness({ grace_ms: 10 });
    h.pool.beginsAtOnce = false;
    const id = h.engine.start({ capability: "demo.timed", input: {} }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    // Waiting for a worker, or taken back from one a leftover keeps busy and handed to the next.
    h.clock.advance(10_000);
    expect(task.cancelRequested).toBe(false);
    task.end({ ok: false, error: { kind: "load_failed", cause: "threw", message: "it threw Error: no config" } });
    await flush();
    expect(h.store.get(id)).toMatchObject({ state: "failed", failure: { stage: "queue", context: { reason: "load_failed" } } });
    expect(h.clock.pending).toBe(0);
  });

  test("deadline_ms still counts from admission while the handler has not begun; timeout_ms from the begin, the earlier wins", async () => {
    const h = harness({ grace_ms: 10 });
    h.pool.beginsAtOnce = false;
    const unbegun = h.engine.start({ capability: "demo.timed", input: {}, deadline_ms: 2500 }, EDGE).execution.id;
    const begun = h.engine.start({ capability: "demo.timed", input: {}, deadline_ms: 2500 }, EDGE).execution.id;
    await flush();
    h.clock.advance(2000);
    h.pool.of(begun)!.begin();
    h.clock.advance(499);
    expect(h.pool.of(unbegun)!.cancelRequested).toBe(false);
    expect(h.pool.of(begun)!.cancelRequested).toBe(false);
    h.clock.advance(1);
    // The pool takes back a task not begun when it is cancelled.
    expect(h.pool.of(unbegun)!.cancelRequested).toBe(true);
    h.pool.of(unbegun)!.end({ ok: false, error: { kind: "cancelled", message: "Cancelled before the handler started.", never_began: true } });
    expect(h.pool.of(begun)!.cancelRequested).toBe(true);
    h.pool.of(begun)!.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    expect(h.store.get(unbegun)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", stage: "queue", outcome_certainty: "not_applied", context: { bound: "deadline_ms", deadline_ms: 2500 } } });
    expect(h.store.get(begun)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", stage: "run", context: { bound: "deadline_ms", deadline_ms: 2500 } } });
    // A timeout_ms earlier than what is left of deadline_ms wins.
    const early = h.engine.start({ capability: "demo.timed", input: {}, deadline_ms: 5000 }, EDGE).execution.id;
    await flush();
    h.clock.advance(3000);
    h.pool.of(early)!.begin();
    h.clock.advance(1000);
    expect(h.pool.of(early)!.cancelRequested).toBe(true);
    h.pool.of(early)!.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    expect(h.store.get(early)).toMatchObject({ state: "failed", failure: { error_code: "deadline_exceeded", context: { bound: "timeout_ms", deadline_ms: 1000 } } });
    expect(h.clock.pending).toBe(0);
  });

  test("engine.start refuses a deadline_ms that is not a positive whole number", () => {
    const h = harness();
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: {}, deadline_ms: -5 }, EDGE)).error_code).toBe("invalid_input");
  });
});

describe("engine failure text", () => {
  test("a CapabilityError without a suggestion gets one about the capability, not the default of docket's own refusal with that code", async () => {
    const h = harness();
    const raise = async (error: { code: string; message: string; suggestion?: string }) => {
      const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
      await flush();
      h.pool.of(id)!.end({ ok: false, error: { kind: "capability", context: {}, ...error } });
      await flush();
      return h.store.get(id)!.failure!.suggestion;
    };
    // docket's not_found means its own ids (capabilities.list); the handler's is its own account.
    expect(await raise({ code: "not_found", message: 'Manifest "nope" does not exist in the checkout' })).toBe("The message is the capability's own account of what went wrong; its documentation lists its error codes.");
    expect(await raise({ code: "unavailable", message: "the registry did not answer" })).not.toContain("process doing the work");
    expect(await raise({ code: "invalid_input", message: "the tag is taken", suggestion: "Pick another tag." })).toBe("Pick another tag.");
  });

  test("a CapabilityError's outcome_certainty is honoured for a write, and a read stays not_applied whatever it says", async () => {
    const h = harness();
    const write = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    const plain = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(write)!.end({ ok: false, error: { kind: "capability", code: "half_done", message: "sent, then failed", context: {}, outcome_certainty: "applied" } });
    h.pool.of(plain)!.end({ ok: false, error: { kind: "capability", code: "half_done", message: "?", context: {} } });
    await flush();
    expect(h.store.get(write)!.failure).toMatchObject({ error_code: "half_done", outcome_certainty: "applied" });
    expect(h.store.get(plain)!.failure).toMatchObject({ outcome_certainty: "unknown" });
    const read = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(read)!.end({ ok: false, error: { kind: "capability", code: "odd", message: "?", context: {}, outcome_certainty: "applied" } });
    await flush();
    expect(h.store.get(read)!.failure).toMatchObject({ outcome_certainty: "not_applied" });
  });

  test("a docket code a write's handler raises itself (deadline_exceeded, cancelled, unavailable) with its outcome unknown is settled by a person, never safe to retry; its own word on retrying, and a read's, stand (executions tester, session 45)", async () => {
    const h = harness();
    const failed = async (capability: string, error: Record<string, unknown>) => {
      const id = h.engine.start({ capability, input: {} }, EDGE).execution.id;
      await flush();
      h.pool.of(id)!.end({ ok: false, error: { kind: "capability", message: "pretend", context: {}, ...error } as never });
      await flush();
      return id;
    };
    const ids: string[] = [];
    for (const code of ["deadline_exceeded", "cancelled", "unavailable", "capacity"]) ids.push(await failed("demo.write", { code }));
    const own = await failed("demo.write", { code: "unavailable", retryability: "safe" });
    const read = await failed("demo.read", { code: "deadline_exceeded" });
    for (const id of ids) {
      expect(h.store.get(id)!.failure).toMatchObject({ retryability: "manual_reconcile", outcome_certainty: "unknown", suggestion: expect.stringContaining("executions.reconcile") });
    }
    expect(h.store.get(own)!.failure).toMatchObject({ retryability: "safe", outcome_certainty: "unknown" });
    expect(h.store.get(read)!.failure).toMatchObject({ retryability: "safe", outcome_certainty: "not_applied" });
  });

  test("the input's secret values go to the worker to mask, and are masked in a CapabilityError's message and context and in the log", async () => {
    const h = harness();
    const input = { user: "ada", auth: { token: "tok-123456789" }, keys: [{ name: "k", key: "key-abcdefgh" }] };
    const id = h.engine.start({ capability: "demo.secret", input }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    expect(task.task.secrets!.sort()).toEqual(["key-abcdefgh", "tok-123456789"]);
    task.end({ ok: false, error: { kind: "capability", code: "refused", message: "refused tok-123456789", context: { url: "https://u:key-abcdefgh@host" }, suggestion: "rotate tok-123456789" } });
    await flush();
    const text = stored(h, id) + JSON.stringify(h.store.get(id));
    expect(text).not.toContain("tok-123456789");
    expect(text).not.toContain("key-abcdefgh");
    expect(h.store.get(id)!.failure).toMatchObject({ message: "refused [redacted]", context: { url: "https://u:[redacted]@host" }, suggestion: "rotate [redacted]" });

    const thrown = h.engine.start({ capability: "demo.secret", input }, EDGE).execution.id;
    await flush();
    h.pool.of(thrown)!.end({ ok: false, error: { kind: "internal", error_class: "Error", message: "connect key=tok-123456789", stack: "Error: connect key=tok-123456789\n    at x" } });
    await flush();
    expect(h.logged.join("\n")).toContain("connect key=[redacted]");
    expect(h.logged.join("\n")).not.toContain("tok-123456789");
  });
});

describe("engine secrets", () => {
  test("a CapabilityError whose code holds a secret of the input fails internal, the code shown nowhere, masked in the log", async () => {
    const h = harness();
    const input = { user: "ada", auth: { token: "hunter2_code_secret" }, keys: [] };
    const id = h.engine.start({ capability: "demo.secret", input }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "capability", code: "hunter2_code_secret", message: "m", context: {} } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure).toMatchObject({ error_code: "internal", stage: "run", context: { reason: "sensitive_error_code" } });
    expect(failure.message).toContain("its handler raised a CapabilityError whose code holds a sensitive value of its input");
    expect(stored(h, id) + JSON.stringify(h.store.get(id)) + h.logged.join("\n")).not.toContain("hunter2_code_secret");
    expect(h.logged.join("\n")).toContain(`${failure.correlation_id} demo.secret ${id}: a CapabilityError whose code holds a sensitive value of its input: [redacted]: m`);

    const called = h.engine.call("demo.secret", input, EDGE).then(() => null, (refused: unknown) => refused);
    await flush();
    h.pool.tasks.at(-1)!.end({ ok: false, error: { kind: "capability", code: "err_hunter2_code_secret", message: "m", context: {} } });
    expect(JSON.stringify(await called)).not.toContain("hunter2_code_secret");
    expect(((await called) as FailureError).failure).toMatchObject({ error_code: "internal", context: { reason: "sensitive_error_code" } });
  });

  test("a declared CapabilityError code stands although a secret of the input is part of it: it is published with the capability (tester Z2)", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.secret", input: { user: "ada", auth: { token: "quota" }, keys: [] } }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "capability", code: "quota_exceeded", message: "Over the plan's quota.", context: {} } });
    await flush();
    expect(h.store.get(id)!.failure).toMatchObject({ error_code: "quota_exceeded", stage: "run" });
  });

  test("an input holding more sensitive values than docket masks is refused, naming the limit", () => {
    const h = harness();
    const keys = Array.from({ length: 101 }, (_, i) => ({ name: `k${i}`, key: `key-value-${i}` }));
    const failure = failureOf(() => h.engine.start({ capability: "demo.secret", input: { user: "ada", auth: { token: "tok-1" }, keys } }, EDGE));
    expect(failure).toMatchObject({ error_code: "invalid_input", context: { reason: "too_many_secrets", count: 102, limit: 100 } });
    expect(JSON.stringify(failure)).not.toContain("key-value-");
    expect(h.engine.start({ capability: "demo.secret", input: { user: "ada", auth: { token: "tok-1" }, keys: keys.slice(0, 99) } }, EDGE).execution).toMatchObject({ state: "queued" });
  });

  test("an input whose secrets, in every form masked, are more than docket searches texts for is refused before anything is stored; a 0.6 MB certificate bundle is not", async () => {
    const h = harness();
    const bundle = (lines: number) => Array.from({ length: lines }, (_, i) => `MIIB${String(i).padStart(8, "0")}${"Qz7kWp3mVb9tRxAbCdEfGh+/".repeat(2)}`).join("\n");
    const big = bundle(40_000);
    const failure = failureOf(() => h.engine.start({ capability: "demo.secret", input: { user: "ada", auth: { token: big }, keys: [] } }, EDGE));
    expect(failure).toMatchObject({ error_code: "invalid_input", stage: "validate", context: { reason: "secrets_too_large", limit: AUTOMATON_MAX_UNITS } });
    expect((failure.context as { units: number }).units).toBeGreaterThan(AUTOMATON_MAX_UNITS);
    expect(failure.message).toContain("more than the 4,000,000");
    expect(JSON.stringify(failure)).not.toContain("MIIB0000");
    expect(h.store.list().items).toEqual([]);
    expect(h.pool.tasks).toHaveLength(0);
    const called = await h.engine.call("demo.secret", { user: "ada", auth: { token: big }, keys: [] }, EDGE).then(
      () => null,
      (refused: FailureError) => refused.failure,
    );
    expect(called).toMatchObject({ error_code: "invalid_input", context: { reason: "secrets_too_large" } });
    expect(h.pool.tasks).toHaveLength(0);
    expect(h.engine.start({ capability: "demo.secret", input: { user: "ada", auth: { token: bundle(10_000) }, keys: [] } }, EDGE).execution).toMatchObject({ state: "queued" });
  });
});

describe("engine input check", () => {
  test("a check of the whole input that quotes a secret is answered with the secret masked, in the message and every problem", () => {
    const h = harness();
    const refused = failureOf(() => h.engine.start({ capability: "demo.guarded", input: { user: "root", token: "hunter2secretXYZ" } }, EDGE));
    expect(refused).toMatchObject({ error_code: "invalid_input", stage: "validate" });
    expect(refused.message).toContain("user root may not use token [redacted]");
    expect((refused.context as { problems: Array<{ message: string }> }).problems[0]!.message).toContain("user root may not use token [redacted] (");
    expect(JSON.stringify(refused)).not.toContain("hunter2secretXYZ");
  });

  test("a direct call refused by a check of the whole input answers with the secret masked", async () => {
    const h = harness();
    const refused = await h.engine.call("demo.guarded", { user: "root", token: "hunter2secretXYZ" }, EDGE).then(
      () => null,
      (failure: unknown) => failure,
    );
    expect(JSON.stringify(refused)).toContain("may not use token [redacted]");
    expect(JSON.stringify(refused)).not.toContain("hunter2secretXYZ");
  });

  test("a failing input holding more secrets than docket masks is refused for that, without its problems", () => {
    const h = harness();
    const keys = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, `key-value-${i}`]));
    const refused = failureOf(() => h.engine.start({ capability: "demo.guarded", input: { user: "root", token: "hunter2secretXYZ", keys } }, EDGE));
    expect(refused).toMatchObject({ error_code: "invalid_input", context: { reason: "too_many_secrets" } });
    expect(JSON.stringify(refused)).not.toContain("key-value-");
    // Secrets past the bound of what is masked: refused for that, before its problems are masked (checking tester).
    const token = Array.from({ length: 40_000 }, (_, i) => `MIIB${String(i).padStart(8, "0")}${"Qz7kWp3mVb9tRxAbCdEfGh+/".repeat(2)}`).join("\n");
    const large = failureOf(() => h.engine.start({ capability: "demo.guarded", input: { user: "root", token } }, EDGE));
    expect(large).toMatchObject({ error_code: "invalid_input", context: { reason: "secrets_too_large" } });
    expect(JSON.stringify(large)).not.toContain("MIIB0000");
  });
});

describe("engine completion", () => {
  test("a handler returning the wrong shape fails internal at stage complete", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.succeed({ n: "not a number" });
    await flush();
    const snapshot = h.store.get(id)!;
    expect(snapshot.state).toBe("failed");
    expect(snapshot.failure).toMatchObject({ error_code: "internal", stage: "complete" });
    expect(snapshot.failure!.message).toContain("output.n");
    expect(snapshot.output).toBeUndefined();
  });

  test("an output nested deeper than the store can keep fails internal at stage complete instead of leaving the execution running", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { n: deep };
    h.pool.of(id)!.succeed(deep);
    await flush();
    expect(h.store.get(id)!.failure).toMatchObject({ error_code: "internal", stage: "complete", context: { limit: 128 } });
  });

  test("a CapabilityError keeps its code, message and context", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "capability", code: "verification_failed", message: "2 files differ", context: { mismatched: 2 } } });
    await flush();
    expect(h.store.get(id)!.failure).toMatchObject({ error_code: "verification_failed", message: "2 files differ", context: { mismatched: 2 }, stage: "run" });
  });

  test("a CapabilityError's message and suggestion are made safe to print, as log lines are: no terminal escape but colour, no control character, no second line", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const hostile = "A\u001b[2J\u001b]0;pwned-title\u0007B\u0000C\n::error::forged \u001b[31mred\u001b[0m";
    h.pool.of(id)!.end({ ok: false, error: { kind: "capability", code: "boom", message: `msg ${hostile}`, suggestion: `sug ${hostile}`, context: {} } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure.message).toBe("msg ABC ⏎ ::error::forged \u001b[31mred\u001b[0m");
    expect(failure.suggestion).toBe("sug ABC ⏎ ::error::forged \u001b[31mred\u001b[0m");
  });

  test("a thrown error fails internal with a correlation id; the stack goes to the log, never to the store", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "internal", error_class: "TypeError", message: "boom\nsecond line", stack: "Error: boom\n    at handler (/runtime/inside.ts:1:1)" } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure.error_code).toBe("internal");
    expect(failure.message).toBe("demo.read failed at stage run: its handler threw a TypeError.");
    expect(failure.context).toMatchObject({ capability: "demo.read", stage: "run", error_class: "TypeError" });
    expect(stored(h, id)).not.toContain("boom");
    expect(failure.correlation_id).toMatch(/^c-[0-9a-f]{16}$/);
    expect(failure.suggestion.length).toBeGreaterThan(0);
    expect(stored(h, id)).not.toContain("inside.ts");
    expect(stored(h, id)).not.toContain("second line");
    expect(h.logged.join("\n")).toContain(failure.correlation_id);
    expect(h.logged.join("\n")).toContain("inside.ts");
  });

  test("a thrown value that is no Error is named for what it is, never \"threw a thrown string\"", async () => {
    for (const [thrown, named] of [
      ["plain text", "a string (not an Error)"],
      [42, "a number (not an Error)"],
      [{ message: "obj thrown" }, "an object (not an Error)"],
    ] as const) {
      const h = harness();
      const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
      await flush();
      h.pool.of(id)!.end({ ok: false, error: { kind: "internal", error_class: thrownClass(thrown), message: thrownMessage(thrown), stack: null } });
      await flush();
      const failure = h.store.get(id)!.failure!;
      expect(failure.message).toBe(`demo.read failed at stage run: its handler threw ${named}.`);
      expect(failure.context).toMatchObject({ error_class: named });
    }
  });

  test("a handler's process.exit(3) is said once, with what to do: it read \"stopped unexpectedly (The worker running … stopped …)\"", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "worker_lost", exit_code: 3, message: "The worker running demo.read stopped (exit code 3) before the handler finished." } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure.message).toBe("demo.read failed at stage run: the thread running its handler ended (exit code 3) before the handler finished.");
    expect(failure.context).toMatchObject({ reason: "worker_lost", exit_code: 3 });
    expect(failure.suggestion).toContain("process.exit()");
  });

  test("a task no worker could start for fails unavailable at stage queue, not_applied, even for a write, in the pool's own sentence once", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "worker_lost", never_began: true, no_worker: true, message: "No execution worker could start, so demo.write did not run." } });
    await flush();
    const done = h.store.get(id)!;
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({ error_code: "unavailable", stage: "queue", outcome_certainty: "not_applied", retryability: "after_delay", context: { reason: "no_worker" } });
    expect(done.failure!.message).toBe("No execution worker could start, so demo.write did not run.");
    expect(done.failure!.suggestion).toContain("could not start");
  });

  test("a task three workers in turn died under before reading it fails unavailable at stage queue, not_applied, even for a write: nothing ran", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "worker_lost", never_began: true, message: "3 workers in turn stopped before reading it (the last: exit code 7)" } });
    await flush();
    const done = h.store.get(id)!;
    expect(done.state).toBe("failed");
    expect(done.failure).toMatchObject({ error_code: "unavailable", stage: "queue", outcome_certainty: "not_applied", retryability: "after_delay", context: { reason: "worker_lost" } });
    expect(done.failure!.message).toBe("demo.write did not run: 3 workers in turn stopped before reading it (the last: exit code 7), before its handler began.");
  });

  test("a handler whose process.abort() docket refused says that call was refused, not only \"threw an Error EPERM\"", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "internal", error_class: "Error EPERM", refused: "process.abort()", message: "process.abort() would end the docket process", stack: null } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure.message).toBe(
      "demo.read failed at stage run: its handler called process.abort(), which docket refuses in capability code (it would end or signal the process that runs every execution); the call threw an Error EPERM.",
    );
    expect(failure).toMatchObject({ outcome_certainty: "not_applied", context: { reason: "own_process", call: "process.abort()", error_class: "Error EPERM" } });
    expect(failure.suggestion).toContain("returning its output or throwing");
  });

  test("a native addon the runtime cannot load (ERR_DLOPEN_FAILED) says so and what to use instead, not 'a bug in the capability or in docket'", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const stack = "Error: 'better-sqlite3' is not yet supported in Bun.\n    at new Database (/checkout/node_modules/better-sqlite3/lib/database.js:48:64)";
    h.pool.of(id)!.end({ ok: false, error: { kind: "internal", error_class: "Error ERR_DLOPEN_FAILED", message: "'better-sqlite3' is not yet supported in Bun.", stack } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure).toMatchObject({ error_code: "internal", stage: "run", context: { reason: "native_addon", error_class: "Error ERR_DLOPEN_FAILED" } });
    expect(failure.message).toContain("its handler loaded a native addon");
    expect(failure.suggestion).toContain("bun:sqlite for better-sqlite3");
    expect(failure.suggestion).not.toContain("a bug in");
    // The module is named in the log, under the correlation id.
    expect(h.logged.join("\n")).toContain("better-sqlite3");
  });

  test("a lost worker fails internal with the forced-stop certainty of the effect", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "worker_lost", message: "exit code 1" } });
    await flush();
    expect(h.store.get(id)!.failure).toMatchObject({ error_code: "internal", outcome_certainty: "unknown", retryability: "manual_reconcile" });
  });

  test("handler events after completion are dropped, not stored", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    const task = h.pool.of(id)!;
    task.succeed({ n: 1 });
    await flush();
    task.settled = false;
    task.emit({ type: "execution.log", data: { level: "info", message: "late" } });
    expect(types(h, id).at(-1)).toBe("execution.completed");
  });
});

describe("engine.close", () => {
  test("engine.close cancels what waits (not_applied) and ends what runs interrupted, with the certainty of its effect", async () => {
    const h = harness({ max_concurrent: 2 });
    const write = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    const read = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    const waiting = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    await h.engine.close();
    expect(h.store.get(waiting)).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied" } });
    expect(h.store.get(write)).toMatchObject({ state: "failed", failure: { error_code: "interrupted", outcome_certainty: "unknown", retryability: "manual_reconcile" } });
    expect(h.store.get(read)).toMatchObject({ state: "failed", failure: { error_code: "interrupted", outcome_certainty: "not_applied", retryability: "safe" } });
    expect(h.pool.of(waiting)).toBeUndefined();
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE));
    expect(refused.error_code).toBe("unavailable");
  });
});

describe("execution ids", () => {
  test("engine.start draws another id when the one it drew is taken (32 random bits a second meet under load)", () => {
    const h = harness();
    const first = h.engine.start({ capability: "demo.read", input: { n: 1 } }, EDGE).execution.id;
    // The clock stands still, so the same random bits give the same id again.
    const taken = Number.parseInt(first.slice(-8), 16);
    let draws = 0;
    const spy = spyOn(crypto, "getRandomValues").mockImplementation(<T extends ArrayBufferView | null>(array: T): T => {
      (array as unknown as Uint32Array)[0] = draws++ === 0 ? taken : taken ^ 1;
      return array;
    });
    try {
      const second = h.engine.start({ capability: "demo.read", input: { n: 2 } }, EDGE).execution.id;
      expect(draws).toBe(2);
      expect(second).not.toBe(first);
      expect(isExecutionId(second)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("engine.call (direct)", () => {
  test("a plane capability runs in the main thread with the plane bound to the caller", async () => {
    const h = harness();
    expect(await h.engine.call("plane.echo", {}, EDGE)).toEqual({ root: "/checkout", request_id: "req-1" });
    expect(h.pool.tasks).toHaveLength(0);
    const failure = await h.engine.call("plane.echo", { fail: true }, EDGE).then(
      () => null,
      (e) => (e as FailureError).failure,
    );
    expect(failure).toMatchObject({ error_code: "not_found", message: "Nothing here." });
  });

  test("a plane capability's output is still shaped by its output schema: unknown members dropped, a wrong type an internal failure", async () => {
    const h = harness();
    expect(await h.engine.call("plane.echo", { answer: "extra_member" }, EDGE)).toEqual({ root: "/checkout", request_id: "req-1" });
    const failure = await h.engine.call("plane.echo", { answer: "wrong_type" }, EDGE).then(
      () => null,
      (e) => (e as FailureError).failure,
    );
    expect(failure).toMatchObject({ error_code: "internal", stage: "complete" });
    expect(failure!.message).toContain("plane.echo returned an output that does not match its output schema");
  });

  test("an output that does not match its schema is an internal failure that never quotes the value returned (a token read from a file is in no input mask)", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: true, output: { n: "ghp_FILESECRET123456" } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure).toMatchObject({ error_code: "internal", stage: "complete" });
    expect(failure.message).toContain("does not match its output schema: output.n: Invalid type: Expected number (the value returned is not shown)");
    expect(stored(h, id)).not.toContain("ghp_FILESECRET123456");
  });

  test("an output JSON cannot hold as returned (a Map, a Set, an Infinity) that its schema lets through fails internal, naming where and what, in an execution and a direct call alike", async () => {
    // Before, each "succeeded" with {} or null stored in its place: v.record takes a Map as an object with no members.
    const returned = [
      [{ counts: new Map([["a", 1]]) }, "output.counts is a Map, which JSON writes as {}"],
      [{ counts: {}, tags: new Set(["x"]) }, "output.tags is a Set, which JSON writes as {}"],
      [{ counts: { a: 1 }, ratio: 1 / 0 }, "output.ratio is Infinity, which JSON writes as null"],
      [{ counts: { a: 1 }, tags: [1, 2n] }, "output.tags[1] is a BigInt, which JSON cannot write"],
      // Both at once: the handler's doing, no transform's (there is none).
      [{ counts: new Map([["a", 1]]), ratio: 1 / 0 }, "output.counts is a Map"],
    ] as const;
    for (const [output, named] of returned) {
      const h = harness();
      const id = h.engine.start({ capability: "demo.tally", input: {} }, EDGE).execution.id;
      await flush();
      h.pool.of(id)!.succeed(output);
      await flush();
      const failure = h.store.get(id)!.failure!;
      expect(h.store.get(id)!.state).toBe("failed");
      expect(failure).toMatchObject({ error_code: "internal", stage: "complete", outcome_certainty: "not_applied", context: { reason: "not_json" } });
      expect(failure.message).toContain(`demo.tally returned an output that JSON cannot hold as it is: ${named}`);
      expect(failure.message).not.toContain("transform");
      expect(failure.suggestion).toContain("Return plain JSON values");
      const call = h.engine.call("demo.tally", {}, EDGE).then(
        () => null,
        (e) => (e as FailureError).failure,
      );
      await flush();
      h.pool.tasks.at(-1)!.succeed(output);
      expect(await call).toMatchObject({ error_code: "internal", stage: "complete", message: failure.message });
    }
  });

  test("an output that arrived as JSON text is not walked again, unless it nests too deep or holds a number JSON.parse makes Infinity of: then it fails as before", async () => {
    const arrived = (output: string) => (fromWorkerWire(`{"type":"outcome","id":1,"outcome":{"ok":true,"output":${output}}}`) as { outcome: TaskOutcome }).outcome;
    const cases = [
      [`{"counts":{},"tags":${"[".repeat(200)}1${"]".repeat(200)}}`, { reason: "not_json", limit: 128 }],
      [`{"counts":{"a":1},"ratio":1e309}`, { reason: "not_json", path: "output.ratio" }],
      [`{"counts":{"a":1},"ratio":${"9".repeat(400)}}`, { reason: "not_json", path: "output.ratio" }],
    ] as const;
    for (const [output, context] of cases) {
      const h = harness();
      const id = h.engine.start({ capability: "demo.tally", input: {} }, EDGE).execution.id;
      await flush();
      const outcome = arrived(output);
      expect(arrivedAsJsonText(outcome)).toBe(false);
      h.pool.of(id)!.end(outcome);
      await flush();
      expect(h.store.get(id)!).toMatchObject({ state: "failed", failure: { error_code: "internal", stage: "complete", context } });
    }
    const h = harness();
    const id = h.engine.start({ capability: "demo.tally", input: {} }, EDGE).execution.id;
    await flush();
    // Nested as deep as an output may, strings holding brackets, quotes and an "e" after digits.
    const outcome = arrived(`{"counts":{"a":1},"tags":[{"b":[null,"x\\\"]1e5[",true,-2.5]},${"[".repeat(126)}"}"${"]".repeat(126)}]}`);
    expect(arrivedAsJsonText(outcome)).toBe(true);
    h.pool.of(id)!.end(outcome);
    await flush();
    expect(h.store.get(id)!).toMatchObject({ state: "succeeded", output: { counts: { a: 1 } } });
  });

  test("an output its worker could not copy (a function, a Symbol) fails as an output JSON cannot hold, at stage complete, naming where", async () => {
    const h = harness();
    const id = h.engine.start({ capability: "demo.tally", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(id)!.end({ ok: false, error: { kind: "output_not_json", path: "output.tags.callback", what: "a function, which JSON leaves out", message: "output.tags.callback is a function, which JSON leaves out" } });
    await flush();
    const failure = h.store.get(id)!.failure!;
    expect(failure).toMatchObject({ error_code: "internal", stage: "complete", context: { reason: "not_json", path: "output.tags.callback" } });
    expect(failure.message).toBe("demo.tally returned an output that JSON cannot hold as it is: output.tags.callback is a function, which JSON leaves out.");
    expect(failure.suggestion).toContain("Return plain JSON values");
  });

  test("a work capability runs on the direct lane, with no identity and no store entry", async () => {
    const h = harness();
    const call = h.engine.call("demo.read", { n: 3 }, EDGE);
    await flush();
    const task = h.pool.tasks[0]!;
    expect(task.task.execution).toBeNull();
    expect(task.task.artifacts_dir).toBeNull();
    task.succeed({ n: 3 });
    expect(await call).toEqual({ n: 3 });
    expect(h.store.list().items).toHaveLength(0);
  });

  test("a cached capability answers from the cache within its ttl and runs again after", async () => {
    const h = harness();
    const first = h.engine.call("demo.cached", { q: "a" }, EDGE);
    await flush();
    h.pool.tasks[0]!.succeed({ q: "a" });
    expect(await first).toEqual({ q: "a" });
    expect(await h.engine.call("demo.cached", { q: "a" }, EDGE)).toEqual({ q: "a" });
    expect(h.pool.tasks).toHaveLength(1);
    h.clock.advance(1001);
    const third = h.engine.call("demo.cached", { q: "a" }, EDGE);
    await flush();
    expect(h.pool.tasks).toHaveLength(2);
    h.pool.tasks[1]!.succeed({ q: "a" });
    await third;
  });

  test("a cached capability called with a secret is neither answered from the cache nor kept in it; without one it is cached (tester: t.cached)", async () => {
    const h = harness();
    const input = { account: "acme", token: "victimToken99" };
    const answered = async (value: unknown, runs: boolean) => {
      const call = h.engine.call("demo.cached-secret", value, EDGE);
      await flush();
      if (runs) h.pool.tasks.at(-1)!.succeed({ balance: 42 });
      return call;
    };
    expect(await answered(input, true)).toEqual({ balance: 42 });
    // The same secret again runs again: how fast the answer came would tell a right guess from a wrong one.
    expect(await answered(input, true)).toEqual({ balance: 42 });
    expect(await answered({ ...input, token: "wrongGuess11" }, true)).toEqual({ balance: 42 });
    expect(h.pool.tasks).toHaveLength(3);
    expect(await answered({ account: "acme" }, true)).toEqual({ balance: 42 });
    expect(await answered({ account: "acme" }, false)).toEqual({ balance: 42 });
    expect(h.pool.tasks).toHaveLength(4);
  });

  test("a cached capability started as an execution runs for real", async () => {
    const h = harness();
    h.engine.start({ capability: "demo.cached", input: { q: "a" } }, EDGE);
    h.engine.start({ capability: "demo.cached", input: { q: "a" } }, EDGE);
    await flush();
    expect(h.pool.tasks).toHaveLength(2);
  });

  test("a direct call with bad input is invalid_input and runs nothing", async () => {
    const h = harness();
    const failure = await h.engine.call("demo.read", { n: "x" }, EDGE).then(
      () => null,
      (e) => (e as FailureError).failure,
    );
    expect(failure?.error_code).toBe("invalid_input");
    expect(h.pool.tasks).toHaveLength(0);
  });
});
