// Editor types with no npm install: `docket init` in a checkout without node_modules, then this
// repository's TypeScript type-checks its capability files against the declarations docket wrote.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, REPO, removeTempDirs, tempCheckout, writeFiles, type DocketRunner } from "./_harness.ts";

let binary: DocketRunner;

beforeAll(async () => {
  binary = fromBinary(await buildBinary());
}, 180_000);

afterAll(removeTempDirs);

const TSC = join(REPO, "node_modules", ".bin", "tsc");

/** `tsc --noEmit -p capabilities` in the checkout, as an editor or a CI step would run it. */
function typeCheck(checkout: string): { code: number; output: string } {
  const run = Bun.spawnSync([TSC, "--noEmit", "-p", "capabilities"], { cwd: checkout, stdout: "pipe", stderr: "pipe" });
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() };
}

/** A checkout after `docket init`, with no node_modules anywhere above it. */
async function initialized(): Promise<string> {
  const checkout = tempCheckout();
  const init = await docket(binary, ["init"], { cwd: checkout });
  expect(init.code).toBe(0);
  expect(existsSync(join(checkout, "node_modules"))).toBe(false);
  return checkout;
}

const BAD_FIELD = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "team.count",
  title: "Count",
  description: "Reads a field its input schema lacks.",
  effect: "read",
  input: v.object({ path: v.string() }),
  output: v.object({ files: v.number() }),
  handler(input, ctx) {
    ctx.progress.log(input.path);
    return { files: input.limit };
  },
});
`;

/** A capability reading a file with node:fs/promises: it needs Node's types. */
const NODE_IMPORT = `import { capability } from "docket";
import { readFile } from "node:fs/promises";
import * as v from "valibot";

export default capability({
  id: "files.head",
  title: "Head",
  description: "The first line of a file.",
  effect: "read",
  input: v.object({ path: v.string() }),
  output: v.object({ line: v.string() }),
  async handler(input) {
    return { line: (await readFile(input.path, "utf8")).split("\\n")[0]! };
  },
});
`;

describe("docket init and editor types", () => {
  test("docket init writes capabilities/tsconfig.json (strict, paths to .docket/types), the declarations and a first capability", async () => {
    const checkout = await initialized();
    const tsconfig = JSON.parse(readFileSync(join(checkout, "capabilities", "tsconfig.json"), "utf8"));
    expect(tsconfig.compilerOptions.strict).toBe(true);
    expect(tsconfig.compilerOptions.paths).toEqual({ docket: ["../.docket/types/docket/public.d.ts"], valibot: ["../.docket/types/valibot/index.d.ts"] });
    expect(readFileSync(join(checkout, ".docket", "types", "docket", "public.d.ts"), "utf8")).toContain("export { capability }");
    expect(readFileSync(join(checkout, ".docket", "types", "valibot", "index.d.ts"), "utf8")).toContain("declare function object");
    expect(readFileSync(join(checkout, ".docket", ".gitignore"), "utf8")).toBe("*\n");
    expect(existsSync(join(checkout, "capabilities", "hello.greet.ts"))).toBe(true);
  });

  test("the declarations import nothing but each other and valibot, so a checkout with no node_modules resolves every type", async () => {
    const checkout = await initialized();
    const root = join(checkout, ".docket", "types", "docket");
    const outside: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else for (const [, specifier] of readFileSync(path, "utf8").matchAll(/(?:from |import\()"([^"]+)"/g)) if (!specifier!.startsWith(".") && specifier !== "valibot") outside.push(`${entry.name}: ${specifier}`);
      }
    };
    walk(root);
    expect(outside).toEqual([]);
    expect(readdirSync(root)).toContain("public.d.ts");
  });

  test("docket init lists the runtime types installed in the checkout, so today's TypeScript (which reads only listed types) checks a file importing node: modules", async () => {
    const checkout = tempCheckout();
    // @types/node as npm installs it, cut to what the capability uses.
    const types = join(checkout, "node_modules", "@types", "node");
    mkdirSync(types, { recursive: true });
    writeFileSync(join(types, "package.json"), JSON.stringify({ name: "@types/node", version: "22.0.0", types: "index.d.ts" }));
    writeFileSync(join(types, "index.d.ts"), 'declare module "node:fs/promises" { export function readFile(path: string, encoding: "utf8"): Promise<string>; }\n');
    expect((await docket(binary, ["init"], { cwd: checkout })).code).toBe(0);
    const tsconfig = JSON.parse(readFileSync(join(checkout, "capabilities", "tsconfig.json"), "utf8"));
    expect(tsconfig.compilerOptions.types).toEqual(["node"]);
    writeFileSync(join(checkout, "capabilities", "files.head.ts"), NODE_IMPORT);
    expect(typeCheck(checkout)).toEqual({ code: 0, output: "" });
    // Without the package, the list is empty and the same file names what is missing.
    const bare = await initialized();
    expect(JSON.parse(readFileSync(join(bare, "capabilities", "tsconfig.json"), "utf8")).compilerOptions.types).toEqual([]);
    writeFileSync(join(bare, "capabilities", "files.head.ts"), NODE_IMPORT);
    expect(typeCheck(bare).output).toContain("node:fs/promises");
  });

  test("tsc --noEmit -p capabilities passes on the first capability and on what docket new writes", async () => {
    const checkout = await initialized();
    expect((await docket(binary, ["new", "repo.lint-check"], { cwd: checkout })).code).toBe(0);
    const checked = typeCheck(checkout);
    expect(checked.output).toBe("");
    expect(checked.code).toBe(0);
  });

  test("tsc passes a capability importing text, a .txt by its name and a .md with { type: \"text\" }, as a string (tester, session 33)", async () => {
    const checkout = await initialized();
    writeFileSync(join(checkout, "capabilities", "prompt.txt"), "Say hello.\n");
    writeFileSync(join(checkout, "capabilities", "tmpl.md"), "# Title\n");
    writeFileSync(
      join(checkout, "capabilities", "team.prompt.ts"),
      `import { capability } from "docket";
import * as v from "valibot";
import prompt from "./prompt.txt";
import tmpl from "./tmpl.md" with { type: "text" };

export default capability({
  id: "team.prompt",
  title: "Prompt",
  description: "Returns its texts.",
  effect: "read",
  input: v.object({}),
  output: v.object({ length: v.number() }),
  handler: () => ({ length: prompt.length + tmpl.trim().length }),
});
`,
    );
    expect(typeCheck(checkout)).toEqual({ code: 0, output: "" });
    const ran = await docket(binary, ["run", "team.prompt"], { cwd: checkout });
    expect(ran.stdout).toContain('"length": 18');
  });

  test("tsc fails on a file that reads a field its input schema lacks, naming the file and line", async () => {
    const checkout = await initialized();
    writeFileSync(join(checkout, "capabilities", "team.count.ts"), BAD_FIELD);
    const checked = typeCheck(checkout);
    expect(checked.code).not.toBe(0);
    expect(checked.output).toContain("capabilities/team.count.ts(13,27): error TS2339: Property 'limit' does not exist on type '{ path: string; }'.");
    // Only that file is wrong: the first capability still checks.
    expect(checked.output).not.toContain("hello.greet.ts");
  });

  test("tsc fails on a handler whose return does not match the output schema, or a ctx member that does not exist", async () => {
    const checkout = await initialized();
    const source = BAD_FIELD.replace("{ files: input.limit }", '{ file: input.path.length }').replace("ctx.progress.log(input.path)", 'ctx.progress.stepp("a", "b")');
    writeFileSync(join(checkout, "capabilities", "team.count.ts"), source);
    const checked = typeCheck(checkout);
    expect(checked.output).toContain("capabilities/team.count.ts(12,18): error TS2551: Property 'stepp' does not exist on type 'ProgressReporter'. Did you mean 'step'?");
    expect(checked.output).toContain("capabilities/team.count.ts(11,3): error TS2322: Type '(input: { path: string; }, ctx: CapabilityContext) => { file: number; }' is not assignable");
  });

  test("tsc refuses a type re-exported without `export type`, as docket's loader does; with `export type` both accept it (tester, session 34)", async () => {
    const checkout = await initialized();
    writeFiles(checkout, {
      "capabilities/_types.ts": "export interface Row { name: string }\n",
      "capabilities/_reexport.ts": 'import { Row } from "./_types.ts";\nexport { Row };\nexport function mk(name: string): Row {\n  return { name };\n}\n',
      "capabilities/team.rows.ts": `import { capability } from "docket";
import * as v from "valibot";
import { mk, type Row } from "./_reexport.ts";

export default capability({
  id: "team.rows",
  title: "Rows",
  description: "Makes a row through a module that re-exports its type.",
  effect: "read",
  input: v.object({}),
  output: v.object({ name: v.string() }),
  handler(): Row {
    return mk("a");
  },
});
`,
    });
    const refused = await docket(binary, ["run", "team.rows"], { cwd: checkout });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("Row");
    const checked = typeCheck(checkout);
    expect(checked.code).not.toBe(0);
    expect(checked.output).toContain("capabilities/_reexport.ts(2,10): error TS1205");

    writeFileSync(join(checkout, "capabilities", "_reexport.ts"), 'import type { Row } from "./_types.ts";\nexport type { Row };\nexport function mk(name: string): Row {\n  return { name };\n}\n');
    expect(typeCheck(checkout)).toEqual({ code: 0, output: "" });
    const ran = await docket(binary, ["run", "team.rows"], { cwd: checkout });
    expect(ran.stderr).toContain("✔ succeeded");
    expect(ran.code).toBe(0);
  });

  test("docket init in a checkout where .docket is a file says what it could not write, exit 1; other commands only warn", async () => {
    const checkout = tempCheckout();
    writeFileSync(join(checkout, ".docket"), "not a folder\n");
    const init = await docket(binary, ["init"], { cwd: checkout });
    expect(init.code).toBe(1);
    expect(init.stderr).toContain(`Cannot set up ${checkout} for capability files: ${join(checkout, ".docket")} is a file, not a folder`);
    expect(init.stderr).toContain("Move the file away and run again");
    expect(init.stderr).not.toContain("unexpected error");
    // Refused before anything was made: no checkout half set up.
    expect(existsSync(join(checkout, "capabilities"))).toBe(false);
    // A clone whose capabilities/tsconfig.json is committed: the refresh every command does only warns.
    writeFiles(checkout, { "capabilities/tsconfig.json": "{}\n" });
    const listed = await docket(binary, ["capabilities", "list"], { cwd: checkout });
    expect(listed.code).toBe(0);
    expect(listed.stderr).toContain("docket: Cannot refresh the editor types");
  });

  test("a .docket committed as a symbolic link (.docket -> ..) is refused by every command: nothing is written, narrowed or removed outside the checkout", async () => {
    // The clone is the checkout; the folder holding it is the user's, outside it.
    const checkout = tempCheckout();
    const parent = join(checkout, "..");
    expect((await docket(binary, ["init"], { cwd: checkout })).code).toBe(0);
    rmSync(join(checkout, ".docket"), { recursive: true });
    // The parent holds a folder named types/ (a user's work) and is open to its group.
    const outside = join(parent, `outside-${checkout.split("-").at(-1)}`);
    mkdirSync(join(outside, "types", "mywork"), { recursive: true });
    writeFileSync(join(outside, "types", "mywork", "thesis.tex"), "keep me\n");
    chmodSync(outside, 0o755);
    symlinkSync(outside, join(checkout, ".docket"));
    const before = readdirSync(outside).sort();

    const listed = await docket(binary, ["capabilities", "list"], { cwd: checkout });
    expect(listed.code).toBe(0);
    expect(listed.stderr).toContain(`${join(checkout, ".docket")} is a symbolic link (to ${outside}), not a folder`);
    const ran = await docket(binary, ["run", "hello.greet", "--input", '{"name":"x"}'], { cwd: checkout });
    expect(ran.code).toBe(0);
    const types = await docket(binary, ["types"], { cwd: checkout });
    expect(types.code).toBe(1);
    expect(types.stderr).toContain("Remove the link");
    const served = await docket(binary, ["serve", "--port", "0"], { cwd: checkout });
    expect(served.code).toBe(2);
    expect(served.stderr).toContain("Cannot serve:");
    expect(served.stderr).toContain("is a symbolic link");
    expect(served.stderr).not.toContain("unexpected error");

    try {
      expect(readFileSync(join(outside, "types", "mywork", "thesis.tex"), "utf8")).toBe("keep me\n");
      expect(readdirSync(outside).sort()).toEqual(before);
      expect(statSync(outside).mode & 0o777).toBe(0o755);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test("a capabilities/ that links to another folder gets aliases and types that resolve from both places: docket runs a file importing @/… and tsc checks it through the link and where it is (authoring tester, session 41)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "tsconfig.json": JSON.stringify({ compilerOptions: { paths: { "@/*": ["./src/*"] } }, exclude: ["capabilities", "real"] }),
      "src/util.ts": 'export const fmt = (name: string): string => `<${name}>`;\n',
    });
    mkdirSync(join(checkout, "real", "caps"), { recursive: true });
    symlinkSync("real/caps", join(checkout, "capabilities"));
    expect((await docket(binary, ["init"], { cwd: checkout })).code).toBe(0);
    const paths = JSON.parse(readFileSync(join(checkout, "real", "caps", "tsconfig.json"), "utf8")).compilerOptions.paths;
    expect(paths["@/*"]).toEqual(["../src/*", "../../src/*"]);
    expect(paths.docket).toEqual(["../.docket/types/docket/public.d.ts", "../../.docket/types/docket/public.d.ts"]);
    writeFiles(checkout, {
      "real/caps/al.sym.ts": `import { capability } from "docket";
import * as v from "valibot";
import { fmt } from "@/util";
export default capability({ id: "al.sym", title: "Alias", description: "Imports a root alias.", effect: "read", input: v.object({}), output: v.object({ s: v.string() }), async handler() { return { s: fmt("x") }; } });
`,
    });
    const ran = await docket(binary, ["run", "al.sym", "--format", "json"], { cwd: checkout });
    expect(JSON.parse(ran.stdout).output).toEqual({ s: "<x>" });
    expect(ran.code).toBe(0);
    expect(typeCheck(checkout)).toEqual({ code: 0, output: "" });
    const real = Bun.spawnSync([TSC, "--noEmit", "-p", "real/caps"], { cwd: checkout, stdout: "pipe", stderr: "pipe" });
    expect({ code: real.exitCode, output: real.stdout.toString() }).toEqual({ code: 0, output: "" });
  });

  test("every docket command restores types that are missing, emptied or from another docket; init keeps what exists", async () => {
    const checkout = await initialized();
    const types = join(checkout, ".docket", "types");
    const stamp = readFileSync(join(types, "VERSION"), "utf8");
    expect(stamp).toMatch(/^docket \d+\.\d+\.\d+\S* [0-9a-f]{16}\n(\d+ \S+\.d\.ts\n)+$/);
    expect(stamp).toContain(`\n${statSync(join(types, "docket", "public.d.ts")).size} docket/public.d.ts\n`);

    rmSync(join(types, "valibot"), { recursive: true });
    writeFileSync(join(types, "VERSION"), "docket 0.0.1 0123456789abcdef\n");
    expect((await docket(binary, ["capabilities", "list"], { cwd: checkout })).code).toBe(0);
    expect(readFileSync(join(types, "VERSION"), "utf8")).toBe(stamp);
    expect(existsSync(join(types, "valibot", "index.d.ts"))).toBe(true);

    // One file deleted by hand, the stamp still current: missing all the same.
    rmSync(join(types, "valibot", "index.d.ts"));
    expect((await docket(binary, ["capabilities", "list"], { cwd: checkout })).code).toBe(0);
    expect(existsSync(join(types, "valibot", "index.d.ts"))).toBe(true);

    // One file emptied (a clean-up tool, a write cut short by a full disk): tsc would say "is not a module" in every file (tester, session 34).
    writeFileSync(join(types, "docket", "public.d.ts"), "");
    expect((await docket(binary, ["capabilities", "list"], { cwd: checkout })).code).toBe(0);
    expect(statSync(join(types, "docket", "public.d.ts")).size).toBeGreaterThan(0);
    expect(typeCheck(checkout).code).toBe(0);

    // A teammate's clone: capabilities/ committed, .docket/ not. --version and --help write nothing
    // (install.sh runs --version wherever it is run), nor does a mistyped command; a command that works does.
    rmSync(join(checkout, ".docket"), { recursive: true });
    for (const asks of [["--version"], ["--help"], ["run", "--help"], ["help"], ["help", "run"]]) expect((await docket(binary, asks, { cwd: checkout })).code).toBe(0);
    expect((await docket(binary, ["serv"], { cwd: checkout })).code).toBe(2);
    expect(existsSync(join(checkout, ".docket"))).toBe(false);
    expect((await docket(binary, ["run", "hello.greet"], { cwd: checkout })).code).toBe(0);
    expect(typeCheck(checkout).code).toBe(0);

    writeFileSync(join(checkout, "capabilities", "tsconfig.json"), '{ "compilerOptions": { "strict": true } }\n');
    const again = await docket(binary, ["init"], { cwd: checkout });
    expect(again.stdout).toContain("Kept capabilities/tsconfig.json");
    expect(readFileSync(join(checkout, "capabilities", "tsconfig.json"), "utf8")).toBe('{ "compilerOptions": { "strict": true } }\n');
  });
});
