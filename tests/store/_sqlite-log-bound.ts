import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { createSqliteStore, StoreFileError, type SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { createLogBound, LOG_MARK_BYTES, LOG_MARK_MIN_BYTES, logMarkBytes } from "../../runtime/store/_sqlite-log-bound.ts";
import { draft, idOf, limitsWith, newExecution, TestClock } from "./_fixtures.ts";
import { fillDisk, smallDisk } from "./_sqlite-durability.ts";
import { tempDb } from "./_sqlite-support.ts";
import { ManualClock } from "../_support/manual-clock.ts";

const MIB = 1024 * 1024;
/** The small disks of these tests, unmounted after them even when one timed out before its own `finally`. */
const disks: Array<{ unmount(): void }> = [];

function mountSmallDisk(size: string): { dir: string; unmount(): void } | null {
  const disk = smallDisk(size);
  if (disk !== null) disks.push(disk);
  return disk;
}

/** A store on `path` that never checkpoints for a pause (its cadence's time stands still): only the log's mark does. */
function storeOn(path: string): { store: SqliteExecutionStore; failed: Promise<unknown> } {
  let fail: (error: unknown) => void = () => {};
  const failed = new Promise<unknown>((resolve) => (fail = resolve));
  const store = createSqliteStore({ path, limits: limitsWith({}), clock: new TestClock().now, cadence: new ManualClock(), onPersistError: (error) => fail(error), onListenerError: () => {} });
  return { store, failed };
}

/**
 * One execution logging a short line per commit, `lines` times: what a chatty handler writes.
 * Answers the error of a write that failed, which stops it (its commit would wait for space).
 */
async function chatter(store: SqliteExecutionStore, failed: Promise<unknown>, id: string, lines: number): Promise<unknown> {
  const failure = failed.then((error) => ({ error }));
  for (let i = 0; i < lines; i++) {
    store.append(id, [draft.log(`line ${i} ${"x".repeat(200)}`)]);
    const outcome = await Promise.race([store.durable(), failure]);
    if (outcome !== undefined) return outcome.error;
  }
  return null;
}

/** `bytes` of output in chunks of 25,000: new pages of the events table. */
function output(bytes: number) {
  return Array.from({ length: Math.ceil(bytes / 25_000) }, (_, i) => draft.stream(`${i} ${"y".repeat(25_000)}`));
}

/** What a crash leaves of the store at `path`: its files as they are now, copied beside it into `dir`. */
function crashCopy(path: string, dir: string): string {
  mkdirSync(dir);
  const copy = join(dir, "state.db");
  copyFileSync(path, copy);
  copyFileSync(`${path}-wal`, `${copy}-wal`);
  return copy;
}

function allEvents(store: SqliteExecutionStore, id: string): ExecutionEvent[] {
  const events: ExecutionEvent[] = [];
  for (let after = 0; ; ) {
    const page = store.events(id, after)!.events;
    if (page.length === 0) return events;
    events.push(...page);
    after = page.at(-1)!.sequence;
  }
}

/**
 * Opens the store at `path` on a full disk, expecting the refusal that says how many bytes to
 * free, its log untouched; frees as many from `filler` and answers them.
 */
function freeWhatItSays(path: string, filler: string): number {
  const log = readFileSync(`${path}-wal`);
  let refused: unknown = null;
  try {
    storeOn(path).store.close();
  } catch (error) {
    refused = error;
  }
  expect(refused).toBeInstanceOf(StoreFileError);
  const message = (refused as Error).message;
  expect(message).toContain(`Cannot open the execution store ${path}: database or disk is full (SQLITE_FULL)`);
  expect(message).toContain(`Its log (${path}-wal`);
  expect(message).not.toContain("Move the file aside");
  expect(readFileSync(`${path}-wal`).equals(log)).toBe(true);
  const bytes = Number(/\((\d+) bytes\) more on its disk: free at least that much/.exec(message)?.[1]);
  truncateSync(filler, statSync(filler).size - bytes);
  return bytes;
}

/** docs/limits.md, "Storage faults and budget": the log on a small disk, and a store the full disk stopped. */
export function logBoundCases(): void {
  describe("sqlite store log bound", () => {
    afterAll(() => {
      for (const disk of disks.splice(0)) disk.unmount();
    });

    test("sqlite store log mark is a quarter of the room it has, 64 MiB at most and 1 MiB at least", () => {
      expect(logMarkBytes(10_000 * MIB)).toBe(LOG_MARK_BYTES);
      expect(logMarkBytes(256 * MIB)).toBe(64 * MIB);
      expect(logMarkBytes(200 * MIB)).toBe(50 * MIB);
      expect(logMarkBytes(8 * MIB)).toBe(2 * MIB);
      expect(logMarkBytes(1 * MIB)).toBe(LOG_MARK_MIN_BYTES);
      expect(logMarkBytes(0)).toBe(LOG_MARK_MIN_BYTES);

      const path = tempDb();
      const db = new Database(path, { create: true });
      db.run("PRAGMA page_size = 16384");
      db.run("PRAGMA journal_mode = WAL");
      let free: number | null = 1024 * MIB;
      const bound = createLogBound(db, path, { freeBytes: () => free });
      const checkpointPages = () => Number(db.query("PRAGMA wal_autocheckpoint").values()[0]![0]);
      expect(bound.markBytes()).toBe(64 * MIB);
      expect(checkpointPages()).toBe(4096);
      free = 16 * MIB;
      bound.measure();
      expect(bound.markBytes()).toBe(4 * MIB);
      expect(checkpointPages()).toBe(256);
      expect(Number(db.query("PRAGMA journal_size_limit").values()[0]![0])).toBe(4 * MIB);
      // No statfs here: the mark for a disk with room.
      free = null;
      bound.measure();
      expect(checkpointPages()).toBe(4096);
      db.close();
    });

    test("sqlite store on a small disk keeps its log within a quarter of it: a chatty execution does not fill the disk with log (tester D2)", async () => {
      const disk = mountSmallDisk("8m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      const path = join(disk.dir, "state.db");
      const { store, failed } = storeOn(path);
      try {
        store.create(newExecution(1));
        store.append(idOf(1), [draft.started()]);
        // ~2 pages of 16 KiB a commit: 400 commits write ~12 MiB of log for ~100 KiB of events.
        expect(await chatter(store, failed, idOf(1), 400)).toBeNull();
        expect(store.storageFault()).toBeNull();
        expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(2 * MIB + 256 * 1024);
        expect(store.get(idOf(1))).toMatchObject({ state: "running", last_sequence: 402 });
      } finally {
        // Closed on a disk still full when an expectation failed: that failure is the one to see.
        try {
          store.close();
        } catch {}
        disk.unmount();
      }
    });

    test("sqlite store stopped by a full disk empties its log before it tries again, and goes on once a little space is freed (tester D2)", async () => {
      const disk = mountSmallDisk("16m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      const path = join(disk.dir, "state.db");
      const { store, failed } = storeOn(path);
      try {
        store.create(newExecution(1));
        store.append(idOf(1), [draft.started()]);
        // ~2 MiB of log, below the mark: the same few pages written again and again.
        expect(await chatter(store, failed, idOf(1), 60)).toBeNull();
        expect(statSync(`${path}-wal`).size).toBeGreaterThan(MIB);
        const filler = fillDisk(disk.dir);
        // ~1 MiB more than the log's file has room for: refused by the full disk.
        store.append(idOf(1), output(MIB));
        const acknowledged = store.durable();
        await failed;
        expect(store.storageFault()).not.toBeNull();
        // Less than the write needs, more than the data itself lacks: the log's space is what frees it.
        truncateSync(filler, statSync(filler).size - 512 * 1024);
        await acknowledged;
        expect(store.storageFault()).toBeNull();
        const last = 2 + 60 + output(MIB).length;
        expect(store.get(idOf(1))).toMatchObject({ state: "running", last_sequence: last });
        expect(allEvents(store, idOf(1)).map((e) => e.sequence)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
      } finally {
        try {
          store.close();
        } catch {}
        disk.unmount();
      }
    }, 20_000);

    test("sqlite store opened on a full disk copies the log a crash left into the file first: it opens when the copy fits, and otherwise says how many bytes to free (tester D2)", async () => {
      const disk = mountSmallDisk("16m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      try {
        const path = join(disk.dir, "state.db");
        const { store: live, failed } = storeOn(path);
        live.create(newExecution(1, { effect: "write" }));
        live.append(idOf(1), [draft.started()]);
        expect(await chatter(live, failed, idOf(1), 60)).toBeNull();
        // A log of the same few pages over and over: its copy into the file takes little.
        const churned = crashCopy(path, join(disk.dir, "churned"));
        // A log of new pages (~1.5 MiB of events): its copy needs the file to grow.
        live.create(newExecution(2, { effect: "write" }));
        live.append(idOf(2), [draft.started(), ...output(1.5 * MIB)]);
        await live.durable();
        const grown = crashCopy(path, join(disk.dir, "grown"));
        live.close();
        rmSync(path);

        const filler = fillDisk(disk.dir);
        // The log's file is reused from its start only after a checkpoint: the recovery's writes
        // (the running executions ended) would have to grow it, on a disk that has nothing free.
        const small = freeWhatItSays(churned, filler);
        expect(small).toBeLessThan(128 * 1024);
        const reopened = storeOn(churned).store;
        expect(reopened.recovered).toEqual([{ id: idOf(1), found: "running", state: "failed" }]);
        // The log's space went back to the disk with the copy.
        expect(statSync(`${churned}-wal`).size).toBeLessThan(256 * 1024);
        reopened.close();

        fillDisk(disk.dir);
        expect(freeWhatItSays(grown, filler)).toBeGreaterThan(256 * 1024);
        const freed = storeOn(grown).store;
        expect(freed.recovered.map((r) => r.id).sort()).toEqual([idOf(1), idOf(2)]);
        // Created, started, its output, then ended interrupted.
        expect(freed.get(idOf(2))).toMatchObject({ state: "failed", last_sequence: 3 + output(1.5 * MIB).length });
        freed.close();
      } finally {
        disk.unmount();
      }
    }, 20_000);
  });
}
