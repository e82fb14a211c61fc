import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { createEngine } from "../../runtime/execution/engine.ts";
import { FailureError } from "../../runtime/execution/failure.ts";
import { resolveLimits, type Limits } from "../../runtime/execution/limits.ts";
import { MEASURE_EVERY_MS, NEAR_MEASURE_EVERY_MS } from "../../runtime/execution/storage-gate.ts";
import type { ExecutionReport } from "../../runtime/execution/report-protocol.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import type { StorageFault } from "../../runtime/store/store.ts";
import executionsStart from "../../capabilities/executions.start.ts";
import { ManualClock } from "../_support/manual-clock.ts";
import { catalog } from "../_support/registered.ts";
import { EDGE, harness, TEST_CAPABILITIES } from "./_support/harness.ts";
import { FakePool, flush } from "./_support/fake-pool.ts";

const MIB = 1024 * 1024;
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** An engine over a memory store whose storage fault the test sets, in a checkout of its own. */
function faultable(overrides: Partial<Limits> = {}, storedBytes = () => 0, expireFails = false) {
  const root = mkdtempSync(join(tmpdir(), "docket-storage-"));
  roots.push(root);
  const limits = resolveLimits({ overrides });
  const clock = new ManualClock();
  const memory = createMemoryStore({ limits, clock: () => clock.now() });
  let fault: StorageFault | null = null;
  const store = { ...memory, storageFault: () => fault };
  const pool = new FakePool();
  let expired = 0;
  // Plenty free unless the test says otherwise.
  let free: number | null = 100 * 1024 * MIB;
  const engine = createEngine({
    registry: catalog(Object.values(TEST_CAPABILITIES)),
    store,
    pool,
    limits,
    root,
    storeKind: "memory",
    clock,
    log: () => undefined,
    storedBytes,
    expireDetails: () => {
      expired++;
      if (expireFails) throw new Error("database or disk is full");
    },
    diskFree: () => free,
  });
  return {
    engine,
    store,
    pool,
    clock,
    root,
    expiries: () => expired,
    setFault: (next: StorageFault | null) => (fault = next),
    setFree: (bytes: number | null) => (free = bytes),
  };
}

function failureOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    if (error instanceof FailureError) return error.failure;
    throw error;
  }
  throw new Error("expected a FailureError");
}

const FAULT: StorageFault = { reason: "database or disk is full", since: "2026-12-01T05:00:00.000Z" };

describe("storage admission", () => {
  test("executions.start is refused unavailable while the store cannot write, and admitted again once it can", async () => {
    const h = faultable();
    const before = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    h.setFault(FAULT);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE));
    expect(refused).toMatchObject({ error_code: "unavailable", stage: "admit", retryability: "after_delay", context: { reason: "storage_fault", since: FAULT.since } });
    expect(refused.context.retry_after_s).toBeGreaterThan(0);
    expect(refused.message).toContain("Cannot start demo.read: the execution store cannot write");
    // The store's own words may name a path: they go to health.report, never into an answer.
    expect(JSON.stringify(refused)).not.toContain(FAULT.reason);
    // Refused before anything is kept: no execution, no run identity.
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: {}, run_id: "r-1" }, EDGE)).error_code).toBe("unavailable");
    expect(h.store.findRun("r-1")).toBeNull();
    expect(h.store.list().items.map((s) => s.id)).toEqual([before]);
    // What was accepted before goes on.
    await flush();
    h.pool.of(before)!.succeed({ ok: true });
    await flush();
    expect(h.store.get(before)!.state).toBe("succeeded");
    expect(h.engine.hostFacts().store.fault).toEqual(FAULT);

    h.setFault(null);
    expect(h.engine.start({ capability: "demo.read", input: {}, run_id: "r-1" }, EDGE).deduplicated).toBe(false);
    expect(h.engine.hostFacts().store.fault).toBeNull();
  });

  test("while the store cannot write, a cancel or reconcile refusal that names a state not written yet is unavailable, never that state (tester V)", async () => {
    const h = faultable();
    const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    const written = h.store.get(id)!;
    expect(written.state).toBe("running");
    // The disk fills: from now on the file keeps what it had, and nothing waiting is acknowledged.
    h.setFault(FAULT);
    Object.assign(h.store, { get: (x: string) => (x === id ? written : null), durable: () => new Promise<void>(() => {}) });
    h.pool.of(id)!.succeed({ ok: true });
    await flush();
    expect(h.store.current(id)!.state).toBe("succeeded");

    const plane = h.engine.handle(EDGE);
    const refusal = (promise: Promise<unknown>) => promise.then(() => null, (error) => (error as FailureError).failure);
    const cancelled = await refusal(plane.cancel(id));
    expect(cancelled).toMatchObject({ error_code: "unavailable", retryability: "after_delay", context: { reason: "storage_fault" } });
    expect(cancelled!.message).toContain(`Cannot cancel ${id} now: the execution store cannot write at the moment`);
    expect(JSON.stringify(cancelled)).not.toContain("succeeded");
    expect(JSON.stringify(cancelled)).not.toContain(FAULT.reason);
    const reconciled = await refusal(plane.reconcile({ id, outcome: "applied", note: "checked" }));
    expect(reconciled).toMatchObject({ error_code: "unavailable", context: { reason: "storage_fault" } });
    expect(JSON.stringify(reconciled)).not.toContain("outcome applied");
    // A malformed id is refused at once all the same: it depends on no state.
    expect(await refusal(plane.reconcile({ id: "nope", outcome: "applied", note: "x" }))).toMatchObject({ error_code: "invalid_input" });
  });

  test("executions.report refuses a new run while the store cannot write, and still hears a run it already holds", async () => {
    const run = harness();
    const edge = { actor: { kind: "cli" as const, pid: 77 }, request_id: "r", trace_id: "0af7651916cd43dd8448eb211c80319c" };
    const a = run.engine.start({ capability: "demo.read", input: {} }, edge).execution.id;
    const b = run.engine.start({ capability: "demo.read", input: {} }, edge).execution.id;
    const reportOf = (id: string): ExecutionReport => {
      const s = run.store.get(id)!;
      return { id, pid: 77, capability: s.capability, input: s.input, effect: s.effect, cancellable: s.cancellable, run_id: null, session_key: null, request_id: s.request_id, trace_id: s.trace_id, events: run.store.events(id, 0, 1000)!.events };
    };
    const h = faultable();
    await h.engine.handle(EDGE).report(reportOf(a));
    await flush();
    run.pool.of(a)!.succeed({ n: 1 });
    await flush();
    h.setFault(FAULT);
    expect(await h.engine.handle(EDGE).report(reportOf(a))).toMatchObject({ state: "succeeded" });
    const refused = failureOf(() => h.engine.handle(EDGE).report(reportOf(b)));
    expect(refused).toMatchObject({ error_code: "unavailable", stage: "admit", context: { reason: "storage_fault" } });
    expect(h.store.get(b)).toBeNull();
    h.setFault(null);
    expect(await h.engine.handle(EDGE).report(reportOf(b))).toMatchObject({ id: b, applied: 2, state: "running" });
  });

  test("executions.report refuses a new run over the storage budget with capacity, as a start is, and still hears a run it already holds", async () => {
    const run = harness();
    const edge = { actor: { kind: "cli" as const, pid: 78 }, request_id: "r", trace_id: "0af7651916cd43dd8448eb211c80319c" };
    const a = run.engine.start({ capability: "demo.read", input: {} }, edge).execution.id;
    const b = run.engine.start({ capability: "demo.read", input: {} }, edge).execution.id;
    const reportOf = (id: string): ExecutionReport => {
      const s = run.store.get(id)!;
      return { id, pid: 78, capability: s.capability, input: s.input, effect: s.effect, cancellable: s.cancellable, run_id: "rid-b", session_key: null, request_id: s.request_id, trace_id: s.trace_id, input_hash: "hash-b", events: run.store.events(id, 0, 1000)!.events };
    };
    let state = 0;
    const h = faultable({ storage_budget_bytes: MIB }, () => state);
    await h.engine.handle(EDGE).report({ ...reportOf(a), run_id: null, input_hash: undefined });
    state = 95 * MIB;
    h.clock.advance(MEASURE_EVERY_MS);
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE))).toMatchObject({ error_code: "capacity", context: { reason: "storage_budget" } });
    const refused = failureOf(() => h.engine.handle(EDGE).report(reportOf(b)));
    expect(refused).toMatchObject({ error_code: "capacity", stage: "admit", retryability: "after_delay", context: { reason: "storage_budget", bytes: 95 * MIB, limit: MIB } });
    expect(refused.message).toContain(`Cannot take the report of ${b}: .docket/ holds 95 MiB, over its storage budget of 1 MiB`);
    // Nothing of it kept: neither the execution nor its run_id.
    expect(h.store.get(b)).toBeNull();
    expect(h.store.findRun("rid-b")).toBeNull();
    await flush();
    run.pool.of(a)!.succeed({ n: 1 });
    await flush();
    expect(await h.engine.handle(EDGE).report({ ...reportOf(a), run_id: null, input_hash: undefined })).toMatchObject({ state: "succeeded" });
  });

  test("executions.start over the storage budget is refused with capacity naming the budget, after expiry, until space is released", () => {
    let state = 0;
    const h = faultable({ storage_budget_bytes: 2 * MIB }, () => state);
    const dir = join(h.root, ".docket", "artifacts", "x-20261201T050000Z-0000000a");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "big.bin"), Buffer.alloc(MIB / 2));
    state = MIB;
    expect(h.engine.start({ capability: "demo.read", input: {} }, EDGE).deduplicated).toBe(false);
    expect(h.expiries()).toBe(0);
    // The measure is kept for a few seconds: a new one only once they passed.
    writeFileSync(join(dir, "more.bin"), Buffer.alloc(MIB));
    expect(h.engine.start({ capability: "demo.read", input: {} }, EDGE).deduplicated).toBe(false);
    h.clock.advance(MEASURE_EVERY_MS);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE));
    expect(refused).toMatchObject({ error_code: "capacity", stage: "admit", context: { reason: "storage_budget", bytes: 2.5 * MIB, limit: 2 * MIB } });
    expect(refused.message).toBe(`Cannot start demo.read: .docket/ holds 2.5 MiB, over its storage budget of 2 MiB (storage_budget_bytes).`);
    expect(refused.suggestion).toContain("executions.release");
    expect(refused.suggestion).toContain("DOCKET_STORAGE_BUDGET_BYTES");
    // Over the budget, what may expire expired before the measure that refused.
    expect(h.expiries()).toBe(1);
    expect(h.engine.hostFacts().store.storage).toEqual({ bytes: 2.5 * MIB, budget_bytes: 2 * MIB, over_budget: true, disk_free_bytes: 100 * 1024 * MIB, disk_free_floor_bytes: 192 * MIB, disk_low: false });
    expect(h.store.list().items).toHaveLength(2);

    rmSync(join(dir, "more.bin"));
    h.clock.advance(MEASURE_EVERY_MS);
    expect(h.engine.start({ capability: "demo.read", input: {} }, EDGE).deduplicated).toBe(false);
    expect(h.engine.hostFacts().store.storage).toMatchObject({ bytes: 1.5 * MIB, over_budget: false });
  });
});

describe("storage admission near the budget", () => {
  test("within a tenth of the budget, .docket/ is measured every NEAR_MEASURE_EVERY_MS instead of every MEASURE_EVERY_MS, so a busy server overshoots it by little", () => {
    let state = MIB;
    const h = faultable({ storage_budget_bytes: 10 * MIB }, () => state);
    const start = () => h.engine.start({ capability: "demo.read", input: {} }, EDGE);
    // Far from the budget: a measure stands for MEASURE_EVERY_MS, whatever is written meanwhile.
    expect(start().deduplicated).toBe(false);
    state = 12 * MIB;
    h.clock.advance(NEAR_MEASURE_EVERY_MS);
    expect(start().deduplicated).toBe(false);
    h.clock.advance(MEASURE_EVERY_MS - NEAR_MEASURE_EVERY_MS);
    expect(failureOf(start)).toMatchObject({ error_code: "capacity", context: { bytes: 12 * MIB } });
    // Near it (9.5 of 10 MiB): the next measure comes after NEAR_MEASURE_EVERY_MS.
    state = 9.5 * MIB;
    h.clock.advance(MEASURE_EVERY_MS);
    expect(start().deduplicated).toBe(false);
    state = 10.5 * MIB;
    h.clock.advance(NEAR_MEASURE_EVERY_MS - 1);
    expect(start().deduplicated).toBe(false);
    h.clock.advance(1);
    expect(failureOf(start)).toMatchObject({ error_code: "capacity", context: { bytes: 10.5 * MIB } });
  });
});

describe("storage admission under the disk's free-space floor", () => {
  test("a disk with less free than disk_free_floor_bytes refuses new executions unavailable before any write of theirs can fail, and admits them again once space is freed", async () => {
    const h = faultable({ disk_free_floor_bytes: 32 * MIB });
    const before = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    h.setFree(20 * MIB);
    h.clock.advance(MEASURE_EVERY_MS);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {}, run_id: "r-low" }, EDGE));
    expect(refused).toMatchObject({ error_code: "unavailable", stage: "admit", retryability: "after_delay", context: { reason: "disk_low", free_bytes: 20 * MIB, floor_bytes: 32 * MIB, retry_after_s: 10 } });
    expect(refused.message).toBe("Cannot start demo.read: the disk holding .docket/ has 20 MiB free, under the 32 MiB it must keep (disk_free_floor_bytes), so no new execution is admitted until space is freed; what was accepted before is kept.");
    expect(refused.suggestion).toContain("DOCKET_DISK_FREE_FLOOR_BYTES");
    // Refused before anything is kept, and what was accepted goes on.
    expect(h.store.findRun("r-low")).toBeNull();
    expect(h.store.list().items.map((s) => s.id)).toEqual([before]);
    await flush();
    h.pool.of(before)!.succeed({ ok: true });
    await flush();
    expect(h.store.get(before)!.state).toBe("succeeded");
    expect(h.engine.hostFacts().store.storage).toMatchObject({ disk_free_bytes: 20 * MIB, disk_free_floor_bytes: 32 * MIB, disk_low: true, over_budget: false });
    // Near the floor it is measured every NEAR_MEASURE_EVERY_MS: freed space is seen within it.
    h.setFree(200 * MIB);
    h.clock.advance(NEAR_MEASURE_EVERY_MS);
    expect(h.engine.start({ capability: "demo.read", input: {}, run_id: "r-low" }, EDGE).deduplicated).toBe(false);
    expect(h.engine.hostFacts().store.storage).toMatchObject({ disk_free_bytes: 200 * MIB, disk_low: false });
  });

  test("free space is read on every admission below twice the floor, with the budget's measure (every MEASURE_EVERY_MS) above it", () => {
    const h = faultable({ disk_free_floor_bytes: 10 * MIB });
    const start = () => h.engine.start({ capability: "demo.read", input: {} }, EDGE);
    h.setFree(100 * MIB);
    expect(start().deduplicated).toBe(false);
    // Far from the floor: a measure stands for MEASURE_EVERY_MS.
    h.setFree(5 * MIB);
    h.clock.advance(MEASURE_EVERY_MS - 1);
    expect(start().deduplicated).toBe(false);
    h.clock.advance(1);
    expect(failureOf(start).context).toMatchObject({ reason: "disk_low", free_bytes: 5 * MIB });
    // Near it, no time needs to pass: each admission reads what is free, both ways.
    h.setFree(15 * MIB);
    expect(start().deduplicated).toBe(false);
    h.setFree(9 * MIB);
    expect(failureOf(start).context).toMatchObject({ reason: "disk_low", free_bytes: 9 * MIB });
    h.setFree(19 * MIB);
    expect(start().deduplicated).toBe(false);
    // 30 MiB is not near: the next read comes with the next measure.
    h.setFree(30 * MIB);
    expect(start().deduplicated).toBe(false);
    h.setFree(9 * MIB);
    expect(start().deduplicated).toBe(false);
    h.clock.advance(MEASURE_EVERY_MS);
    expect(failureOf(start).context).toMatchObject({ reason: "disk_low", free_bytes: 9 * MIB });
  });

  test("no floor (0), or a file system that cannot say what is free, never refuses on free space", () => {
    const off = faultable({ disk_free_floor_bytes: 0 });
    off.setFree(0);
    expect(off.engine.start({ capability: "demo.read", input: {} }, EDGE).deduplicated).toBe(false);
    expect(off.engine.hostFacts().store.storage).toMatchObject({ disk_free_bytes: 0, disk_free_floor_bytes: 0, disk_low: false });
    const unknown = faultable();
    unknown.setFree(null);
    expect(unknown.engine.start({ capability: "demo.read", input: {} }, EDGE).deduplicated).toBe(false);
    expect(unknown.engine.hostFacts().store.storage).toMatchObject({ disk_free_bytes: null, disk_low: false });
  });
});

describe("storage admission when expiry itself fails", () => {
  test("executions.start over the budget is still refused with capacity when the expiry before the measure cannot write", () => {
    const h = faultable({ storage_budget_bytes: 1024 * 1024 }, () => 2 * MIB, true);
    const refused = failureOf(() => h.engine.start({ capability: "demo.read", input: {} }, EDGE));
    expect(refused).toMatchObject({ error_code: "capacity", context: { reason: "storage_budget", bytes: 2 * MIB } });
    expect(h.expiries()).toBe(1);
  });
});

describe("run identities outlive details", () => {
  test("executions.start with the run_id of a forgotten execution answers a deduplicated start with details_expired, never a second run", async () => {
    const h = harness({ executions_retained: 1, max_queued: 10 });
    const first = h.engine.start({ capability: "demo.write", input: {}, run_id: "deploy-1" }, EDGE).execution.id;
    await flush();
    h.pool.of(first)!.succeed({ ok: true });
    await flush();
    h.engine.start({ capability: "demo.read", input: {} }, EDGE);
    expect(h.store.get(first)).toBeNull();

    const again = h.engine.start({ capability: "demo.write", input: {}, run_id: "deploy-1" }, EDGE);
    expect(again).toEqual({
      execution: { id: first, capability: "demo.write", run_id: "deploy-1", details_expired: true, links: expect.objectContaining({ self: `/api/v1/executions/get?id=${first}` }) },
      deduplicated: true,
      details_expired: true,
    });
    // What executions.start declares it answers: the answer validates against its output schema.
    expect(v.safeParse(executionsStart.output, again).success).toBe(true);
    expect(h.store.list().items).toHaveLength(1);
    // Another input under the same run_id is still a conflict.
    expect(failureOf(() => h.engine.start({ capability: "demo.read", input: {}, run_id: "deploy-1" }, EDGE)).error_code).toBe("run_id_conflict");
  });

  test("executions.start with the run_id of a held execution answers it whole, without details_expired", () => {
    const h = harness();
    const first = h.engine.start({ capability: "demo.write", input: {}, run_id: "deploy-2" }, EDGE);
    const again = h.engine.start({ capability: "demo.write", input: {}, run_id: "deploy-2" }, EDGE);
    expect(again.deduplicated).toBe(true);
    expect(again.details_expired).toBeUndefined();
    expect(again.execution).toMatchObject({ id: first.execution.id, state: "queued" });
    expect(v.safeParse(executionsStart.output, again).success).toBe(true);
  });

  test("executions.start with the run_id of an execution whose details expired answers its expired snapshot, with details_expired", async () => {
    const dir = mkdtempSync(join(tmpdir(), "docket-identity-"));
    roots.push(dir);
    const limits = resolveLimits({ overrides: { details_retention_ms: 1000 } });
    const clock = new ManualClock();
    const store = createSqliteStore({ path: join(dir, "state.db"), limits, clock: () => clock.now() });
    const pool = new FakePool();
    const engine = createEngine({ registry: catalog(Object.values(TEST_CAPABILITIES)), store, pool, limits, root: dir, storeKind: "sqlite", clock, log: () => undefined });
    try {
      const first = engine.start({ capability: "demo.write", input: {}, run_id: "release-7" }, EDGE).execution.id;
      await flush();
      pool.of(first)!.succeed({ ok: true });
      await flush();
      clock.advance(2000);
      expect(store.expireDetails()).toBe(1);
      const again = engine.start({ capability: "demo.write", input: {}, run_id: "release-7" }, EDGE);
      expect(again).toMatchObject({ deduplicated: true, details_expired: true, execution: { id: first, state: "succeeded", details_expired: true, run_id: "release-7" } });
      expect(v.safeParse(executionsStart.output, again).success).toBe(true);
      expect(store.list().items).toHaveLength(1);
    } finally {
      await engine.close();
      store.close();
    }
  });
});
