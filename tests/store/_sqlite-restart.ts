import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync, rmSync } from "node:fs";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import type { SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { allEvents, draft, expectValidEvent, idOf, limitsWith, newExecution, pathTo, TestClock } from "./_fixtures.ts";
import { copyOfFiles, openStore, tempDb } from "./_sqlite-support.ts";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import { BUSY_CREATIONS, COMMIT_GAP_MS } from "../../runtime/store/_sqlite-writer.ts";
import { ManualClock } from "../_support/manual-clock.ts";

/** Every execution the store holds, with all its events, read through the interface. */
function everything(store: SqliteExecutionStore) {
  const snapshots: ExecutionSnapshot[] = [];
  for (let cursor: string | null | undefined = undefined; ; ) {
    const page = store.list({ limit: 7, cursor: cursor ?? undefined });
    snapshots.push(...page.items);
    cursor = page.next_cursor;
    if (cursor === null) break;
  }
  return { snapshots, events: snapshots.map((s) => allEvents(store, s.id)), counts: store.list().counts };
}

/** Asserts an execution's history is whole: dense from 1, valid, `execution.completed` last. */
function expectWholeHistory(store: SqliteExecutionStore, id: string): void {
  const events = allEvents(store, id);
  expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
  for (const event of events) expectValidEvent(event);
  expect(events.at(-1)!.type).toBe("execution.completed");
  expect(events.filter((e) => e.type === "execution.completed")).toHaveLength(1);
  expect(store.get(id)!.last_sequence).toBe(events.length);
}

/** Restarts: a closed store reopens whole; a crashed one is recovered (docs/architecture.md). */
export function restartCases(): void {
  describe("sqlite store across restarts", () => {
    test("sqlite store reopened after close holds every execution, event, run identity and list cursor as before", () => {
      const path = tempDb();
      const clock = new TestClock();
      const first = openStore(path, clock);
      first.create(newExecution(1, { run_id: "run-1", input: { nested: { list: [1, "two", null] } } }));
      first.recordRun({ run_id: "run-1", execution_id: idOf(1), capability: "demo.read", input_hash: "hash-1" });
      first.append(idOf(1), [draft.started(), draft.step("scan", "Scanning"), draft.log("reading"), draft.diagnostic("careful"), draft.progress(1, 2), draft.stepDone("scan", true, "done")]);
      clock.advance(250);
      first.append(idOf(1), [draft.stream("out\n"), draft.completed("succeeded", { files: 3 })]);
      first.create(newExecution(2));
      first.append(idOf(2), pathTo("failed"));
      first.create(newExecution(3));
      first.append(idOf(3), pathTo("cancelled"));
      for (let n = 4; n <= 30; n++) {
        first.create(newExecution(n, { capability: n % 2 ? "demo.read" : "demo.write" }));
        first.append(idOf(n), pathTo("succeeded"));
      }
      const before = everything(first);
      const page = first.list({ limit: 5 });
      const nextPage = first.list({ limit: 5, cursor: page.next_cursor! });
      first.close();

      const second = openStore(path, clock);
      expect(second.recovered).toEqual([]);
      expect(everything(second)).toEqual(before);
      expect(second.get(idOf(1))).toMatchObject({ state: "succeeded", output: { files: 3 }, steps: [{ id: "scan", state: "succeeded", message: "done" }], log: [{ message: "reading" }], diagnostics: [{ message: "careful" }], input: { nested: { list: [1, "two", null] } } });
      // A cursor given out before the restart goes on where it stopped.
      expect(second.list({ limit: 5, cursor: page.next_cursor! })).toEqual(nextPage);
      expect(second.findRun("run-1")).toEqual({ run_id: "run-1", execution_id: idOf(1), capability: "demo.read", input_hash: "hash-1" });
      // Numbering and creation order go on from where they were.
      second.create(newExecution(31));
      expect(second.list({ limit: 1 }).items[0]!.id).toBe(idOf(31));
      expect(() => second.create(newExecution(5))).toThrow(/already holds/);
      second.close();
    });

    test("sqlite store whose start notes were removed under it makes the file again at its next write: a start noted after that is still told apart from one that never ran (durability tester, session 45)", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const live = openStore(path, clock);
      for (const n of [1, 2]) live.create(newExecution(n, { effect: "write" }));
      await live.durable();
      rmSync(`${path}-starting`);
      live.create(newExecution(3));
      await live.durable();
      expect(readFileSync(`${path}-starting`, "utf8")).toBe("");
      // 1 handed to a worker, its start not written yet; 2 still waits its turn.
      expect(live.starting(idOf(1))).toBe(true);
      live.append(idOf(1), [draft.started()]);
      expect(openStore(copyOfFiles(path), clock).recovered).toEqual([
        { id: idOf(1), found: "queued", state: "failed" },
        { id: idOf(2), found: "queued", state: "cancelled" },
        { id: idOf(3), found: "queued", state: "cancelled" },
      ]);
      live.close();
    });

    test("sqlite store opened after a crash ends an execution still queued in the file but noted as starting failed interrupted, after a start, never cancelled as not run", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const live = openStore(path, clock);
      for (const n of [1, 2, 3]) live.create(newExecution(n, { effect: n === 3 ? "read" : "write" }));
      await live.durable();
      // 1 and 3 handed to a worker, their starts not written yet; 2 still waits its turn.
      for (const n of [1, 3]) {
        expect(live.starting(idOf(n))).toBe(true);
        live.append(idOf(n), [draft.started()]);
      }
      expect(readFileSync(`${path}-starting`, "utf8")).toBe(`${idOf(1)}\n${idOf(3)}\n`);
      const copy = copyOfFiles(path);
      const crashed = openStore(copy, clock);
      expect(crashed.recovered).toEqual([
        { id: idOf(1), found: "queued", state: "failed" },
        { id: idOf(2), found: "queued", state: "cancelled" },
        { id: idOf(3), found: "queued", state: "failed" },
      ]);
      expect(crashed.get(idOf(1))).toMatchObject({ state: "failed", failure: { error_code: "interrupted", outcome_certainty: "unknown" } });
      expect(crashed.get(idOf(1))!.started_at).not.toBeNull();
      expect(crashed.events(idOf(1))!.events.map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.completed"]);
      expect(crashed.get(idOf(2))).toMatchObject({ state: "cancelled", failure: { error_code: "cancelled", outcome_certainty: "not_applied" } });
      expect(crashed.get(idOf(3))).toMatchObject({ state: "failed", failure: { error_code: "interrupted", retryability: "safe" } });
      // The recovery's own write settled the notes: opened again, nothing is ended twice.
      expect(readFileSync(`${copy}-starting`, "utf8")).toBe("");
      crashed.close();
      expect(openStore(copy, clock).recovered).toEqual([]);
      // The live store's next write commits the starts: a crash then finds them running, and their
      // notes, still in the file (emptied only now and then), mean nothing any more.
      await live.durable();
      expect(readFileSync(`${path}-starting`, "utf8")).toBe(`${idOf(1)}\n${idOf(3)}\n`);
      expect(openStore(copyOfFiles(path), clock).recovered).toEqual([
        { id: idOf(1), found: "running", state: "failed" },
        { id: idOf(2), found: "queued", state: "cancelled" },
        { id: idOf(3), found: "running", state: "failed" },
      ]);
      live.close();
    });

    test("sqlite store opened on the files of a crashed one ends queued executions cancelled and running ones failed interrupted, with the certainty of their effect", () => {
      const path = tempDb();
      const clock = new TestClock();
      const live = openStore(path, clock);
      live.create(newExecution(1));
      live.create(newExecution(2, { capability: "demo.write", effect: "write" }));
      live.create(newExecution(3));
      live.create(newExecution(4, { capability: "demo.write", effect: "write" }));
      live.create(newExecution(5));
      live.append(idOf(2), [draft.started()]);
      live.append(idOf(3), [draft.started()]);
      live.append(idOf(4), [draft.started(), draft.cancelRequested()]);
      live.append(idOf(5), pathTo("succeeded"));
      live.flush();
      // Written in a later tick, without a state change: the file's snapshot is older than these
      // events, which the next open folds back in.
      clock.advance(1500);
      live.append(idOf(2), [draft.step("push", "Pushing"), draft.log("pushed 1 of 2"), draft.progress(1, 2)]);
      live.flush();
      const lastHeard = clock.iso();
      // Appended after the last write the crash let through: lost, and nobody saw them stored.
      live.append(idOf(2), [draft.log("pushed 2 of 2")]);
      const crashed = copyOfFiles(path);
      live.close();

      clock.advance(60_000);
      const reopened = openStore(crashed, clock);
      expect(reopened.recovered).toEqual([
        { id: idOf(1), found: "queued", state: "cancelled" },
        { id: idOf(2), found: "running", state: "failed" },
        { id: idOf(3), found: "running", state: "failed" },
        { id: idOf(4), found: "cancelling", state: "failed" },
      ]);
      const ids = { trace_id: "0af7651916cd43dd8448eb211c80319c" };
      expect(reopened.get(idOf(1))).toMatchObject({ state: "cancelled", finished_at: clock.iso(), failure: { error_code: "cancelled", stage: "queue", outcome_certainty: "not_applied", retryability: "safe", request_id: "req-1", ...ids } });
      const write = reopened.get(idOf(2))!;
      expect(write).toMatchObject({ state: "failed", failure: { error_code: "interrupted", stage: "run", outcome_certainty: "unknown", retryability: "manual_reconcile", request_id: "req-2", ...ids } });
      expect(write.failure!.message).toContain("the server stopped while it ran");
      expect(write.failure!.message).toContain(lastHeard);
      expect(write.failure!.context).toMatchObject({ last_event_at: lastHeard, last_sequence: 5 });
      expect(write.duration_ms).toBe(1500);
      // The events written after the file's snapshot were folded back in; the lost one is not there.
      expect(write).toMatchObject({ steps: [{ id: "push", title: "Pushing", state: "running" }], progress: { current: 1, total: 2 }, log: [{ message: "pushed 1 of 2" }], last_sequence: 6 });
      expect(reopened.get(idOf(3))).toMatchObject({ state: "failed", failure: { error_code: "interrupted", outcome_certainty: "not_applied", retryability: "safe", request_id: "req-3" } });
      expect(reopened.get(idOf(4))).toMatchObject({ state: "failed", failure: { error_code: "interrupted", outcome_certainty: "unknown", retryability: "manual_reconcile" } });
      expect(reopened.get(idOf(5))).toMatchObject({ state: "succeeded", failure: null });
      for (const n of [1, 2, 3, 4, 5]) expectWholeHistory(reopened, idOf(n));
      expect(allEvents(reopened, idOf(2)).map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.step", "execution.log", "execution.progress", "execution.completed"]);
      expect(reopened.list().counts).toMatchObject({ queued: 0, running: 0, cancelling: 0, succeeded: 1, failed: 3, cancelled: 1 });
      reopened.close();

      // Recovery happens once: opened again, nothing is unfinished and nothing changes.
      const again = openStore(crashed, clock);
      expect(again.recovered).toEqual([]);
      expect(again.get(idOf(2))).toEqual(write);
      again.close();
    });

    test("sqlite store recovery leaves a run reported by docket run unfinished: its own process may have outlived the server", () => {
      const path = tempDb();
      const clock = new TestClock();
      const live = openStore(path, clock);
      live.create(newExecution(1, { actor: { kind: "cli", pid: 4242 } }));
      live.append(idOf(1), [draft.started(), draft.progress(1, 3)]);
      live.create(newExecution(2));
      live.append(idOf(2), [draft.started()]);
      live.flush();
      const crashed = copyOfFiles(path);
      live.close();

      const reopened = openStore(crashed, clock);
      expect(reopened.recovered).toEqual([{ id: idOf(2), found: "running", state: "failed" }]);
      expect(reopened.get(idOf(1))).toMatchObject({ state: "running", actor: { kind: "cli", pid: 4242 }, last_sequence: 3 });
      reopened.close();
    });

    test("sqlite store refuses a file another store holds open (one writer), touching nothing; once let go, the next one recovers what it left running", () => {
      const path = tempDb();
      const clock = new TestClock();
      const holder = openStore(path, clock);
      holder.create(newExecution(1, { effect: "write" }));
      holder.append(idOf(1), [draft.started(), ...Array.from({ length: 3000 }, (_, i) => draft.progress(i))]);
      holder.flush();
      expect(() => openStore(path, clock)).toThrow(/another process holds it/);
      // The holder was not disturbed: it goes on writing.
      holder.append(idOf(1), [draft.progress(1)]);
      holder.close();
      const successor = openStore(path, clock);
      expect(successor.recovered).toEqual([{ id: idOf(1), found: "running", state: "failed" }]);
      expectWholeHistory(successor, idOf(1));
      expect(successor.get(idOf(1))).toMatchObject({ last_sequence: 3004, failure: { error_code: "interrupted", outcome_certainty: "unknown" } });
      successor.close();
    });

    test("sqlite store commits what a tick appended in one transaction on the next tick, or at once for a large batch; subscribers hear of it only then", async () => {
      const path = tempDb();
      const store = openStore(path, new TestClock());
      const heard: number[] = [];
      store.subscribe({ executions: "all" }, (event) => heard.push(event.sequence));
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      for (let i = 0; i < 10; i++) store.append(idOf(1), [draft.progress(i)]);
      expect(heard).toEqual([]);
      await store.durable();
      expect(heard).toHaveLength(12);
      // Past the batch size the store writes inside the call, without waiting for the tick.
      store.append(idOf(1), Array.from({ length: 5000 }, (_, i) => draft.progress(i)));
      expect(heard).toHaveLength(5012);
      expect(store.events(idOf(1), 5000)!.events.map((e) => e.sequence)).toEqual(Array.from({ length: 12 }, (_, i) => 5001 + i));
      store.close();
      // The first tick's twelve events are the row's head: one transaction wrote them. The batch
      // did not fit there: it went to the events rows.
      const file = new Database(path, { readonly: true });
      expect(file.query("SELECT head_last FROM executions").get()).toEqual({ head_last: 12 });
      expect(file.query("SELECT first_sequence AS first FROM events ORDER BY sequence LIMIT 1").get()).toEqual({ first: 13 });
      file.close();
    });

    test("sqlite store writes at most once per COMMIT_GAP_MS once a write created BUSY_CREATIONS executions: what changes within the gap goes in one transaction once it is over; otherwise, or after a pause, on the next turn", async () => {
      const time = new ManualClock();
      const store = createSqliteStore({ path: tempDb(), limits: limitsWith({}), clock: () => time.now(), cadence: time, onListenerError: () => {} });
      // The store's look at its files (FILE_LOOK_MS) waits on the same clock: the gap's timers are counted beside it.
      const looks = time.pending;
      const heard: string[] = [];
      store.subscribe({ executions: "all" }, (event) => heard.push(`${Number.parseInt(event.execution_id.slice(-8), 16)}:${event.sequence}`));
      const turn = () => new Promise((resolve) => setImmediate(resolve));
      // One client, one start after another (the last one's events with each): every turn writes.
      store.create(newExecution(1));
      await turn();
      store.append(idOf(1), [draft.started()]);
      store.create(newExecution(2));
      await turn();
      store.append(idOf(2), [draft.started()]);
      store.create(newExecution(3));
      await turn();
      expect(heard).toEqual(["1:1", "1:2", "2:1", "2:2", "3:1"]);
      expect(time.pending - looks).toBe(0);
      // BUSY_CREATIONS starts answered by one write: the store is busy.
      expect(BUSY_CREATIONS).toBe(3);
      for (const n of [4, 5, 6]) store.create(newExecution(n));
      await turn();
      expect(heard.slice(5)).toEqual(["4:1", "5:1", "6:1"]);
      // Within the gap: turns go by, the changes wait together for the gap's end.
      store.append(idOf(4), [draft.started()]);
      await turn();
      store.append(idOf(5), [draft.started()]);
      await turn();
      expect(heard).toHaveLength(8);
      expect(time.pending - looks).toBe(1);
      time.advance(COMMIT_GAP_MS);
      expect(heard.slice(8)).toEqual(["4:2", "5:2"]);
      // That write created nothing: the next change is written on the next turn again.
      store.append(idOf(6), [draft.started()]);
      await turn();
      expect(heard.slice(10)).toEqual(["6:2"]);
      expect(time.pending - looks).toBe(0);
      // Busy again; a pause as long as the gap: on the next turn too.
      for (const n of [7, 8, 9]) store.create(newExecution(n));
      await turn();
      time.advance(COMMIT_GAP_MS);
      store.append(idOf(7), [draft.started()]);
      await turn();
      expect(heard.slice(11)).toEqual(["7:1", "8:1", "9:1", "7:2"]);
      // A reader never waits for the gap: it writes what is pending first.
      for (const n of [10, 11, 12]) store.create(newExecution(n));
      await turn();
      store.append(idOf(10), [draft.started()]);
      expect(time.pending - looks).toBe(1);
      expect(store.get(idOf(10))!.last_sequence).toBe(2);
      expect(heard.slice(-1)).toEqual(["10:2"]);
      store.close();
    });

    test("sqlite store reopened with lower limits applies them: fewer events kept per execution, fewer executions kept", () => {
      const path = tempDb();
      const clock = new TestClock();
      const first = openStore(path, clock);
      for (let n = 1; n <= 5; n++) {
        first.create(newExecution(n));
        first.append(idOf(n), [draft.started(), ...Array.from({ length: 97 }, (_, i) => draft.progress(i)), draft.completed("succeeded")]);
      }
      first.close();
      const second = openStore(path, clock, { events_retained: 10, executions_retained: 3 });
      expect(second.list().items.map((s) => s.id)).toEqual([idOf(5), idOf(4), idOf(3)]);
      expect(second.get(idOf(1))).toBeNull();
      expect(second.get(idOf(5))).toMatchObject({ last_sequence: 100, retained_from: 91, truncated: true });
      expect(second.events(idOf(5), 0)!).toMatchObject({ retained_from: 91, truncated: true, last_sequence: 100 });
      expect(allEvents(second, idOf(5)).map((e) => e.sequence)).toEqual(Array.from({ length: 10 }, (_, i) => 91 + i));
      second.close();
      // The rows of what was dropped went too.
      const file = new Database(path, { readonly: true });
      expect(file.query("SELECT min(first_sequence) AS first FROM events WHERE execution_ord = (SELECT ord FROM executions WHERE id = ?)").get(idOf(5))).toEqual({ first: expect.any(Number) });
      expect((file.query("SELECT min(sequence) AS last FROM events WHERE execution_ord = (SELECT ord FROM executions WHERE id = ?)").get(idOf(5)) as { last: number }).last).toBeGreaterThanOrEqual(91);
      expect(file.query("SELECT count(*) AS n FROM executions WHERE id = ?").get(idOf(1))).toEqual({ n: 0 });
      expect(file.query("SELECT count(*) AS n FROM events WHERE execution_ord NOT IN (SELECT ord FROM executions)").get()).toEqual({ n: 0 });
      file.close();
    });

    test("sqlite store keeps run identities across restarts, and their limit counts the ones in the file", () => {
      const path = tempDb();
      const clock = new TestClock();
      const identity = (run_id: string, n: number) => ({ run_id, execution_id: idOf(n), capability: "demo.read", input_hash: `h${n}` });
      const first = openStore(path, clock, { run_identities: 2 });
      expect(first.recordRun(identity("a", 1))).toBe(true);
      first.close();
      const second = openStore(path, clock, { run_identities: 2 });
      expect(second.findRun("a")).toEqual(identity("a", 1));
      expect(second.recordRun(identity("a", 7))).toBe(true);
      expect(second.recordRun(identity("b", 2))).toBe(true);
      expect(second.recordRun(identity("c", 3))).toBe(false);
      second.close();
      const third = openStore(path, clock, { run_identities: 2 });
      expect([third.findRun("a"), third.findRun("b"), third.findRun("c")]).toEqual([identity("a", 1), identity("b", 2), null]);
      third.close();
    });
  });
}
