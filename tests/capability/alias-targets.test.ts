import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { aliasLeadsNow } from "../../runtime/capability/_alias-configs-read.ts";

// docket reads where a tsconfig `paths` alias or a package.json "imports" entry leads itself (the
// runtime keeps the configs it read first for the life of the process) and serves its importers
// pinned to that file: its reading must be the runtime's. Each case is asked of both, in a folder
// of its own that the runtime has never listed.

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A fresh checkout holding `files` (path → text; "" for an empty module), its capabilities/ folder the importer. */
function checkout(files: Record<string, string>): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "docket-alias-targets-")));
  roots.push(root);
  mkdirSync(join(root, "capabilities"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return join(root, "capabilities");
}

/** What the runtime resolves `specifier` to from `dir`, or null. */
function runtimeResolves(specifier: string, dir: string): string | null {
  try {
    return Bun.resolveSync(specifier, dir);
  } catch {
    return null;
  }
}

const EXTENSIONS = [".tsx", ".jsx", ".mts", ".ts", ".mjs", ".js", ".cts", ".cjs", ".json"];

describe("docket's reading of an alias is the runtime's", () => {
  test("extensions, in the runtime's order: each left out in turn, for a file and a folder's index", () => {
    const files: Record<string, string> = { "tsconfig.json": JSON.stringify({ compilerOptions: { paths: { "@e/*": ["./e/*"] } } }) };
    const cases: string[] = [];
    EXTENSIONS.forEach((_, round) => {
      for (const extension of EXTENSIONS.slice(round)) {
        files[`e/f${round}/m${extension}`] = "";
        files[`e/i${round}/m/index${extension}`] = "";
      }
      cases.push(`@e/f${round}/m`, `@e/i${round}/m`);
    });
    const dir = checkout(files);
    for (const specifier of cases) expect({ specifier, docket: aliasLeadsNow(specifier, dir) }).toEqual({ specifier, docket: runtimeResolves(specifier, dir) });
  });

  test("a .js-family name for a TypeScript file, a file before a folder of the same name, a name as written", () => {
    const dir = checkout({
      "tsconfig.json": JSON.stringify({ compilerOptions: { paths: { "@e/*": ["./e/*"] } } }),
      "e/a.ts": "", "e/a.tsx": "", "e/a.mts": "",
      "e/b.tsx": "", "e/b.mts": "",
      "e/c.mts": "",
      "e/d.mts": "", "e/d.ts": "",
      "e/g.cts": "",
      "e/h.js": "", "e/h.ts": "",
      "e/k.ts": "", "e/k/index.ts": "",
      "e/data.json": "{}",
    });
    for (const specifier of ["@e/a.js", "@e/a.jsx", "@e/b.js", "@e/c.js", "@e/d.mjs", "@e/g.cjs", "@e/h.js", "@e/h", "@e/k", "@e/data.json", "@e/data", "@e/nothing.js"]) {
      expect({ specifier, docket: aliasLeadsNow(specifier, dir) }).toEqual({ specifier, docket: runtimeResolves(specifier, dir) });
    }
  });

  test("tsconfig paths: an exact pattern first, then the longest part before the `*`; only the best pattern's targets, its first that exists", () => {
    const dir = checkout({
      "tsconfig.json": JSON.stringify({
        compilerOptions: { paths: { "@e/*": ["./e/*"], "@e/sp/*": ["./sp/*"], "@e/sp/exact": ["./exact.ts"], "@m/*": ["./nope/*", "./e/*"], "@gone/*": ["./nope/*"], "@e/*x": ["./x/*"] } },
      }),
      "e/x.ts": "", "e/sp/y.ts": "", "sp/y.ts": "", "exact.ts": "", "e/sp/exact.ts": "", "sp/exact.ts": "", "x/y.ts": "", "x/yx.ts": "",
    });
    for (const specifier of ["@e/x", "@e/sp/y", "@e/sp/exact", "@m/x", "@gone/x", "@e/yx"]) {
      expect({ specifier, docket: aliasLeadsNow(specifier, dir) }).toEqual({ specifier, docket: runtimeResolves(specifier, dir) });
    }
  });

  test("package.json imports: the key itself, else the longest pattern; conditions the runtime takes", () => {
    const dir = checkout({
      "package.json": JSON.stringify({
        name: "team",
        imports: { "#k/*": "./k/*", "#k/sp/*": "./sp/*", "#c": { types: "./types.d.ts", browser: "./browser.ts", bun: "./bun.ts", default: "./default.ts" }, "#d": { node: "./node.ts", default: "./default.ts" } },
      }),
      "k/z.ts": "", "k/sp/z.ts": "", "sp/z.ts": "", "bun.ts": "", "default.ts": "", "browser.ts": "", "node.ts": "",
    });
    for (const specifier of ["#k/z.ts", "#k/sp/z.ts", "#c", "#d"]) {
      expect({ specifier, docket: aliasLeadsNow(specifier, dir) }).toEqual({ specifier, docket: runtimeResolves(specifier, dir) });
    }
  });
});

describe("docket's reading of an alias is the runtime's: conditions, folders, links (third tester, session 39)", () => {
  test("package.json imports conditions an import takes: bun, node, import, default, node-addons — never require, module, browser, types", () => {
    const conditions = ["bun", "node", "import", "require", "module", "node-addons", "browser", "types", "worker"];
    const files: Record<string, string> = { "package.json": JSON.stringify({ name: "team", imports: Object.fromEntries(conditions.map((c) => [`#${c}`, { [c]: `./${c}.ts`, default: "./fallback.ts" }])) }), "fallback.ts": "" };
    for (const c of conditions) files[`${c}.ts`] = "";
    const dir = checkout(files);
    for (const c of conditions) expect({ c, docket: aliasLeadsNow(`#${c}`, dir) }).toEqual({ c, docket: runtimeResolves(`#${c}`, dir) });
    // And what require() takes: require, never import.
    expect(aliasLeadsNow("#require", dir, "require")).toEndWith("/require.ts");
    expect(aliasLeadsNow("#import", dir, "require")).toEndWith("/fallback.ts");
    expect(aliasLeadsNow("#module", dir, "require")).toEndWith("/fallback.ts");
  });

  test("a folder: the file its package.json main names before its index; a target with two `*`", () => {
    const dir = checkout({
      "tsconfig.json": JSON.stringify({ compilerOptions: { paths: { "@d/*": ["./d/*"] } } }),
      "package.json": JSON.stringify({ name: "team", imports: { "#two/*": "./two/*/*.ts" } }),
      "d/main/package.json": JSON.stringify({ main: "entry.ts" }),
      "d/main/entry.ts": "",
      "d/main/index.ts": "",
      "d/bare/package.json": JSON.stringify({ main: "lib/start" }),
      "d/bare/lib/start.ts": "",
      "d/none/package.json": JSON.stringify({ name: "none" }),
      "d/none/index.ts": "",
      "two/x/x.ts": "",
    });
    for (const specifier of ["@d/main", "@d/bare", "@d/none", "#two/x"]) expect({ specifier, docket: aliasLeadsNow(specifier, dir) }).toEqual({ specifier, docket: runtimeResolves(specifier, dir) });
  });
});
