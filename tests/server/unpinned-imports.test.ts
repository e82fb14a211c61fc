import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";

// Everything a capability runs is the text docket read (docs/containment.md, "Loading"), against a
// running server: a local module its code reaches in a way docket cannot pin is refused by name,
// on the main thread and in the workers alike, rather than run from disk beside the pinned texts.

let root: string;
let server: DocketServer;

/** Resolves once `check` is true, asking again every few ms; fails after a bound far above the debounce. */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await Bun.sleep(20);
  }
  throw new Error(`gave up waiting for ${what}`);
}

const api = async (path: string, init?: RequestInit) => fetch(`${server.url}/api/v1/${path}`, { ...init, headers: { "Content-Type": "application/json" } });
const list = async () => (await (await api("capabilities/list")).json()) as { capabilities: Array<{ id: string; title: string; version: string }>; load_errors: Array<{ file: string; reason: string }> };
const start = async (capability: string, input: unknown = {}) => ((await (await api("executions/start", { method: "POST", body: JSON.stringify({ capability, input }) })).json()) as { execution: { id: string } }).execution.id;
const get = async (id: string) => (await (await api(`executions/get?id=${id}`)).json()) as { state: string; output?: Record<string, unknown>; failure?: { message: string }; capability_version: string };
const finished = async (id: string) => {
  await until(`execution ${id} to end`, async () => ["succeeded", "failed"].includes((await get(id)).state));
  return get(id);
};

/** A capability file of `id` whose handler answers `handler`'s value, with `top` before it. */
function capabilityFile(id: string, handler: string, top = ""): string {
  return `import { capability } from "docket";\nimport * as v from "valibot";\n${top}\nexport default capability({ id: ${JSON.stringify(id)}, title: ${JSON.stringify(id)}, description: "A test capability.", effect: "read", input: v.object({ n: v.optional(v.string(), "_m1") }), output: v.record(v.string(), v.unknown()), handler: ${handler} });\n`;
}

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-unpinned-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  mkdirSync(join(root, "lib"));
  mkdirSync(join(root, "config"));
  writeFileSync(join(root, "config", "settings.json"), '{"limit":1}');
  // An installed package, and files of the project a name starting with it climbs out to; a file
  // of code under a data name, and one with no extension.
  mkdirSync(join(root, "node_modules", "pkgx"), { recursive: true });
  writeFileSync(join(root, "node_modules", "pkgx", "package.json"), '{"name":"pkgx","type":"module","main":"index.js"}');
  writeFileSync(join(root, "node_modules", "pkgx", "index.js"), 'export const P = "pkg";\n');
  mkdirSync(join(root, "climb"));
  writeFileSync(join(root, "climb", "_a.ts"), 'export const r = "climbed-disk";\n');
  writeFileSync(join(root, "climb", "evil.txt"), 'export const r = "txt-ran";\n');
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "unpinned-checkout", type: "module", imports: { "#cfg": "./config/settings.json" } }));
  server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({ overrides: { load_timeout_ms: 2000 } }),
    capabilityDirs: [],
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: () => undefined,
    boot: async (options) => await bootPlane(options),
    watchOptions: { debounceMs: 30 },
  });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("docket serve: local modules docket cannot pin", () => {
  test("a local module a handler imports by a name computed at run time is refused by name, in an execution and in a direct call; it never runs from disk (tester T2)", async () => {
    writeFileSync(join(root, "lib", "_m1.ts"), 'export const V = "m1-disk";\n');
    writeFileSync(join(root, "capabilities", "team.rules.ts"), capabilityFile("team.rules", "async (input, ctx) => ({ first: (await import(`${ctx.root}/lib/${input.n}.ts`)).V })"));
    await until("team.rules", async () => (await list()).capabilities.some((c) => c.id === "team.rules"));
    const failed = await finished(await start("team.rules"));
    expect(failed.state).toBe("failed");
    expect(failed.failure).toMatchObject({ error_code: "not_runnable", context: { reason: "unpinned_import", file: join(root, "lib", "_m1.ts") } });
    expect(failed.failure!.message).toContain(`docket refused to load ${join(root, "lib", "_m1.ts")} from disk: ${join(root, "capabilities", "team.rules.ts")} loads it by a name docket could not read`);
    const direct = await (await api("team/rules", { method: "POST", body: "{}" })).text();
    expect(direct).toContain(`docket refused to load ${join(root, "lib", "_m1.ts")} from disk`);
    expect(direct).not.toContain("m1-disk");
  });

  test("a name starting with an installed package that climbs out of its folder (pkgx/../../climb/_a.ts) is refused by name; the package itself still loads (tester T5)", async () => {
    writeFileSync(join(root, "capabilities", "team.climb.ts"), capabilityFile("team.climb", 'async () => ({ p: (await import(["pkgx"].join(""))).P, r: (await import(["pkgx", "..", "..", "climb", "_a.ts"].join("/"))).r })'));
    await until("team.climb", async () => (await list()).capabilities.some((c) => c.id === "team.climb"));
    const failed = await finished(await start("team.climb"));
    expect(failed.failure).toMatchObject({ error_code: "not_runnable", context: { reason: "unpinned_import", file: join(root, "climb", "_a.ts") } });
    expect(JSON.stringify(failed)).not.toContain("climbed-disk");
  });

  test("code under a data name run as a script (import(…/evil.txt, { with: { type: \"js\" } })) is refused by name; JSON by a computed path still loads (tester T5)", async () => {
    writeFileSync(join(root, "capabilities", "team.txtjs.ts"), capabilityFile("team.txtjs", 'async (input, ctx) => ({ r: (await import(ctx.root + "/climb/evil.txt", { with: { type: "js" } } as never)).r })'));
    writeFileSync(join(root, "capabilities", "team.jsonread.ts"), capabilityFile("team.jsonread", 'async (input, ctx) => ({ limit: (await import(ctx.root + "/config/" + "settings.json")).default.limit })'));
    await until("team.txtjs and team.jsonread", async () => (await list()).capabilities.filter((c) => c.id === "team.txtjs" || c.id === "team.jsonread").length === 2);
    const failed = await finished(await start("team.txtjs"));
    expect(failed.failure).toMatchObject({ error_code: "not_runnable", context: { reason: "unpinned_import", file: join(root, "climb", "evil.txt") } });
    expect(JSON.stringify(failed)).not.toContain("txt-ran");
    const json = await finished(await start("team.jsonread"));
    expect(json.state).toBe("succeeded");
    expect(typeof json.output!.limit).toBe("number");
  });

  test("a top level that loads a local module by a name docket cannot read is a load error naming it: the trial refuses it (tester T2)", async () => {
    // A folder of its own: the runtime keeps a folder's listing from its first look.
    mkdirSync(join(root, "top"));
    writeFileSync(join(root, "top", "_c.ts"), 'export const C = "c-disk";\n');
    const file = join(root, "capabilities", "team.toplevel.ts");
    writeFileSync(file, capabilityFile("team.toplevel", "() => ({ c: C })", 'const name = [import.meta.dir, "..", "top", "_c.ts"].join("/");\nconst { C } = await import(name);'));
    await until("team.toplevel's load error", async () => (await list()).load_errors.some((e) => e.file === file));
    expect((await list()).load_errors.find((e) => e.file === file)!.reason).toContain(`docket refused to load ${join(root, "top", "_c.ts")} from disk`);
    expect((await list()).capabilities.some((c) => c.id === "team.toplevel")).toBe(false);
  });

  test("a JSON file reached through a package.json imports alias is part of the capability: its edit is a new version, and one execution sees one value of it (tester T2)", async () => {
    const file = join(root, "capabilities", "team.aliased.ts");
    writeFileSync(
      file,
      'import { capability } from "docket";\nimport * as v from "valibot";\nimport settings from "#cfg";\nexport default capability({ id: "team.aliased", title: "Aliased", description: "Reads its settings twice.", effect: "read", input: v.object({ limit: v.optional(v.number(), settings.limit) }), output: v.object({ defaultApplied: v.number(), handlerSees: v.number() }), handler: (input) => ({ defaultApplied: input.limit, handlerSees: settings.limit }) });\n',
    );
    const aliased = () => list().then((l) => l.capabilities.find((c) => c.id === "team.aliased"));
    await until("team.aliased", async () => (await aliased()) !== undefined);
    const first = (await aliased())!.version;
    expect(await (await api("team/aliased", { method: "POST", body: "{}" })).json()).toEqual({ defaultApplied: 1, handlerSees: 1 });
    writeFileSync(join(root, "config", "settings.json"), '{"limit":2}');
    await until("the settings' edit reloaded", async () => (await aliased())!.version !== first);
    const second = (await aliased())!.version;
    const done = await finished(await start("team.aliased"));
    expect(done).toMatchObject({ state: "succeeded", output: { defaultApplied: 2, handlerSees: 2 }, capability_version: second });
  });

  test("a capability whose helper has a twin differing only by letter case is a load error naming both: the runtime would run one in place of the other (tester T2)", async () => {
    mkdirSync(join(root, "twins"));
    writeFileSync(join(root, "twins", "_case.ts"), 'export const C = "lower";\n');
    writeFileSync(join(root, "twins", "_Case.ts"), 'export const C = "upper";\n');
    const file = join(root, "capabilities", "team.cased.ts");
    writeFileSync(file, capabilityFile("team.cased", "() => ({ c: C })", 'import { C } from "../twins/_case.ts";'));
    await until("team.cased's load error", async () => (await list()).load_errors.some((e) => e.file === file));
    const reason = (await list()).load_errors.find((e) => e.file === file)!.reason;
    expect(reason).toContain("differ only by letter case");
    expect(reason).toContain(join(root, "twins", "_case.ts"));
    expect(reason).toContain(join(root, "twins", "_Case.ts"));
    expect((await list()).capabilities.some((c) => c.id === "team.cased")).toBe(false);
  });

  test("a helper that is a symbolic link, re-pointed while serving, is a new version serving the new target at once, in an execution and in a direct call (tester T2)", async () => {
    mkdirSync(join(root, "targets"));
    writeFileSync(join(root, "targets", "a.ts"), 'export const S = "a";\n');
    writeFileSync(join(root, "targets", "b.ts"), 'export const S = "b";\n');
    const link = join(root, "capabilities", "_s.ts");
    symlinkSync("../targets/a.ts", link);
    writeFileSync(join(root, "capabilities", "team.linkedhelper.ts"), capabilityFile("team.linkedhelper", "() => ({ s: S })", 'import { S } from "./_s.ts";'));
    const linked = () => list().then((l) => l.capabilities.find((c) => c.id === "team.linkedhelper"));
    await until("team.linkedhelper", async () => (await linked()) !== undefined);
    const first = (await linked())!.version;
    expect(await (await api("team/linkedhelper", { method: "POST", body: "{}" })).json()).toEqual({ s: "a" });
    // As `ln -sfn b.ts _s.ts` does: a new link renamed over the old one.
    symlinkSync("../targets/b.ts", `${link}.new`);
    renameSync(`${link}.new`, link);
    await until("the re-pointed link reloaded", async () => (await linked())!.version !== first);
    expect(await (await api("team/linkedhelper", { method: "POST", body: "{}" })).json()).toEqual({ s: "b" });
    const done = await finished(await start("team.linkedhelper"));
    expect(done).toMatchObject({ state: "succeeded", output: { s: "b" }, capability_version: (await linked())!.version });
  });

  test("a capability file that is a symbolic link, re-pointed while serving, then pointed back, then made a file, serves each new text at once, in an execution and in a direct call (tester, session 34)", async () => {
    mkdirSync(join(root, "versions"));
    for (const tag of ["a", "b"]) writeFileSync(join(root, "versions", `${tag}.ts`), capabilityFile("team.linkedcap", `() => ({ tag: ${JSON.stringify(tag)} })`));
    const link = join(root, "capabilities", "team.linkedcap.ts");
    symlinkSync("../versions/a.ts", link);
    const linked = () => list().then((l) => l.capabilities.find((c) => c.id === "team.linkedcap"));
    await until("team.linkedcap", async () => (await linked()) !== undefined);
    const call = async () => (await api("team/linkedcap", { method: "POST", body: "{}" })).json();
    expect(await call()).toEqual({ tag: "a" });
    // As `ln -sfn`: a new link renamed over the old one; then back; then a file of b's text with one more line.
    const steps: Array<[() => void, string]> = [
      [() => (symlinkSync("../versions/b.ts", `${link}.new`), renameSync(`${link}.new`, link)), "b"],
      [() => (symlinkSync("../versions/a.ts", `${link}.new`), renameSync(`${link}.new`, link)), "a"],
      [() => (writeFileSync(`${link}.new`, `${capabilityFile("team.linkedcap", '() => ({ tag: "file" })')}// a file now\n`), renameSync(`${link}.new`, link)), "file"],
    ];
    for (const [change, tag] of steps) {
      const before = (await linked())?.version;
      change();
      await until(`the capability serving ${tag}`, async () => {
        const now = await linked();
        return now !== undefined && now.version !== before;
      });
      expect((await list()).load_errors.filter((error) => error.file === link)).toEqual([]);
      expect(await call()).toEqual({ tag });
      expect(await finished(await start("team.linkedcap"))).toMatchObject({ state: "succeeded", output: { tag } });
    }
  });
});
