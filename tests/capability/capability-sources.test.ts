// A capability's source, read once: the file and every local module it imports (capability-sources.ts),
// imported pinned to exactly those texts (pinned-sources.ts, docs/authoring.md "Versions").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { fileVersion } from "../../runtime/capability/capability-version.ts";
import { importTarget, readSources } from "../../runtime/capability/pinned-sources.ts";

let dir: string;
beforeAll(() => {
  registerDocketModules();
  dir = realpathSync(mkdtempSync(join(tmpdir(), "docket-sources-")));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes files under a fresh folder; its path. */
function tree(name: string, files: Record<string, string>): string {
  const at = join(dir, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(at, path, ".."), { recursive: true });
    writeFileSync(join(at, path), text);
  }
  return at;
}

/** Reads a capability file's source as discovery does. */
const sourcesOf = (file: string) => readSources(file, readFileSync(file, "utf8"));

/** Imports a source pinned (as every thread does) and returns its default export. */
async function importPinned(file: string, sources: Awaited<ReturnType<typeof sourcesOf>>): Promise<unknown> {
  const target = importTarget(sources);
  expect(target.pinned).toBe(true);
  const unpin = target.pin();
  try {
    return ((await import(target.specifier)) as { default: unknown }).default;
  } finally {
    unpin();
  }
}

describe("capability sources", () => {
  test("a file that imports no local module: its version is its text's, as before", async () => {
    const at = tree("alone", { "a.ts": 'import * as v from "valibot";\nimport { readFileSync } from "node:fs";\nexport default 1;\n' });
    const sources = await sourcesOf(join(at, "a.ts"));
    expect(sources.version).toBe(fileVersion(readFileSync(join(at, "a.ts"), "utf8")));
    expect(sources.modules.map((m) => m.path)).toEqual([join(at, "a.ts")]);
  });

  test("local modules are read through every kind of import, each once; packages, type-only imports and JSON are not", async () => {
    const at = tree("graph", {
      "cap.ts": [
        'import { a } from "./_a.ts";',
        'export { b } from "./lib/_b";',
        'import "./_side.ts";',
        'import type { T } from "./_types.ts";',
        'import data from "./data.json";',
        'import { thing } from "pkg";',
        'const lazy = () => import("./_lazy.ts");',
        "export default { a, data, thing, lazy };",
      ].join("\n"),
      "_a.ts": 'import { b } from "./lib/_b.ts";\nexport const a = "a" + b;\n',
      "lib/_b.ts": 'import { a } from "../_a.ts";\nexport const b = "b";\nexport const cycle = () => a;\n',
      "_side.ts": "globalThis.sideLoaded = true;\n",
      "_types.ts": "export type T = number;\n",
      "_lazy.ts": "export const lazy = 1;\n",
      "data.json": "{}",
      "node_modules/pkg/index.js": "export const thing = 1;\n",
      "node_modules/pkg/package.json": '{"name":"pkg","main":"index.js"}',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    expect(sources.modules.map((m) => m.path.slice(at.length + 1)).sort()).toEqual(["_a.ts", "_lazy.ts", "_side.ts", "cap.ts", "lib/_b.ts"]);
    // The cycle _a ↔ _b is one whole: both have the same key; the capability's is its version.
    const key = (path: string) => sources.modules.find((m) => m.path === join(at, path))!.key;
    expect(key("_a.ts")).toBe(key("lib/_b.ts"));
    expect(key("cap.ts")).toBe(sources.version);
    expect(key("_lazy.ts")).toBe(fileVersion("export const lazy = 1;\n"));
    expect(((await importPinned(join(at, "cap.ts"), sources)) as { a: string }).a).toBe("ab");
  });

  test("a helper's edit is a new version, and a new module for it, while a helper nobody changed keeps its key", async () => {
    const at = tree("edit", {
      "cap.ts": 'import { word } from "./_word.ts";\nimport { same } from "./_same.ts";\nexport default () => `${word} ${same}`;\n',
      "_word.ts": 'export const word = "first";\n',
      "_same.ts": 'export const same = "kept";\n',
    });
    const file = join(at, "cap.ts");
    const before = await sourcesOf(file);
    writeFileSync(join(at, "_word.ts"), 'export const word = "second";\n');
    const after = await sourcesOf(file);
    expect(after.version).not.toBe(before.version);
    const keyOf = (sources: typeof before, name: string) => sources.modules.find((m) => m.path === join(at, name))!.key;
    expect(keyOf(after, "_same.ts")).toBe(keyOf(before, "_same.ts"));
    expect(((await importPinned(file, before)) as () => string)()).toBe("first kept");
    expect(((await importPinned(file, after)) as () => string)()).toBe("second kept");
  });

  test("the helper imported is the helper read: a save after the read is not run, whatever is on disk by then", async () => {
    const at = tree("race", {
      "cap.ts": 'import { answer } from "./_helper.ts";\nexport default answer;\n',
      "_helper.ts": 'export const answer = "read";\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    // What a save during a trial load would have landed: a helper that would hold the thread.
    writeFileSync(join(at, "_helper.ts"), 'for (;;) {}\nexport const answer = "never";\n');
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe("read");
  });

  test("an import written with comments or line breaks before its specifier is pinned too", async () => {
    const at = tree("comments", {
      "cap.ts": 'import { a } from /* the helper */ "./_a.ts";\nconst { b } = await import(\n  // lazily\n  "./_b.ts"\n);\nexport default a + b;\n',
      "_a.ts": 'export const a = "a";\n',
      "_b.ts": 'export const b = "b";\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    writeFileSync(join(at, "_a.ts"), 'for (;;) {}\nexport const a = "never";\n');
    writeFileSync(join(at, "_b.ts"), 'for (;;) {}\nexport const b = "never";\n');
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe("ab");
  });

  test("a helper missing when the capability was read is missing for every thread, even once it is written", async () => {
    const at = tree("later", { "cap.ts": 'await Promise.resolve();\nconst { later } = await import("./_later.ts");\nexport default later;\n' });
    const sources = await sourcesOf(join(at, "cap.ts"));
    // Written after the read (a trial may have passed without it): no thread imports this text.
    writeFileSync(join(at, "_later.ts"), 'for (;;) {}\nexport const later = "never";\n');
    const error = await importPinned(join(at, "cap.ts"), sources).catch((e: Error) => e);
    expect(String((error as Error).message)).toContain("Cannot find module");
    // Read again (the next reload), it is there, pinned like any other.
    writeFileSync(join(at, "_later.ts"), 'export const later = "now";\n');
    expect(await importPinned(join(at, "cap.ts"), await sourcesOf(join(at, "cap.ts")))).toBe("now");
  });

  test("lines keep their numbers in a served text: an error in a helper names its file and line", async () => {
    const at = tree("lines", {
      "cap.ts": 'import {\n  broken,\n} from "./_broken.ts";\nexport default broken;\n',
      "_broken.ts": "\n\nexport const broken = 1;\nthrow new Error('helper failed');\n",
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    const error = await importPinned(join(at, "cap.ts"), sources).catch((e: Error) => e);
    expect((error as Error).stack).toContain(`${join(at, "_broken.ts")}?docket_pin=`);
    expect((error as Error).stack).toMatch(/_broken\.ts\?docket_pin=\w+:4:/);
  });

  test("a helper that is missing or a FIFO is not read (nothing blocks): the runtime's import says it cannot find it", async () => {
    const at = tree("fifo", { "cap.ts": 'import { x } from "./_pipe.ts";\nexport default x;\n', "gone.ts": 'import { y } from "./_gone.ts";\nexport default y;\n' });
    execFileSync("mkfifo", [join(at, "_pipe.ts")]);
    for (const name of ["cap.ts", "gone.ts"]) {
      const sources = await sourcesOf(join(at, name));
      expect(sources.modules.map((m) => m.path)).toEqual([join(at, name)]);
      const error = await importPinned(join(at, name), sources).catch((e: Error) => e);
      expect(String((error as Error).message)).toContain("Cannot find module");
    }
  });

  test("a CommonJS helper, or a helper reached through a symbolic link, loads as the runtime finds it", async () => {
    const at = tree("kinds", {
      "cap.ts": 'import common from "./_common.cjs";\nimport legacy from "./_legacy.js";\nimport { linked } from "./_link.ts";\nexport default [common.c, legacy.l, linked];\n',
      "_common.cjs": "module.exports = { c: 1 };\n",
      "_legacy.js": "module.exports = { l: 2 };\n",
      "real/_target.ts": "export const linked = 3;\n",
    });
    symlinkSync(join(at, "real/_target.ts"), join(at, "_link.ts"));
    const sources = await sourcesOf(join(at, "cap.ts"));
    // Neither CommonJS file is served pinned (it would become an ES module); the link is, by its target.
    expect(sources.modules.map((m) => m.path.slice(at.length + 1)).sort()).toEqual(["cap.ts", "real/_target.ts"]);
    expect(await importPinned(join(at, "cap.ts"), sources)).toEqual([1, 2, 3]);
  });
});
