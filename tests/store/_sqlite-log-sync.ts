import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogSync } from "../../runtime/store/_sqlite-log-sync.ts";

/** A sync the test finishes by hand: what was asked, and a way to end the oldest one. */
function manualSync() {
  const calls: Array<{ fd: number; done: (error: Error | null) => void }> = [];
  return {
    calls,
    sync: (fd: number, done: (error: Error | null) => void) => void calls.push({ fd, done }),
    finish(error: Error | null = null) {
      calls.shift()!.done(error);
    },
  };
}

/** The background sync of the write-ahead log (runtime/store/_sqlite-log-sync.ts). */
export function logSyncCases(): void {
  describe("sqlite store log sync", () => {
    const dir = mkdtempSync(join(tmpdir(), "docket-log-sync-"));
    const log = join(dir, "state.db-wal");
    writeFileSync(log, "");

    test("sqlite log sync follows a commit, one sync at a time, and once more for commits made during one", () => {
      const manual = manualSync();
      const logSync = createLogSync(log, { everyMs: 0, sync: manual.sync });
      logSync.wrote();
      expect(manual.calls).toHaveLength(1);
      // Commits while a sync is in flight wait for it, then are covered by one more.
      logSync.wrote();
      logSync.wrote();
      expect(manual.calls).toHaveLength(1);
      manual.finish();
      expect(manual.calls).toHaveLength(1);
      manual.finish();
      // Nothing written since: no sync.
      expect(manual.calls).toHaveLength(0);
      logSync.stop();
    });

    test("sqlite log sync lets everyMs pass between the starts of two syncs; stop cancels the one waiting", () => {
      const manual = manualSync();
      const logSync = createLogSync(log, { everyMs: 60_000, sync: manual.sync });
      logSync.wrote();
      manual.finish();
      // The next commit comes well within everyMs: its sync waits on a timer, not at once.
      logSync.wrote();
      logSync.wrote();
      expect(manual.calls).toHaveLength(0);
      logSync.stop();
      logSync.wrote();
      expect(manual.calls).toHaveLength(0);
    });

    test("sqlite log sync gives up after a failed sync (left to the checkpoint's own), and waits for a log that does not exist yet", () => {
      const manual = manualSync();
      const missing = createLogSync(join(dir, "absent-wal"), { everyMs: 0, sync: manual.sync });
      missing.wrote();
      expect(manual.calls).toHaveLength(0);
      missing.stop();
      const failing = createLogSync(log, { everyMs: 0, sync: manual.sync });
      failing.wrote();
      failing.wrote();
      manual.finish(Object.assign(new Error("EPERM: operation not permitted, fdatasync"), { code: "EPERM" }));
      failing.wrote();
      expect(manual.calls).toHaveLength(0);
    });

    // After every test, also when a filter ran only some of them (it was left in the temporary folder then).
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
  });
}
