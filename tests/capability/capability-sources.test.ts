// A capability's source, read once: the file and every local module it imports (capability-sources.ts),
// imported pinned to exactly those texts (pinned-sources.ts, docs/authoring.md "Versions").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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

/** The modules of a source, by their paths under `at`, sorted. */
const namesIn = (sources: Awaited<ReturnType<typeof sourcesOf>>, at: string) => sources.modules.map((m) => m.path.slice(at.length + 1)).sort();

/** Imports a source pinned (as every thread does) and returns its default export. */
async function importPinned(file: string, sources: Awaited<ReturnType<typeof sourcesOf>>): Promise<unknown> {
  const target = importTarget(sources);
  expect(target.pinned).toBe(true);
  target.pin();
  return ((await import(target.specifier)) as { default: unknown }).default;
}

describe("capability sources", () => {
  test("a file that imports no local module: its version is its text's, as before", async () => {
    const at = tree("alone", { "a.ts": 'import * as v from "valibot";\nimport { readFileSync } from "node:fs";\nexport default 1;\n' });
    const sources = await sourcesOf(join(at, "a.ts"));
    expect(sources.version).toBe(fileVersion(readFileSync(join(at, "a.ts"), "utf8")));
    expect(sources.modules.map((m) => m.path)).toEqual([join(at, "a.ts")]);
  });

  test("local modules are read through every kind of import, each once, JSON as data; packages and type-only imports are not", async () => {
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
    expect(namesIn(sources, at)).toEqual(["_a.ts", "_lazy.ts", "_side.ts", "cap.ts", "data.json", "lib/_b.ts"]);
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

  test("a name aliased to a file of the project (tsconfig paths, package.json imports) is a local import, pinned like one", async () => {
    const at = tree("alias", {
      "tsconfig.json": '{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["./lib/*"] } } }',
      "package.json": '{ "name": "alias-checkout", "type": "module", "imports": { "#lib/*": "./lib/*.ts" } }',
      "lib/format.ts": "export const fmt = (n: number) => n.toFixed(2);\n",
      "lib/word.ts": 'export const word = "word";\n',
      "capabilities/cap.ts": 'import { fmt } from "@/format";\nimport { word } from "#lib/word";\nimport * as v from "valibot";\nexport default [fmt(2), word, typeof v].join(" ");\n',
    });
    const sources = await sourcesOf(join(at, "capabilities/cap.ts"));
    expect(namesIn(sources, at)).toEqual(["capabilities/cap.ts", "lib/format.ts", "lib/word.ts"]);
    writeFileSync(join(at, "lib/format.ts"), "for (;;) {}\nexport const fmt = () => 'never';\n");
    writeFileSync(join(at, "lib/word.ts"), "for (;;) {}\nexport const word = 'never';\n");
    expect(await importPinned(join(at, "capabilities/cap.ts"), sources)).toBe("2.00 word object");
  });

  test("an alias to the project's code is local also when a nearer tsconfig.json (docket init's, in capabilities/) does not hold it; a linked workspace package stays a package", async () => {
    const at = tree("alias-init", {
      "package.json": '{ "name": "alias-init", "type": "module", "imports": { "#lib2/*": "./lib2/*" } }',
      "capabilities/tsconfig.json": '{ "compilerOptions": { "strict": true, "paths": { "@lib/*": ["../lib/*"] } } }',
      "lib/format.ts": "export const fmt = (n: number) => n.toFixed(2);\n",
      "lib2/only.ts": 'export const W = "two";\n',
      "workspace/shared/package.json": '{ "name": "shared", "type": "module", "exports": "./index.ts" }',
      "workspace/shared/index.ts": 'export const shared = "shared";\n',
      "capabilities/cap.ts": 'import { fmt } from "@lib/format.ts";\nimport { W } from "#lib2/only.ts";\nimport { shared } from "shared";\nexport default [fmt(2), W, shared].join(" ");\n',
    });
    // A workspace package, linked into node_modules as npm does: the package's, not the capability's.
    mkdirSync(join(at, "node_modules"), { recursive: true });
    symlinkSync(join(at, "workspace/shared"), join(at, "node_modules/shared"));
    const sources = await sourcesOf(join(at, "capabilities/cap.ts"));
    expect(namesIn(sources, at)).toEqual(["capabilities/cap.ts", "lib/format.ts", "lib2/only.ts"]);
    expect(sources.version).not.toBe(fileVersion(readFileSync(join(at, "capabilities/cap.ts"), "utf8")));
    writeFileSync(join(at, "lib2/only.ts"), 'export const W = "three";\n');
    expect((await sourcesOf(join(at, "capabilities/cap.ts"))).version).not.toBe(sources.version);
  });

  test("a package docket serves, or one Bun finds in its install cache, is no local module", async () => {
    const at = tree("packages", {
      "package.json": '{ "name": "packages-checkout", "type": "module" }',
      "cap.ts": 'import * as v from "valibot";\nimport { capability } from "docket";\nexport default [typeof v, typeof capability];\n',
    });
    expect(namesIn(await sourcesOf(join(at, "cap.ts")), at)).toEqual(["cap.ts"]);
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

  test("a helper missing when read is said missing also to a named import, not as an export it lacks", async () => {
    // Imported once while the helper was there (as a server did), then the helper is deleted.
    const at = tree("named-missing", { "cap.ts": 'import { fmt } from "./_fmt.ts";\nexport default fmt;\n', "_fmt.ts": 'export const fmt = "there";\n' });
    expect(await importPinned(join(at, "cap.ts"), await sourcesOf(join(at, "cap.ts")))).toBe("there");
    rmSync(join(at, "_fmt.ts"));
    const error = await importPinned(join(at, "cap.ts"), await sourcesOf(join(at, "cap.ts"))).catch((e: Error) => e);
    expect(String((error as Error).message)).toContain(`Cannot find module "${join(at, "_fmt.ts")}"`);
    expect(String((error as Error).message)).not.toContain("Export named");
  });

  test("a local import the top level starts and does not await gets the text read too, whenever it is asked for", async () => {
    const at = tree("unawaited", {
      "cap.ts": 'export const later = new Promise((wake) => setTimeout(wake, 50)).then(() => import("./_h.ts")).then((m) => m.word);\nexport default 1;\n',
      "_h.ts": 'export const word = "read";\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    const target = importTarget(sources);
    target.pin();
    const module = (await import(target.specifier)) as { later: Promise<string> };
    writeFileSync(join(at, "_h.ts"), 'for (;;) {}\nexport const word = "never";\n');
    expect(await module.later).toBe("read");
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

  test("a helper that is a link to a FIFO or a device under another name is refused by name: its read would block or never end", async () => {
    const at = tree("special", { "cap.ts": 'import { x } from "./_pipe.ts";\nexport default x;\n', "zero.ts": 'import data from "./_zero.json";\nexport default data;\n' });
    execFileSync("mkfifo", [join(at, "pipe")]);
    symlinkSync(join(at, "pipe"), join(at, "_pipe.ts"));
    symlinkSync("/dev/zero", join(at, "_zero.json"));
    const fifo = await sourcesOf(join(at, "cap.ts")).catch((e: Error) => e);
    expect((fifo as Error).message).toContain("(imported by the capability) is a FIFO (named pipe), not a regular file");
    const zero = await sourcesOf(join(at, "zero.ts")).catch((e: Error) => e);
    expect((zero as Error).message).toContain("is a character device, not a regular file");
  });

  test("a helper reached through a symbolic link is pinned by its target; a capability file that is a link resolves its helpers from its target's folder", async () => {
    const at = tree("links", {
      "cap.ts": 'import { linked } from "./_link.ts";\nexport default linked;\n',
      "real/_target.ts": "export const linked = 3;\n",
      "real/linked.cap.ts": 'import { word } from "./_word.ts";\nexport default word;\n',
      "real/_word.ts": 'export const word = "beside the target";\n',
      "_word.ts": 'export const word = "beside the link";\n',
    });
    symlinkSync(join(at, "real/_target.ts"), join(at, "_link.ts"));
    symlinkSync(join(at, "real/linked.cap.ts"), join(at, "linked.cap.ts"));
    const sources = await sourcesOf(join(at, "cap.ts"));
    expect(namesIn(sources, at)).toEqual(["cap.ts", "real/_target.ts"]);
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe(3);
    // As the runtime itself resolves it: from the folder the file really is in.
    const linked = await sourcesOf(join(at, "linked.cap.ts"));
    expect(namesIn(linked, at)).toEqual(["linked.cap.ts", "real/_word.ts"]);
    expect(await importPinned(join(at, "linked.cap.ts"), linked)).toBe("beside the target");
  });

  test("a file imported as text (with attributes) is data: its text is served as read, never run, even if it looks like CommonJS", async () => {
    const at = tree("as-text", {
      "cap.ts": 'import script from "./_client.js" with { type: "text" };\nexport default script.length;\n',
      "_client.js": '(function () { if (typeof module !== "undefined") module.exports = { hi: 1 }; })();\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    expect(namesIn(sources, at)).toEqual(["_client.js", "cap.ts"]);
    writeFileSync(join(at, "_client.js"), "saved later\n");
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe(84);
  });

  test("a JSON or text file a capability imports is in its version and served as read, so an edit is a new version on every thread, never an old value beside a new one (tester A)", async () => {
    const at = tree("data", {
      "capabilities/cap.ts": [
        'import cfg, { greeting } from "./cfg.json";',
        'import list from "./list.json" with { type: "json" };',
        'import prompt from "../prompts/ask.md" with { type: "text" };',
        'import note from "./note.txt";',
        'import { h } from "./_h.ts";',
        'import hText from "./_h.ts" with { type: "text" };',
        'const required = require("./cfg.json");',
        'const lazy = async () => (await import("./cfg.json")).default.greeting + (await import("./note.txt", { with: { type: "text" } })).default;',
        "export default async () => [cfg.greeting, greeting, list.join(\",\"), prompt.trim(), note.trim(), h, hText.trim(), required.greeting, await lazy()].join(\" \");",
      ].join("\n"),
      "capabilities/cfg.json": '\uFEFF{"greeting":"one"}',
      "capabilities/list.json": "[1,2]",
      "prompts/ask.md": "ask one\n",
      "capabilities/note.txt": "note one\n",
      "capabilities/_h.ts": 'export const h = "h";\n',
    });
    const file = join(at, "capabilities/cap.ts");
    const before = await sourcesOf(file);
    expect(namesIn(before, at)).toEqual(["capabilities/_h.ts", "capabilities/_h.ts", "capabilities/cap.ts", "capabilities/cfg.json", "capabilities/list.json", "capabilities/note.txt", "prompts/ask.md"]);
    // An edit of any of them is a new version; what was read before is still what that version serves.
    const edits: Array<[string, string]> = [["capabilities/cfg.json", '{"greeting":"two"}'], ["prompts/ask.md", "ask two\n"], ["capabilities/note.txt", "note two\n"]];
    const versions = new Set([before.version]);
    for (const [name, text] of edits) {
      writeFileSync(join(at, name), text);
      versions.add((await sourcesOf(file)).version);
    }
    expect(versions.size).toBe(4);
    const after = await sourcesOf(file);
    expect(await ((await importPinned(file, before)) as () => Promise<string>)()).toBe('one one 1,2 ask one note one h export const h = "h"; one onenote one\n');
    expect(await ((await importPinned(file, after)) as () => Promise<string>)()).toBe('two two 1,2 ask two note two h export const h = "h"; two twonote two\n');
  });

  test("a JSON or text file reached through an alias (package.json imports, tsconfig paths) is data of the capability like one imported by its path: in its version, served as read (tester T2)", async () => {
    const at = tree("data-alias", {
      "package.json": '{ "name": "data-alias", "type": "module", "imports": { "#cfg": "./lib/settings.json", "#prompts/*": "./prompts/*" } }',
      "capabilities/tsconfig.json": '{ "compilerOptions": { "paths": { "@data/*": ["../data/*"] } } }',
      "lib/settings.json": '{"limit":1}',
      "prompts/ask.md": "ask one\n",
      "data/list.json": "[1]",
      "capabilities/cap.ts": 'import settings from "#cfg";\nimport prompt from "#prompts/ask.md" with { type: "text" };\nimport list from "@data/list.json";\nexport default [settings.limit, prompt.trim(), list.join(",")].join(" ");\n',
    });
    const file = join(at, "capabilities/cap.ts");
    const before = await sourcesOf(file);
    expect(namesIn(before, at)).toEqual(["capabilities/cap.ts", "data/list.json", "lib/settings.json", "prompts/ask.md"]);
    writeFileSync(join(at, "lib/settings.json"), '{"limit":2}');
    const after = await sourcesOf(file);
    expect(after.version).not.toBe(before.version);
    writeFileSync(join(at, "prompts/ask.md"), "ask two\n");
    writeFileSync(join(at, "data/list.json"), "[2]");
    // Each version serves the values read for it, whatever is on disk by then.
    expect(await importPinned(file, before)).toBe("1 ask one 1");
    expect(await importPinned(file, after)).toBe("2 ask one 1");
  });

  test("a helper whose name differs from another's beside it only by letter case is refused, naming both: the runtime would load one for the other (tester T2)", async () => {
    const at = tree("case-twins", {
      "cap.ts": 'import { C } from "./lib/_case.ts";\nexport default C;\n',
      "upper.ts": 'import { C } from "./lib/_Case.ts";\nexport default C;\n',
      "data.ts": 'import cfg from "./conf/x.json";\nexport default cfg;\n',
      "lib/_case.ts": 'export const C = "lower";\n',
      "lib/_Case.ts": 'export const C = "upper";\n',
      "conf/x.json": "1",
      "conf/X.json": "2",
    });
    for (const [name, helper, twin] of [["cap.ts", "lib/_case.ts", "lib/_Case.ts"], ["upper.ts", "lib/_Case.ts", "lib/_case.ts"], ["data.ts", "conf/x.json", "conf/X.json"]] as const) {
      const refused = await sourcesOf(join(at, name)).then(() => "loaded", (e: Error) => e.message);
      // Which of the two the runtime resolves to is its business: both are named.
      expect(refused).toContain("differ only by letter case");
      expect(refused).toContain(join(at, helper));
      expect(refused).toContain(join(at, twin));
    }
  });

  test("a helper that is a symbolic link is read at the target it has now: re-pointed, it is a new version of the new target, though the runtime still gives the old one (tester T2)", async () => {
    const at = tree("repointed", { "cap.ts": 'import { S } from "./_s.ts";\nexport default S;\n', "a.ts": 'export const S = "a";\n', "b.ts": 'export const S = "b";\n' });
    symlinkSync("a.ts", join(at, "_s.ts"));
    const before = await sourcesOf(join(at, "cap.ts"));
    expect(namesIn(before, at)).toEqual(["a.ts", "cap.ts"]);
    symlinkSync("b.ts", join(at, "_s.new"));
    renameSync(join(at, "_s.new"), join(at, "_s.ts"));
    expect(Bun.resolveSync("./_s.ts", at)).toBe(join(at, "a.ts"));
    const after = await sourcesOf(join(at, "cap.ts"));
    expect(namesIn(after, at)).toEqual(["b.ts", "cap.ts"]);
    expect(after.version).not.toBe(before.version);
    expect(await importPinned(join(at, "cap.ts"), after)).toBe("b");
  });

  test("a JSON file that does not parse, or one loaded with require() whose value is no object, is refused by name", async () => {
    const at = tree("bad-data", {
      "broken.ts": 'import cfg from "./_broken.json";\nexport default cfg;\n',
      "_broken.json": '{"a":1,}',
      "listed.ts": 'const list = require("./_list.json");\nexport default list;\n',
      "_list.json": "[1,2]",
    });
    const broken = await sourcesOf(join(at, "broken.ts")).then(() => "loaded", (e: Error) => e.message);
    expect(broken).toContain(`${join(at, "_broken.json")} (imported by the capability) is not valid JSON (`);
    const listed = await sourcesOf(join(at, "listed.ts")).then(() => "loaded", (e: Error) => e.message);
    expect(listed).toContain(`${join(at, "_list.json")} (imported by the capability) is loaded with require() but its value is not an object`);
  });

  test("a CommonJS helper is refused by name: it cannot be served pinned", async () => {
    const at = tree("commonjs", { "cap.ts": 'import common from "./_common.cjs";\nexport default common.c;\n', "_common.cjs": "module.exports = { c: 1 };\n" });
    const refused = await sourcesOf(join(at, "cap.ts")).catch((e: Error) => e);
    expect((refused as Error).message).toContain("_common.cjs (imported by the capability) is CommonJS (module.exports, require)");
  });

  test("imports written every way Bun reads them are pinned: template literal, escapes, a query, require() of an ES module; a string that only holds an import's text keeps its value", async () => {
    const at = tree("ways", {
      "cap.ts": [
        "const a = (await import(`./_a.ts`)).a;",
        'import { b } from "./_b\\u002ets";',
        "import { c } from './_c.ts?v=1';",
        'const { d } = require("./_d.ts");',
        "const note = \"reuse it: import { b } from './_b.ts'\";",
        "export default [a, b, c, d, note].join(' ');",
      ].join("\n"),
      "_a.ts": 'export const a = "a";\n',
      "_b.ts": 'export const b = "b";\n',
      "_c.ts": 'export const c = "c";\n',
      "_d.ts": 'export const d = "d";\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    expect(namesIn(sources, at)).toEqual(["_a.ts", "_b.ts", "_c.ts", "_d.ts", "cap.ts"]);
    for (const name of ["_a.ts", "_b.ts", "_c.ts", "_d.ts"]) writeFileSync(join(at, name), "for (;;) {}\nexport {};\n");
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe("a b c d reuse it: import { b } from './_b.ts'");
  });

  test("a file starting with #!, or whose regular expressions hold quotes, is still read as the ES module it is: its helpers are pinned", async () => {
    const at = tree("shapes", {
      "hashbang.ts": '#!/usr/bin/env bun\nimport { h } from "./_h.ts";\nexport default h;\n',
      "quotes.ts": 'const r = /"/; import { h } from "./_h.ts"; const s = /"/; const os = require("node:os");\nexport default h + typeof os;\n',
      "_h.ts": 'export const h = "read";\n',
    });
    const hashbang = await sourcesOf(join(at, "hashbang.ts"));
    const quotes = await sourcesOf(join(at, "quotes.ts"));
    expect([hashbang.commonJs, quotes.commonJs]).toEqual([false, false]);
    expect(namesIn(hashbang, at)).toEqual(["_h.ts", "hashbang.ts"]);
    expect(namesIn(quotes, at)).toEqual(["_h.ts", "quotes.ts"]);
  });

  test("a tagged template named from, a method named import, an import with attributes keep their values", async () => {
    const at = tree("lookalikes", {
      "cap.ts": [
        'import { h } from "./_h.ts";',
        "const from = (s: TemplateStringsArray) => s[0];",
        'const o = { import: (s: string) => s };',
        'import text from "./_h.ts" with { type: "text" };',
        "export default [h, from`./_h.ts`, o. import(\"./_h.ts\"), text.trim()].join(\" \");",
      ].join("\n"),
      "_h.ts": 'export const h = "h";\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe('h ./_h.ts ./_h.ts export const h = "h";');
  });

  test("imports after code docket's reading of the text gets wrong (JSX text, templates nested in templates, a BOM) are pinned all the same", async () => {
    const at = tree("hard", {
      "node_modules/react/package.json": '{"name":"react","type":"module"}',
      "node_modules/react/jsx-dev-runtime.js": 'export const jsxDEV = () => null;\nexport const Fragment = "f";\n',
      // (Under this repository's tests, JSX compiles for hono's runtime.)
      "node_modules/hono/package.json": '{"name":"hono","type":"module"}',
      "node_modules/hono/jsx/jsx-runtime.js": 'export const jsx = () => null;\nexport const jsxs = jsx;\nexport const jsxDEV = jsx;\nexport const Fragment = "f";\n',
      "node_modules/hono/jsx/jsx-dev-runtime.js": 'export * from "./jsx-runtime.js";\n',
      "_pre.tsx": "export function Snippet({ code }: { code: string }) {\n  return (\n    <div>\n      <pre>{code}</pre>{`\n        footer\n      `}\n    </div>\n  );\n}\nexport const lazy = async () => (await import(\"./_a.ts\")).a;\n",
      "_apos.ts": "export const summary = (names: string[]) => `\n  ${names.map((n) => `${n}'s item`).join(\", \")}\n`;\nexport { b } from \"./_b.ts\";\n",
      "_html.ts": "export const list = (items: string[]) => `\n<ul>\n  ${items.map((i) => `<li>${i}</li>`).join(\"\")}\n</ul>\n`;\nexport const loadC = () => import(\"./_c.ts\");\n",
      "_bom.ts": '\uFEFFimport "./_d.ts";\nexport const d = (globalThis as { dMark?: string }).dMark;\n',
      "cap.ts": 'import { lazy } from "./_pre.tsx";\nimport { b } from "./_apos.ts";\nimport { loadC } from "./_html.ts";\nimport { d } from "./_bom.ts";\nexport default [await lazy(), b, (await loadC()).c, d].join(" ");\n',
      "_a.ts": 'export const a = "a";\n',
      "_b.ts": 'export const b = "b";\n',
      "_c.ts": 'export const c = "c";\n',
      "_d.ts": '(globalThis as { dMark?: string }).dMark = "d";\n',
    });
    const sources = await sourcesOf(join(at, "cap.ts"));
    expect(namesIn(sources, at)).toEqual(["_a.ts", "_apos.ts", "_b.ts", "_bom.ts", "_c.ts", "_d.ts", "_html.ts", "_pre.tsx", "cap.ts"]);
    for (const name of ["_a.ts", "_b.ts", "_c.ts", "_d.ts"]) writeFileSync(join(at, name), "for (;;) {}\nexport {};\n");
    expect(await importPinned(join(at, "cap.ts"), sources)).toBe("a b c d");
  });

  test("an import docket cannot rewrite is refused rather than imported from disk", async () => {
    // A regular expression right after `if (…)` reads to docket as a division (the quote in it hides
    // what follows), and an escaped specifier is not the literal the second pass looks for.
    const at = tree("hidden", { "cap.ts": 'if (true) /"/.test("a"); const { h } = await import("./_h\\u002ets");\nexport default h;\n', "_h.ts": "export const h = 1;\n" });
    const refused = await sourcesOf(join(at, "cap.ts")).catch((e: Error) => e);
    expect((refused as Error).message).toContain('docket cannot pin the import of "./_h.ts" in the capability as it is written');
  });

  test("an import of a local module whose name is computed is refused (it would run unpinned, outside the version); a package's or a literal template's is not", async () => {
    const at = tree("computed", {
      "cap.ts": "export const run = async (rule: string) => (await import(`./_rules/${rule}.ts`)).text;\n",
      "helper-cap.ts": 'import { pick } from "./_pick.ts";\nexport default pick;\n',
      "_pick.ts": 'export const pick = (name: string) => require("../rules/" + name);\n',
      "fine.ts": "const at = `./x/${1}`;\nexport const lazy = () => import(`./_rules/a.ts`);\nexport const pkg = (name: string) => import(`some-package/${name}`);\nexport default at;\n",
      "_rules/a.ts": 'export const text = "rule v1";\n',
    });
    const refused = await sourcesOf(join(at, "cap.ts")).catch((e: Error) => e);
    expect((refused as Error).message).toContain("docket cannot pin the import of `./_rules/${rule}.ts` in the capability: the name of a local module computed at run time");
    const inHelper = await sourcesOf(join(at, "helper-cap.ts")).catch((e: Error) => e);
    expect((inHelper as Error).message).toContain(`docket cannot pin the import of "../rules/" + name in ${join(at, "_pick.ts")}`);
    expect(namesIn(await sourcesOf(join(at, "fine.ts")), at)).toEqual(["_rules/a.ts", "fine.ts"]);
  });

  test("a package's name that climbs out of its folder (ms/../../lib/x.ts) names a file of the project: pinned and in the version like one, never loaded from disk as the package's (tester T5)", async () => {
    const at = tree("climb", {
      "package.json": '{ "name": "climb-checkout", "type": "module" }',
      "node_modules/pkgx/package.json": '{ "name": "pkgx", "type": "module", "main": "index.js" }',
      "node_modules/pkgx/index.js": 'export const P = "pkg";\n',
      "lib/rules/c.ts": 'export const r = "c v1";\n',
      "capabilities/cap.ts": 'import { r } from "pkgx/../../lib/rules/c.ts";\nimport { P } from "pkgx";\nexport default [r, P].join(" ");\n',
    });
    const sources = await sourcesOf(join(at, "capabilities/cap.ts"));
    expect(namesIn(sources, at)).toEqual(["capabilities/cap.ts", "lib/rules/c.ts"]);
    writeFileSync(join(at, "lib/rules/c.ts"), "for (;;) {}\nexport const r = 'never';\n");
    expect(await importPinned(join(at, "capabilities/cap.ts"), sources)).toBe("c v1 pkg");
  });

  test("an import or require of a package.json imports name (#…) computed at run time, or passed to import.meta.require or a made require, is refused by line: the runtime resolves such a name without asking docket (tester T5)", async () => {
    const cases = [
      ['export const f = async (n: string) => (await import("#lib/rules/" + n)).r;', '"#lib/rules/" + n', "docket cannot pin the import of"],
      ["export const f = (n: string) => require(`#lib/rules/${n}`).r;", "`#lib/rules/${n}`", "docket cannot pin the import of"],
      ['export const f = () => import.meta.require("#lib/rules/a").r;', '"#lib/rules/a"', "docket cannot pin the import of"],
      ['import { createRequire } from "node:module";\nexport const f = () => createRequire(import.meta.url)("#lib/rules/a").r;', '"#lib/rules/a"', "docket cannot pin"],
    ];
    for (const [i, [code, written, says]] of cases.entries()) {
      const at = tree(`hash-${i}`, {
        "package.json": '{ "name": "hash-checkout", "type": "module", "imports": { "#lib/*": "./lib/*.ts" } }',
        "lib/rules/a.ts": 'export const r = "a";\n',
        "capabilities/cap.ts": `${code}\nexport default 1;\n`,
      });
      const refused = await sourcesOf(join(at, "capabilities/cap.ts")).then(() => "loaded", (e: Error) => e.message);
      expect(refused).toContain(`${says} ${written}`);
    }
    // A literal one is pinned as before.
    const literal = tree("hash-literal", {
      "package.json": '{ "name": "hash-literal", "type": "module", "imports": { "#lib/*": "./lib/*.ts" } }',
      "lib/rules/a.ts": 'export const r = "a";\n',
      "capabilities/cap.ts": 'export const f = async () => (await import("#lib/rules/a")).r;\nexport default 1;\n',
    });
    expect(namesIn(await sourcesOf(join(literal, "capabilities/cap.ts")), literal)).toEqual(["capabilities/cap.ts", "lib/rules/a.ts"]);
  });

  test("a local module loaded by a require made with createRequire is refused by line (it would run from disk, outside the version, unwatched); a package's, or one bound to the name require, is not (tester A)", async () => {
    const made = [
      ['const legacy = createRequire(import.meta.url)("../lib/cr.cjs");', '"../lib/cr.cjs"'],
      ['const req = createRequire(import.meta.url);\nconst legacy = req("../lib/cr.ts");', '"../lib/cr.ts"'],
      ['const make = module.createRequire;\nconst req2 = module.createRequire(import.meta.url);\nconst legacy = req2(`./_h.ts`);', "`./_h.ts`"],
      ['const { createRequire: cr } = module;\nconst legacy = cr(import.meta.url)(join(import.meta.dir, "_h.ts"));', 'join(import.meta.dir, "_h.ts")'],
      ['const r = makeRequire(import.meta.url);\nconst config = r("./config.json");', '"./config.json"'],
    ];
    for (const [i, [code, written]] of made.entries()) {
      const at = tree(`created-${i}`, {
        "capabilities/cap.ts": `import module, { createRequire, createRequire as makeRequire } from "node:module";\nimport { join } from "node:path";\n${code}\nexport default legacy;\n`,
        "capabilities/_h.ts": 'export const val = "v1";\n',
        "lib/cr.cjs": 'module.exports = { val: "v1" };\n',
        "lib/cr.ts": 'export const val = "v1";\n',
      });
      const refused = await sourcesOf(join(at, "capabilities/cap.ts")).then(() => "loaded", (e: Error) => e.message);
      expect(refused).toContain(`docket cannot pin ${written}, loaded at line ${code.split("\n").length + 2} of the capability by a require made with createRequire`);
      expect(refused).toMatch(/; import (it|each module by its name) instead/);
    }
    // In a helper too, named as the importer.
    const inHelper = tree("created-helper", { "cap.ts": 'import { val } from "./_h.ts";\nexport default val;\n', "_h.ts": 'import { createRequire } from "node:module";\nexport const val = createRequire(import.meta.url)("./_x.ts").val;\n', "_x.ts": "export const val = 1;\n" });
    expect(await sourcesOf(join(inHelper, "cap.ts")).then(() => "loaded", (e: Error) => e.message)).toContain(`docket cannot pin "./_x.ts", loaded at line 2 of ${join(inHelper, "_h.ts")}`);
    const fine = [
      'const req = createRequire(import.meta.url);\nexport default req("some-package").x;',
      'const require = createRequire(import.meta.url);\nexport default require("./_h.ts").val;',
      'const req = createRequire(import.meta.url);\nexport default req.resolve("./_h.ts");',
      'const note = "createRequire(import.meta.url)(\\"./_h.ts\\")";\nexport default note;',
    ];
    for (const [i, code] of fine.entries()) {
      const at = tree(`created-fine-${i}`, { "cap.ts": `import { createRequire } from "node:module";\n${code}\n`, "_h.ts": 'export const val = "v1";\n' });
      const loaded = await sourcesOf(join(at, "cap.ts")).then(() => "loaded", (e: Error) => e.message);
      expect(`${code} → ${loaded}`).toBe(`${code} → loaded`);
    }
    // Bound to the name require, the runtime reads it as require(): pinned like one, in the version.
    const named = tree("created-named", { "cap.ts": 'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\nexport default require("./_h.ts").val;\n', "_h.ts": 'export const val = "v1";\n' });
    expect(namesIn(await sourcesOf(join(named, "cap.ts")), named)).toEqual(["_h.ts", "cap.ts"]);
  });

  test("a local module that an import docket cannot see loads at run time is refused by the runtime, naming it: the disk's text never runs beside the pinned one (tester T2)", async () => {
    // Each of these hides its import from docket's reading of the text; each used to load the file from disk.
    const ways = [
      "async (root) => (await import(`${root}/lib/_m.ts`)).V",
      'async () => (await import(".." + "/lib/_m.ts")).V',
      'async () => { const name = ["..", "lib", "_m.ts"].join("/"); return (await import(name)).V; }',
      'async (root) => require(root + "/lib/_m.ts").V',
      'async () => import.meta.require("../lib/_h.cjs").V',
      "async () => { const make = createRequire; const r = make(import.meta.url); return r(\"../lib/_h.cjs\").V; }",
      'async () => { const r = createRequire(import.meta.url); const load = (p: string) => r(p); return load("../lib/_h.cjs").V; }',
      'async () => (nodeModule as any)["create" + "Require"](import.meta.url)("../lib/_h.cjs").V',
      'async (root) => createRequire(import.meta.url)(root + "/lib/_h.cjs").V',
      "async (root) => { const name = root + \"/lib/_m.ts\"; return (await import(name)).V; }",
    ];
    const header = 'import * as nodeModule from "node:module";\nimport { createRequire } from "node:module";\nimport { createHash } from "node:crypto";\n';
    const files = { "lib/_m.ts": 'export const V = "m-disk";\n', "lib/_h.cjs": 'module.exports = { V: "h-disk" };\n', "lib/data.json": '{"n": 1}\n' };
    const pinnedFn = async (name: string, body: string) => {
      const at = tree(name, { ...files, "caps/cap.ts": `${header}export default ${body};\n` });
      const sources = await sourcesOf(join(at, "caps/cap.ts"));
      return { at, run: (await importPinned(join(at, "caps/cap.ts"), sources)) as (root: string) => Promise<unknown> };
    };
    for (const [i, way] of ways.entries()) {
      const { at, run } = await pinnedFn(`unseen-${i}`, way);
      const outcome = await run(at).then((value) => `loaded ${String(value)}`, (e: Error) => e.message);
      expect(`${way} → ${outcome}`).toContain(`${way} → docket refused to load ${join(at, "lib", way.includes("_h.cjs") ? "_h.cjs" : "_m.ts")} from disk`);
      expect(outcome).toContain(`${join(at, "caps/cap.ts")} loads it by a name docket could not read`);
      expect(outcome).toContain("import it by a literal path");
    }
    // A built-in module, a package's or a JSON file named at run time (data, read as the runtime finds it), and a path only asked for, are not refused.
    const fine: Array<[string, unknown]> = [
      ['async () => (await import("node:" + "path")).sep', "/"],
      ['async () => (await import("vali" + "bot")).string !== undefined', true],
      ['async () => createHash("sha256").update("x").digest("hex").length', 64],
      ['async (root) => (await import(root + "/lib/data.json")).default.n', 1],
      ['async () => createRequire(import.meta.url).resolve("../lib/_m.ts")', "lib/_m.ts"],
    ];
    for (const [i, [way, expected]] of fine.entries()) {
      const { at, run } = await pinnedFn(`unseen-fine-${i}`, way);
      const value = await run(at);
      expect(`${way} → ${String(value)}`).toBe(`${way} → ${String(expected === "lib/_m.ts" ? join(at, "lib", "_m.ts") : expected)}`);
    }
  });

  test("a CommonJS capability file still loads what it requires from disk, as documented: the runtime's refusal is for pinned modules only", async () => {
    const at = tree("commonjs-cap", { "cap.js": 'const h = require("./_h.js");\nconst name = "./_g.js";\nmodule.exports = h.V + require(name).V;\n', "_h.js": 'module.exports = { V: "h" };\n', "_g.js": 'module.exports = { V: "g" };\n' });
    const sources = await sourcesOf(join(at, "cap.js"));
    const target = importTarget(sources);
    expect(target.pinned).toBe(false);
    target.pin();
    expect(((await import(target.specifier)) as { default: unknown }).default).toBe("hg");
  });

  test("every way of computing a local module's name is refused, and code that only looks like one is not (tester Z2)", async () => {
    const computed = [
      "require(`./rules/` + name)",
      'import(("./rules/") + name + ".ts")',
      'import("./rules/".concat(name, ".ts"))',
      "import(`${import.meta.dir}/rules/${name}.ts`)",
      "import(new URL(`./rules/${name}.ts`, import.meta.url).href)",
      'import(["./rules", name + ".ts"].join("/"))',
      "import (\n  `../rules/${name}.ts`\n)",
      'import(__dirname + "/rules/" + name + ".ts")',
      'import(join(__dirname, "rules", name + ".ts"))',
      "import(`${process.cwd()}/capabilities/rules/${name}.ts`)",
      // A template whose substitution holds a backtick (in a regular expression) used to end the reading there.
      'import((`- ${name.replace(/`/g, "\'")}`, "./rules/" + name + ".ts"))',
    ];
    for (const [i, call] of computed.entries()) {
      const at = tree(`computed-${i}`, { "cap.ts": `export const run = async (name: string) => await ${call};\n`, "rules/a.ts": "export const text = 1;\n" });
      const refused = await sourcesOf(join(at, "cap.ts")).catch((e: Error) => e);
      expect(refused instanceof Error ? refused.message : "loaded").toContain("docket cannot pin the import of");
    }
    const looksLike = [
      "// import(`./rules/${name}.ts`) would not be pinned",
      "const text = \"import('./rules/' + name)\";",
      "const re = /import\\(`.\\/x`\\)/;",
      "client.import(`./rules/${name}`);",
      "const data = await import(\"./rules/a.ts\", { with: { type: \"text\" } });",
      "const pkg = await import(name);",
      "const doc = `see import(\\`./rules/${1}\\`)`;",
      'const q = `${"`"}\n`;\nconst doc2 = `example: import("./plugins/" + name)`;',
      'const bullet = (s: string) => `- ${s.replace(/`/g, "\'")}`;\nconst text = "import(\'./x/\' + name)";',
      'const config = require(join(__dirname, "config.json"));',
    ];
    for (const [i, line] of looksLike.entries()) {
      const at = tree(`looks-${i}`, { "cap.ts": `const name = "a";\n${line}\nexport default name;\n`, "rules/a.ts": "export const text = 1;\n" });
      const loaded = await sourcesOf(join(at, "cap.ts")).then(() => "loaded", (e: Error) => e.message);
      expect(`${line} → ${loaded}`).toBe(`${line} → loaded`);
    }
  });
});
