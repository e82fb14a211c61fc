import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_POLL_MS, FILE_TIME_SLACK_MS, lookAtFolders, watchFolders, type FolderWatch } from "../../runtime/capability/watch-folders.ts";
import { MAX_FOLDER_ENTRIES } from "../../runtime/capability/path-looks.ts";
import { ManualClock } from "../_support/manual-clock.ts";
import { silentWatch } from "../_support/silent-watch.ts";

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
    watch = watchFolders([base], () => void calls++, { debounceMs: 100, clock, watch: silentWatch });
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

  test("watchFolders counts changes from `lookedAt`, the look taken before the caller's read: a folder made and a file written before the watch began are reloaded; nothing changed since, nothing is (authoring tester, session 49)", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const folder = join(base, "capabilities");
    // Looked at before the server's first read, when capabilities/ did not exist yet.
    const before = lookAtFolders([folder]);
    mkdirSync(folder);
    writeFileSync(join(folder, "early.pkg.ts"), "1");
    const clock = new ManualClock();
    let calls = 0;
    // The file system reports nothing of what happened before the watch: it was never loaded.
    watch = watchFolders([folder], () => void calls++, { debounceMs: 100, clock, watch: silentWatch, lookedAt: before });
    clock.advance(99);
    expect(calls).toBe(0);
    clock.advance(1);
    expect(calls).toBe(1);
    clock.advance(5 * DEFAULT_POLL_MS);
    expect(calls).toBe(1);
    watch.close();
    // Nothing changed since that look: no reload.
    const now = lookAtFolders([folder]);
    let later = 0;
    watch = watchFolders([folder], () => void later++, { debounceMs: 100, clock, watch: silentWatch, lookedAt: now });
    clock.advance(5 * DEFAULT_POLL_MS);
    expect(later).toBe(0);
  });

  test("watchFolders polls a folder that does not exist yet, one added later, and a folder too large to look at file by file by its names, which leaves the others their files", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const later = join(base, "capabilities");
    const large = join(base, "large");
    const helpers = join(base, "lib");
    mkdirSync(large);
    mkdirSync(helpers);
    for (let i = 0; i <= MAX_FOLDER_ENTRIES; i++) writeFileSync(join(large, `f${i}.ts`), "x");
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([large, later], () => void calls++, { debounceMs: 10, clock, watch: silentWatch });
    const found = (change: () => void) => {
      const before = calls;
      change();
      clock.advance(DEFAULT_POLL_MS + 10);
      return calls - before;
    };
    expect(found(() => mkdirSync(later))).toBe(1);
    expect(found(() => writeFileSync(join(later, "a.b.ts"), "1"))).toBe(1);
    // A folder too large to read entry by entry is looked at whole: a new file in it is still a change.
    expect(found(() => writeFileSync(join(large, "zz.ts"), "1"))).toBe(1);
    // Added: how it is then is its start; what comes after is a change, a file written in place
    // too, though the large folder alone holds more files than a look reads.
    writeFileSync(join(helpers, "format.ts"), "1");
    watch.add(helpers);
    expect(found(() => undefined)).toBe(0);
    expect(found(() => writeFileSync(join(helpers, "format.ts"), "22"))).toBe(1);
    expect(found(() => undefined)).toBe(0);
  });

  test("watchFolders counts a file of a folder added with a moment it was read from, changed after that moment (less the file times' slack), as a change at its first look, and nothing older", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const [read, old, unknown] = ["read", "old", "unknown"].map((name) => join(base, name));
    for (const folder of [read, old, unknown]) {
      mkdirSync(folder);
      writeFileSync(join(folder, "format.ts"), "1");
    }
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([join(base, "capabilities")], () => void calls++, { debounceMs: 10, clock, watch: silentWatch });
    const found = (add: () => void) => {
      const before = calls;
      add();
      clock.advance(0);
      clock.advance(10);
      return calls - before;
    };
    // Read by a reload that began now: the file was written (its change time) within the slack of it.
    expect(found(() => watch!.add(read, Date.now()))).toBe(1);
    // Read well after the file's last change: as it is, is where its changes count from.
    expect(found(() => watch!.add(old, Date.now() + FILE_TIME_SLACK_MS + 60_000))).toBe(0);
    expect(found(() => watch!.add(unknown))).toBe(0);
    clock.advance(DEFAULT_POLL_MS + 10);
    expect(calls).toBe(1);
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
    watch = watchFolders([base], () => void calls++, { debounceMs: 10, clock, watch: silentWatch });
    expect(clock.pending).toBe(1);
    watch.close();
    expect(clock.pending).toBe(0);
    writeFileSync(join(base, "a.b.ts"), "1");
    clock.advance(3 * DEFAULT_POLL_MS);
    expect(calls).toBe(0);
  });

  test("watchFolders finds at its poll a change that kept the file's size and modification time: a copy that kept them (cp -p), a chmod", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const file = join(base, "a.b.ts");
    writeFileSync(file, "export const x = 1;\n");
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([base], () => void calls++, { debounceMs: 10, clock, watch: silentWatch });
    const { atime, mtime } = statSync(file);
    writeFileSync(file, "export const x = 2;\n");
    utimesSync(file, atime, mtime);
    clock.advance(DEFAULT_POLL_MS + 10);
    expect(calls).toBe(1);
    chmodSync(file, 0o600);
    clock.advance(DEFAULT_POLL_MS + 10);
    expect(calls).toBe(2);
  });

  test("watchFolders waits out a slow save the file system does not report: the folders look different again when the quiet time ends, so it starts over", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const file = join(base, "a.b.ts");
    // 400 files beside it: a look that takes some milliseconds is taken all the same at the end of the quiet time.
    for (let i = 0; i < 400; i++) writeFileSync(join(base, `f${i}.txt`), "x");
    const clock = new ManualClock();
    const quiet: boolean[] = [];
    // The default quiet time (150 ms); a slow save reloaded at the longest wait is not quiet.
    watch = watchFolders([base], (isQuiet) => void quiet.push(isQuiet), { maxWaitMs: 10_000, clock, watch: silentWatch });
    let text = "";
    const append = (part: string) => writeFileSync(file, (text += part));
    append("// first part\n");
    clock.advance(DEFAULT_POLL_MS);
    // Found at the poll; written again before the quiet time ends: no reload yet.
    append("// second part\n");
    clock.advance(150);
    expect(quiet).toEqual([]);
    append("export const x = 1;\n");
    clock.advance(150);
    expect(quiet).toEqual([]);
    // Nothing more: the next end of the quiet time reloads, once, as quiet.
    clock.advance(150);
    expect(quiet).toEqual([true]);
    clock.advance(3 * DEFAULT_POLL_MS);
    expect(quiet).toEqual([true]);
  });

  test("watchFolders says once that the file system refused a folder, however many reloads try it again", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const clock = new ManualClock();
    const problems: string[] = [];
    const refused = () => {
      throw new Error("ENOSPC: System limit for number of file watchers reached");
    };
    watch = watchFolders([base, join(base, "package.json"), join(base, "tsconfig.json")], () => undefined, { debounceMs: 10, clock, watch: refused, onProblem: (m) => problems.push(m) });
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(base, `f${i}.ts`), "1");
      clock.advance(DEFAULT_POLL_MS + 10);
    }
    // The folder, and its own folder again for the two files missing in it: one line.
    expect(problems).toHaveLength(1);
  });

  test("watchFolders watches a folder again once it is re-created, renamed over, or its link re-pointed: the old folder's watcher hears nothing of the new one", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const folder = join(base, "capabilities");
    mkdirSync(folder);
    let calls = 0;
    // Events alone: the poll would find these within 2 s, the watcher within the quiet time.
    watch = watchFolders([folder], () => void calls++, { debounceMs: 10, pollMs: 0 });
    const edited = async (what: string, file: string) => {
      await Bun.sleep(50);
      const before = calls;
      writeFileSync(file, String(Math.random()));
      await until(what, () => calls > before);
    };
    rmSync(folder, { recursive: true });
    mkdirSync(folder);
    await until("the re-creation", () => calls >= 1);
    await edited("an edit in the re-created folder", join(folder, "a.b.ts"));

    // mv capabilities old; mv next capabilities: edits in old are no longer heard.
    const next = join(base, "next");
    mkdirSync(next);
    let before = calls;
    renameSync(folder, join(base, "old"));
    renameSync(next, folder);
    await until("the swap", () => calls > before);
    await edited("an edit in the folder swapped in", join(folder, "c.d.ts"));
    await Bun.sleep(100);
    before = calls;
    writeFileSync(join(base, "old", "a.b.ts"), "no longer watched");
    await Bun.sleep(300);
    expect(calls).toBe(before);

    // capabilities -> releases/v1, re-pointed at releases/v2 in one rename.
    rmSync(folder, { recursive: true });
    for (const v of ["v1", "v2"]) mkdirSync(join(base, "releases", v), { recursive: true });
    symlinkSync(join(base, "releases", "v1"), folder);
    await Bun.sleep(100);
    await edited("an edit in v1", join(base, "releases", "v1", "a.b.ts"));
    symlinkSync(join(base, "releases", "v2"), join(base, "link"));
    renameSync(join(base, "link"), folder);
    // The link's re-pointing is an event in the checkout folder only: the watch is rearmed at the next change it hears, v1's.
    writeFileSync(join(base, "releases", "v1", "a.b.ts"), "old");
    await Bun.sleep(200);
    const settled = calls;
    await edited("an edit in v2", join(base, "releases", "v2", "a.b.ts"));
    writeFileSync(join(base, "releases", "v1", "a.b.ts"), "no longer served");
    await Bun.sleep(300);
    expect(calls).toBe(settled + 1);
  });

  test("watchFolders looks at the capability folders' files first, and at folders added later with the others: no change is made up, none is missed", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const caps = join(base, "capabilities");
    mkdirSync(caps);
    for (let i = 0; i < 500; i++) writeFileSync(join(caps, `c${String(i).padStart(3, "0")}.ts`), "x");
    const helpers = [1, 2, 3, 4, 5, 6].map((n) => join(base, `lib${n}`));
    for (const folder of helpers) {
      mkdirSync(folder);
      for (let i = 0; i < 900; i++) writeFileSync(join(folder, `h${i}.ts`), "x");
    }
    const clock = new ManualClock();
    let calls = 0;
    watch = watchFolders([caps], () => void calls++, { debounceMs: 10, clock, watch: silentWatch });
    // A look spaces the polls by a hundred times its own cost, in real time: on a machine loaded
    // enough for a look at 5,900 entries to take 20 ms, past DEFAULT_POLL_MS. The test's clock
    // moves a minute, a few polls however slow the machine.
    const found = (change: () => void) => {
      const before = calls;
      change();
      clock.advance(60_000);
      return calls - before;
    };
    // 5,900 entries in all, over what a look reads: the later helper folders are looked at whole.
    for (const folder of helpers) watch.add(folder);
    expect(found(() => undefined)).toBe(0);
    expect(found(() => undefined)).toBe(0);
    // The last capability file by name, written in place at its size: past any even share of 1,000 files among seven folders.
    const last = join(caps, "c499.ts");
    expect(found(() => {
      writeFileSync(last, "y");
      utimesSync(last, new Date(), new Date(Date.now() + 7000));
    })).toBe(1);
    // A file created in a helper folder looked at whole is still seen.
    expect(found(() => writeFileSync(join(helpers[5]!, "new.ts"), "1"))).toBe(1);
  });

  test("watchFolders waits out a slow save in a folder that sends no events though another watched folder sends them", () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-")));
    const caps = join(base, "capabilities");
    const lib = join(base, "lib");
    mkdirSync(caps);
    mkdirSync(lib);
    // capabilities/ on a share that sends nothing; lib/ reports, through listeners the test calls.
    const listeners = new Map<string, (event: string, name: string | null) => void>();
    const mixed = (path: string, _options: { persistent: boolean }, listener: (event: string, name: string | Buffer | null) => void) => {
      if (path === lib) listeners.set(path, listener as (event: string, name: string | null) => void);
      return silentWatch();
    };
    const clock = new ManualClock();
    const quiet: boolean[] = [];
    watch = watchFolders([caps, lib], (isQuiet) => void quiet.push(isQuiet), { maxWaitMs: 10_000, clock, watch: mixed });
    const file = join(caps, "a.b.ts");
    writeFileSync(file, "// first part\n");
    clock.advance(DEFAULT_POLL_MS);
    // The save goes on, and a note is written in lib/ meanwhile: lib's event says nothing of capabilities/.
    writeFileSync(file, "// first part\n// second part\n");
    writeFileSync(join(lib, "notes.txt"), "1");
    listeners.get(lib)!("change", "notes.txt");
    clock.advance(150);
    expect(quiet).toEqual([]);
    clock.advance(150);
    expect(quiet).toEqual([true]);
  });
});
