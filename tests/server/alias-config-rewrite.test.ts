import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCheckout } from "./_support/servers.ts";

// A config rewritten while serving that leaves a name's mapping as it was (docs/authoring.md,
// "Live reload"): `npm install` rewrites package.json, editor-types.md has `"types"` added to
// capabilities/tsconfig.json. A worker that had run other capabilities before, and imports the
// workspace package or the alias only after the write, serves the capability as loaded — it
// refused it as "changed after this process first read it", and every call failed as
// capability_changed (hostile tester, session 38).

let root: string;
let server: DocketServer;

const capabilityFile = (id: string, imports: string, output: string) =>
  `import { capability } from "docket";\nimport * as v from "valibot";\n${imports}\nexport default capability({ id: ${JSON.stringify(id)}, title: ${JSON.stringify(id)}, description: "Answers through what it imports.", effect: "read", input: v.object({}), output: v.object({ said: v.string() }), handler: () => ({ said: ${output} }) });\n`;

/** The checkout's package.json "imports": `#h/*` to lib/, and a browser condition elsewhere. */
const HASH_IMPORTS = (browser: string) => ({ "#h/*": { types: browser, browser, default: "./lib/*" } });

/** The load error of `file` once the server lists one (10 s at most), or "". */
const loadErrorOf = async (file: string, at: DocketServer = server): Promise<string> => {
  for (const end = Date.now() + 10_000; Date.now() < end; await Bun.sleep(30)) {
    const listed = (await (await fetch(`${at.url}/api/v1/capabilities/list`)).json()) as { load_errors: Array<{ file: string; reason: string }> };
    const reason = listed.load_errors.find((e) => e.file === file)?.reason;
    if (reason !== undefined) return reason;
  }
  return "";
};

const call = async (id: string) => {
  const response = await fetch(`${server.url}/api/v1/${id.replace(".", "/")}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  return { status: response.status, body: (await response.json()) as { said?: string; error_code?: string; message?: string } };
};

/** Asks `done` again (every 30 ms) until it holds, 10 s at most: the reload a save starts, seen through the API. */
const until = async (what: string, done: () => Promise<boolean>) => {
  for (const end = Date.now() + 10_000; Date.now() < end; await Bun.sleep(30)) if (await done()) return;
  throw new Error(`gave up waiting for ${what}`);
};

const loadErrorsNow = async () => ((await (await fetch(`${server.url}/api/v1/capabilities/list`)).json()) as { load_errors: unknown[] }).load_errors;

/** Six calls of each at once, three rounds: every worker answers the same, none refuses the capability as changed. */
const sameEverywhere = async (ids: string[], body: unknown) => {
  for (let round = 0; round < 3; round++) {
    const answers = await Promise.all(ids.flatMap((id) => Array.from({ length: 6 }, () => call(id))));
    expect(answers).toEqual(answers.map(() => ({ status: 200, body })) as never);
  }
};

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-alias-rewrite-")));
  mkdirSync(join(root, ".git"));
  // An npm workspace: its package linked into node_modules, resolving to its own folder.
  // Its "imports" with a condition the runtime never takes ("browser").
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "team", private: true, workspaces: ["packages/*"], imports: HASH_IMPORTS("./nowhere/*") }));
  mkdirSync(join(root, "packages", "util", "src"), { recursive: true });
  writeFileSync(join(root, "packages", "util", "package.json"), JSON.stringify({ name: "@team/util", version: "1.0.0", type: "module", main: "./src/index.ts" }));
  writeFileSync(join(root, "packages", "util", "src", "index.ts"), "export const shout = (s: string) => s.toUpperCase();\n");
  mkdirSync(join(root, "node_modules", "@team"), { recursive: true });
  symlinkSync("../../packages/util", join(root, "node_modules", "@team", "util"));
  // A tsconfig `paths` alias of the capabilities' folder, as docket init writes one.
  mkdirSync(join(root, "capabilities"));
  mkdirSync(join(root, "lib"));
  writeFileSync(join(root, "lib", "word.ts"), 'export const WORD = "aliased";\n');
  // Through an `extends` base, as an Nx or Turborepo checkout has them.
  writeFileSync(join(root, "capabilities", "tsconfig.base.json"), JSON.stringify({ compilerOptions: { paths: { "@lib/*": ["../lib/*"], "@val/*": ["../val1/*"] } } }));
  writeFileSync(join(root, "capabilities", "tsconfig.json"), JSON.stringify({ extends: "./tsconfig.base.json" }));
  mkdirSync(join(root, "val1"));
  mkdirSync(join(root, "val2"));
  writeFileSync(join(root, "val1", "v.ts"), 'export const V = "v1";\n');
  writeFileSync(join(root, "val2", "v.ts"), 'export const V = "v2";\n');
  writeFileSync(join(root, "capabilities", "team.val.ts"), capabilityFile("team.val", 'import { V } from "@val/v.ts";', "V"));
  writeFileSync(join(root, "capabilities", "team.hash.ts"), capabilityFile("team.hash", 'import { WORD } from "#h/word.ts";', "WORD"));
  // Through the same alias as team.val, written with .js for the .ts file (TypeScript's way).
  writeFileSync(join(root, "capabilities", "team.valjs.ts"), capabilityFile("team.valjs", 'import { V } from "@val/v.js";', "V"));
  // A helper in a folder of its own with its own tsconfig.json, importing through no alias yet.
  mkdirSync(join(root, "tools", "la"), { recursive: true });
  mkdirSync(join(root, "tools", "lb"), { recursive: true });
  writeFileSync(join(root, "tools", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { "@l/*": ["./la/*"] } } }));
  writeFileSync(join(root, "tools", "la", "v.ts"), 'export const L = "la";\n');
  writeFileSync(join(root, "tools", "lb", "v.ts"), 'export const L = "lb";\n');
  writeFileSync(join(root, "tools", "_h.ts"), 'export const H = "plain";\n');
  writeFileSync(join(root, "capabilities", "team.helper.ts"), capabilityFile("team.helper", 'import { H } from "../tools/_h.ts";', "H"));
  // A name looked up under a tsconfig.json's baseUrl alone, no paths entry.
  mkdirSync(join(root, "based", "src"), { recursive: true });
  mkdirSync(join(root, "based", "alt", "src"), { recursive: true });
  mkdirSync(join(root, "based", "caps"), { recursive: true });
  writeFileSync(join(root, "based", "src", "b.ts"), 'export const B = "src";\n');
  writeFileSync(join(root, "based", "alt", "src", "b.ts"), 'export const B = "alt";\n');
  writeFileSync(join(root, "based", "caps", "tsconfig.json"), JSON.stringify({ compilerOptions: { baseUrl: ".." } }));
  writeFileSync(join(root, "based", "caps", "_b.ts"), 'import { B } from "src/b.ts";\nexport const BASED = B;\n');
  writeFileSync(join(root, "capabilities", "team.based.ts"), capabilityFile("team.based", 'import { BASED } from "../based/caps/_b.ts";', "BASED"));
  writeFileSync(join(root, "capabilities", "team.plain.ts"), capabilityFile("team.plain", "", '"plain"'));
  writeFileSync(join(root, "capabilities", "team.workspace.ts"), capabilityFile("team.workspace", 'import { shout } from "@team/util";', 'shout("hi")'));
  writeFileSync(join(root, "capabilities", "team.alias.ts"), capabilityFile("team.alias", 'import { WORD } from "@lib/word.ts";', "WORD"));
  server = await serveCheckout(root, { watchOptions: { debounceMs: 30 } });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("a config rewritten while serving, its mappings unchanged", () => {
  test("a workspace package and a tsconfig alias imported first after package.json and tsconfig.json were rewritten still run", async () => {
    // Every worker reads the capabilities' folder, and notes its configs, before the writes.
    const warm = await Promise.all(Array.from({ length: 6 }, () => call("team.plain")));
    expect(warm.map((answer) => answer.body.said)).toEqual(Array(6).fill("plain"));
    // What `npm install ms` does to the root manifest, and what editor-types.md has added to the tsconfig.
    await Bun.sleep(20);
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "team", private: true, workspaces: ["packages/*"], imports: HASH_IMPORTS("./nowhere/*"), dependencies: { ms: "^2.1.3" } }));
    writeFileSync(join(root, "capabilities", "tsconfig.json"), JSON.stringify({ extends: "./tsconfig.base.json", compilerOptions: { types: ["node"] } }));
    // Once the reload the writes cause has settled: the capabilities are still listed, unchanged.
    await Bun.sleep(300);
    const listed = (await (await fetch(`${server.url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }>; load_errors: unknown[] };
    expect(listed.load_errors).toEqual([]);
    expect(listed.capabilities.map((c) => c.id)).toEqual(expect.arrayContaining(["team.workspace", "team.alias"]));
    for (let round = 0; round < 3; round++) {
      const [workspace, alias] = await Promise.all([call("team.workspace"), call("team.alias")]);
      expect(workspace).toEqual({ status: 200, body: { said: "HI" } });
      expect(alias).toEqual({ status: 200, body: { said: "aliased" } });
    }
  });

  test("an alias that leads elsewhere after its extends base was edited is served where it leads now once its importer is read again — on every thread, never the old target, never a call refused as changed (checking tester, session 38; live since session 39)", async () => {
    expect((await call("team.val")).body).toEqual({ said: "v1" });
    writeFileSync(join(root, "capabilities", "tsconfig.base.json"), JSON.stringify({ compilerOptions: { paths: { "@lib/*": ["../lib/*"], "@val/*": ["../val2/*"] } } }));
    await until("team.val served through the new mapping", async () => (await call("team.val")).body.said === "v2");
    // Every worker, whichever read the configs first: six at once, three rounds.
    await sameEverywhere(["team.val", "team.valjs"], { said: "v2" });
    expect(await loadErrorsNow()).toEqual([]);
    // The alias that still leads where it led keeps working.
    expect(await call("team.alias")).toEqual({ status: 200, body: { said: "aliased" } });
  });

  test("a condition of package.json \"imports\" the runtime never takes (types, browser), changed, moves nothing: no load error, the capability runs (second and third checking testers)", async () => {
    expect((await call("team.hash")).body).toEqual({ said: "aliased" });
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "team", private: true, workspaces: ["packages/*"], imports: HASH_IMPORTS("./nowhere2/*"), dependencies: { ms: "^2.1.3" } }));
    await Bun.sleep(20);
    writeFileSync(join(root, "capabilities", "team.hash.ts"), `${capabilityFile("team.hash", 'import { WORD } from "#h/word.ts";', "WORD")}// saved\n`);
    await Bun.sleep(400);
    const listed = (await (await fetch(`${server.url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }>; load_errors: Array<{ file: string }> };
    expect(listed.load_errors.filter((e) => e.file.endsWith("team.hash.ts"))).toEqual([]);
    expect(await call("team.hash")).toEqual({ status: 200, body: { said: "aliased" } });
  });

  test("a helper folder's own tsconfig.json changed before the helper first imports through it: the helper, saved, is served through the new mapping, never the old target (second checking tester; live since session 39)", async () => {
    expect((await call("team.helper")).body).toEqual({ said: "plain" });
    writeFileSync(join(root, "tools", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { "@l/*": ["./lb/*"] } } }));
    await Bun.sleep(20);
    writeFileSync(join(root, "tools", "_h.ts"), 'import { L } from "@l/v.ts";\nexport const H = "aliased:" + L;\n');
    await until("team.helper served through the new mapping", async () => (await call("team.helper")).body.said === "aliased:lb");
    await sameEverywhere(["team.helper"], { said: "aliased:lb" });
  });

  test("a name looked up under baseUrl alone that leads elsewhere once baseUrl changed is served from there once saved, never the old target (second checking tester; live since session 39)", async () => {
    expect((await call("team.based")).body).toEqual({ said: "src" });
    writeFileSync(join(root, "based", "caps", "tsconfig.json"), JSON.stringify({ compilerOptions: { baseUrl: "../alt" } }));
    await Bun.sleep(20);
    writeFileSync(join(root, "based", "caps", "_b.ts"), 'import { B } from "src/b.ts";\nexport const BASED = B; // saved\n');
    await until("team.based served from the new baseUrl", async () => (await call("team.based")).body.said === "alt");
    await sameEverywhere(["team.based"], { said: "alt" });
  });

  test("an alias that now leads to no file is a load error saying to restart (a new process may find a package of that name), never the old target served", async () => {
    writeFileSync(join(root, "tools", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { "@l/*": ["./lc/*"] } } }));
    await Bun.sleep(20);
    writeFileSync(join(root, "tools", "_h.ts"), 'import { L } from "@l/v.ts";\nexport const H = "aliased:" + L; // saved\n');
    const reason = await loadErrorOf(join(root, "capabilities", "team.helper.ts"));
    expect(reason).toContain('cannot resolve import "@l/v.ts": tools/tsconfig.json was created, changed or removed after this process first read it (it no longer maps it to a file)');
    expect(reason).toContain("Restart `docket serve`");
    expect((await call("team.helper")).status).toBe(404);
  });
});

describe("a config outside the watched folders that an alias's tsconfig.json extends", () => {
  test("edited, it reloads what imports through the alias, with no other save: a root tsconfig.base.json (Nx, Turborepo)", async () => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), "docket-alias-base-")));
    mkdirSync(join(base, ".git"));
    mkdirSync(join(base, "capabilities"));
    mkdirSync(join(base, "w1"));
    mkdirSync(join(base, "w2"));
    writeFileSync(join(base, "w1", "w.ts"), 'export const W = "w1";\n');
    writeFileSync(join(base, "w2", "w.ts"), 'export const W = "w2";\n');
    writeFileSync(join(base, "tsconfig.base.json"), JSON.stringify({ compilerOptions: { paths: { "@w/*": ["./w1/*"] } } }));
    writeFileSync(join(base, "capabilities", "tsconfig.json"), JSON.stringify({ extends: "../tsconfig.base.json" }));
    writeFileSync(join(base, "capabilities", "team.w.ts"), capabilityFile("team.w", 'import { W } from "@w/w.ts";', "W"));
    const own = await serveCheckout(base, { watchOptions: { debounceMs: 30 } });
    try {
      const said = async () => ((await (await fetch(`${own.url}/api/v1/team/w`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).json()) as { said?: string }).said;
      expect(await said()).toBe("w1");
      writeFileSync(join(base, "tsconfig.base.json"), JSON.stringify({ compilerOptions: { paths: { "@w/*": ["./w2/*"] } } }));
      await until("team.w served through the edited base", async () => (await said()) === "w2");
    } finally {
      await own.stop();
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe("aliases through links, out of node_modules, and configs that are no regular file (third tester, session 39)", () => {
  let own: DocketServer;
  let checkoutDir: string;
  const say = async (id: string) => ((await (await fetch(`${own.url}/api/v1/${id.replace(".", "/")}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).json()) as { said?: string }).said;
  const save = (id: string, imports: string) => writeFileSync(join(checkoutDir, "capabilities", `${id}.ts`), `${capabilityFile(id, imports, "V")}// saved ${Date.now()}\n`);
  const tsconfig = (paths: Record<string, string[]>) => writeFileSync(join(checkoutDir, "capabilities", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths } }));

  beforeAll(async () => {
    checkoutDir = realpathSync(mkdtempSync(join(tmpdir(), "docket-alias-links-")));
    mkdirSync(join(checkoutDir, ".git"));
    mkdirSync(join(checkoutDir, "capabilities"));
    for (const [path, text] of Object.entries({
      "lib/v1/x.ts": 'export const V = "v1";\n',
      "lib/v2/x.ts": 'export const V = "v2";\n',
      "lib/local.ts": 'export const V = "local";\n',
      "lib/fake.ts": 'export const V = "fake";\n',
      "node_modules/vend/x.ts": 'export const V = "vendored";\n',
      "node_modules/ms/package.json": JSON.stringify({ name: "ms", version: "1.0.0", main: "index.js" }),
      "node_modules/ms/index.js": 'export const V = "package";\n',
      "lib/sub/s.ts": 'export const V = "beside a FIFO";\n',
    })) {
      mkdirSync(dirname(join(checkoutDir, path)), { recursive: true });
      writeFileSync(join(checkoutDir, path), text);
    }
    symlinkSync("v1", join(checkoutDir, "lib", "cur"));
    tsconfig({ "@cur/*": ["../lib/cur/*"], "@ui/*": ["../node_modules/vend/*"] });
    save("team.cur", 'import { V } from "@cur/x";');
    save("team.ui", 'import { V } from "@ui/x";');
    save("team.ms", 'import { V } from "ms";');
    own = await serveCheckout(checkoutDir, { watchOptions: { debounceMs: 30 } });
  });

  afterAll(async () => {
    await own?.stop();
    rmSync(checkoutDir, { recursive: true, force: true });
  });

  const sameOnEvery = async (id: string, said: string) => {
    await until(`${id} saying ${said}`, async () => (await say(id)) === said);
    const answers = await Promise.all(Array.from({ length: 8 }, () => say(id)));
    expect(answers).toEqual(Array(8).fill(said));
  };

  test("a folder link an alias leads through, re-pointed (`ln -sfn v2 cur`), serves the new target once its importer is read again — never a load error until restart", async () => {
    expect(await say("team.cur")).toBe("v1");
    symlinkSync("v2", join(checkoutDir, "lib", "cur.new"));
    renameSync(join(checkoutDir, "lib", "cur.new"), join(checkoutDir, "lib", "cur"));
    save("team.cur", 'import { V } from "@cur/x";');
    await sameOnEvery("team.cur", "v2");
  });

  test("an alias moved from a package's file to a project file serves the project file; a paths entry for an installed package's name takes it, as the runtime does", async () => {
    expect(await say("team.ui")).toBe("vendored");
    expect(await say("team.ms")).toBe("package");
    tsconfig({ "@cur/*": ["../lib/cur/*"], "@ui/*": ["../lib/*"], ms: ["../lib/fake.ts"] });
    save("team.ui", 'import { V } from "@ui/local";');
    save("team.ms", 'import { V } from "ms";');
    await sameOnEvery("team.ui", "local");
    await sameOnEvery("team.ms", "fake");
  });

  test("a config saved half-edited (it does not parse) is a load error naming it, saying to correct it — not to restart — and the file loads again once it is corrected", async () => {
    const config = join(checkoutDir, "capabilities", "tsconfig.json");
    const good = JSON.stringify({ compilerOptions: { paths: { "@cur/*": ["../lib/cur/*"], "@ui/*": ["../lib/*"], ms: ["../lib/fake.ts"] } } });
    writeFileSync(config, good.slice(0, -3));
    save("team.cur", 'import { V } from "@cur/x";');
    const reason = await loadErrorOf(join(checkoutDir, "capabilities", "team.cur.ts"), own);
    // Named with its folder (the checkout has a tsconfig.json at its root too), and what the parser said (authoring tester, session 46).
    expect(reason).toContain('cannot resolve import "@cur/x": capabilities/tsconfig.json does not parse as JSON (comments and trailing commas are allowed): JSON Parse error:');
    expect(reason).not.toContain("Restart");
    writeFileSync(config, good);
    save("team.cur", 'import { V } from "@cur/x";');
    await sameOnEvery("team.cur", "v2");
  });

  test("a FIFO named package.json or tsconfig.json in a helper's folder is never read: the server answers, and the capability loads", async () => {
    writeFileSync(join(checkoutDir, "lib", "a.ts"), 'export const V = "a";\n');
    save("team.fifo", 'import { V } from "../lib/a.ts";');
    await sameOnEvery("team.fifo", "a");
    Bun.spawnSync(["mkfifo", join(checkoutDir, "lib", "sub", "package.json")]);
    Bun.spawnSync(["mkfifo", join(checkoutDir, "lib", "sub", "tsconfig.json")]);
    // The helper, served already, now imports from the folder holding them.
    writeFileSync(join(checkoutDir, "lib", "a.ts"), 'export { V } from "./sub/s.ts";\n');
    await sameOnEvery("team.fifo", "beside a FIFO");
    const health = await fetch(`${own.url}/healthz`, { signal: AbortSignal.timeout(2000) });
    expect(health.status).toBe(200);
  });
});
