import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { symlinkSync, writeFileSync } from "node:fs";
import * as v from "valibot";
import { checkDeclaration, importCapabilityFile, inspectCapabilityFile, listCapabilityFiles } from "../../runtime/capability/inspect.ts";
import { UNSAID } from "../../runtime/execution/thrown.ts";
import { capabilitySource, removeCheckout, tempCheckout, useDocketModules, writeFiles } from "../_support/capability-fixtures.ts";

let root: string;

beforeAll(async () => {
  useDocketModules();
  root = await tempCheckout();
  await writeFiles(root, {
    "caps/top.throws.ts": 'import { capability } from "docket";\n\nfunction boot() {\n  throw new TypeError("TOKEN is not set");\n}\nboot();\nexport default capability({});\n',
    "caps/bad.js": "export default {\n  a: 1\n  b: 2 };\n",
    "caps/needs.pkg.ts": 'import left from "left-pad-nowhere";\nexport default left;\n',
    // Several packages missing: all named, one install for them (tester S), none of what is there or served.
    "caps/needs.many.ts": 'import a from "ms-nowhere";\nimport { parse } from "yaml-nowhere/dist";\nimport fs from "fs";\nimport { join } from "node:path";\nimport * as v from "valibot";\nimport { capability } from "docket";\nconst later = () => import("@team-nowhere/lib");\nexport default [a, parse, fs, join, v, capability, later];\n',
    "caps/throws.string.ts": 'throw "plain string";\n',
    // The name of what it imports is computed when it runs: a URL with its password, say (tester R2).
    "caps/needs.computed.ts": 'const url = ["postgres://admin", "SECRET40pw@db/x"].join(":");\nawait import(url);\nexport default {};\n',
    "caps/throws.trap.ts": 'throw { toString() { throw new Error("toString trap"); } };\n',
    "caps/throws.proxy.ts": 'const trap = () => { throw new Error("trap"); };\nthrow new Proxy({}, { get: trap, getPrototypeOf: trap, has: trap, ownKeys: trap, getOwnPropertyDescriptor: trap });\n',
    "caps/good.one.ts": capabilitySource({ id: "good.one" }),
    "caps/_private.ts": "export {};\n",
    "caps/.#good.one.ts": "an editor's lock file\n",
    "caps/good.one.test.ts": 'import { test } from "bun:test";\ntest("x", () => {});\n',
    "caps/good.one.spec.js": "export {};\n",
    "caps/types.d.ts": "export {};\n",
    "caps/sub/x.y.ts": "export {};\n",
  });
});

afterAll(async () => {
  await removeCheckout(root);
});

describe("inspectCapabilityFile", () => {
  test("inspectCapabilityFile reports a sound file with its id and schemas", async () => {
    const report = await inspectCapabilityFile(join(root, "caps/good.one.ts"), { fresh: true });
    expect(report).toMatchObject({ id: "good.one", problems: [] });
    expect(report.input_schema!.properties).toEqual({ n: { type: "number", default: 1 } });
  });

  test("a fresh inspect reads the helpers the file imports again too: an edited helper is checked, not the one read first", async () => {
    const file = join(root, "helped/helped.one.ts");
    await writeFiles(root, {
      "helped/_id.ts": 'export const ID = "helped.one";\n',
      "helped/helped.one.ts": capabilitySource({ id: "helped.one" }).replace('"helped.one"', "ID").replace(/^/, 'import { ID } from "./_id.ts";\n'),
    });
    expect(await inspectCapabilityFile(file, { fresh: true })).toMatchObject({ id: "helped.one", problems: [] });
    writeFileSync(join(root, "helped/_id.ts"), 'export const ID = "Helped One";\n');
    expect((await inspectCapabilityFile(file, { fresh: true })).problems).toEqual([expect.objectContaining({ code: "bad_id" })]);
  });

  test("inspectCapabilityFile points a top-level throw at the line in the file, also on a fresh import", async () => {
    for (const fresh of [false, true]) {
      const report = await inspectCapabilityFile(join(root, "caps/top.throws.ts"), { fresh });
      expect(report.problems).toEqual([{ code: "import_failed", reason: `it threw while loading: TypeError${UNSAID}`, detail: "it threw while loading: TypeError: TOKEN is not set", line: 4, column: expect.any(Number) }]);
    }
  });

  test("inspectCapabilityFile reports the first of several syntax errors in a .js file", async () => {
    const report = await inspectCapabilityFile(join(root, "caps/bad.js"));
    expect(report.problems[0]).toMatchObject({ code: "import_failed", line: 3, reason: expect.stringMatching(/^syntax error: .+ \(and \d+ more\)$/) });
  });

  test("inspectCapabilityFile does not quote an import whose name the file computes when it runs: the log has it (tester R2)", async () => {
    const report = await inspectCapabilityFile(join(root, "caps/needs.computed.ts"));
    expect(report.problems[0]!.reason).toBe(`cannot resolve an import whose name the file computes when it runs${UNSAID}`);
    expect(report.problems[0]!.detail).toContain("postgres://admin:SECRET40pw@db/x");
  });

  test("inspectCapabilityFile explains an import that cannot be resolved", async () => {
    const report = await inspectCapabilityFile(join(root, "caps/needs.pkg.ts"));
    expect(report.problems[0]!.reason).toContain('cannot resolve import "left-pad-nowhere"');
    expect(report.problems[0]!.reason).toContain('the package "left-pad-nowhere" is not installed. Install it with `npm install left-pad-nowhere`');
    expect(report.problems[0]).toMatchObject({ line: 1, column: 18 });
    const many = await inspectCapabilityFile(join(root, "caps/needs.many.ts"));
    expect(many.problems[0]!.reason).toContain('the package "ms-nowhere" is not installed, nor "yaml-nowhere", "@team-nowhere/lib", which this file imports too. Install them with `npm install ms-nowhere yaml-nowhere @team-nowhere/lib`');
  });

  test("inspectCapabilityFile reports a thrown value that is not an Error", async () => {
    const report = await inspectCapabilityFile(join(root, "caps/throws.string.ts"));
    expect(report.problems[0]).toMatchObject({ reason: `it threw while loading: a string (not an Error)${UNSAID}`, detail: "it threw while loading: plain string" });
  });

  test("inspectCapabilityFile survives a thrown object whose toString throws, and a hostile Proxy: its class is the reason", async () => {
    for (const file of ["caps/throws.trap.ts", "caps/throws.proxy.ts"]) {
      const report = await inspectCapabilityFile(join(root, file));
      expect(report.problems[0]).toMatchObject({ code: "import_failed" });
      expect(report.problems[0]!.reason).toStartWith("it threw while loading: an object (not an Error)");
    }
  });
});

describe("checkDeclaration", () => {
  test("checkDeclaration accepts a - inside a segment of an id, and refuses what is not lower-case dotted", () => {
    const ids = (id: string) => checkDeclaration({ id }).problems.filter((p) => p.code === "bad_id");
    for (const good of ["repo.lint-check", "files.digest", "a1.b_c-d.e"]) expect(ids(good)).toEqual([]);
    for (const bad of ["repo", "Repo.x", "repo.-x", "repo.lint-check.", "-repo.x", "repo..x", "repo.x y"]) {
      expect(ids(bad)[0]?.reason).toContain("must be lower-case dotted");
    }
    // Its MCP tool is named after it: 64 characters at most (foundation tester, session 48: 242 loaded).
    expect(ids(`a.${"b".repeat(62)}`)).toEqual([]);
    expect(ids(`a.${"b".repeat(63)}`)[0]?.reason).toBe(`id "a.${"b".repeat(38)}…" is 65 characters; an id is at most 64, since its MCP tool is named after it and agents' clients take tool names of at most 64: give it a shorter one`);
  });

  test("checkDeclaration reports a missing id without a line", () => {
    const check = checkDeclaration({ handler() {} });
    expect(check.problems[0]).toEqual({ code: "bad_id", reason: expect.stringContaining("id is missing"), line: null, column: null });
  });

  test("checkDeclaration checks timeout_ms, cache, execution and cancellable", () => {
    const check = checkDeclaration({ id: "a.b", timeout_ms: -1, cache: { ttl_ms: "x" }, execution: "sometimes", cancellable: "yes" });
    const reasons = check.problems.map((p) => p.reason).join("\n");
    expect(reasons).toContain("timeout_ms must be a positive whole number");
    expect(reasons).toContain("cache must be { ttl_ms: <positive whole number> }");
    expect(reasons).toContain('execution must be "allowed", "always" or "never", got "sometimes"');
    expect(reasons).toContain("cancellable must be true or false");
    // Past what a timer can wait: a load error, not a 400 blaming every caller of the capability.
    const aboutTimeout = (timeout_ms: number) => checkDeclaration({ id: "a.b", timeout_ms }).problems.map((p) => p.reason).filter((r) => r.startsWith("timeout_ms"));
    expect(aboutTimeout(3_000_000_000)).toEqual(["timeout_ms must be a positive whole number of milliseconds up to 2147483647 (about 24.8 days), got 3000000000"]);
    expect(aboutTimeout(2_147_483_647)).toEqual([]);
  });

  test("checkDeclaration refuses an async input or output schema, whose check docket would never await (tester Z1)", () => {
    const base = { id: "a.b", title: "A", description: "B", effect: "write", handler: () => ({}) };
    const asyncInput = checkDeclaration({ ...base, input: v.pipeAsync(v.object({ a: v.string() }), v.checkAsync(async (o) => o.a === "good")), output: v.object({}) });
    expect(asyncInput.problems).toContainEqual(expect.objectContaining({ code: "bad_declaration", reason: expect.stringContaining("the input schema is async (object") }));
    const nested = checkDeclaration({ ...base, input: v.object({}), output: v.objectAsync({ a: v.pipeAsync(v.string(), v.checkAsync(async () => true)) }) });
    expect(nested.problems.map((p) => p.reason).join("\n")).toContain("the output schema is async");
    // Behind v.lazy, or after many fields, an async part is found all the same (tester Z3).
    const lazy = checkDeclaration({ ...base, input: v.object({ name: v.lazy(() => v.pipeAsync(v.string(), v.checkAsync(async (s) => s !== "evil")) as never) }), output: v.object({}) });
    expect(lazy.problems.map((p) => p.reason).join("\n")).toContain("the input schema is async");
    const many = Object.fromEntries([["first", v.pipeAsync(v.string(), v.checkAsync(async () => true))], ...Array.from({ length: 10_001 }, (_, i) => [`f${i}`, v.optional(v.string())])]);
    expect(checkDeclaration({ ...base, input: v.objectAsync(many as never), output: v.object({}) }).problems.map((p) => p.reason).join("\n")).toContain("the input schema is async");
    const sync = checkDeclaration({ ...base, input: v.pipe(v.object({ a: v.string() }), v.check((o) => o.a !== "")), output: v.object({}) });
    expect(sync.problems.filter((p) => p.reason.includes("async"))).toEqual([]);
  });
});

describe("checkDeclaration unknown fields", () => {
  test("a field in another case, or named as other tools name it, gets the field meant", () => {
    const check = checkDeclaration({ id: "a.b", Cancellable: true, deadline_ms: 100 }, {});
    expect(check.problems.filter((p) => p.reason.includes("is not a declaration field")).map((p) => p.reason)).toEqual([
      '"Cancellable" is not a declaration field. Did you mean "cancellable"?',
      '"deadline_ms" is not a declaration field. Did you mean "timeout_ms"?',
    ]);
  });

  test("checkDeclaration refuses a field it does not know at its line, suggesting the field it is close to", () => {
    const text = 'export default capability({\n  id: "a.b",\n  cancelable: true,\n  timeoutMs: 100,\n  "odd(key": 1,\n});\n';
    const check = checkDeclaration({ id: "a.b", cancelable: true, timeoutMs: 100, "odd(key": 1 }, { text });
    expect(check.problems.filter((p) => p.reason.includes("is not a declaration field"))).toEqual([
      { code: "bad_declaration", reason: '"cancelable" is not a declaration field. Did you mean "cancellable"?', line: 3, column: 3 },
      { code: "bad_declaration", reason: '"timeoutMs" is not a declaration field. Did you mean "timeout_ms"?', line: 4, column: 3 },
      {
        code: "bad_declaration",
        reason: '"odd(key" is not a declaration field. Remove it; a declaration has only id, title, description, effect, input, output, cancellable, timeout_ms, cache, execution, examples, errors, handler, reconcile.',
        line: 5,
        column: 3,
      },
    ]);
  });

  test("checkDeclaration reports ten unknown fields one by one and counts the rest in one problem", () => {
    const fields = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`extra${i}`, i]));
    const reasons = checkDeclaration({ id: "a.b", ...fields }).problems.map((p) => p.reason).filter((r) => r.includes("declaration field"));
    expect(reasons).toHaveLength(11);
    expect(reasons[10]).toStartWith("15 more fields are not declaration fields either.");
  });
});

describe("listCapabilityFiles", () => {
  test("listCapabilityFiles lists .ts and .js files sorted, without helpers, hidden files (editor locks), tests, declarations or subfolders", async () => {
    const files = await listCapabilityFiles(join(root, "caps"));
    expect(files!.map((f) => f.slice(f.lastIndexOf("/") + 1))).toEqual(["bad.js", "good.one.ts", "needs.computed.ts", "needs.many.ts", "needs.pkg.ts", "throws.proxy.ts", "throws.string.ts", "throws.trap.ts", "top.throws.ts"]);
  });

  test("listCapabilityFiles answers null for a missing folder", async () => {
    expect(await listCapabilityFiles(join(root, "nope"))).toBeNull();
  });
});

describe("importCapabilityFile", () => {
  test("the module runs the text that was read, not one a save wrote between the read and the import", async () => {
    const path = join(root, "caps/race.pin.ts");
    await writeFiles(root, { "caps/race.pin.ts": capabilitySource({ id: "race.pin" }) });
    // The import is asked for after the read: a save lands right then, with a text that must never run.
    const racing = (specifier: string) => {
      writeFileSync(path, 'throw new Error("the later save ran");\n');
      return import(specifier);
    };
    const imported = await importCapabilityFile(path, { importFile: racing });
    if (!imported.ok) throw new Error(`expected the text read to load, got ${"problem" in imported ? imported.problem.reason : "a parked trial"}`);
    expect((imported.value as { id: string }).id).toBe("race.pin");
    expect(imported.text).toContain('"race.pin"');
  });

  test("a linked capability file runs the text that was read too; CommonJS and JSX in .js files load as before", async () => {
    await writeFiles(root, { "src/linked.pin.ts": capabilitySource({ id: "linked.pin" }) });
    const link = join(root, "caps/linked.pin.ts");
    symlinkSync(join(root, "src/linked.pin.ts"), link);
    const racing = (specifier: string) => {
      writeFileSync(join(root, "src/linked.pin.ts"), 'throw new Error("the later save ran");\n');
      return import(specifier);
    };
    const linked = await importCapabilityFile(link, { importFile: racing });
    expect(linked.ok && (linked.value as { id: string }).id).toBe("linked.pin");

    await writeFiles(root, {
      "caps/common.js.js": 'const { capability } = require("docket");\nconst v = require("valibot");\nmodule.exports = capability({ id: "common.js", title: "CommonJS", description: "A CommonJS file.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n',
      "caps/jsx.js.js": '/** @jsxRuntime classic */ /** @jsx h */\nimport { capability } from "docket";\nimport * as v from "valibot";\nconst h = (tag) => tag;\nexport default capability({ id: "jsx.js", title: String(<b/>), description: "JSX in a .js file.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n',
    });
    const common = await importCapabilityFile(join(root, "caps/common.js.js"));
    expect(common.ok && (common.value as { id: string }).id).toBe("common.js");
    const jsx = await importCapabilityFile(join(root, "caps/jsx.js.js"));
    expect(jsx.ok && (jsx.value as { title: string }).title).toBe("b");
  });

  test("a capability file that is a FIFO or a device is a load error at once, not a read that never ends", async () => {
    const fifo = join(root, "caps/pipe.fifo.ts");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    expect(await listCapabilityFiles(join(root, "caps"))).toContain(fifo);
    const viaFifo = await importCapabilityFile(fifo);
    expect(viaFifo).toMatchObject({ ok: false, problem: { code: "import_failed", reason: expect.stringContaining("the file is a FIFO (named pipe), not a regular file") } });
    const zero = join(root, "caps/zero.dev.ts");
    symlinkSync("/dev/zero", zero);
    expect(await importCapabilityFile(zero)).toMatchObject({ ok: false, problem: { reason: expect.stringContaining("the file is a character device") } });
  });

  test('a file under a folder whose name holds "?" is a load error that says so, not a path cut at the "?"', async () => {
    await writeFiles(root, { "what?/q.one.ts": capabilitySource({ id: "q.one" }) });
    const own = await importCapabilityFile(join(root, "what?/q.one.ts"));
    expect(own).toMatchObject({ ok: false, problem: { code: "import_failed", reason: expect.stringContaining('its path holds a "?", which the runtime reads as the start of a query in a module path, so it cannot be imported; rename the folder') } });
  });
});
