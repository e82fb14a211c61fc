import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { watchFolders, type FolderWatch } from "../../runtime/capability/watch-folders.ts";
import { ManualClock } from "../_support/manual-clock.ts";

let base: string;
let watch: FolderWatch | null = null;

afterEach(() => {
  watch?.close();
  watch = null;
  rmSync(base, { recursive: true, force: true });
});

/** Resolves when `check` holds, asking every few ms; fails after a generous bound. */
async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await Bun.sleep(10);
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe("watchFolders", () => {
  test("watchFolders calls onChange once for a burst of changes, after the quiet time of its clock", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const clock = new ManualClock();
    let calls = 0;
    const quiet: boolean[] = [];
    watch = watchFolders([base], (isQuiet) => void (calls++, quiet.push(isQuiet)), { debounceMs: 100, clock });
    expect(watch.pending()).toBe(false);
    writeFileSync(join(base, "a.b.ts"), "1");
    writeFileSync(join(base, "a.b.ts"), "2");
    writeFileSync(join(base, "c.d.ts"), "3");
    await until("a pending reload", () => clock.pending > 0);
    expect(watch.pending()).toBe(true);
    // The burst's later events may still be on their way; each one only moves the quiet time on.
    await Bun.sleep(50);
    clock.advance(99);
    expect(calls).toBe(0);
    clock.advance(1);
    expect(calls).toBe(1);
    // Called after the quiet time: the folders were quiet, and nothing waits any more.
    expect(quiet).toEqual([true]);
    expect(watch.pending()).toBe(false);
  });

  test("watchFolders calls onChange within its longest wait of the first change, however often the folder keeps changing", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const clock = new ManualClock();
    let calls = 0;
    const quiet: boolean[] = [];
    watch = watchFolders([base], (isQuiet) => void (calls++, quiet.push(isQuiet)), { debounceMs: 100, maxWaitMs: 500, clock });
    // A build stamp rewritten every 50 ms of the clock: never 100 ms quiet. Each change seen moves
    // the quiet time on by setting a new timer, and the clock moves only once it has been seen: an
    // event late under load would otherwise leave 100 ms of the clock quiet. Bun's watcher drops an
    // event that comes within a millisecond of the one before it, so a write it missed is made again.
    const rewrite = async (text: string) => {
      const before = clock.scheduled;
      for (let i = 0; i < 500 && clock.scheduled === before; i++) {
        if (i % 5 === 0) writeFileSync(join(base, "build-stamp.txt"), `${text} (${i})`);
        await Bun.sleep(10);
      }
      expect(clock.scheduled).toBeGreaterThan(before);
      clock.advance(50);
    };
    for (let step = 0; step < 9; step++) await rewrite(String(step));
    expect(calls).toBe(0);
    await rewrite("last");
    expect(calls).toBe(1);
    // Called at the longest wait, not after quiet: a reload then may read a file mid-save.
    expect(quiet).toEqual([false]);
  });

  test("watchFolders sees a folder that does not exist yet once it is created, and files written in it", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const folder = join(base, "capabilities");
    let calls = 0;
    watch = watchFolders([folder], () => void calls++, { debounceMs: 10 });
    mkdirSync(folder);
    await until("the folder's creation", () => calls === 1);
    writeFileSync(join(folder, "a.b.ts"), "1");
    await until("a file in the new folder", () => calls === 2);
    rmSync(folder, { recursive: true });
    await until("the folder's removal", () => calls >= 3);
    const seen = calls;
    mkdirSync(folder);
    writeFileSync(join(folder, "a.b.ts"), "2");
    await until("the folder made again", () => calls > seen);
  });
});
