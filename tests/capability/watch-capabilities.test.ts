// Reloading on changes (watch-capabilities.ts, docs/authoring.md "Live reload"), with the clock in the test's hands.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CatalogChange } from "../../runtime/capability/live-catalog.ts";
import { watchCapabilities } from "../../runtime/capability/watch-capabilities.ts";
import type { FolderWatch } from "../../runtime/capability/watch-folders.ts";
import { ManualClock } from "../_support/manual-clock.ts";

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
    watch = watchCapabilities({ reload: async () => answers[Math.min(reloads++, answers.length - 1)]!, watchedFolders: [base] }, { log: (line) => logged.push(line), watchOptions: { debounceMs: 100, clock } })!;
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
  });
});
