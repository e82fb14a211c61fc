import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import type { SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { FORGET_BATCH } from "../../runtime/store/_sqlite-writer.ts";
import { draft, idOf, limitsWith, newExecution, TestClock } from "./_fixtures.ts";
import { copyOfFiles, openStore, tempDb } from "./_sqlite-support.ts";
import { reconciled, unknownEnd } from "./_contract-reconcile.ts";
import { fillDisk, smallDisk } from "./_sqlite-durability.ts";

/** Executions 1..n, each finished before the next is created, each in a write of its own (a busy store's writes). */
async function finishOneByOne(store: SqliteExecutionStore, from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) {
    store.create(newExecution(n));
    store.append(idOf(n), [draft.started(), draft.completed("succeeded")]);
    await store.durable();
  }
}

/** Rows of executions in a copy of the store's files (what a crash at this moment leaves). */
function rowsInFile(path: string): string[] {
  const file = new Database(copyOfFiles(path), { readonly: true });
  try {
    return (file.query("SELECT id FROM executions ORDER BY ord").all() as Array<{ id: string }>).map((row) => row.id);
  } finally {
    file.close();
  }
}

/** Forgotten executions' rows, deleted in batches by a busy store (runtime/store/_sqlite-writer.ts). */
export function forgetCases(): void {
  describe("sqlite store forgetting in batches", () => {
    test("sqlite store leaves forgotten rows in the file while busy, below FORGET_BATCH; readers never see them; a crash then forgets them again on open", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 3 });
      await finishOneByOne(store, 1, 10);
      // Seven forgotten, not yet deleted: the busy writes left them for a batch.
      expect(rowsInFile(path)).toHaveLength(10);
      const crashed = copyOfFiles(path);
      // Reads write everything first: the file then holds exactly what memory holds.
      expect(store.get(idOf(1))).toBeNull();
      const page = store.list();
      expect(page.items.map((s) => s.id)).toEqual([idOf(10), idOf(9), idOf(8)]);
      expect(page.counts).toMatchObject({ succeeded: 3 });
      expect(rowsInFile(path)).toEqual([idOf(8), idOf(9), idOf(10)]);
      store.close();
      const reopened = openStore(crashed, clock, { executions_retained: 3 });
      expect(reopened.list().items.map((s) => s.id)).toEqual([idOf(10), idOf(9), idOf(8)]);
      expect(reopened.get(idOf(7))).toBeNull();
      reopened.close();
      expect(rowsInFile(crashed)).toEqual([idOf(8), idOf(9), idOf(10)]);
    });

    test("sqlite store forgets a finished execution only once its end is committed: a follower hears the end, and a reader told it is gone never finds it back after a crash", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 2 });
      for (const n of [1, 2]) {
        store.create(newExecution(n, { effect: "write" }));
        store.append(idOf(n), [draft.started()]);
      }
      await store.durable();
      const heard: string[] = [];
      store.subscribe({ executions: [idOf(1)], after: 2 }, (event) => heard.push(`${event.sequence} ${event.type}`));
      // Its end and the creation past the bound in one tick: the end is not written yet when the
      // creation looks for a finished execution to forget.
      store.append(idOf(1), [draft.completed("succeeded")]);
      store.create(newExecution(3));
      expect(store.get(idOf(1))).toBeNull();
      const crashed = copyOfFiles(path);
      await store.durable();
      expect(heard).toEqual(["3 execution.completed"]);
      store.close();
      // The file a crash leaves holds it no more: it is not ended again as interrupted, an unknown outcome kept as evidence.
      const reopened = openStore(crashed, clock, { executions_retained: 2 });
      expect(reopened.get(idOf(1))).toBeNull();
      expect(reopened.recovered.map((r) => r.id)).toEqual([idOf(2), idOf(3)]);
      reopened.close();
    });

    test("sqlite store deletes forgotten rows once FORGET_BATCH are due, and the rest when writes pause or at close", async () => {
      const path = tempDb();
      const store = openStore(path, new TestClock(), { executions_retained: 3 });
      await finishOneByOne(store, 1, 3 + FORGET_BATCH);
      // The batch went with the writes of a busy store.
      expect(rowsInFile(path)).toHaveLength(3);
      await finishOneByOne(store, 4 + FORGET_BATCH, 5 + FORGET_BATCH);
      expect(rowsInFile(path)).toHaveLength(5);
      store.close();
      const file = new Database(path, { readonly: true });
      expect(file.query("SELECT count(*) AS n FROM executions").get()).toEqual({ n: 3 });
      // Their events went with their rows (a short execution's are in its row's head).
      expect(file.query("SELECT count(*) AS n FROM executions WHERE head IS NOT NULL").get()).toEqual({ n: 3 });
      expect(file.query("SELECT count(*) AS n FROM events WHERE execution_ord NOT IN (SELECT ord FROM executions)").get()).toEqual({ n: 0 });
      file.close();
    });

    test("sqlite store reopened keeps an unreconciled unknown outcome past executions_retained, and forgets it once reconciled", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 2 });
      store.create(newExecution(1, { effect: "write" }));
      store.append(idOf(1), [draft.started(), unknownEnd]);
      await finishOneByOne(store, 2, 3);
      store.close();
      // What the store knew of it in memory is read back from its snapshot in the file.
      const reopened = openStore(path, clock, { executions_retained: 2 });
      await finishOneByOne(reopened, 4, 5);
      expect(reopened.get(idOf(1))).toMatchObject({ state: "failed", failure: { outcome_certainty: "unknown" } });
      expect(reopened.list().items.map((s) => s.id)).toEqual([idOf(5), idOf(1)]);
      reopened.append(idOf(1), [reconciled()]);
      await reopened.durable();
      reopened.close();
      // Settled in the file, it is an ordinary finished execution on the next open.
      const again = openStore(path, clock, { executions_retained: 2 });
      await finishOneByOne(again, 6, 6);
      expect(again.get(idOf(1))).toBeNull();
      again.close();
    });

    test("sqlite store answers a forgotten execution as held until its deletion is committed: the engine's own view (cancel, reconcile, a run_id retry) never calls gone what a crash brings back", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 3 });
      await finishOneByOne(store, 1, 4);
      // 1 is forgotten, its row left for a batch: the file still holds it, so it is not gone yet.
      expect(rowsInFile(path)).toContain(idOf(1));
      expect(store.current(idOf(1))).toMatchObject({ id: idOf(1), state: "succeeded" });
      const crashed = copyOfFiles(path);
      const reopened = openStore(crashed, clock, { executions_retained: 3 });
      expect(reopened.list().items.map((s) => s.id)).toEqual([idOf(4), idOf(3), idOf(2)]);
      reopened.close();
      // A read writes the deletion first: from then on it is gone, for the file too.
      expect(store.get(idOf(1))).toBeNull();
      expect(store.current(idOf(1))).toBeNull();
      expect(rowsInFile(path)).not.toContain(idOf(1));
      store.close();
    });

    test("sqlite store keeps a forgotten execution readable while its deletion cannot be written, and a withdrawn creation forgets nothing", async () => {
      const disk = smallDisk("8m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      let failed: () => void = () => {};
      const path = join(disk.dir, "state.db");
      const clock = new TestClock();
      const make = () =>
        createSqliteStore({ path, limits: limitsWith({ executions_retained: 3 }), clock: clock.now, onListenerError: () => {}, onPersistError: () => failed() });
      let store: SqliteExecutionStore | null = make();
      try {
        await finishOneByOne(store, 1, 3);
        store.flush();
        const filler = fillDisk(disk.dir);
        // A creation the full disk refuses takes the store past its bound: 1 is forgotten in memory only.
        let failure = new Promise<void>((resolve) => (failed = resolve));
        store.create(newExecution(4, { input: { pad: "x".repeat(1_000_000) } }));
        await failure;
        expect(store.storageFault()).not.toBeNull();
        expect(store.get(idOf(1))).toMatchObject({ state: "succeeded" });
        expect(store.current(idOf(1))).toMatchObject({ state: "succeeded" });
        expect(store.events(idOf(1))?.last_sequence).toBe(3);
        expect(store.list().items.map((s) => s.id)).toEqual([idOf(3), idOf(2), idOf(1)]);
        // The creation is taken back: what it forgot is held again, once space returns too.
        expect(store.withdraw(idOf(4))).toBe(true);
        expect(store.get(idOf(1))).toMatchObject({ state: "succeeded" });
        unlinkSync(filler);
        store.flush();
        expect(store.get(idOf(1))).toMatchObject({ state: "succeeded" });
        expect(store.list().items.map((s) => s.id)).toEqual([idOf(3), idOf(2), idOf(1)]);
        expect(store.get(idOf(4))).toBeNull();

        // Forgotten by a creation that stays: readable until the deletion is written, gone after, and for good.
        const filler2 = fillDisk(disk.dir);
        failure = new Promise<void>((resolve) => (failed = resolve));
        store.create(newExecution(5, { input: { pad: "x".repeat(1_000_000) } }));
        await failure;
        expect(store.get(idOf(1))).toMatchObject({ state: "succeeded" });
        unlinkSync(filler2);
        await store.durable();
        expect(store.get(idOf(1))).toBeNull();
        store.close();
        store = make();
        expect(store.get(idOf(1))).toBeNull();
        expect(store.list().items.map((s) => s.id)).toEqual([idOf(5), idOf(3), idOf(2)]);
      } finally {
        // Closed on a disk still full when an expectation failed: that failure is the one to see.
        try {
          store?.close();
        } catch {}
        disk.unmount();
      }
    });

    test("sqlite store reconciling an unknown outcome forgotten past the bound, its row not deleted yet, keeps it and writes the reconciliation", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 1 });
      for (const n of [1, 2]) {
        store.create(newExecution(n, { effect: "write" }));
        store.append(idOf(n), [draft.started(), unknownEnd]);
        await store.durable();
      }
      // Two unsettled ones outnumber a bound of one: the oldest is forgotten, its row left for a batch.
      store.create(newExecution(3));
      await store.durable();
      expect(store.current(idOf(1))).toMatchObject({ failure: { outcome_certainty: "unknown" } });
      store.append(idOf(1), [reconciled()]);
      await store.durable();
      expect(store.get(idOf(1))).toMatchObject({ reconciliation: { outcome: "applied" } });
      store.close();
      const reopened = openStore(path, clock, { executions_retained: 3 });
      expect(reopened.get(idOf(1))).toMatchObject({ reconciliation: { outcome: "applied" } });
      reopened.close();
    });

    test("sqlite store reopened after a crash does not forget in the same open the executions it ended: their ends are readable, the oldest finished before the crash go first", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 3 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      store.create(newExecution(2));
      await finishOneByOne(store, 3, 5);
      const crashed = copyOfFiles(path);
      store.close();
      const reopened = openStore(crashed, clock, { executions_retained: 2 });
      expect(reopened.recovered.map((r) => [r.id, r.state])).toEqual([[idOf(1), "failed"], [idOf(2), "cancelled"]]);
      expect(reopened.get(idOf(1))).toMatchObject({ state: "failed", failure: { error_code: "interrupted" } });
      expect(reopened.get(idOf(2))).toMatchObject({ state: "cancelled" });
      expect(reopened.list().items.map((s) => s.id)).toEqual([idOf(2), idOf(1)]);
      // Ended last, they are forgotten last: the next creation forgets the first of them.
      reopened.create(newExecution(6));
      expect(reopened.get(idOf(1))).toBeNull();
      expect(reopened.list().items.map((s) => s.id)).toEqual([idOf(6), idOf(2)]);
      reopened.close();
    });

    test("sqlite store reusing a forgotten id before its row is deleted writes the new execution, not a conflict", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { executions_retained: 2 });
      await finishOneByOne(store, 1, 3);
      // idOf(1) is forgotten, its row still in the file; the same id comes again.
      store.create(newExecution(1));
      await store.durable();
      expect(store.get(idOf(1))).toMatchObject({ state: "queued", last_sequence: 1 });
      // Listed once, as the new one: the old row the file may still hold is not it.
      expect(store.list().items.map((s) => [s.id, s.state])).toEqual([[idOf(1), "queued"], [idOf(3), "succeeded"]]);
      expect(store.heads(undefined, 10).items.map((h) => [h.id, h.state])).toEqual([[idOf(1), "queued"], [idOf(3), "succeeded"]]);
      store.close();
      // The file holds the new one (queued when the store closed, so ended cancelled), not the old success.
      const reopened = openStore(path, clock, { executions_retained: 2 });
      expect(reopened.get(idOf(1))).toMatchObject({ state: "cancelled" });
      reopened.close();
    });
  });
}
