import { afterEach, describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, utimesSync, writeFileSync, type FSWatcher } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_POLL_MS, POLL_STAT_BUDGET, watchFolders, type FolderWatch } from "../../runtime/capability/watch-folders.ts";
import { ManualClock } from "../_support/manual-clock.ts";

let base: string;
let watch: FolderWatch | null = null;

afterEach(() => {
  watch?.close();
  watch = null;
  rmSync(base, { recursive: true, force: true });
});

/** A file system that never reports a change, as a folder mounted from elsewhere (WSL's /mnt/c, a network share). */
const silent = () => Object.assign(new EventEmitter(), { close() {} }) as unknown as FSWatcher;

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
    // The file system's events alone (no poll): its timer would be pending from the start.
    watch = watchFolders([base], (isQuiet) => void (calls++, quiet.push(isQuiet)), { debounceMs: 100, clock, pollMs: 0 });
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
    watch = watchFolders([base], (isQuiet) => void (calls++, quiet.push(isQuiet)), { debounceMs: 100, maxWaitMs: 500, clock, pollMs: 0 });
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

  test("watchFolders finds at its next poll a change the file system did not report: a file created, written, renamed or removed", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    writeFileSync(join(base, "a.b.ts"), "1");
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([base], () => void calls++, { debounceMs: 100, clock, watch: silent });
    writeFileSync(join(base, "c.d.ts"), "new");
    clock.advance(DEFAULT_POLL_MS - 1);
    expect(calls).toBe(0);
    // Found at the poll, then reloaded after the quiet time as any change.
    clock.advance(1 + 99);
    expect(calls).toBe(0);
    clock.advance(1);
    expect(calls).toBe(1);
    const step = (change: () => void) => {
      const before = calls;
      change();
      clock.advance(DEFAULT_POLL_MS + 100);
      expect(calls).toBe(before + 1);
    };
    // Written in place with the same size: its modification time tells.
    step(() => {
      writeFileSync(join(base, "a.b.ts"), "2");
      utimesSync(join(base, "a.b.ts"), new Date(), new Date(Date.now() + 5000));
    });
    step(() => renameSync(join(base, "c.d.ts"), join(base, "e.f.ts")));
    step(() => rmSync(join(base, "e.f.ts")));
    // Nothing changed since the last reload read the folder: the polls call nothing.
    clock.advance(5 * DEFAULT_POLL_MS);
    expect(calls).toBe(4);
  });

  test("watchFolders polls a folder that does not exist yet, one added later, and a folder too large to look at file by file by its names, which leaves the others their files", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const later = join(base, "capabilities");
    const large = join(base, "large");
    const helpers = join(base, "lib");
    mkdirSync(large);
    mkdirSync(helpers);
    for (let i = 0; i <= POLL_STAT_BUDGET; i++) writeFileSync(join(large, `f${i}.ts`), "x");
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([large, later], () => void calls++, { debounceMs: 10, clock, watch: silent });
    const found = (change: () => void) => {
      const before = calls;
      change();
      clock.advance(DEFAULT_POLL_MS + 10);
      return calls - before;
    };
    expect(found(() => mkdirSync(later))).toBe(1);
    expect(found(() => writeFileSync(join(later, "a.b.ts"), "1"))).toBe(1);
    // Past the files a poll looks at one by one, a new name is still a change.
    expect(found(() => writeFileSync(join(large, "zz.ts"), "1"))).toBe(1);
    // Added: how it is then is its start; what comes after is a change, a file written in place
    // too, though the large folder alone holds more files than a poll looks at one by one.
    writeFileSync(join(helpers, "format.ts"), "1");
    watch.add(helpers);
    expect(found(() => undefined)).toBe(0);
    expect(found(() => writeFileSync(join(helpers, "format.ts"), "22"))).toBe(1);
    expect(found(() => undefined)).toBe(0);
  });

  test("watchFolders whose folder the file system refuses to watch (no watches left) says it polls instead, and picks up an edit there", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const clock = new ManualClock();
    const problems: string[] = [];
    let calls = 0;
    const refused = () => {
      throw Object.assign(new Error("ENOSPC: System limit for number of file watchers reached"), { code: "ENOSPC" });
    };
    watch = watchFolders([base], () => void calls++, { debounceMs: 10, clock, watch: refused, onProblem: (m) => problems.push(m) });
    expect(problems).toEqual([`docket cannot watch ${base} for changes (ENOSPC: System limit for number of file watchers reached); it looks at it every 2 s instead, so an edit there is picked up within that.`]);
    writeFileSync(join(base, "a.b.ts"), "1");
    clock.advance(DEFAULT_POLL_MS + 10);
    expect(calls).toBe(1);
  });

  test("watchFolders stops polling once closed", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([base], () => void calls++, { debounceMs: 10, clock, watch: silent });
    expect(clock.pending).toBe(1);
    watch.close();
    expect(clock.pending).toBe(0);
    writeFileSync(join(base, "a.b.ts"), "1");
    clock.advance(3 * DEFAULT_POLL_MS);
    expect(calls).toBe(0);
  });
});
