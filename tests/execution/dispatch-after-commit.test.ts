import { describe, expect, test } from "bun:test";
import { NOTE_RETRY_MS } from "../../runtime/execution/engine.ts";
import type { FailureDescriptor, FailureError } from "../../runtime/execution/failure.ts";
import { COMMIT_GAP_MS } from "../../runtime/store/_sqlite-writer.ts";
import { EDGE } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";
import { engineOnFile, microtasks } from "./_support/engine-on-file.ts";

describe("dispatch after commit (docs/durability.md)", () => {
  test("a handler starts only once its execution's creation is committed", async () => {
    const h = engineOnFile(2);
    try {
      const id = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
      await microtasks();
      expect(h.store.creationCommitted(id)).toBe(false);
      expect(h.pool.of(id)).toBeUndefined();
      // The store's first write comes on the next turn; the handler right after it.
      await flush();
      expect(h.store.creationCommitted(id)).toBe(true);
      expect(h.pool.of(id)).toBeDefined();
    } finally {
      await h.close();
    }
  });

  test("a queued execution created in an earlier write starts as soon as a slot frees, without waiting for the store's next write", async () => {
    const h = engineOnFile(1);
    try {
      // What is committed (a read would write what is pending first): subscribers hear only that.
      const committed: string[] = [];
      const names = new Map<string, string>();
      h.store.subscribe({ executions: "all" }, (event) => committed.push(`${names.get(event.execution_id)} ${event.type}`));
      // Three starts answered by one write (BUSY_CREATIONS): the store's next write waits for the gap.
      for (const name of ["first", "second", "third"]) names.set(h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id, name);
      const [first, second] = [...names.keys()];
      await flush();
      // One write held the creations; the first took the only slot.
      expect(h.store.creationCommitted(second!)).toBe(true);
      expect(h.pool.of(second!)).toBeUndefined();
      h.pool.of(first!)!.succeed({ n: 1 });
      await flush();
      // The first's start and end wait for the write the gap holds back; the second needs nothing of it.
      expect(committed).toEqual(["first execution.created", "second execution.created", "third execution.created"]);
      expect(h.pool.of(second!)).toBeDefined();
      expect(h.store.current(second!)!.state).toBe("running");
      h.clock.advance(COMMIT_GAP_MS);
      expect(committed.slice(3)).toEqual(["first execution.started", "first execution.completed", "second execution.started"]);
      // Every handler was noted as starting before it was posted (a crash in between: _sqlite-starting.ts).
      expect(h.told).toEqual([`starting ${first}`, `run ${first}`, `starting ${second}`, `run ${second}`]);
    } finally {
      await h.close();
    }
  });

  test("while the store cannot write, a queued execution does not start at once, however long ago it was created: it waits for the store's next write", async () => {
    const h = engineOnFile(1);
    try {
      const first = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
      const second = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
      await flush();
      expect(h.store.creationCommitted(second)).toBe(true);
      h.setFault({ reason: "database or disk is full", since: "2026-12-01T05:00:00.000Z" });
      h.pool.of(first)!.succeed({ n: 1 });
      await microtasks();
      // Its handler would run with nothing of it written: it waits for the store's next write instead
      // (durable(), which waits a real fault out; this one is the test's, so the write comes).
      expect(h.pool.of(second)).toBeUndefined();
      expect(h.store.current(second)!.state).toBe("queued");
      await flush();
      expect(h.pool.of(second)).toBeDefined();
    } finally {
      await h.close();
    }
  });

  test("a start whose creation a failed write kept out of the file is taken back and refused unavailable at once, with a start deduplicated onto it; nothing ran, and its run_id starts afresh once the store writes", async () => {
    const h = engineOnFile(2);
    try {
      const plane = h.engine.handle(EDGE);
      const committed = plane.start({ capability: "demo.write", input: {} });
      await flush();
      const kept = (await committed).execution.id;
      const answers = [plane.start({ capability: "demo.write", input: {}, run_id: "deploy-1" }), plane.start({ capability: "demo.write", input: {}, run_id: "deploy-1" })];
      const outcomes = answers.map((answer) => answer.then(() => "answered", (error: FailureError) => error.failure));
      await microtasks();
      h.failWrite({ reason: "database or disk is full", since: "2026-12-03T05:00:00.000Z" });
      const [first, second] = (await Promise.all(outcomes)) as FailureDescriptor[];
      // Read before toMatchObject, which leaves its matchers in what it matched (Bun 1.4).
      const withdrawn = first!.context.withdrawn as string;
      expect(second!.context.withdrawn).toBe(withdrawn);
      expect(withdrawn).toMatch(/^x-/);
      expect(first).toMatchObject({
        error_code: "unavailable",
        stage: "admit",
        retryability: "safe",
        outcome_certainty: "not_applied",
        context: { reason: "storage_fault", since: "2026-12-03T05:00:00.000Z", retry_after_s: expect.any(Number), withdrawn: expect.any(String) },
      });
      expect(first!.message).toContain("database or disk is full");
      expect(first!.message).toContain("run_id deploy-1 is free again");
      expect(h.store.current(withdrawn)).toBeNull();
      expect(h.store.findRun("deploy-1")).toBeNull();
      // What was committed before stays, and runs; the one taken back never reaches a worker.
      expect(h.store.current(kept)).not.toBeNull();
      h.setFault(null);
      await flush();
      h.clock.advance(COMMIT_GAP_MS);
      await flush();
      expect(h.pool.of(withdrawn)).toBeUndefined();
      expect(h.told.filter((line) => line.endsWith(withdrawn))).toEqual([]);
      expect(h.store.get(withdrawn)).toBeNull();
      // Its slot went back, and its run_id starts afresh.
      const again = plane.start({ capability: "demo.write", input: {}, run_id: "deploy-1" });
      await flush();
      const restarted = await again;
      expect(restarted).toMatchObject({ deduplicated: false });
      expect(restarted.execution.id).not.toBe(withdrawn);
      h.clock.advance(COMMIT_GAP_MS);
      await flush();
      expect(h.pool.of(restarted.execution.id)).toBeDefined();
    } finally {
      await h.close();
    }
  });

  test("while the store cannot write, a start repeating a committed run_id and a cancel are answered at once from what is committed, not after the disk frees", async () => {
    const h = engineOnFile(2);
    try {
      const plane = h.engine.handle(EDGE);
      const first = plane.start({ capability: "demo.read", input: {}, run_id: "deploy-2" });
      await flush();
      const id = (await first).execution.id;
      h.clock.advance(COMMIT_GAP_MS);
      await flush();
      expect(h.pool.of(id)).toBeDefined();
      h.setFault({ reason: "database or disk is full", since: "2026-12-03T05:00:00.000Z" });
      // A store that cannot write serves its readers what the file holds (the fault is the test's,
      // so its reads would write first: they are given the file's copy from before the fault).
      const written = h.store.get(id)!;
      Object.assign(h.store, { get: (x: string) => (x === id ? written : null) });
      const settled: string[] = [];
      const again = plane.start({ capability: "demo.read", input: {}, run_id: "deploy-2" }).then((answer) => (settled.push("start"), answer));
      const cancelled = plane.cancel(id).then((receipt) => (settled.push("cancel"), receipt));
      await microtasks();
      expect(settled.sort()).toEqual(["cancel", "start"]);
      expect(await again).toMatchObject({ deduplicated: true, execution: { id, state: "running" } });
      const receipt = await cancelled;
      // Asked of the handler, not written yet: the receipt names the state a crash leaves, running,
      // never the cancelling that only memory holds (tester D4).
      expect(h.store.current(id)!.state).toBe("cancelling");
      expect(receipt).toMatchObject({ id, requested: true, recorded: false, state: "running" });
      expect(receipt.message).toContain("recorded once it can");
      expect(h.pool.of(id)!.cancelRequested).toBe(true);
    } finally {
      h.setFault(null);
      await h.close();
    }
  });

  test("a start the store cannot note is held, still queued, and tried again every NOTE_RETRY_MS; cancelled meanwhile, it never runs and its slot goes to the next", async () => {
    const h = engineOnFile(1);
    try {
      h.setNotes(false);
      const first = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
      const second = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
      await flush();
      expect(h.told).toEqual([`starting ${first}`]);
      expect(h.pool.of(first)).toBeUndefined();
      expect(h.store.current(first)!.state).toBe("queued");
      h.clock.advance(NOTE_RETRY_MS);
      expect(h.told).toEqual([`starting ${first}`, `starting ${first}`]);
      h.setNotes(true);
      h.clock.advance(NOTE_RETRY_MS);
      expect(h.pool.of(first)).toBeDefined();
      h.pool.of(first)!.succeed({ ok: true });
      // The second is held in turn; cancelled there, it ends as never started and runs nowhere.
      h.setNotes(false);
      await flush();
      expect(h.told.at(-1)).toBe(`starting ${second}`);
      const receipt = h.engine.cancel(second, EDGE);
      expect(receipt).toMatchObject({ requested: true, state: "cancelled" });
      expect(h.store.current(second)).toMatchObject({ state: "cancelled", failure: { outcome_certainty: "not_applied" } });
      h.setNotes(true);
      h.clock.advance(NOTE_RETRY_MS * 3);
      await flush();
      expect(h.pool.of(second)).toBeUndefined();
      // Its slot went back: the next one runs.
      const third = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
      await flush();
      h.clock.advance(2);
      await flush();
      expect(h.pool.of(third)).toBeDefined();
    } finally {
      await h.close();
    }
  });
});
