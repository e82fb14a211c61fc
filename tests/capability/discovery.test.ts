import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, realpath, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { capability } from "../../runtime/capability/declaration.ts";
import { discoverCapabilities, loadCapabilityFile } from "../../runtime/capability/discovery.ts";
import { LOAD_ERROR_DETAIL } from "../../runtime/capability/registered.ts";
import { loadErrorLine } from "../../runtime/capability/watch-capabilities.ts";
import { UNSAID } from "../../runtime/execution/thrown.ts";
import { findCheckoutRoot } from "../../runtime/capability/checkout.ts";
import { unknownCapabilityHint } from "../../runtime/capability/unknown-capability.ts";
import { capabilitySource, removeCheckout, tempCheckout, useDocketModules, writeFiles } from "../_support/capability-fixtures.ts";

const importFile = (path: string) => import(path);

const builtin = capability({
  id: "builtin.echo",
  title: "Echo",
  description: "Echoes.",
  effect: "read",
  input: v.object({}),
  output: v.object({}),
  handler: () => ({}),
});

let root: string;
let other: string;

beforeAll(async () => {
  useDocketModules();
  root = await tempCheckout();
  other = await tempCheckout("docket-other-");
  await writeFiles(root, {
    "capabilities/good.one.ts": capabilitySource({ id: "good.one" }),
    "capabilities/good.two.js": capabilitySource({ id: "good.two" }),
    "capabilities/bad_id.ts": capabilitySource({ id: "Bad.Id" }),
    "capabilities/wrong.name.ts": capabilitySource({ id: "right.name" }),
    "capabilities/syntax.error.ts": 'import { capability } from "docket";\n\nexport default capability({\n  id: "syntax.error",\n  title: ,\n});\n',
    "capabilities/top.throws.ts": 'import { capability } from "docket";\n\nconst ready = false;\nif (!ready) throw new Error("not configured: set TOKEN");\nexport default capability({});\n',
    "capabilities/has.date.ts": capabilitySource({ id: "has.date", input: "v.object({ when: v.date() })" }),
    "capabilities/bad.example.ts": capabilitySource({ id: "bad.example", extra: 'examples: [{ n: 2 }, { n: "two" }],' }),
    "capabilities/no.default.ts": 'export const id = "no.default";\n',
    "capabilities/not.capability.ts": "export default { hello: 1 };\n",
    "capabilities/dup.first.ts": capabilitySource({ id: "dup.first" }),
    "capabilities/_helper.ts": "export const helper = 1;\n",
    "capabilities/types.d.ts": "export type T = 1;\n",
    "capabilities/nested/deep.one.ts": capabilitySource({ id: "deep.one" }),
  });
  await writeFiles(other, {
    "extra/dup.first.ts": capabilitySource({ id: "dup.first" }),
    "extra/extra.one.ts": capabilitySource({ id: "extra.one" }),
  });
});

afterAll(async () => {
  await removeCheckout(root);
  await removeCheckout(other);
});

function errorFor<E extends { file: string }>(errors: E[], name: string): E | undefined {
  return errors.find((e) => e.file.endsWith(`/${name}`));
}

describe("discoverCapabilities", () => {
  test("discoverCapabilities loads built-ins, the checkout's files and --capabilities folders, bad files as load errors", async () => {
    const registry = await discoverCapabilities({ root, dirs: [join(other, "extra")], builtins: { "builtin.echo.ts": builtin }, importFile });
    expect(registry.list().map((c) => c.id)).toEqual(["builtin.echo", "dup.first", "extra.one", "good.one", "good.two"]);
    expect(registry.get("builtin.echo")!.source).toEqual({ kind: "builtin", file: "builtin.echo.ts" });
    expect(registry.get("good.one")!.source).toEqual({ kind: "file", file: join(root, "capabilities/good.one.ts") });
    expect(registry.get("dup.first")!.source.file).toBe(join(root, "capabilities/dup.first.ts"));

    const errors = registry.loadErrors();
    expect(errors.map((e) => e.file.slice(e.file.lastIndexOf("/") + 1)).sort()).toEqual(
      ["bad.example.ts", "bad_id.ts", "dup.first.ts", "has.date.ts", "no.default.ts", "not.capability.ts", "syntax.error.ts", "top.throws.ts", "wrong.name.ts"].sort(),
    );
    for (const error of errors) expect(error.reason.length).toBeGreaterThan(10);
  });

  test("discoverCapabilities reports a syntax error with the line and column of the file", async () => {
    const registry = await discoverCapabilities({ root, dirs: [], builtins: {}, importFile });
    const error = errorFor(registry.loadErrors(), "syntax.error.ts")!;
    expect(error).toMatchObject({ line: 5, column: 10 });
    expect(error.reason).toStartWith("syntax error: Unexpected");
  });

  test("discoverCapabilities reports a top-level throw with its message and line", async () => {
    const registry = await discoverCapabilities({ root, dirs: [], builtins: {}, importFile });
    const error = errorFor(registry.loadErrors(), "top.throws.ts")!;
    expect(error.line).toBe(4);
    // What it said is the process's log's (LOAD_ERROR_DETAIL, no JSON carries it); a client reads its class.
    expect(error.reason).toBe(`it threw while loading: Error${UNSAID}`);
    expect(error[LOAD_ERROR_DETAIL]).toBe("it threw while loading: not configured: set TOKEN");
    expect(JSON.stringify(registry.loadErrors())).not.toContain("set TOKEN");
    expect(loadErrorLine(error)).toContain("not configured: set TOKEN");
    expect(error.reason).not.toContain("    at ");
  });

  test("discoverCapabilities names the reason for each declaration problem", async () => {
    const registry = await discoverCapabilities({ root, dirs: [join(other, "extra")], builtins: {}, importFile });
    const errors = registry.loadErrors();
    expect(errorFor(errors, "bad_id.ts")).toMatchObject({ line: 5, reason: expect.stringContaining('id "Bad.Id" must be lower-case dotted') });
    expect(errorFor(errors, "wrong.name.ts")!.reason).toContain('named "wrong.name.ts" but declares id "right.name"');
    // Asked for by the id it declares, the renamed file is named, not a bare "not loaded" (walkthrough tester, session 40).
    expect(unknownCapabilityHint("right.name", registry)).toStartWith(`${errorFor(errors, "wrong.name.ts")!.file}`);
    expect(unknownCapabilityHint("right.name", registry)).toContain('declares id "right.name"; rename the file to "right.name.ts"');
    expect(errorFor(errors, "has.date.ts")).toMatchObject({ line: 9, reason: expect.stringContaining('input.when cannot be published as JSON Schema: The "date" schema') });
    expect(errorFor(errors, "bad.example.ts")!.reason).toContain("examples[1] does not match the input schema: input.n:");
    expect(errorFor(errors, "no.default.ts")!.reason).toContain("no default export; end it with export default capability({ … }) — or, if it is a module capabilities import, name it with a leading underscore (_no.default.ts)");
    expect(errorFor(errors, "not.capability.ts")!.reason).toContain("not a capability");
    const dup = errors.find((e) => e.file === join(other, "extra/dup.first.ts"))!;
    expect(dup.reason).toContain(`already declared by ${join(root, "capabilities/dup.first.ts")}`);
  });

  test("a default export read through a getter or a Proxy, or a class instance, is one file's load error: the others load (foundation tester, session 48: every command stopped)", async () => {
    const checkout = await tempCheckout();
    try {
      await writeFiles(checkout, {
        "capabilities/good.one.ts": capabilitySource({ id: "good.one" }),
        "capabilities/getter.boom.ts": 'export default { get id(): string { throw new Error("id getter boom"); }, handler() {} };\n',
        "capabilities/getter.fine.ts": capabilitySource({ id: "getter.fine" }).replace('id: "getter.fine"', 'get id() { return "getter.fine"; }'),
        "capabilities/proxy.has.ts": 'export default new Proxy({}, { has() { throw new Error("has trap"); } });\n',
        "capabilities/class.made.ts": 'class C { get id() { throw new Error("proto getter"); } }\nexport default new C();\n',
        "capabilities/example.proxy.ts": capabilitySource({ id: "example.proxy", extra: 'examples: [new Proxy({}, { ownKeys() { throw new Error("example trap"); }, get() { throw new Error("example trap"); } })],' }),
        // Deeper in an example (checking tester, session 48: every capabilities/list was a 500).
        "capabilities/example.deep.ts": capabilitySource({ id: "example.deep", extra: 'examples: [{ n: 1, note: { get text() { throw new Error("deep getter"); } } }],' }),
        "capabilities/example.tojson.ts": capabilitySource({ id: "example.tojson", extra: "examples: [{ n: 1, toJSON() { return { n: 2 }; } }]," }),
        // Round 2: 40,000 levels overflowed the copy's stack, and a hole at 50,000,000 was listed as 50 million nulls.
        "capabilities/example.nested.ts": capabilitySource({ id: "example.nested", extra: "examples: [(() => { let d: unknown = 1; for (let i = 0; i < 40_000; i++) d = [d]; return { n: 1, d }; })()]," }),
        "capabilities/example.sparse.ts": capabilitySource({ id: "example.sparse", extra: "examples: [(() => { const big: unknown[] = []; big[50_000_000] = 1; return { n: 1, big }; })()]," }),
        "capabilities/_ns.ts": capabilitySource({ id: "ns.made" }).replace("export default capability({", "const made = capability({").concat("\nexport const { id, title, description, effect, input, output, handler } = made;\n"),
        "capabilities/ns.made.ts": 'import * as ns from "./_ns.ts";\nexport default ns;\n',
      });
      const registry = await discoverCapabilities({ root: checkout, dirs: [], builtins: { "builtin.echo.ts": builtin }, importFile });
      // A module's namespace holds its exports as plain values: it loads.
      expect(registry.list().map((c) => c.id)).toEqual(["builtin.echo", "good.one", "ns.made"]);
      const errors = registry.loadErrors();
      expect(errorFor(errors, "getter.boom.ts")!.reason).toBe('"id" is declared with a getter or setter; declare it as a plain value ("id": …)');
      // A getter is refused even when it would answer: it is never run on the server's thread.
      expect(errorFor(errors, "getter.fine.ts")!.reason).toContain('"id" is declared with a getter or setter');
      expect(errorFor(errors, "proxy.has.ts")!.reason).toStartWith("the default export is a Proxy; export the object capability(");
      expect(errorFor(errors, "class.made.ts")!.reason).toStartWith("the default export is an instance of a class, not a plain object");
      expect(errorFor(errors, "example.proxy.ts")!.reason).toBe("examples[0] is a Proxy; an example is an input as JSON: plain objects, lists, strings, numbers, true, false and null");
      expect(errorFor(errors, "example.deep.ts")!.reason).toStartWith("examples[0].note.text is declared with a getter or setter; an example is an input as JSON");
      expect(errorFor(errors, "example.tojson.ts")!.reason).toStartWith("examples[0].toJSON is a function; an example is an input as JSON");
      expect(errorFor(errors, "example.nested.ts")!.reason).toStartWith("examples nests deeper than 128 levels, as no input may");
      expect(errorFor(errors, "example.sparse.ts")!.reason).toStartWith("examples holds more than 100000 values");
      expect(JSON.stringify(errors)).not.toMatch(/id getter boom|has trap|proto getter|example trap|deep getter/);
    } finally {
      await removeCheckout(checkout);
    }
  });

  test("discoverCapabilities skips helpers, declaration files and subfolders", async () => {
    const registry = await discoverCapabilities({ root, dirs: [], builtins: {}, importFile });
    const files = [...registry.list().map((c) => c.source.file), ...registry.loadErrors().map((e) => e.file)];
    expect(files.some((f) => f.includes("_helper") || f.endsWith(".d.ts") || f.includes("nested"))).toBe(false);
  });

  test("discoverCapabilities accepts a checkout with no capabilities folder", async () => {
    const empty = await tempCheckout();
    try {
      const registry = await discoverCapabilities({ root: empty, dirs: [], builtins: { "builtin.echo.ts": builtin }, importFile });
      expect(registry.list().map((c) => c.id)).toEqual(["builtin.echo"]);
      expect(registry.loadErrors()).toEqual([]);
    } finally {
      await removeCheckout(empty);
    }
  });

  test("discoverCapabilities reports a missing --capabilities folder", async () => {
    const registry = await discoverCapabilities({ root, dirs: [join(other, "nope")], builtins: {}, importFile });
    expect(registry.loadErrors()).toContainEqual({ file: join(other, "nope"), line: null, column: null, reason: expect.stringContaining("is not a folder") });
  });

  test("discoverCapabilities loads a folder met twice (directly and through a link) once", async () => {
    const link = join(other, "link-to-extra");
    await symlink(join(other, "extra"), link);
    const registry = await discoverCapabilities({ root, dirs: [join(other, "extra"), link], builtins: {}, importFile });
    expect(registry.list().filter((c) => c.id === "extra.one")).toHaveLength(1);
    expect(registry.loadErrors().filter((e) => e.file.includes("extra.one"))).toEqual([]);
  });

  test("discoverCapabilities does not load the built-in folder again when serving docket's own checkout", async () => {
    const own = await tempCheckout();
    try {
      await writeFiles(own, { "capabilities/builtin.echo.ts": capabilitySource({ id: "builtin.echo" }) });
      const registry = await discoverCapabilities({ root: own, dirs: [], builtins: { "builtin.echo.ts": builtin }, importFile, builtinDir: join(own, "capabilities") });
      expect(registry.loadErrors()).toEqual([]);
      expect(registry.get("builtin.echo")!.source.kind).toBe("builtin");
    } finally {
      await removeCheckout(own);
    }
  });

  test("discoverCapabilities loads a new file in docket's own capabilities folder (the README tour inside this repository)", async () => {
    const own = await tempCheckout();
    try {
      await writeFiles(own, {
        "capabilities/builtin.echo.ts": capabilitySource({ id: "builtin.echo" }),
        "capabilities/hello.greet.ts": capabilitySource({ id: "hello.greet" }),
        "runtime/capability/builtins.ts": "export {};\n",
      });
      const registry = await discoverCapabilities({ root: own, dirs: [], builtins: { "builtin.echo.ts": builtin }, importFile });
      expect(registry.loadErrors()).toEqual([]);
      expect(registry.get("builtin.echo")!.source.kind).toBe("builtin");
      expect(registry.get("hello.greet")!.source).toEqual({ kind: "file", file: join(own, "capabilities/hello.greet.ts") });
    } finally {
      await removeCheckout(own);
    }
  });

  test("discoverCapabilities recognises docket's own checkout even without builtinDir (the binary run inside it)", async () => {
    const own = await tempCheckout();
    try {
      await writeFiles(own, { "capabilities/builtin.echo.ts": capabilitySource({ id: "builtin.echo" }), "runtime/capability/builtins.ts": "export {};\n" });
      const registry = await discoverCapabilities({ root: own, dirs: [], builtins: { "builtin.echo.ts": builtin }, importFile });
      expect(registry.loadErrors()).toEqual([]);
    } finally {
      await removeCheckout(own);
    }
  });

  test("two ids with one MCP tool name, or a checkout id among docket's own tool names, are load errors of the later file, not a tool dropped silently", async () => {
    const clash = await tempCheckout();
    try {
      await writeFiles(clash, {
        "capabilities/coll.a_b.ts": capabilitySource({ id: "coll.a_b" }),
        "capabilities/coll_a.b.ts": capabilitySource({ id: "coll_a.b" }),
        "capabilities/docket.execution_start.ts": capabilitySource({ id: "docket.execution_start" }),
      });
      const registry = await discoverCapabilities({ root: clash, dirs: [], builtins: {}, importFile });
      expect(registry.get("coll.a_b")).not.toBeNull();
      expect(registry.get("coll_a.b")).toBeNull();
      expect(registry.get("docket.execution_start")).toBeNull();
      const reasons = registry.loadErrors().map((e) => e.reason);
      expect(reasons).toContainEqual(expect.stringContaining('id "coll_a.b" has the MCP tool name coll_a_b, which coll.a_b ('));
      expect(reasons).toContainEqual(expect.stringContaining("names beginning docket_ are docket's own tools"));
    } finally {
      await removeCheckout(clash);
    }
  });

  test("discoverCapabilities keeps a built-in when a checkout file declares the same id", async () => {
    const clash = await tempCheckout();
    try {
      await writeFiles(clash, { "capabilities/builtin.echo.ts": capabilitySource({ id: "builtin.echo" }) });
      const registry = await discoverCapabilities({ root: clash, dirs: [], builtins: { "builtin.echo.ts": builtin }, importFile });
      expect(registry.get("builtin.echo")!.source.kind).toBe("builtin");
      expect(registry.loadErrors()[0]!.reason).toContain("already declared by the built-in builtin.echo.ts");
    } finally {
      await removeCheckout(clash);
    }
  });

  test("discoverCapabilities refuses two files whose names differ only by letter case, naming the other, before Bun imports one for both", async () => {
    const twins = await tempCheckout();
    try {
      await writeFiles(twins, {
        "capabilities/cas.one.ts": capabilitySource({ id: "cas.one" }),
        "capabilities/CAS.ONE.ts": capabilitySource({ id: "cas.one" }),
        "capabilities/cas.two.ts": capabilitySource({ id: "cas.two" }),
      });
      const registry = await discoverCapabilities({ root: twins, dirs: [], builtins: {}, importFile });
      expect(registry.list().map((c) => c.id)).toEqual(["cas.two"]);
      const errors = registry.loadErrors();
      expect(errorFor(errors, "CAS.ONE.ts")!.reason).toStartWith('its name differs from "cas.one.ts" beside it only by letter case');
      expect(errorFor(errors, "cas.one.ts")!.reason).toStartWith('its name differs from "CAS.ONE.ts" beside it only by letter case');
      for (const error of errors) expect(error.reason).not.toContain("no longer holds the text");
      // Loaded on its own (docket run ./file), the same.
      const alone = await loadCapabilityFile(join(twins, "capabilities/CAS.ONE.ts"), importFile);
      expect(alone.ok ? "" : alone.errors[0]!.reason).toContain('"cas.one.ts" beside it only by letter case');
    } finally {
      await removeCheckout(twins);
    }
  });
});

describe("loadCapabilityFile", () => {
  test("loadCapabilityFile returns the registered capability of a sound file", async () => {
    const result = await loadCapabilityFile(join(root, "capabilities/good.one.ts"), importFile);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.capability).toMatchObject({ id: "good.one", source: { kind: "file", file: join(root, "capabilities/good.one.ts") } });
  });

  test("loadCapabilityFile returns the load errors of a bad file", async () => {
    const result = await loadCapabilityFile(join(root, "capabilities/syntax.error.ts"), importFile);
    expect(result).toEqual({ ok: false, errors: [{ file: join(root, "capabilities/syntax.error.ts"), line: 5, column: 10, reason: expect.stringContaining("syntax error") }] });
  });

  test("loadCapabilityFile reports a file that does not exist", async () => {
    const result = await loadCapabilityFile(join(root, "capabilities/none.ts"), importFile);
    expect(result).toEqual({ ok: false, errors: [expect.objectContaining({ reason: "the file does not exist" })] });
    // A link to nothing names where it points (foundation tester, session 44: "the file does not exist" for a file that is listed).
    await symlink("../gone/x.ts", join(root, "capabilities/dangling.link.ts"));
    const dangling = await loadCapabilityFile(join(root, "capabilities/dangling.link.ts"), importFile);
    expect(dangling).toEqual({ ok: false, errors: [expect.objectContaining({ reason: 'the file is a symbolic link to "../gone/x.ts", which does not exist; point it at the capability\'s file, or remove it' })] });
  });

  test("loadCapabilityFile names a helper's unresolved import as the helper wrote it, with the helper's line", async () => {
    await mkdir(join(other, "lib"), { recursive: true });
    await writeFile(join(other, "lib/_asks.ts"), '\n\nimport { y } from "./_nowhere.ts";\nexport const x = y;\n');
    await writeFile(join(other, "lib/uses.asks.ts"), 'import { x } from "./_asks.ts";\nexport default x;\n');
    const result = await loadCapabilityFile(join(other, "lib/uses.asks.ts"), importFile);
    expect(result).toEqual({ ok: false, errors: [expect.objectContaining({ reason: expect.stringMatching(/^cannot resolve import "\.\/_nowhere\.ts": .*\(imported by _asks\.ts line 3\)$/) })] });
    expect(JSON.stringify(result)).not.toContain("docket_pin");
  });

  test("loadCapabilityFile points a name a helper does not export at the line that imports it", async () => {
    await mkdir(join(other, "lib"), { recursive: true });
    await writeFile(join(other, "lib/_exports.ts"), "export const present = 1;\n");
    await writeFile(join(other, "lib/uses.absent.ts"), '// a comment\nimport { absent } from "./_exports.ts";\nexport default absent;\n');
    const result = await loadCapabilityFile(join(other, "lib/uses.absent.ts"), importFile);
    expect(result).toEqual({ ok: false, errors: [expect.objectContaining({ line: 2, reason: expect.stringContaining("Export named 'absent' not found in module") })] });
    expect(JSON.stringify(result)).not.toContain("docket_pin");
  });

  test("loadCapabilityFile says a name docket, a node built-in or a package does not export, whole, at the line that imports it (authoring tester, session 41)", async () => {
    await mkdir(join(other, "node_modules/fakepkg"), { recursive: true });
    await writeFile(join(other, "node_modules/fakepkg/package.json"), JSON.stringify({ name: "fakepkg", type: "module", exports: { ".": "./index.js", "./sub": "./sub.js" } }));
    await writeFile(join(other, "node_modules/fakepkg/index.js"), "export const a = 1;\n");
    await writeFile(join(other, "node_modules/fakepkg/sub.js"), "export const b = 1;\n");
    await mkdir(join(other, "lib"), { recursive: true });
    await writeFile(join(other, "lib/_plain.ts"), "export const plain = 1;\n");
    const cases: Array<[file: string, text: string, line: number, said: string]> = [
      ["typo.docket.ts", '// a typo\nimport { capabilty } from "docket";\nexport default capabilty;\n', 2, "Export named 'capabilty' not found in module 'docket'"],
      ["typo.node.ts", 'import { join } from "node:path";\nimport {\n  nope,\n} from "node:path";\nexport default [join, nope];\n', 4, "Export named 'nope' not found in module 'node:path'"],
      ["typo.package.ts", 'import { a } from "fakepkg";\nimport { zz } from "fakepkg/sub";\nexport default [a, zz];\n', 2, "Export named 'zz' not found in module '"],
      ["typo.default.ts", '\nimport plain from "./_plain.ts";\nexport default plain;\n', 2, "does not have an export named 'default'"],
    ];
    for (const [name, text, line, said] of cases) {
      await writeFile(join(other, "lib", name), text);
      const result = await loadCapabilityFile(join(other, "lib", name), importFile);
      expect({ name, result }).toEqual({ name, result: { ok: false, errors: [expect.objectContaining({ line, reason: expect.stringContaining(said) })] } });
      expect((result as { errors: Array<{ reason: string }> }).errors[0]!.reason).toStartWith("it threw while loading: SyntaxError: ");
    }
  });

  test("a SyntaxError a file throws itself, or a link error of a module it builds at run time, is still shown by its class only, whatever its message says (checking tester, session 41)", async () => {
    await mkdir(join(other, "lib"), { recursive: true });
    const secret = "hunter2-" + "FROMFILE";
    const throwing: Record<string, string> = {
      "throws.plain.ts": `import { capability } from "docket";\nthrow new SyntaxError("Export named '${secret}' not found in module 'docket'");\nexport default capability;\n`,
      "throws.nostack.ts": `import { capability } from "docket";\nconst s = ["hunter2", "FROMFILE"].join("-");\nconst e = new SyntaxError(\`Export named '\${s}' not found in module 'docket'.\`);\ne.stack = "";\nthrow e;\nexport default capability;\n`,
      "throws.nolimit.ts": `import * as v from "valibot";\nconst s = ["hunter2", "FROMFILE"].join("-");\nError.stackTraceLimit = 0;\nthrow new SyntaxError(\`Missing '\${s}' export in module 'valibot'.\`);\nexport default v;\n`,
      "throws.trailing.ts": `import { capability } from "docket";\nconst s = ["hunter2", "FROMFILE"].join("-");\nconst e = new SyntaxError("module 'docket' does not have an export named 'capability'. tok=" + s);\ne.stack = "";\nthrow e;\nexport default capability;\n`,
      "throws.pattern.ts": `import { capability } from "docket";\nconst s = ["hunter2", "FROMFILE"].join("-");\nconst e = new SyntaxError("Export named 'capability|" + s + "' not found in module 'docket'.");\ne.stack = "";\nthrow e;\nexport default capability;\n`,
      "throws.dynamic.ts": `const s = ["hunter2", "FROMFILE"].join("_");\nawait import(\`data:text/javascript,import { \${s} } from "node:path"; export default 1;\`);\nexport default 1;\n`,
    };
    for (const [name, text] of Object.entries(throwing)) {
      await writeFile(join(other, "lib", name), text);
      const result = await loadCapabilityFile(join(other, "lib", name), importFile);
      expect({ name, ok: result.ok }).toEqual({ name, ok: false });
      expect({ name, said: JSON.stringify((result as { errors: unknown[] }).errors) }).not.toEqual({ name, said: expect.stringMatching(/hunter2.FROMFILE/) });
    }
  });

  test("loadCapabilityFile names a syntax error in a module the file imports, at the line of the file that imports it (walkthrough tester, session 40)", async () => {
    await mkdir(join(other, "lib"), { recursive: true });
    await writeFile(join(other, "lib/broken.ts"), "export const x = ;\n");
    await writeFile(join(other, "lib/uses.broken.ts"), '// uses a helper\nimport { x } from "./broken.ts";\nexport default x;\n');
    const result = await loadCapabilityFile(join(other, "lib/uses.broken.ts"), importFile);
    expect(result).toEqual({ ok: false, errors: [expect.objectContaining({ line: 2, reason: expect.stringContaining("syntax error in broken.ts line 1") })] });
  });
});

describe("discoverCapabilities: the next file's trial beside this file's import", () => {
  /** A checkout of three good capability files, loaded in the order a, b, c. */
  const threeFiles = async () => {
    const folder = await tempCheckout("docket-ahead-");
    await writeFiles(folder, {
      "capabilities/a.one.ts": capabilitySource({ id: "a.one" }),
      "capabilities/b.two.ts": capabilitySource({ id: "b.two" }),
      "capabilities/c.three.ts": capabilitySource({ id: "c.three" }),
    });
    return folder;
  };

  test("each file's trial begins while the file before it imports; imports stay one at a time, in order, each after its own trial", async () => {
    const folder = await threeFiles();
    try {
      const seen: string[] = [];
      const name = (path: string) => path.split("/").pop()!.split(".")[0]!;
      let importing = 0;
      const registry = await discoverCapabilities({
        root: folder,
        dirs: [],
        builtins: {},
        probe: async (sources) => {
          seen.push(`trial ${name(sources.file)}`);
          await Bun.sleep(5);
          seen.push(`tried ${name(sources.file)}`);
          return null;
        },
        importFile: async (path) => {
          importing++;
          expect(importing).toBe(1);
          seen.push(`import ${name(path)}`);
          // Long enough for the next file's read and trial to start meanwhile.
          await Bun.sleep(50);
          seen.push(`imported ${name(path)}`);
          importing--;
          return import(path);
        },
      });
      expect(registry.list().map((c) => c.id).sort()).toEqual(["a.one", "b.two", "c.three"]);
      expect(registry.loadErrors()).toEqual([]);
      const at = (entry: string) => seen.indexOf(entry);
      for (const [file, next] of [["a", "b"], ["b", "c"]] as const) {
        expect(at(`tried ${file}`)).toBeLessThan(at(`import ${file}`));
        expect(at(`trial ${next}`)).toBeLessThan(at(`imported ${file}`));
        expect(at(`imported ${file}`)).toBeLessThan(at(`import ${next}`));
      }
      expect(at("tried c")).toBeLessThan(at("import c"));
    } finally {
      await removeCheckout(folder);
    }
  });

  test("a file refused by its trial is never imported, and the files after it still load", async () => {
    const folder = await threeFiles();
    try {
      const imported: string[] = [];
      const registry = await discoverCapabilities({
        root: folder,
        dirs: [],
        builtins: {},
        probe: async (sources) => (sources.file.endsWith("b.two.ts") ? { code: "import_failed", reason: "it threw when tried", line: null, column: null } : null),
        importFile: (path) => {
          imported.push(path.split("/").pop()!.split("?")[0]!);
          return import(path);
        },
      });
      expect(registry.list().map((c) => c.id).sort()).toEqual(["a.one", "c.three"]);
      expect(registry.loadErrors()).toEqual([expect.objectContaining({ file: join(folder, "capabilities/b.two.ts"), reason: "it threw when tried" })]);
      expect(imported).toEqual(["a.one.ts", "c.three.ts"]);
    } finally {
      await removeCheckout(folder);
    }
  });
});

describe("discoverCapabilities: files that look like capability files but are not loaded", () => {
  test("a capability file in a subfolder, or named .tsx, is named when its id is asked for, with why it is not loaded and what to do (hostile tester, session 38)", async () => {
    const folder = await tempCheckout("docket-lookalike-");
    try {
      await writeFiles(folder, {
        "capabilities/a.one.ts": capabilitySource({ id: "a.one" }),
        "capabilities/ci/ci.lint.ts": capabilitySource({ id: "ci.lint" }),
        "capabilities/ci/_helper.ts": "export const x = 1;\n",
        "capabilities/_lib/lib.thing.ts": capabilitySource({ id: "lib.thing" }),
        "capabilities/ui.card.tsx": capabilitySource({ id: "ui.card" }),
        "capabilities/up.ext.TS": capabilitySource({ id: "up.ext" }),
        "capabilities/up.jsx.TSX": capabilitySource({ id: "up.jsx" }),
        "capabilities/ci/ci.upper.TS": capabilitySource({ id: "ci.upper" }),
        "elsewhere/linked.ts": capabilitySource({ id: "linked.one" }),
        "capabilities/Notes.md": "not a capability\n",
      });
      await symlink(join(folder, "elsewhere/linked.ts"), join(folder, "capabilities/linked.one.TS"));
      const registry = await discoverCapabilities({ root: folder, dirs: [], builtins: {}, importFile });
      expect(registry.list().map((c) => c.id)).toEqual(["a.one"]);
      expect(registry.loadErrors()).toEqual([]);
      const real = await realpath(folder);
      expect(registry.lookalikes().map((l) => [l.id, l.file]).sort()).toEqual(
        [
          ["ui.card", join(real, "capabilities/ui.card.tsx")],
          ["up.ext", join(real, "capabilities/up.ext.TS")],
          ["up.jsx", join(real, "capabilities/up.jsx.TSX")],
          ["linked.one", join(real, "capabilities/linked.one.TS")],
          ["ci.lint", join(real, "capabilities/ci/ci.lint.ts")],
          ["ci.upper", join(real, "capabilities/ci/ci.upper.TS")],
        ].sort(),
      );
      // .TSX, a link named .TS, and a .TS in a subfolder are named too (foundation tester, session 44).
      expect(unknownCapabilityHint("up.jsx", registry)).toContain("docket loads capability files named .ts or .js, not .TSX; rename it to up.jsx.ts");
      expect(unknownCapabilityHint("linked.one", registry)).toContain("its extension is .TS");
      expect(unknownCapabilityHint("ci.upper", registry)).toContain("it is in the subfolder ci/");
      expect(unknownCapabilityHint("ci.upper", registry)).toContain("; and its extension is .TS");
      // An extension in upper case is named too (foundation tester, session 44).
      expect(unknownCapabilityHint("up.ext", registry)).toContain("its extension is .TS, and docket loads capability files whose extension is .ts or .js in lower case; rename it to up.ext.ts");
      expect(unknownCapabilityHint("ci.lint", registry)).toBe(`${join(real, "capabilities/ci/ci.lint.ts")} is not loaded: it is in the subfolder ci/, and docket loads the capability files of a folder itself, not of its subfolders; move it up, or name the subfolder with --capabilities ${join(real, "capabilities/ci")}.`);
      expect(unknownCapabilityHint("ui.card", registry)).toContain("docket loads capability files named .ts or .js, not .tsx; rename it to ui.card.ts");
      // Any other id: the usual hint.
      expect(unknownCapabilityHint("a.onr", registry)).toContain("a.one");
    } finally {
      await removeCheckout(folder);
    }
  });
});

describe("findCheckoutRoot", () => {
  test("findCheckoutRoot finds the nearest ancestor with .git, a folder or a file", async () => {
    await mkdir(join(root, "a/b/c"), { recursive: true });
    expect(findCheckoutRoot(join(root, "a/b/c"))).toBe(root);
    await writeFile(join(root, "a/.git"), "gitdir: ../.git/worktrees/a\n");
    expect(findCheckoutRoot(join(root, "a/b/c"))).toBe(join(root, "a"));
  });

  test("findCheckoutRoot falls back to the working directory", async () => {
    const plain = await realpath(await mkdtemp(join(tmpdir(), "docket-plain-")));
    try {
      await mkdir(join(plain, "sub"));
      expect(findCheckoutRoot(join(plain, "sub"))).toBe(join(plain, "sub"));
    } finally {
      await removeCheckout(plain);
    }
  });
});
