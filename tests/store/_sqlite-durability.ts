import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { Database } from "bun:sqlite";
import { mkdirSync, mkdtempSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { createSqliteStore, type SqliteExecutionStore } from "../../runtime/store/sqlite-store.ts";
import { draft, idOf, limitsWith, newExecution, TestClock } from "./_fixtures.ts";
import { tempDb } from "./_sqlite-support.ts";
import { ManualClock } from "../_support/manual-clock.ts";
import { FILE_LOOK_MS } from "../../runtime/store/_sqlite-writer.ts";

/** A small tmpfs of `size`, so that a write meets a real full disk; null where mounting is not allowed. */
export function smallDisk(size: string): { dir: string; unmount(): void } | null {
  const dir = mkdtempSync(join(tmpdir(), "docket-full-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "ignore" });
  if (mounted.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    unmount() {
      spawnSync("umount", ["-l", dir], { stdio: "ignore" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes a file that takes every byte left on the disk of `dir`; answers its path. */
export function fillDisk(dir: string): string {
  const path = join(dir, "filler");
  const block = Buffer.alloc(64 * 1024, 1);
  writeFileSync(path, "");
  for (;;) {
    try {
      writeFileSync(path, block, { flag: "a" });
    } catch {
      // A last smaller write gets the bytes a whole block no longer fits in.
      try {
        writeFileSync(path, block.subarray(0, 4096), { flag: "a" });
        continue;
      } catch {
        return path;
      }
    }
  }
}

/** True when `promise` has settled by the time the next few ticks ran. */
async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
}

function sequences(events: ExecutionEvent[]): number[] {
  return events.map((e) => e.sequence);
}

/** docs/durability.md: acknowledge after durable, writer faults, unwritable values, private files. */
export function durabilityCases(): void {
  describe("sqlite store durability", () => {
    for (const { what, harm, says, keeps } of [
      // A checkout cleaned under the server (tester, session 33): no answer waits on a file no restart reads.
      { what: "whose file is removed under it (git clean -fdX)", harm: (path: string) => ["", "-wal", "-shm"].forEach((suffix) => rmSync(`${path}${suffix}`, { force: true })), says: "was removed while this server ran (a git clean -fdX, .docket/ deleted, or the checkout moved?)", keeps: false },
      // A clean stop copies the log it still holds into the database: nothing acknowledged is lost.
      { what: "whose write-ahead log is removed under it", harm: (path: string) => rmSync(`${path}-wal`), says: "-wal, the store's write-ahead log, was removed while this server ran", keeps: true },
      { what: "whose log is replaced by another file", harm: (path: string) => (rmSync(`${path}-wal`), writeFileSync(`${path}-wal`, "")), says: "-wal, the store's write-ahead log, was replaced by another file", keeps: false },
      { what: "whose file is emptied in place", harm: (path: string) => truncateSync(path, 0), says: "bytes while this server ran (emptied or truncated by something else", keeps: false },
    ]) {
      test(`sqlite store ${what} commits nothing more and says why: a crash would lose what it acknowledged (durability tester, session 40)`, async () => {
        const path = tempDb();
        const store = createSqliteStore({ path, limits: limitsWith({}), clock: new TestClock().now, onPersistError: () => undefined });
        try {
          store.create(newExecution(1));
          await store.durable();
          expect(store.storageFault()).toBeNull();
          harm(path);
          store.create(newExecution(2));
          const acknowledged = store.durable();
          expect(await settledSoon(acknowledged)).toBe(false);
          expect(store.storageFault()).toMatchObject({ reason: expect.stringContaining(says) });
          // Readers see what was committed before, nothing after.
          expect(store.get(idOf(2))).toBeNull();
          acknowledged.catch(() => undefined);
        } finally {
          try {
            store.close();
          } catch {
            // Its last write fails as every write since: nothing more is written, nothing lost that was acknowledged.
          }
        }
        if (!keeps) return;
        const reopened = createSqliteStore({ path, limits: limitsWith({}), clock: new TestClock().now, onPersistError: () => undefined });
        expect(reopened.get(idOf(1))).not.toBeNull();
        expect(reopened.get(idOf(2))).toBeNull();
        reopened.close();
      });
    }

    test("a sqlite store whose write-ahead log is cut in place commits nothing more, says so, and does not copy that log into its file: a clean stop left state.db damaged (durability tester, session 49)", () => {
      const path = tempDb();
      // In a process of its own: the store left open at its close (see sqlite-store.ts) is that process's to let go.
      const script = `
        const { truncateSync } = await import("node:fs");
        const { createSqliteStore } = await import(${JSON.stringify(join(import.meta.dir, "..", "..", "runtime", "store", "sqlite-store.ts"))});
        const { limitsWith, newExecution, idOf, draft } = await import(${JSON.stringify(join(import.meta.dir, "_fixtures.ts"))});
        const store = createSqliteStore({ path: ${JSON.stringify(path)}, limits: limitsWith({}), onPersistError: () => undefined });
        for (let n = 1; n <= 3; n++) { store.create(newExecution(n)); store.append(idOf(n), [draft.started()]); }
        await store.durable();
        truncateSync(${JSON.stringify(path)} + "-wal", 0);
        store.create(newExecution(4));
        const acknowledged = await Promise.race([store.durable().then(() => "acknowledged", () => "refused"), Bun.sleep(500).then(() => "waiting")]);
        console.log(JSON.stringify({ acknowledged, fault: store.storageFault()?.reason ?? null }));
        try { store.close(); } catch {}
      `;
      const child = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
      expect(child.exitCode).toBe(0);
      const said = JSON.parse(child.stdout.toString().trim().split("\n").at(-1)!) as { acknowledged: string; fault: string | null };
      expect(said.acknowledged).not.toBe("acknowledged");
      expect(said.fault).toContain("-wal, the store's write-ahead log, was cut from");
      // Opened again: whole, as its last checkpoint left it (what the cut log held is lost, nothing damaged).
      const file = new Database(path, { readonly: true });
      expect(file.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      file.close();
      const reopened = createSqliteStore({ path, limits: limitsWith({}), clock: new TestClock().now, onPersistError: () => undefined });
      expect(reopened.get(idOf(4))).toBeNull();
      reopened.close();
    });

    test("an idle sqlite store whose files are removed says so at its next look, with no write: /healthz went red only at the next write (durability tester, session 49)", async () => {
      const path = tempDb();
      const time = new ManualClock();
      const said: string[] = [];
      const store = createSqliteStore({ path, limits: limitsWith({}), clock: () => time.now(), cadence: time, onPersistError: (error) => void said.push(String(error)), onListenerError: () => {} });
      try {
        store.create(newExecution(1));
        await store.durable();
        ["", "-wal", "-shm"].forEach((suffix) => rmSync(`${path}${suffix}`, { force: true }));
        expect(store.storageFault()).toBeNull();
        time.advance(FILE_LOOK_MS);
        expect(store.storageFault()).toMatchObject({ reason: expect.stringContaining("was removed while this server ran") });
        expect(said).toHaveLength(1);
        // The next write meets it itself: refused, and not said twice.
        store.create(newExecution(2));
        const acknowledged = store.durable();
        acknowledged.catch(() => undefined);
        expect(await settledSoon(acknowledged)).toBe(false);
        expect(said).toHaveLength(1);
      } finally {
        try {
          store.close();
        } catch {
          // Its last write fails as every write since.
        }
      }
    });

    test("sqlite store whose file is cut in place after its own checkpoint grew it, to more than it was before that, commits nothing more (checking tester, session 40)", async () => {
      const path = tempDb();
      const time = new ManualClock();
      const store = createSqliteStore({ path, limits: limitsWith({}), clock: () => time.now(), cadence: time, onPersistError: () => undefined, onListenerError: () => {} });
      try {
        for (let n = 1; n <= 200; n++) {
          store.create(newExecution(n));
          store.append(idOf(n), [draft.started(), ...Array.from({ length: 20 }, (_, i) => draft.log(`line ${i} ${"x".repeat(200)}`))]);
        }
        await store.durable();
        const before = statSync(path).size;
        // A pause: the store copies its log into the file, which grows (its look is a real timer of QUIET_MS; the quiet, the cadence's).
        time.advance(2_000);
        await Bun.sleep(1_300);
        const grown = statSync(path).size;
        expect(grown).toBeGreaterThan(before + 16_384);
        truncateSync(path, grown - 16_384);
        store.create(newExecution(201));
        const acknowledged = store.durable();
        acknowledged.catch(() => undefined);
        expect(await settledSoon(acknowledged)).toBe(false);
        expect(store.storageFault()).toMatchObject({ reason: expect.stringContaining(`was cut from ${grown} to ${grown - 16_384} bytes`) });
      } finally {
        try {
          store.close();
        } catch {
          // Its last write fails as every write since.
        }
      }
    });

    test("sqlite store on a full disk keeps everything accepted in memory, shows readers only what is committed, says so in storageFault, and writes it all once space returns", async () => {
      const disk = smallDisk("8m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      const errors: unknown[] = [];
      let failed: () => void = () => {};
      const firstFailure = new Promise<void>((resolve) => (failed = resolve));
      const path = join(disk.dir, "state.db");
      const clock = new TestClock();
      let store: SqliteExecutionStore | null = createSqliteStore({
        path,
        limits: limitsWith({}),
        clock: clock.now,
        onPersistError: (error) => {
          errors.push(error);
          failed();
        },
      });
      try {
        const heard: string[] = [];
        store.subscribe({ executions: "all" }, (event) => heard.push(`${event.execution_id.slice(-1)}:${event.sequence}`));
        store.create(newExecution(1));
        store.append(idOf(1), [draft.started()]);
        await store.durable();
        expect(store.storageFault()).toBeNull();
        const filler = fillDisk(disk.dir);

        // Accepted while the disk is full: in memory, not shown to anyone.
        const big = "x".repeat(20_000);
        store.append(idOf(1), Array.from({ length: 200 }, (_, i) => draft.log(`${i} ${big}`)));
        store.create(newExecution(2));
        const acknowledged = store.durable();
        await firstFailure;
        expect(store.storageFault()).toMatchObject({ reason: expect.any(String), since: expect.any(String) });
        expect(String((errors[0] as { code?: string }).code)).toMatch(/SQLITE_FULL|SQLITE_IOERR/);
        expect(await settledSoon(acknowledged)).toBe(false);
        expect(store.get(idOf(1))).toMatchObject({ state: "running", last_sequence: 2 });
        expect(store.events(idOf(1))).toMatchObject({ last_sequence: 2 });
        expect(sequences(store.events(idOf(1))!.events)).toEqual([1, 2]);
        expect(store.get(idOf(2))).toBeNull();
        expect(store.list().items.map((s) => s.id)).toEqual([idOf(1)]);
        expect(store.current(idOf(1))).toMatchObject({ last_sequence: 202 });
        expect(heard).toEqual(["1:1", "1:2"]);
        // Appends go on meanwhile.
        store.append(idOf(1), [draft.completed("succeeded")]);

        unlinkSync(filler);
        await acknowledged;
        await store.durable();
        expect(store.storageFault()).toBeNull();
        expect(store.get(idOf(1))).toMatchObject({ state: "succeeded", last_sequence: 203 });
        expect(store.get(idOf(2))).toMatchObject({ state: "queued" });
        expect(heard).toEqual([...Array.from({ length: 203 }, (_, i) => `1:${i + 1}`), "2:1"].sort(byExecution(heard)));
        store.close();
        store = createSqliteStore({ path, limits: limitsWith({}), clock: clock.now });
        const events: ExecutionEvent[] = [];
        for (let after = 0; ; ) {
          const page = store.events(idOf(1), after)!.events;
          if (page.length === 0) break;
          events.push(...page);
          after = page.at(-1)!.sequence;
        }
        expect(sequences(events)).toEqual(Array.from({ length: 203 }, (_, i) => i + 1));
        expect(store.get(idOf(2))).toMatchObject({ state: "cancelled" });
      } finally {
        store?.close();
        disk.unmount();
      }
    });

    test("sqlite store on a full disk lets go of what retention dropped while it waits: a flood is not held in memory until the disk frees", async () => {
      const disk = smallDisk("8m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      let failed: () => void = () => {};
      const firstFailure = new Promise<void>((resolve) => (failed = resolve));
      const store = createSqliteStore({ path: join(disk.dir, "state.db"), limits: limitsWith({ events_retained: 10 }), clock: new TestClock().now, onPersistError: () => failed() });
      try {
        const heard: number[] = [];
        store.subscribe({ executions: "all" }, (event) => heard.push(event.sequence));
        store.create(newExecution(1));
        store.append(idOf(1), [draft.started()]);
        await store.durable();
        const filler = fillDisk(disk.dir);
        // 2,000 events while nothing can be written; retention keeps the last 10.
        const big = "x".repeat(20_000);
        store.append(idOf(1), Array.from({ length: 100 }, (_, j) => draft.log(`${j} ${big}`)));
        const acknowledged = store.durable();
        await firstFailure;
        // Short lines after the first: the snapshot's log tail must fit the small disk once it is freed.
        for (let i = 1; i < 20; i++) store.append(idOf(1), Array.from({ length: 100 }, (_, j) => draft.log(`${i * 100 + j}`)));
        expect(store.current(idOf(1))).toMatchObject({ last_sequence: 2002, retained_from: 1993 });
        unlinkSync(filler);
        await acknowledged;
        await store.durable();
        // What retention dropped during the fault was let go, never written nor handed out: a gap
        // a follower is told of (truncated), as for any event it was too late for.
        expect(heard).toEqual([1, 2, ...Array.from({ length: 10 }, (_, i) => 1993 + i)]);
        expect(sequences(store.events(idOf(1))!.events)).toEqual(Array.from({ length: 10 }, (_, i) => 1993 + i));
        expect(store.events(idOf(1))).toMatchObject({ truncated: true, retained_from: 1993 });
      } finally {
        // Closed on a disk still full when an expectation failed: that failure is the one to see.
        try {
          store.close();
        } catch {}
        disk.unmount();
      }
    });

    test("sqlite store recovers by itself from a full disk whose backlog is larger than the space freed: it writes it in parts, holds no event past retention, and acknowledges only once all of it is committed", async () => {
      const disk = smallDisk("16m");
      if (disk === null) {
        console.warn("skipped: mounting a small tmpfs is not allowed here (not root)");
        return;
      }
      const path = join(disk.dir, "state.db");
      const clock = new TestClock();
      const limits = { events_retained: 6000 };
      const line = (i: number) => `${i} ${"y".repeat(1000)}`;
      let store: SqliteExecutionStore | null = createSqliteStore({ path, limits: limitsWith(limits), clock: clock.now, onPersistError: () => {} });
      let filler: string | null = null;
      try {
        // A window of 6,000 events of ~1 KB (~6.6 MB) written while the disk has room.
        store.create(newExecution(1));
        store.append(idOf(1), [draft.started()]);
        for (let i = 0; i < 6000; i += 500) {
          store.append(idOf(1), Array.from({ length: 500 }, (_, j) => draft.log(line(i + j))));
          await store.durable();
        }
        // Writes pause: the log is copied into the database, so a try emptying it needs no room.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const heard: number[] = [];
        store.subscribe({ executions: "all", live: true }, (event) => heard.push(event.sequence));
        let failures = 0;
        store.onStorageFault(() => failures++);
        filler = fillDisk(disk.dir);
        // A whole new window while nothing can be written: the backlog is ~6.6 MB.
        store.append(idOf(1), [draft.progress(1, 2)]);
        const acknowledged = store.durable();
        for (let i = 0; i < 6000; i += 500) store.append(idOf(1), Array.from({ length: 500 }, (_, j) => draft.log(line(6000 + i + j))));
        while (failures === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        expect(store.storageFault()).not.toBeNull();
        const last = store.current(idOf(1))!.last_sequence;
        // 4 MiB freed, the log's file counted (each try empties it first): less than one
        // transaction of the whole backlog needs for the log.
        const log = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
        truncateSync(filler, Math.max(0, statSync(filler).size - Math.max(0, 4 * 1024 * 1024 - log)));
        const freedAt = failures;
        let recovered = false;
        void acknowledged.then(() => (recovered = true));
        while (!recovered && failures < freedAt + 4) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(recovered).toBe(true);
        expect(store.storageFault()).toBeNull();
        const from = last - 6000 + 1;
        expect(store.get(idOf(1))).toMatchObject({ state: "running", last_sequence: last, retained_from: from });
        expect(heard.at(-1)).toBe(last);
        const readAll = (reader: SqliteExecutionStore, after: number) => {
          const seen: number[] = [];
          for (;;) {
            const page = reader.events(idOf(1), after)!.events;
            if (page.length === 0) return seen;
            seen.push(...sequences(page));
            after = page.at(-1)!.sequence;
          }
        };
        expect(readAll(store, 0)).toEqual(Array.from({ length: 6000 }, (_, i) => from + i));
        store.close();
        store = null;
        // The file holds the retained window and nothing past it.
        const db = new Database(path, { readonly: true });
        try {
          expect(db.query("SELECT count(*) AS n FROM events WHERE sequence < ?").get(from)).toEqual({ n: 0 });
        } finally {
          db.close();
        }
        // And it is what a restart reads: the window, then the end recovery gave the execution.
        rmSync(filler, { force: true });
        store = createSqliteStore({ path, limits: limitsWith(limits), clock: clock.now });
        const reopened = store.get(idOf(1))!;
        expect(reopened.last_sequence).toBeGreaterThan(last);
        expect(readAll(store, 0)).toEqual(Array.from({ length: reopened.last_sequence - reopened.retained_from + 1 }, (_, i) => reopened.retained_from + i));
      } finally {
        try {
          store?.close();
        } catch {}
        if (filler !== null) rmSync(filler, { force: true });
        disk.unmount();
      }
    });

    test("sqlite store fails an execution it cannot write (internal, stage complete) alone: the others of the same writes are committed, and later ones too", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const unwritable: string[] = [];
      let store = createSqliteStore({ path, limits: limitsWith({ step_title_bytes: 1 << 20 }), clock: clock.now, maxSnapshotChars: 100_000, onUnwritable: (id) => unwritable.push(id) });
      const heard: ExecutionEvent[] = [];
      store.subscribe({ executions: "all" }, (event) => heard.push(event));
      store.create(newExecution(1, { effect: "write" }));
      store.append(idOf(1), [draft.started()]);
      await store.durable();
      // One tick: the big one's 50 steps of 5,000 characters, and two others created and finished.
      const title = "t".repeat(5_000);
      store.append(idOf(1), Array.from({ length: 50 }, (_, i) => draft.step(`s${i}`, `${i} ${title}`)));
      store.append(idOf(1), [draft.completed("succeeded")]);
      for (const n of [2, 3]) {
        store.create(newExecution(n));
        store.append(idOf(n), [draft.started(), draft.completed("succeeded")]);
      }
      await store.durable();
      await store.durable();
      expect(unwritable).toEqual([idOf(1)]);
      expect(store.get(idOf(1))).toMatchObject({
        state: "failed",
        last_sequence: 3,
        steps: [],
        failure: { error_code: "internal", stage: "complete", outcome_certainty: "unknown", retryability: "manual_reconcile" },
      });
      expect(store.get(idOf(1))!.failure!.message).toContain("more than the execution store can write");
      for (const n of [2, 3]) expect(store.get(idOf(n))).toMatchObject({ state: "succeeded", last_sequence: 3 });
      // Nobody was shown what was taken back: the big one's events end at its failure, dense.
      expect(sequences(heard.filter((e) => e.execution_id === idOf(1)))).toEqual([1, 2, 3]);
      expect(heard.find((e) => e.execution_id === idOf(1) && e.sequence === 3)!.type).toBe("execution.completed");
      // Later writes go on.
      store.create(newExecution(4));
      await store.durable();
      store.close();
      store = createSqliteStore({ path, limits: limitsWith({}), clock: clock.now });
      // Only the one still queued at close needed recovering.
      expect(store.recovered.map((r) => r.id)).toEqual([idOf(4)]);
      expect(store.get(idOf(1))).toMatchObject({ state: "failed", failure: { error_code: "internal", stage: "complete" } });
      for (const n of [2, 3]) expect(store.get(idOf(n))).toMatchObject({ state: "succeeded" });
      expect(store.get(idOf(4))).toMatchObject({ state: "cancelled" });
      store.close();
    });

    test("sqlite store fails an execution unwritable from its creation on: it starts again from execution.created and ends failed", async () => {
      const path = tempDb();
      const store = createSqliteStore({ path, limits: limitsWith({ step_title_bytes: 1 << 20 }), clock: new TestClock().now, maxSnapshotChars: 50_000, onUnwritable: () => {} });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), ...Array.from({ length: 20 }, (_, i) => draft.step(`s${i}`, "u".repeat(5_000)))]);
      expect(store.get(idOf(1))).toMatchObject({ state: "failed", last_sequence: 3, failure: { error_code: "internal", stage: "complete" } });
      expect(sequences(store.events(idOf(1))!.events)).toEqual([1, 2, 3]);
      store.close();
    });

    test("sqlite store files are private: the folder it makes is 0700 and state.db 0600, with no shared-memory file", async () => {
      const dir = mkdtempSync(join(tmpdir(), "docket-mode-"));
      const folder = join(dir, ".docket");
      mkdirSync(folder, { mode: 0o700 });
      const path = join(folder, "state.db");
      const store = createSqliteStore({ path, limits: limitsWith({}) });
      store.create(newExecution(1));
      await store.durable();
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
      expect(statSync(`${path}-starting`).mode & 0o777).toBe(0o600);
      expect(() => statSync(`${path}-shm`)).toThrow();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    });
  });
}

/** Sorts `n:seq` labels as the store delivered them: per execution in order, executions as first heard. */
function byExecution(heard: string[]): (a: string, b: string) => number {
  const first = (label: string) => heard.findIndex((h) => h.split(":")[0] === label.split(":")[0]);
  return (a, b) => first(a) - first(b) || Number(a.split(":")[1]) - Number(b.split(":")[1]);
}
