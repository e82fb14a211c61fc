import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane } from "../../runtime/boot.ts";
import { fileVersion } from "../../runtime/capability/capability-version.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";

// A reload is not held up by one file whose trial load is slow (docs/authoring.md, "Live
// reload"): past the reload's patience that file keeps what was served of it, the other files'
// changes are served, and the file is judged by another reload once its trial's verdict is known.

/** A capability file `team.<name>` answering `answer`, whose top level first runs `top`. */
const capabilityFile = (name: string, answer: string, top = "") =>
  [
    'import { capability } from "docket";',
    'import * as v from "valibot";',
    top,
    `export default capability({ id: "team.${name}", title: ${JSON.stringify(name)}, description: "Answers its version.", effect: "read", input: v.object({}), output: v.object({ answer: v.string() }), handler: () => ({ answer: ${JSON.stringify(answer)} }) });`,
    "",
  ].join("\n");

/** A top level that says it began (a file named `began`), then waits until the file `gate` exists. */
const waitsFor = (began: string, gate: string) =>
  `import { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(began)}, "x");\nwhile (!(await Bun.file(${JSON.stringify(gate)}).exists())) await Bun.sleep(5);`;

let root: string;
let server: DocketServer;
const logLines: string[] = [];

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const began = performance.now();
  while (performance.now() - began < 30_000) {
    if (await check()) return;
    await Bun.sleep(20);
  }
  throw new Error(`gave up waiting for ${what} after ${Math.round(performance.now() - began)} ms`);
}

const api = async (path: string, init?: RequestInit) => fetch(`${server.url}/api/v1/${path}`, { ...init, headers: { "Content-Type": "application/json" } });
const list = async () => (await (await api("capabilities/list")).json()) as { capabilities: Array<{ id: string; version: string }>; load_errors: Array<{ file: string; reason: string }> };
const versionOf = async (id: string) => (await list()).capabilities.find((c) => c.id === id)?.version;
const file = (name: string) => join(root, "capabilities", `team.${name}.ts`);

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-reload-parked-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(file("fast"), capabilityFile("fast", "v1"));
  writeFileSync(file("slow"), capabilityFile("slow", "v1"));
  server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    // Far longer than any wait below: a trial still running is never one that timed out.
    limits: resolveLimits({ overrides: { load_timeout_ms: 60_000 } }),
    capabilityDirs: [],
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: (line) => logLines.push(line),
    boot: (options) => bootPlane({ ...options, trialPatienceMs: 100 }),
    watchOptions: { debounceMs: 30 },
  });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("docket serve live reload with a slow trial load", () => {
  test("a file whose trial load outlasts the reload's patience does not hold up the others: they are served while its old version stays, and it is judged at its verdict without another save", async () => {
    const began = join(root, "slow.began");
    const gate = join(root, "slow.gate");
    // One save of two files, as a branch switch writes them: one file's new top level is slow.
    const slowText = capabilityFile("slow", "v2", waitsFor(began, gate));
    const fastText = capabilityFile("fast", "v2");
    writeFileSync(file("slow"), slowText);
    writeFileSync(file("fast"), fastText);
    await until("team.fast's new version", async () => (await versionOf("team.fast")) === fileVersion(fastText));
    expect(await (await api("team/fast", { method: "POST", body: "{}" })).json()).toEqual({ answer: "v2" });
    // The slow file's trial is still running (its gate is shut): its old version is still listed,
    // and a call of it says its file changed and to run it again once it is reloaded.
    expect(existsSync(began)).toBe(true);
    expect(await versionOf("team.slow")).toBe(fileVersion(capabilityFile("slow", "v1")));
    expect((await list()).load_errors).toEqual([]);
    const meanwhile = await api("team/slow", { method: "POST", body: "{}" });
    expect(meanwhile.status).toBe(503);
    expect(((await meanwhile.json()) as { error: { error_code: string } }).error.error_code).toBe("capability_changed");

    // Its verdict (it loads) is a reload of its own: nothing in the folders changes.
    writeFileSync(gate, "");
    await until("team.slow's new version", async () => (await versionOf("team.slow")) === fileVersion(slowText));
    expect(await (await api("team/slow", { method: "POST", body: "{}" })).json()).toEqual({ answer: "v2" });
    expect(logLines).toContain("docket reloaded capabilities: changed team.slow");
  }, 90_000);

  test("a slow trial of a new file that then fails is the load error at its verdict; a save fixing it meanwhile is tried beside it, not behind it", async () => {
    const began = join(root, "broken.began");
    const gate = join(root, "broken.gate");
    const brokenText = capabilityFile("broken", "v1", `${waitsFor(began, gate)}\nthrow new Error("configuration missing");`);
    writeFileSync(file("broken"), brokenText);
    await until("the broken file's trial to begin", () => existsSync(began));
    // Another file added meanwhile is served while the first one's trial still runs.
    writeFileSync(file("other"), capabilityFile("other", "v1"));
    await until("team.other", async () => (await versionOf("team.other")) !== undefined);
    expect((await list()).load_errors).toEqual([]);
    expect(await versionOf("team.broken")).toBeUndefined();
    writeFileSync(gate, "");
    await until("team.broken's load error", async () => (await list()).load_errors.some((e) => e.file === file("broken")));
    expect((await list()).load_errors.find((e) => e.file === file("broken"))!.reason).toContain("it threw while loading: Error");
    expect(logLines.some((line) => line.startsWith(`docket could not load ${file("broken")}`) && line.includes("configuration missing"))).toBe(true);

    // A file whose slow text is parked, saved fixed before its verdict: the fix is tried at once.
    rmSync(gate);
    rmSync(began);
    const stuck = capabilityFile("broken", "v2", `${waitsFor(began, gate)}\nthrow new Error("still missing");`);
    writeFileSync(file("broken"), stuck);
    await until("the stuck text's trial to begin", () => existsSync(began));
    const fixed = capabilityFile("broken", "v3");
    writeFileSync(file("broken"), fixed);
    await until("team.broken fixed", async () => (await versionOf("team.broken")) === fileVersion(fixed));
    expect((await list()).load_errors).toEqual([]);
    expect(await (await api("team/broken", { method: "POST", body: "{}" })).json()).toEqual({ answer: "v3" });
    // The stuck text's verdict, come later, changes nothing: the file on disk is the fixed one.
    writeFileSync(gate, "");
    await Bun.sleep(300);
    expect(await versionOf("team.broken")).toBe(fileVersion(fixed));
    expect((await list()).load_errors).toEqual([]);
  }, 120_000);
});
