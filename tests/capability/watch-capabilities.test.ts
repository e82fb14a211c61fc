// Reloading on changes (watch-capabilities.ts, docs/authoring.md "Live reload"), with the clock in the test's hands.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CatalogChange } from "../../runtime/capability/live-catalog.ts";
import { installPlaces, watchCapabilities } from "../../runtime/capability/watch-capabilities.ts";
import type { FolderWatch } from "../../runtime/capability/watch-folders.ts";
import { ManualClock } from "../_support/manual-clock.ts";
import { silentWatch } from "../_support/silent-watch.ts";

let base: string;
let watch: FolderWatch | null = null;

afterEach(() => {
  watch?.close();
  watch = null;
  rmSync(base, { recursive: true, force: true });
});

const FILE = "/work/team/capabilities/team.live.ts";
const change = (over: Partial<CatalogChange & { held: string[] }> = {}) => ({ added: [], changed: [], removed: [], newErrors: [], clearedErrors: 0, held: [], ...over });

describe("watchCapabilities", () => {
  test("a reload that held back a capability's failure (a file read mid-save) is followed by one more once the folders are quiet, with no further change on disk (tester A)", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-caps-")));
    const clock = new ManualClock();
    const answers = [
      change({ held: [FILE] }),
      change({ removed: ["team.live"], newErrors: [{ file: FILE, line: 3, column: 19, reason: "it threw while loading" }] }),
    ];
    let reloads = 0;
    const logged: string[] = [];
    const settled: boolean[] = [];
    watch = watchCapabilities(
      {
        reload: async (isSettled) => {
          settled.push(isSettled?.() ?? false);
          return answers[Math.min(reloads++, answers.length - 1)]!;
        },
        watchedFolders: [base],
      },
      { log: (line) => logged.push(line), watchOptions: { debounceMs: 100, clock } },
    )!;
    watch.touch();
    clock.advance(100);
    expect(reloads).toBe(1);
    // The held failure is not said; its reload asks for another, after the quiet time.
    await Bun.sleep(0);
    expect(logged).toEqual([]);
    clock.advance(99);
    expect(reloads).toBe(1);
    clock.advance(1);
    expect(reloads).toBe(2);
    await Bun.sleep(0);
    expect(logged).toEqual(["docket reloaded capabilities: removed team.live", `docket could not load ${FILE}:3:19: it threw while loading`]);
    // Nothing held: no reload more.
    clock.advance(1000);
    expect(reloads).toBe(2);
    // Both came after the quiet time: each may judge what it read.
    expect(settled).toEqual([true, true]);
  });

  test("a reload forced by folders that are never quiet, or met by a change while it reads, is told it is not settled, and may not judge a file it found failing (tester B)", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-caps-")));
    const clock = new ManualClock();
    const asked: Array<() => boolean> = [];
    watch = watchCapabilities(
      {
        reload: async (isSettled) => {
          asked.push(isSettled!);
          return change();
        },
        watchedFolders: [base],
      },
      { log: () => undefined, watchOptions: { debounceMs: 100, maxWaitMs: 300, clock } },
    )!;
    // A build stamp rewritten every 50 ms: never 100 ms quiet, so the reload is forced at 300 ms.
    for (let step = 0; step < 6; step++) {
      watch.touch();
      clock.advance(50);
    }
    expect(asked.length).toBe(1);
    expect(asked[0]!()).toBe(false);
    // After quiet: settled, until a change comes while it reads.
    watch.touch();
    clock.advance(100);
    expect(asked.length).toBe(2);
    expect(asked[1]!()).toBe(true);
    watch.touch();
    expect(asked[1]!()).toBe(false);
  });

  test("a reload the system refused (a folder that cannot be read) is said in one line, with no stack, and the next change tries again", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-caps-")));
    const clock = new ManualClock();
    const logged: string[] = [];
    let reloads = 0;
    watch = watchCapabilities(
      {
        reload: async () => {
          if (reloads++ === 0) throw Object.assign(new Error(`EACCES: permission denied, scandir '${base}'`), { code: "EACCES" });
          return change({ added: ["team.live"] });
        },
        watchedFolders: [base],
      },
      { log: (line) => logged.push(line), watchOptions: { debounceMs: 100, clock, pollMs: 0 } },
    )!;
    watch.touch();
    clock.advance(100);
    await Bun.sleep(0);
    expect(logged).toEqual([`docket could not reload the capabilities: EACCES: permission denied, scandir '${base}'; it tries again at the next change`]);
    watch.touch();
    clock.advance(100);
    await Bun.sleep(0);
    expect(logged[1]).toBe("docket reloaded capabilities: added team.live");
  });

  test("a reload that met a save in a folder that sends no events is told it is not settled, and the folders are read again once quiet", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-caps-")));
    const clock = new ManualClock();
    const settled: boolean[] = [];
    let reloads = 0;
    watch = watchCapabilities(
      {
        reload: async (isSettled) => {
          // The first read meets a save that begins as it reads: a look shows it, no event does.
          if (reloads++ === 0) writeFileSync(join(base, "team.b.ts"), "export const half =");
          settled.push(isSettled!());
          return change();
        },
        watchedFolders: [base],
      },
      { log: () => undefined, watchOptions: { debounceMs: 100, clock, watch: silentWatch } },
    )!;
    watch.touch();
    clock.advance(100);
    await Bun.sleep(0);
    expect(settled).toEqual([false]);
    // The change it found waits for the quiet time, then the folders are read again, settled.
    clock.advance(100);
    await Bun.sleep(0);
    expect(settled).toEqual([false, true]);
    expect(reloads).toBe(2);
  });

  test("a helper folder first met by a reload, whose file was saved after that reload read it and before its folder was watched, is read again: no watcher was there to hear it", async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "docket-watch-caps-")));
    const helpers = join(base, "lib");
    mkdirSync(helpers);
    writeFileSync(join(helpers, "format.ts"), "export const v = 1;");
    const clock = new ManualClock();
    let reloads = 0;
    let found: string[] = [];
    watch = watchCapabilities(
      {
        reload: async () => {
          // The first reload imports the helper (its folder is watched only once the reload is done);
          // the helper is saved again right after it was read.
          if (reloads++ === 0) {
            found = [helpers];
            writeFileSync(join(helpers, "format.ts"), "export const v = 2;");
          }
          return change();
        },
        watchedFolders: [base],
        sourceFolders: () => found,
      },
      { log: () => undefined, watchOptions: { debounceMs: 100, clock, watch: silentWatch } },
    )!;
    watch.touch();
    clock.advance(100);
    await Bun.sleep(0);
    expect(reloads).toBe(1);
    // The helper folder's first look sees a file changed since the reload began: read again.
    clock.advance(0);
    clock.advance(100);
    await Bun.sleep(0);
    expect(reloads).toBe(2);
    // Nothing changed since: no more reloads.
    clock.advance(5000);
    await Bun.sleep(0);
    expect(reloads).toBe(2);
  });
});

describe("installPlaces", () => {
  test("installPlaces names package.json and node_modules of each folder up to the checkout root, or, outside it, up to the nearest package.json; none inside a node_modules", () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "docket-places-")));
    const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "docket-elsewhere-")));
    try {
      mkdirSync(join(elsewhere, "tools", "caps"), { recursive: true });
      writeFileSync(join(elsewhere, "tools", "package.json"), "{}");
      const places = installPlaces(root, [join(root, "packages", "tools", "caps"), join(elsewhere, "tools", "caps"), join(root, "node_modules", "pkg", "src")]);
      for (const dir of [join(root, "packages", "tools", "caps"), join(root, "packages", "tools"), join(root, "packages"), root, join(elsewhere, "tools", "caps"), join(elsewhere, "tools")]) {
        expect(places).toContain(join(dir, "package.json"));
        expect(places).toContain(join(dir, "node_modules"));
      }
      // Not above the nearest package.json outside the checkout, nor above the root, nor inside a node_modules.
      expect(places).not.toContain(join(elsewhere, "package.json"));
      expect(places.some((place) => !place.startsWith(root) && !place.startsWith(join(elsewhere, "tools")))).toBe(false);
      expect(places).not.toContain(join(root, "node_modules", "pkg", "src", "package.json"));
    } finally {
      rmSync(root, { recursive: true, force: true });
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
