import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane, type BootedPlane } from "../../runtime/boot.ts";
import { createDocketMcpServer } from "../../runtime/mcp/server.ts";
import { fileVersion } from "../../runtime/capability/capability-version.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";

// Live reload against a running server (docs/authoring.md, "Live reload"): add, change, break and
// remove a capability file; after each, every surface shows the same registry, and an execution
// that was running when its file changed finishes on the code it started with.

/** A capability file whose handler answers `answer`; with `waitFor`, only once that file exists. */
function greetFile(title: string, answer: string, waitFor?: string): string {
  const wait = waitFor
    ? `writeFileSync(${JSON.stringify(`${waitFor}.started`)}, ""); await new Promise<void>((resolve) => { const t = setInterval(() => { if (existsSync(${JSON.stringify(waitFor)})) { clearInterval(t); resolve(); } }, 5); });`
    : "";
  return [
    'import { capability } from "docket";',
    'import * as v from "valibot";',
    'import { existsSync, writeFileSync } from "node:fs";',
    "export default capability({",
    '  id: "team.greet",',
    `  title: ${JSON.stringify(title)},`,
    '  description: "Answers which version of it ran.",',
    '  effect: "read",',
    "  input: v.object({}),",
    "  output: v.object({ answer: v.string() }),",
    "  async handler() {",
    `    ${wait}`,
    `    return { answer: ${JSON.stringify(answer)} };`,
    "  },",
    "});",
    "",
  ].join("\n");
}

const EXTRA = [
  'import { capability } from "docket";',
  'import * as v from "valibot";',
  'export default capability({ id: "team.extra", title: "Extra", description: "Added while serving.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });',
  "",
].join("\n");

let root: string;
let server: DocketServer;
let client: Client;
const logLines: string[] = [];
let listChanged = 0;
let notified: Client;
let plane: BootedPlane | null = null;

/** Resolves once `check` is true, asking again every few ms; fails after a bound far above the debounce. */
/** Waits until `check` holds, for 20 s at most: a reload on a loaded 2-core machine (two test files at a time) took over 10 s once. */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const began = performance.now();
  while (performance.now() - began < 20_000) {
    if (await check()) return;
    await Bun.sleep(20);
  }
  throw new Error(`gave up waiting for ${what} after ${Math.round(performance.now() - began)} ms`);
}

const api = async (path: string, init?: RequestInit) => fetch(`${server.url}/api/v1/${path}`, { ...init, headers: { "Content-Type": "application/json" } });
const list = async () => (await (await api("capabilities/list")).json()) as { capabilities: Array<{ id: string; title: string; version: string }>; load_errors: Array<{ file: string; reason: string }> };
const start = async (capability: string) => ((await (await api("executions/start", { method: "POST", body: JSON.stringify({ capability, input: {} }) })).json()) as { execution: { id: string } }).execution.id;
const get = async (id: string) => (await (await api(`executions/get?id=${id}`)).json()) as { state: string; output?: { answer: string }; capability_version: string };
const toolNames = async () => (await client.listTools()).tools.map((t) => t.name);
const openApiIds = async () => Object.values(((await (await api("openapi.json")).json()) as { paths: Record<string, Record<string, { operationId: string; summary?: string }>> }).paths).flatMap((p) => Object.values(p).map((op) => `${op.operationId}|${op.summary ?? ""}`));
const cockpit = async (path = "") => (await fetch(`${server.url}/cockpit${path}`)).text();

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-reload-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "team.greet.ts"), greetFile("Greet v1", "v1", join(root, "release-v1")));
  // The checkout's "#aliased/*" imports, there from the start: a config created while serving is
  // read by no thread that read the folder before, and is a load error that says to restart.
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "reload-checkout", type: "module", imports: { "#aliased/*": "./aliased/*", "#fake-dep": "docket-fake-hashdep" } }));
  server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    // A file that never finishes loading is a load error after 300 ms.
    limits: resolveLimits({ overrides: { load_timeout_ms: 300 } }),
    capabilityDirs: [],
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: (line) => logLines.push(line),
    boot: async (options) => (plane = await bootPlane(options)),
    watchOptions: { debounceMs: 30 },
  });
  client = new Client({ name: "reload-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", server.url)));
  // notifications/tools/list_changed, from an MCP session of its own over the same plane: over HTTP
  // it travels on the standalone SSE stream, whose opening a client cannot observe.
  notified = new Client({ name: "reload-notified", version: "1.0.0" });
  notified.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanged++);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([createDocketMcpServer(plane!.engine, { log: () => undefined }).connect(serverSide), notified.connect(clientSide)]);
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await notified?.close().catch(() => undefined);
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("docket serve live reload", () => {
  test("live reload: a changed file is served by every surface while a running execution finishes on its old code", async () => {
    const v1 = fileVersion(greetFile("Greet v1", "v1", join(root, "release-v1")));
    expect((await list()).capabilities.find((c) => c.id === "team.greet")).toMatchObject({ title: "Greet v1", version: v1 });
    const running = await start("team.greet");
    // Its handler has begun (its worker holds v1's module), not only its execution.
    await until("the v1 handler to begin", () => existsSync(join(root, "release-v1.started")));

    const v2Text = greetFile("Greet v2", "v2");
    writeFileSync(join(root, "capabilities", "team.greet.ts"), v2Text);
    const v2 = fileVersion(v2Text);
    await until("the v2 title on capabilities.list", async () => (await list()).capabilities.find((c) => c.id === "team.greet")?.title === "Greet v2");

    expect((await list()).capabilities.find((c) => c.id === "team.greet")!.version).toBe(v2);
    expect(await openApiIds()).toContain("team.greet|Greet v2");
    expect(JSON.stringify((await client.listTools()).tools.find((t) => t.name === "team_greet"))).toContain("Greet v2");
    expect(await cockpit("/capabilities/team.greet")).toContain("Greet v2");
    expect(await (await api("team/greet")).json()).toEqual({ answer: "v2" });
    await until("notifications/tools/list_changed", () => listChanged >= 1);

    // A new execution runs v2 at once; the one started before the edit is still on v1.
    const fresh = await start("team.greet");
    await until("the v2 execution to end", async () => (await get(fresh)).state === "succeeded");
    expect(await get(fresh)).toMatchObject({ output: { answer: "v2" }, capability_version: v2 });
    expect((await get(running)).state).toBe("running");
    writeFileSync(join(root, "release-v1"), "");
    await until("the v1 execution to end", async () => (await get(running)).state === "succeeded");
    expect(await get(running)).toMatchObject({ output: { answer: "v1" }, capability_version: v1 });
    expect(logLines.some((line) => line.includes("docket reloaded capabilities: changed team.greet"))).toBe(true);
  });

  test("live reload: an added file appears on every surface, and a removed one leaves every surface", async () => {
    const before = listChanged;
    writeFileSync(join(root, "capabilities", "team.extra.ts"), EXTRA);
    await until("team.extra on capabilities.list", async () => (await list()).capabilities.some((c) => c.id === "team.extra"));
    expect(await toolNames()).toContain("team_extra");
    expect(await openApiIds()).toContain("team.extra|Extra");
    expect((await api("team/extra")).status).toBe(200);
    expect(await cockpit("/capabilities")).toContain("team.extra");
    await until("a second list_changed", () => listChanged > before);

    rmSync(join(root, "capabilities", "team.extra.ts"));
    await until("team.extra gone from capabilities.list", async () => !(await list()).capabilities.some((c) => c.id === "team.extra"));
    expect(await toolNames()).not.toContain("team_extra");
    expect((await openApiIds()).some((id) => id.startsWith("team.extra"))).toBe(false);
    expect((await api("team/extra")).status).toBe(404);
    expect(await cockpit("/capabilities")).not.toContain("team.extra");
    expect(logLines.some((line) => line.includes("removed team.extra"))).toBe(true);
  });

  test("live reload: a helper deleted under a capability that imports it is a load error at the line of its import, as docket run says it; put back, it loads again (walkthrough tester, session 40)", async () => {
    const file = join(root, "capabilities", "team.helped.ts");
    const helper = join(root, "capabilities", "_fmt.ts");
    writeFileSync(helper, "export const fmt = (s: string) => `<${s}>`;\n");
    writeFileSync(file, ['import { capability } from "docket";', 'import * as v from "valibot";', 'import { fmt } from "./_fmt.ts";', 'export default capability({ id: "team.helped", title: "Helped", description: "Uses a helper.", effect: "read", input: v.object({}), output: v.object({ s: v.string() }), handler: () => ({ s: fmt("x") }) });', ""].join("\n"));
    await until("team.helped loaded", async () => (await list()).capabilities.some((c) => c.id === "team.helped"));
    rmSync(helper);
    await until("team.helped's load error", async () => (await list()).load_errors.some((e) => e.file === file));
    const error = (await list()).load_errors.find((e) => e.file === file) as unknown as { reason: string; line: number | null; column: number | null };
    expect(error).toMatchObject({ line: 3, reason: 'cannot resolve import "./_fmt.ts": there is no file _fmt.ts (deleted or moved?), or it could not be read; put it back or correct the import, and docket reads the capability again once either is saved.' });
    writeFileSync(helper, "export const fmt = (s: string) => `[${s}]`;\n");
    await until("team.helped back", async () => (await list()).capabilities.some((c) => c.id === "team.helped"));
    expect(await (await api("team/helped")).json()).toEqual({ s: "[x]" });
    rmSync(file);
    rmSync(helper);
    await until("team.helped gone", async () => !(await list()).capabilities.some((c) => c.id === "team.helped") && (await list()).load_errors.length === 0);
  });

  test("live reload: a file that breaks is a load error everywhere and its last good version is not kept", async () => {
    const file = join(root, "capabilities", "team.greet.ts");
    writeFileSync(file, 'import { capability } from "docket";\nexport default capability({ id: "team.greet",\n  oops oops\n});\n');
    await until("the load error on capabilities.list", async () => (await list()).load_errors.some((e) => e.file === file));
    expect((await list()).capabilities.some((c) => c.id === "team.greet")).toBe(false);
    const direct = await api("team/greet");
    expect(direct.status).toBe(404);
    // The direct call and the cockpit's page say why, as a start does (tester S): not only "not loaded".
    const error = ((await direct.json()) as any).error;
    expect(error.message).toContain("team.greet.ts:3 did not load:");
    expect(error.context).toMatchObject({ capability: "team.greet", reason: "load_error", line: 3 });
    const page = await cockpit("/capabilities/team.greet");
    expect(page).toContain("Capability did not load");
    expect(page).toContain("team.greet.ts:3 did not load:");
    expect(await toolNames()).not.toContain("team_greet");
    const health = (await (await api("health/report")).json()) as { load_errors: number };
    expect(health.load_errors).toBe(1);
    expect(await cockpit()).toContain("team.greet.ts");
    expect(logLines.some((line) => line.startsWith(`docket could not load ${file}:3`))).toBe(true);
    const refused = await api("executions/start", { method: "POST", body: JSON.stringify({ capability: "team.greet", input: {} }) });
    expect(refused.status).toBe(404);

    // Fixed again: it is back, with the version of the fixed text.
    const fixed = greetFile("Greet v3", "v3");
    writeFileSync(file, fixed);
    await until("team.greet back", async () => (await list()).capabilities.some((c) => c.id === "team.greet" && c.version === fileVersion(fixed)));
    expect((await list()).load_errors).toEqual([]);
    expect(await (await api("team/greet")).json()).toEqual({ answer: "v3" });
    expect(existsSync(file)).toBe(true);
  });

  test("live reload: a file that never finishes loading is a load error once, and later reloads do not wait for it again", async () => {
    const hang = join(root, "capabilities", "team.hang.ts");
    writeFileSync(hang, 'import { capability } from "docket";\nawait new Promise(() => {});\nexport default capability({});\n');
    await until("the hung file's load error", async () => (await list()).load_errors.some((e) => e.file === hang));
    expect((await list()).load_errors.find((e) => e.file === hang)!.reason).toContain("did not finish loading within 300 ms");

    // Another change reloads everything: the hung text keeps its verdict, not tried or waited for again.
    writeFileSync(join(root, "capabilities", "team.extra.ts"), EXTRA);
    await until("team.extra after the hung file", async () => (await list()).capabilities.some((c) => c.id === "team.extra"));
    expect((await list()).load_errors.find((e) => e.file === hang)!.reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first");

    rmSync(hang);
    rmSync(join(root, "capabilities", "team.extra.ts"));
    await until("the hung file gone", async () => !(await list()).load_errors.some((e) => e.file === hang));
  });

  test("live reload: a helper's edit is a new version of the capability importing it, on the main thread and in the workers; a looping helper is refused, and loads again once fixed", async () => {
    const capabilityFile = join(root, "capabilities", "team.helped.ts");
    const helper = join(root, "capabilities", "_words.ts");
    const words = (title: string, answer: string, top = "") => `${top}\nexport const TITLE = ${JSON.stringify(title)};\nexport const answer = () => ${JSON.stringify(answer)};\n`;
    const helped = () => list().then((l) => l.capabilities.find((c) => c.id === "team.helped"));
    writeFileSync(helper, words("Helped one", "one"));
    writeFileSync(
      capabilityFile,
      'import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE, answer } from "./_words.ts";\nexport default capability({ id: "team.helped", title: TITLE, description: "Answers what its helper says.", effect: "read", input: v.object({}), output: v.object({ answer: v.string() }), handler: () => ({ answer: answer() }) });\n',
    );
    await until("team.helped with its helper's title", async () => (await helped())?.title === "Helped one");
    const first = (await helped())!.version;
    expect(first).not.toBe(fileVersion(readFileSync(capabilityFile, "utf8")));
    expect(await (await api("team/helped")).json()).toEqual({ answer: "one" });

    // Only the helper changes: the main thread's declaration and the worker's handler both follow.
    writeFileSync(helper, words("Helped two", "two"));
    await until("the helper's new title", async () => (await helped())?.title === "Helped two");
    const second = (await helped())!.version;
    expect(second).not.toBe(first);
    expect(await (await api("team/helped")).json()).toEqual({ answer: "two" });
    const id = await start("team.helped");
    await until("the execution to end", async () => (await get(id)).state === "succeeded");
    expect(await get(id)).toMatchObject({ output: { answer: "two" }, capability_version: second });

    // A helper saved half-typed into a loop: tried in a worker, refused, the server answering.
    writeFileSync(helper, words("Helped loop", "loop", "for (;;) {}"));
    await until("the looping helper's load error", async () => (await list()).load_errors.some((e) => e.file === capabilityFile));
    expect((await list()).load_errors.find((e) => e.file === capabilityFile)!.reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first (a synchronous loop or slow work at its top level or at the top of a module it imports: _words.ts,");
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // Fixing the helper alone is enough: the capability is tried again, since its version changed.
    writeFileSync(helper, words("Helped three", "three"));
    await until("team.helped back once its helper is fixed", async () => (await helped())?.title === "Helped three");
    expect(await (await api("team/helped")).json()).toEqual({ answer: "three" });
    rmSync(capabilityFile);
    rmSync(helper);
    await until("team.helped gone", async () => (await helped()) === undefined);
  });

  test("live reload: a worker that ran a capability before and after an edit is retired once that task ends, so old versions do not pile up in it", async () => {
    const capabilityFile = join(root, "capabilities", "team.threaded.ts");
    const helper = join(root, "capabilities", "_threaded-words.ts");
    writeFileSync(helper, 'export const answer = () => "one";\n');
    writeFileSync(
      capabilityFile,
      'import { capability } from "docket";\nimport * as v from "valibot";\nimport { threadId } from "node:worker_threads";\nimport { answer } from "./_threaded-words.ts";\nexport default capability({ id: "team.threaded", title: "Threaded", description: "Answers its helper and its thread.", effect: "read", input: v.object({}), output: v.object({ answer: v.string(), thread: v.number() }), handler: () => ({ answer: answer(), thread: threadId }) });\n',
    );
    const threaded = () => list().then((l) => l.capabilities.find((c) => c.id === "team.threaded"));
    const call = async () => (await (await api("team/threaded")).json()) as { answer: string; thread: number };
    await until("team.threaded", async () => (await threaded()) !== undefined);
    const first = await call();
    expect(first.answer).toBe("one");
    // The same version again: the same worker, which keeps what it imported.
    expect(await call()).toEqual(first);

    writeFileSync(helper, 'export const answer = () => "two";\n');
    await until("the helper's edit", async () => (await call()).answer === "two");
    // The worker that ran both versions was retired after that call: a new one runs the next, and keeps it.
    const after = await call();
    expect(after.answer).toBe("two");
    expect(after.thread).not.toBe(first.thread);
    expect(await call()).toEqual(after);
    // Not a fault: nothing said in the server log about this worker.
    expect(logLines.filter((line) => line.includes("worker") && line.includes("team.threaded"))).toEqual([]);
    rmSync(capabilityFile);
    rmSync(helper);
    await until("team.threaded gone", async () => (await threaded()) === undefined);
  });

  test("live reload: a helper outside the capability folders is watched once a capability imports it", async () => {
    mkdirSync(join(root, "lib"), { recursive: true });
    const helper = join(root, "lib", "format.ts");
    const capabilityFile = join(root, "capabilities", "team.formatted.ts");
    writeFileSync(helper, 'export const TITLE = "Formatted one";\n');
    writeFileSync(
      capabilityFile,
      'import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE } from "../lib/format.ts";\nexport default capability({ id: "team.formatted", title: TITLE, description: "Titled by a helper in lib/.", effect: "read", input: v.object({}), output: v.object({ title: v.string() }), handler: () => ({ title: TITLE }) });\n',
    );
    const formatted = () => list().then((l) => l.capabilities.find((c) => c.id === "team.formatted"));
    await until("team.formatted", async () => (await formatted())?.title === "Formatted one");
    // Only the helper in lib/ changes: nothing in capabilities/ does.
    writeFileSync(helper, 'export const TITLE = "Formatted two";\n');
    await until("the helper's edit in lib/ reloaded", async () => (await formatted())?.title === "Formatted two");
    expect(await (await api("team/formatted")).json()).toEqual({ title: "Formatted two" });
    rmSync(capabilityFile);
    await until("team.formatted gone", async () => (await formatted()) === undefined);
  });

  test("live reload: a JSON file's edit is a new version, and one execution reads one value of it: its input default (main thread) and its handler (worker) agree (tester A)", async () => {
    mkdirSync(join(root, "config"), { recursive: true });
    const data = join(root, "config", "greeting.json");
    const capabilityFile = join(root, "capabilities", "team.configured.ts");
    writeFileSync(data, '{"greeting":"one"}');
    writeFileSync(
      capabilityFile,
      'import { capability } from "docket";\nimport * as v from "valibot";\nimport cfg from "../config/greeting.json";\nexport default capability({ id: "team.configured", title: "Configured", description: "Answers its JSON twice.", effect: "read", input: v.object({ g: v.optional(v.string(), cfg.greeting) }), output: v.object({ answer: v.string() }), handler: (input) => ({ answer: `${input.g} ${cfg.greeting}` }) });\n',
    );
    const configured = () => list().then((l) => l.capabilities.find((c) => c.id === "team.configured"));
    await until("team.configured", async () => (await configured()) !== undefined);
    const first = (await configured())!.version;
    expect(await (await api("team/configured", { method: "POST", body: "{}" })).json()).toEqual({ answer: "one one" });

    // Only the JSON changes, outside the capability folders.
    writeFileSync(data, '{"greeting":"two"}');
    await until("the JSON's edit reloaded", async () => (await configured())!.version !== first);
    const second = (await configured())!.version;
    expect(await (await api("team/configured", { method: "POST", body: "{}" })).json()).toEqual({ answer: "two two" });
    const id = await start("team.configured");
    await until("the execution to end", async () => (await get(id)).state === "succeeded");
    expect(await get(id)).toMatchObject({ output: { answer: "two two" }, capability_version: second });
    rmSync(capabilityFile);
    await until("team.configured gone", async () => (await configured()) === undefined);
  });

  test("live reload: saves met while a reload runs are said once, with it — none lost, none repeated", async () => {
    const slow = join(root, "capabilities", "team.slow.ts");
    const quick = join(root, "capabilities", "team.quick.ts");
    const before = logLines.length;
    // Its trial takes a while: the next save lands during it.
    writeFileSync(slow, EXTRA.replace('"team.extra"', '"team.slow"').replace("export default", "await Bun.sleep(150);\nexport default"));
    await Bun.sleep(80);
    writeFileSync(quick, EXTRA.replace('"team.extra"', '"team.quick"'));
    await until("both added", async () => (await list()).capabilities.filter((c) => c.id === "team.slow" || c.id === "team.quick").length === 2);
    await Bun.sleep(200);
    const said = logLines.slice(before).filter((line) => line.startsWith("docket reloaded capabilities"));
    expect(said.join("\n")).toContain("team.slow");
    expect(said.join("\n")).toContain("team.quick");
    expect(new Set(said).size).toBe(said.length);
    rmSync(slow);
    rmSync(quick);
    await until("both gone", async () => !(await list()).capabilities.some((c) => c.id === "team.slow" || c.id === "team.quick"));
  });

  test("live reload: a package installed while serving loads the file that could not resolve it, without an edit and without a restart", async () => {
    const file = join(root, "capabilities", "team.packaged.ts");
    const pkg = "docket-fake-installed-later";
    writeFileSync(
      file,
      `import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE } from "${pkg}";\nexport default capability({ id: "team.packaged", title: TITLE, description: "Titled by a package.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`,
    );
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("the package's load error", async () => (await reason()).includes("is not installed"));

    // Installed by hand, as npm would: nothing in capabilities/ changes.
    mkdirSync(join(root, "node_modules", pkg), { recursive: true });
    writeFileSync(join(root, "node_modules", pkg, "package.json"), JSON.stringify({ name: pkg, version: "1.0.0", type: "module", main: "index.js" }));
    writeFileSync(join(root, "node_modules", pkg, "index.js"), 'export const TITLE = "Packaged";\n');
    const loaded = async () => (await list()).capabilities.some((c) => c.id === "team.packaged");
    // The runtime kept its failed look at the checkout's folder: docket asks that folder again, so the package is found.
    await until("the file loaded after the install", loaded);
    expect((await list()).capabilities.find((c) => c.id === "team.packaged")).toMatchObject({ title: "Packaged" });

    // A second install, scoped, into the node_modules the runtime has listed by now.
    const scoped = "@docket-fake/later";
    writeFileSync(file, (await Bun.file(file).text()).replace(`from "${pkg}"`, `from "${scoped}"`));
    await until("the scoped package's load error", async () => (await reason()).includes("is not installed"));
    mkdirSync(join(root, "node_modules", scoped), { recursive: true });
    writeFileSync(join(root, "node_modules", scoped, "package.json"), JSON.stringify({ name: scoped, version: "1.0.0", type: "module", exports: { ".": "./lib/main.js" } }));
    mkdirSync(join(root, "node_modules", scoped, "lib"));
    writeFileSync(join(root, "node_modules", scoped, "lib", "main.js"), 'export const TITLE = "Scoped";\n');
    await until("the scoped package loaded", async () => (await list()).capabilities.find((c) => c.id === "team.packaged")?.title === "Scoped");

    // Uninstalled while serving: the runtime still lists the package's files, which are gone. The
    // load error names the package and how to install it again (it said "syntax error: ENOENT").
    rmSync(join(root, "node_modules", "@docket-fake"), { recursive: true, force: true });
    writeFileSync(file, `${await Bun.file(file).text()}// edited after the uninstall\n`);
    await until("the uninstalled package's load error", async () => (await reason()) !== "");
    expect(await reason()).not.toContain("syntax error");
    expect(await reason()).toContain('"@docket-fake/later"');
    expect(await reason()).toContain("npm install @docket-fake/later");
    // Installed again: tried again with no edit, and served (with the code the process imported
    // first: a package already imported keeps its code until a restart).
    mkdirSync(join(root, "node_modules", scoped, "lib"), { recursive: true });
    writeFileSync(join(root, "node_modules", scoped, "package.json"), JSON.stringify({ name: scoped, version: "1.0.0", type: "module", exports: { ".": "./lib/main.js" } }));
    writeFileSync(join(root, "node_modules", scoped, "lib", "main.js"), 'export const TITLE = "Scoped";\n');
    await until("the reinstalled package loaded", async () => (await reason()) === "" && (await loaded()));
    rmSync(file);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("team.packaged gone", async () => !(await list()).load_errors.some((e) => e.file === file) && !(await loaded()));
  }, 20_000);

  test("live reload: a package installed while serving whose modules require its own new dependencies (chalk → ansi-styles → color-convert) loads and runs, on the main thread and in the workers (authoring tester, session 46)", async () => {
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    const file = join(root, "capabilities", "team.chalky.ts");
    writeFileSync(
      file,
      `import { capability } from "docket";\nimport * as v from "valibot";\nimport paint from "docket-fake-chalk";\nexport default capability({ id: "team.chalky", title: paint("Chalky"), description: "Painted by a package.", effect: "read", input: v.object({}), output: v.object({ answer: v.string() }), handler: () => ({ answer: paint("ran") }) });\n`,
    );
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("the package's load error", async () => (await reason()).includes("is not installed"));
    // Installed as npm installs chalk@4: CommonJS, its main in a subfolder, requiring packages installed beside it, which require others.
    const install = (name: string, main: string, dependencies: Record<string, string>) => {
      mkdirSync(join(root, "node_modules", name, "source"), { recursive: true });
      writeFileSync(join(root, "node_modules", name, "package.json"), JSON.stringify({ name, version: "1.0.0", main: "source/index.js", dependencies }));
      writeFileSync(join(root, "node_modules", name, "source", "index.js"), main);
    };
    install("docket-fake-names", 'module.exports = "painted";\n', {});
    install("docket-fake-styles", 'const names = require("docket-fake-names");\nmodule.exports = (text) => `${names} ${text}`;\n', { "docket-fake-names": "^1.0.0" });
    install("docket-fake-chalk", 'const styles = require("docket-fake-styles");\nmodule.exports = (text) => styles(text);\nmodule.exports.default = module.exports;\n', { "docket-fake-styles": "^1.0.0" });
    // It said `the package "docket-fake-styles" is installed … but does not provide it`, for the server's life.
    await until("the file loaded after the install", async () => (await list()).capabilities.some((c) => c.id === "team.chalky"));
    expect((await list()).capabilities.find((c) => c.id === "team.chalky")).toMatchObject({ title: "painted Chalky" });
    const id = await start("team.chalky");
    await until("the execution ended", async () => ["succeeded", "failed"].includes((await get(id)).state));
    expect(await get(id)).toMatchObject({ state: "succeeded", output: { answer: "painted ran" } });
    rmSync(file);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("team.chalky gone", async () => !(await list()).capabilities.some((c) => c.id === "team.chalky"));
  }, 20_000);

  test("live reload: a package uninstalled while serving (rm -rf, an npm install that prunes it) makes the files importing it a load error with no edit — they were listed and called while every execution failed internal; reinstalled, they load again (authoring tester, session 46)", async () => {
    const pkg = "docket-fake-pruned";
    const install = () => {
      mkdirSync(join(root, "node_modules", pkg), { recursive: true });
      writeFileSync(join(root, "node_modules", pkg, "package.json"), JSON.stringify({ name: pkg, version: "1.0.0", type: "module", main: "index.js" }));
      writeFileSync(join(root, "node_modules", pkg, "index.js"), 'export const TITLE = "Pruned";\n');
    };
    install();
    const file = join(root, "capabilities", "team.pruned.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE } from "${pkg}";\nexport default capability({ id: "team.pruned", title: TITLE, description: "Titled by a package.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    const loaded = async () => (await list()).capabilities.some((c) => c.id === "team.pruned");
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("team.pruned loaded", loaded);
    rmSync(join(root, "node_modules", pkg), { recursive: true, force: true });
    await until("the uninstalled package's load error", async () => (await reason()) !== "");
    expect(await reason()).toContain(`the package "${pkg}" is not installed. Install it with \`npm install ${pkg}\``);
    expect(await loaded()).toBe(false);
    expect((await api("team/pruned")).status).toBe(404);
    install();
    await until("team.pruned loaded again", async () => (await loaded()) && (await reason()) === "");
    rmSync(file);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("team.pruned gone", async () => !(await loaded()) && (await reason()) === "");
  }, 20_000);

  test("live reload: a save that pauses mid-write (a slow copy) keeps the capability served on its last version, never removed, and loads the whole text once written (authoring tester, session 46)", async () => {
    const file = join(root, "capabilities", "team.slow.ts");
    const text = (answer: string) => `import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "team.slow", title: "Slow", description: "Saved slowly.", effect: "read", input: v.object({}), output: v.object({ answer: v.string() }), handler: () => ({ answer: ${JSON.stringify(answer)} }) });\n`;
    writeFileSync(file, text("one"));
    const answer = async () => {
      const response = await api("team/slow");
      return response.status === 200 ? ((await response.json()) as { answer: string }).answer : `status ${response.status}`;
    };
    /** Writes `whole` to `path` in two parts half a second apart, the folders quiet between; what the calls answered meanwhile. */
    const slowSave = async (path: string, whole: string, cut: number): Promise<Set<string>> => {
      const fd = openSync(path, "w");
      writeSync(fd, whole.slice(0, cut));
      const seen = new Set<string>();
      for (const pausedUntil = Date.now() + 500; Date.now() < pausedUntil; await Bun.sleep(25)) seen.add(await answer());
      writeSync(fd, whole.slice(cut));
      closeSync(fd);
      return seen;
    };
    await until("team.slow served", async () => (await answer()) === "one");
    // Half a file on disk for 0.5 s: every call is still answered by the last version.
    const seen = await slowSave(file, text("two"), 120);
    await until("the whole save served", async () => (await answer()) === "two");
    expect([...seen]).toEqual(["one"]);
    expect(logLines.some((line) => line.includes("removed team.slow"))).toBe(false);
    // A helper it imports, saved the same way (checking tester, session 46).
    const helper = join(root, "capabilities", "_slow-helper.ts");
    writeFileSync(helper, 'export function say(): string {\n  return "three";\n}\n');
    writeFileSync(file, text("two").replace('import * as v from "valibot";', 'import * as v from "valibot";\nimport { say } from "./_slow-helper.ts";').replace('answer: "two"', "answer: say()"));
    await until("served through the helper", async () => (await answer()) === "three");
    // The capability's own file older than a second: only the helper is being written.
    await Bun.sleep(1100);
    const seenHelper = await slowSave(helper, 'export function say(): string {\n  return "four";\n}\n', 40);
    await until("the helper's whole save served", async () => (await answer()) === "four");
    // Never gone (404): the last version, or a call that met the half-written helper on disk
    // refused as changed (503 capability_changed), as any call between a save and its reload is.
    expect([...seenHelper].filter((seen) => seen !== "three" && seen !== "status 503")).toEqual([]);
    expect(logLines.some((line) => line.includes("removed team.slow"))).toBe(false);
    rmSync(helper);
    rmSync(file);
    await until("team.slow gone", async () => (await answer()) === "status 404");
  }, 20_000);

  test("live reload: a package the installed package needs removed while serving is a load error too; a package only named in a type-only import or a string is not (checking tester, session 46)", async () => {
    const write = (name: string, main: string, dependencies: Record<string, string> = {}) => {
      mkdirSync(join(root, "node_modules", name), { recursive: true });
      writeFileSync(join(root, "node_modules", name, "package.json"), JSON.stringify({ name, version: "1.0.0", main: "index.js", dependencies }));
      writeFileSync(join(root, "node_modules", name, "index.js"), main);
    };
    write("docket-fake-dep", 'module.exports = "dep";\n');
    write("docket-fake-top", 'module.exports = require("docket-fake-dep");\n', { "docket-fake-dep": "^1.0.0" });
    write("docket-fake-typed", "module.exports = {};\n");
    const file = join(root, "capabilities", "team.deep.ts");
    // Named only in a type-only import, an import used only as a type (TypeScript drops it), a string, and an optional import() in a try.
    const typed = join(root, "capabilities", "team.typed.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport top from "docket-fake-top";\nexport default capability({ id: "team.deep", title: String(top), description: "Uses a package that needs another.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    writeFileSync(typed, `import { capability } from "docket";\nimport * as v from "valibot";\nimport type { Nothing } from "docket-fake-typed";\nimport { Shape } from "docket-fake-typed";\nlet shaped: Shape | undefined;\nconst said = \`import x from "docket-fake-typed";\`;\ntry { await import("docket-fake-typed"); } catch {}\n\nexport default capability({ id: "team.typed", title: said.slice(0, 6), description: "Names a package it never loads.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) as Nothing });\n`);
    const ids = async () => (await list()).capabilities.map((c) => c.id);
    const reason = async (path: string) => (await list()).load_errors.find((e) => e.file === path)?.reason ?? "";
    await until("both loaded", async () => (await ids()).includes("team.deep") && (await ids()).includes("team.typed"));
    rmSync(join(root, "node_modules", "docket-fake-dep"), { recursive: true, force: true });
    rmSync(join(root, "node_modules", "docket-fake-typed"), { recursive: true, force: true });
    await until("the removed dependency's load error", async () => (await reason(file)) !== "");
    expect(await reason(file)).toContain('cannot load the package "docket-fake-top": the package "docket-fake-dep" it requires (docket-fake-top lists it) is installed nowhere it would be found, removed while docket ran.');
    // What the runtime never loads is no reason to refuse the file, as it was none at start.
    expect(await reason(typed)).toBe("");
    expect(await ids()).toContain("team.typed");
    // The import removed, the file loads again: the package's absence is no reason any more (second checking tester).
    writeFileSync(file, (await Bun.file(file).text()).replace('import top from "docket-fake-top";\n', 'const top = "none";\n'));
    await until("loaded without the import", async () => (await reason(file)) === "" && (await ids()).includes("team.deep"));
    rmSync(file);
    rmSync(typed);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("both gone", async () => !(await ids()).includes("team.deep") && !(await ids()).includes("team.typed"));
  }, 20_000);

  test("live reload: a package uninstalled while serving that only the compiled module imports — the automatic JSX runtime, a type decorator metadata keeps — is a load error too (fourth checking tester, session 46)", async () => {
    const write = (name: string, files: Record<string, string>) => {
      mkdirSync(join(root, "node_modules", name), { recursive: true });
      writeFileSync(join(root, "node_modules", name, "package.json"), JSON.stringify({ name, version: "1.0.0", type: "module", main: "index.js" }));
      for (const [file, text] of Object.entries(files)) writeFileSync(join(root, "node_modules", name, file), text);
    };
    const runtime = 'export const Fragment = "f";\nexport function jsx(type, props) { return `<${type}>${props.children ?? ""}`; }\nexport const jsxs = jsx;\nexport const jsxDEV = jsx;\n';
    write("docket-fake-jsx", { "index.js": runtime, "jsx-runtime.js": runtime, "jsx-dev-runtime.js": runtime });
    write("docket-fake-svc", { "index.js": "export class Svc {}\n" });
    const folder = join(root, "capabilities");
    // JSX in a helper, its runtime named by the file's pragma: the text imports nothing from the package.
    writeFileSync(join(folder, "_view.tsx"), '/** @jsxImportSource docket-fake-jsx */\nexport const view = (): string => (<b>hi</b>) as unknown as string;\n');
    // A helper whose tsconfig.json keeps a type for decorator metadata: the import is used only as a type.
    mkdirSync(join(folder, "meta"), { recursive: true });
    writeFileSync(join(folder, "meta", "tsconfig.json"), JSON.stringify({ compilerOptions: { experimentalDecorators: true, emitDecoratorMetadata: true } }));
    writeFileSync(join(folder, "meta", "holder.ts"), 'import { Svc } from "docket-fake-svc";\nfunction keep(..._args: unknown[]): void {}\nexport class Holder {\n  @keep\n  svc?: Svc;\n}\n');
    const jsxFile = join(folder, "team.jsxview.ts");
    const metaFile = join(folder, "team.meta.ts");
    writeFileSync(jsxFile, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { view } from "./_view.tsx";\nexport default capability({ id: "team.jsxview", title: view(), description: "Titled by JSX.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    writeFileSync(metaFile, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { Holder } from "./meta/holder.ts";\nexport default capability({ id: "team.meta", title: typeof Holder, description: "Holds a decorated class.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    const ids = async () => (await list()).capabilities.map((c) => c.id);
    const reason = async (path: string) => (await list()).load_errors.find((e) => e.file === path)?.reason ?? "";
    await until("both loaded", async () => (await ids()).includes("team.jsxview") && (await ids()).includes("team.meta"));
    expect((await list()).capabilities.find((c) => c.id === "team.jsxview")?.title).toBe("<b>hi");
    rmSync(join(root, "node_modules", "docket-fake-jsx"), { recursive: true, force: true });
    rmSync(join(root, "node_modules", "docket-fake-svc"), { recursive: true, force: true });
    await until("both load errors", async () => (await reason(jsxFile)) !== "" && (await reason(metaFile)) !== "");
    expect(await reason(jsxFile)).toContain('the package "docket-fake-jsx" is not installed');
    expect(await reason(metaFile)).toContain('the package "docket-fake-svc" is not installed');
    expect(await ids()).not.toContain("team.jsxview");
    rmSync(jsxFile);
    rmSync(metaFile);
    rmSync(join(folder, "_view.tsx"));
    rmSync(join(folder, "meta"), { recursive: true, force: true });
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("both gone", async () => (await reason(jsxFile)) === "" && (await reason(metaFile)) === "" && !(await ids()).includes("team.meta"));
  }, 20_000);

  test("live reload: a package a package.json \"imports\" entry names (\"#fake-dep\") is said as that package while missing, loads once installed with no restart, and is a load error once uninstalled (checking tester, session 47)", async () => {
    const pkg = "docket-fake-hashdep";
    const file = join(root, "capabilities", "team.hashdep.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE } from "#fake-dep";\nexport default capability({ id: "team.hashdep", title: TITLE, description: "Titled through an imports entry.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    const loaded = async () => (await list()).capabilities.some((c) => c.id === "team.hashdep");
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("the load error", async () => (await reason()) !== "");
    expect(await reason()).toContain(`the "imports" of the nearest package.json map it to the package "${pkg}", and the package "${pkg}" is not installed. Install it with \`npm install ${pkg}\``);
    mkdirSync(join(root, "node_modules", pkg), { recursive: true });
    writeFileSync(join(root, "node_modules", pkg, "index.js"), 'export const TITLE = "Hashed";\n');
    writeFileSync(join(root, "node_modules", pkg, "package.json"), JSON.stringify({ name: pkg, version: "1.0.0", type: "module", main: "index.js" }));
    await until("team.hashdep loaded with no restart", loaded);
    rmSync(join(root, "node_modules", pkg), { recursive: true, force: true });
    await until("the uninstalled package's load error", async () => !(await loaded()) && (await reason()) !== "");
    expect(await reason()).toContain(`"${pkg}" is not installed`);
    rmSync(file);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("team.hashdep gone", async () => (await reason()) === "");
  }, 20_000);

  test("live reload: a package uninstalled while a save did not import it is a load error once the text that imports it comes back (an undo), not served from the module the runtime kept (checking tester, session 47)", async () => {
    const pkg = "docket-fake-undo";
    mkdirSync(join(root, "node_modules", pkg), { recursive: true });
    writeFileSync(join(root, "node_modules", pkg, "index.js"), 'export const TITLE = "Undone";\n');
    writeFileSync(join(root, "node_modules", pkg, "package.json"), JSON.stringify({ name: pkg, version: "1.0.0", type: "module", main: "index.js" }));
    const file = join(root, "capabilities", "team.undo.ts");
    const original = `import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE } from "${pkg}";\nexport default capability({ id: "team.undo", title: TITLE, description: "Titled by a package.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`;
    writeFileSync(file, original);
    const title = async () => (await list()).capabilities.find((c) => c.id === "team.undo")?.title;
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("team.undo loaded", async () => (await title()) === "Undone");
    writeFileSync(file, original.replace(`import { TITLE } from "${pkg}";\n`, 'const TITLE = "Plain";\n'));
    await until("the save without the import", async () => (await title()) === "Plain");
    rmSync(join(root, "node_modules", pkg), { recursive: true, force: true });
    await Bun.sleep(300);
    writeFileSync(file, original);
    await until("the undo's load error", async () => (await reason()) !== "");
    expect(await reason()).toContain(`the package "${pkg}" is not installed`);
    expect(await title()).toBeUndefined();
    rmSync(file);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("team.undo gone", async () => (await reason()) === "");
  }, 20_000);

  test("live reload: what the runtime compiles decides which packages count — emitDecoratorMetadata alone keeps no type import, a name like jsx_abcdefgh is no JSX, a pragma written `@jsxImportSource x*/` names x (checking tester, session 47)", async () => {
    const write = (name: string) => {
      mkdirSync(join(root, "node_modules", name), { recursive: true });
      writeFileSync(join(root, "node_modules", name, "package.json"), JSON.stringify({ name, version: "1.0.0", type: "module", main: "index.js" }));
      const runtime = 'export const Fragment = "f";\nexport function jsx(type, props) { return `<${type}>${props.children ?? ""}`; }\nexport const jsxs = jsx;\nexport const jsxDEV = jsx;\nexport class Svc {}\n';
      for (const entry of ["index.js", "jsx-runtime.js", "jsx-dev-runtime.js"]) writeFileSync(join(root, "node_modules", name, entry), runtime);
    };
    for (const name of ["docket-fake-meta2", "react", "docket-fake-jsx2"]) write(name);
    const folder = join(root, "capabilities");
    mkdirSync(join(folder, "meta2"), { recursive: true });
    writeFileSync(join(folder, "meta2", "tsconfig.json"), JSON.stringify({ compilerOptions: { emitDecoratorMetadata: true } }));
    writeFileSync(join(folder, "meta2", "holder.ts"), 'import { Svc } from "docket-fake-meta2";\nfunction keep(_value: unknown, _context: unknown): void {}\nexport class Holder {\n  @keep\n  svc?: Svc;\n}\n');
    writeFileSync(join(folder, "_view2.tsx"), "/* @jsxImportSource docket-fake-jsx2*/\nexport const view = (): string => (<i>hi</i>) as unknown as string;\n");
    const files = {
      meta: join(folder, "team.meta2.ts"),
      named: join(folder, "team.named.ts"),
      view: join(folder, "team.view2.ts"),
    };
    const capability = (id: string, imports: string, title: string) => `import { capability } from "docket";\nimport * as v from "valibot";\n${imports}\nexport default capability({ id: "${id}", title: ${title}, description: "d", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`;
    writeFileSync(files.meta, capability("team.meta2", 'import { Holder } from "./meta2/holder.ts";', "typeof Holder"));
    writeFileSync(files.named, capability("team.named", 'import "react";\nconst jsx_abcdefgh = "plain";', "jsx_abcdefgh"));
    writeFileSync(files.view, capability("team.view2", 'import { view } from "./_view2.tsx";', "view()"));
    const ids = async () => (await list()).capabilities.map((c) => c.id);
    const reason = async (path: string) => (await list()).load_errors.find((e) => e.file === path)?.reason ?? "";
    const all = ["team.meta2", "team.named", "team.view2"];
    await until("all loaded", async () => {
      const loaded = await ids();
      return all.every((id) => loaded.includes(id));
    });
    // The file that imports react itself keeps it: only the type import and the JSX-looking name are what was wrong before.
    writeFileSync(files.named, capability("team.named", 'const jsx_abcdefgh = "plain";', "jsx_abcdefgh"));
    await Bun.sleep(300);
    for (const name of ["docket-fake-meta2", "react", "docket-fake-jsx2"]) rmSync(join(root, "node_modules", name), { recursive: true, force: true });
    await until("the JSX runtime's load error", async () => (await reason(files.view)) !== "");
    expect(await reason(files.view)).toContain('the package "docket-fake-jsx2" is not installed');
    await Bun.sleep(500);
    expect(await reason(files.meta)).toBe("");
    expect(await reason(files.named)).toBe("");
    expect(await ids()).toContain("team.meta2");
    expect(await ids()).toContain("team.named");
    for (const path of Object.values(files)) rmSync(path);
    rmSync(join(folder, "_view2.tsx"));
    rmSync(join(folder, "meta2"), { recursive: true, force: true });
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("all gone", async () => !(await ids()).some((id) => all.includes(id)));
  }, 20_000);

  test("live reload: a JSX runtime that is not installed is said to clients by its package and install command, not as an import the file computes (checking tester, session 47)", async () => {
    const folder = join(root, "capabilities");
    writeFileSync(join(folder, "_none.tsx"), "/** @jsxImportSource docket-fake-jsxnone */\nexport const view = (): string => (<i>hi</i>) as unknown as string;\n");
    const file = join(folder, "team.jsxnone.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { view } from "./_none.tsx";\nexport default capability({ id: "team.jsxnone", title: view(), description: "d", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("the load error", async () => (await reason()) !== "");
    expect(await reason()).toContain('the package "docket-fake-jsxnone" is not installed. Install it with `npm install docket-fake-jsxnone`');
    expect(await reason()).not.toContain("computes");
    rmSync(file);
    rmSync(join(folder, "_none.tsx"));
    await until("the load error gone", async () => (await reason()) === "");
  }, 20_000);

  test("live reload: an optional peer removed is no reason, `import x = require()` counts, a file inside a package named by path and installed while serving loads with no restart (second checking tester, session 47)", async () => {
    const nm = join(root, "node_modules");
    const pkgAt = (dir: string, name: string, main: string, extra: Record<string, unknown> = {}) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", main: "index.js", ...extra }));
      writeFileSync(join(dir, "index.js"), main);
    };
    const folder = join(root, "capabilities");
    const capability = (id: string, imports: string, title: string) => `import { capability } from "docket";\nimport * as v from "valibot";\n${imports}\nexport default capability({ id: "${id}", title: ${title}, description: "d", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`;
    const files = { alpha: join(folder, "team.alpha.ts"), gamma: join(folder, "team.gamma.ts"), deep: join(folder, "team.deep2.ts") };
    // Installed before: alpha with an optional peer beta; gamma, imported with import-equals.
    pkgAt(join(nm, "docket-fake-alpha"), "docket-fake-alpha", 'let e = "no-beta"; try { e = require("docket-fake-beta").name; } catch {} exports.hello = (n) => n + e;\n', { peerDependencies: { "docket-fake-beta": "*" }, peerDependenciesMeta: { "docket-fake-beta": { optional: true } } });
    pkgAt(join(nm, "docket-fake-beta"), "docket-fake-beta", 'exports.name = "beta";\n');
    pkgAt(join(nm, "docket-fake-gamma"), "docket-fake-gamma", 'exports.v = "gamma";\n');
    writeFileSync(files.alpha, capability("team.alpha", 'import { hello } from "docket-fake-alpha";', 'hello("a-")'));
    writeFileSync(files.gamma, capability("team.gamma", 'import g = require("docket-fake-gamma");', "g.v"));
    // Not installed yet: a file inside a package.
    writeFileSync(files.deep, capability("team.deep2", 'import { deep } from "docket-fake-deep/lib/sub.js";', "deep"));
    const ids = async () => (await list()).capabilities.map((c) => c.id);
    const reason = async (path: string) => (await list()).load_errors.find((e) => e.file === path)?.reason ?? "";
    await until("alpha and gamma loaded, the others load errors", async () => (await ids()).includes("team.alpha") && (await ids()).includes("team.gamma") && (await reason(files.deep)) !== "");
    rmSync(join(nm, "docket-fake-beta"), { recursive: true, force: true });
    rmSync(join(nm, "docket-fake-gamma"), { recursive: true, force: true });
    await until("gamma's load error", async () => (await reason(files.gamma)) !== "");
    expect(await reason(files.gamma)).toContain('the package "docket-fake-gamma" is not installed');
    // The optional peer is no reason: a fresh process loads alpha without it.
    expect(await reason(files.alpha)).toBe("");
    expect(await ids()).toContain("team.alpha");
    // A peer not marked optional is required (third checking tester): removed, it is a reason.
    pkgAt(join(nm, "docket-fake-core"), "docket-fake-core", 'exports.core = "core";\n');
    pkgAt(join(nm, "docket-fake-plugin"), "docket-fake-plugin", 'exports.plugin = require("docket-fake-core").core;\n', { peerDependencies: { "docket-fake-core": "*" } });
    const plugin = join(folder, "team.plugin.ts");
    writeFileSync(plugin, capability("team.plugin", 'import { plugin } from "docket-fake-plugin";', "plugin"));
    await until("team.plugin loaded", async () => (await ids()).includes("team.plugin"));
    rmSync(join(nm, "docket-fake-core"), { recursive: true, force: true });
    await until("the required peer's load error", async () => (await reason(plugin)).includes('the package "docket-fake-core" it requires'));
    // Its package.json rewritten in place to require nothing (a workspace package edited; an
    // upgrade): loads again, no restart (third and fourth checking testers: stuck on what it required before).
    writeFileSync(join(nm, "docket-fake-plugin", "index.js"), 'exports.plugin = "standalone";\n');
    writeFileSync(join(nm, "docket-fake-plugin", "package.json"), JSON.stringify({ name: "docket-fake-plugin", version: "2.0.0", main: "index.js" }));
    writeFileSync(plugin, `${await Bun.file(plugin).text()}// saved again\n`);
    // (The runtime keeps the module it imported: the new code runs after a restart, docs/authoring.md.)
    await until("listed again", async () => (await reason(plugin)) === "" && (await ids()).includes("team.plugin"));
    rmSync(plugin);
    // A peer never installed (yarn installs no peers) is the runtime's to judge: every file importing the package loads (fourth checking tester: all but the first were refused).
    pkgAt(join(nm, "docket-fake-yarnpeer"), "docket-fake-yarnpeer", 'exports.y = "y";\n', { peerDependencies: { "docket-fake-never": "*" } });
    const peers = [join(folder, "team.peer1.ts"), join(folder, "team.peer2.ts")];
    peers.forEach((path, i) => writeFileSync(path, capability(`team.peer${i + 1}`, 'import { y } from "docket-fake-yarnpeer";', "y")));
    await until("both importers of a package lacking a peer loaded", async () => (await ids()).includes("team.peer1") && (await ids()).includes("team.peer2"));
    for (const path of peers) rmSync(path);
    // Installed now.
    mkdirSync(join(nm, "docket-fake-deep", "lib"), { recursive: true });
    writeFileSync(join(nm, "docket-fake-deep", "package.json"), JSON.stringify({ name: "docket-fake-deep", version: "1.0.0" }));
    writeFileSync(join(nm, "docket-fake-deep", "lib", "sub.js"), 'exports.deep = "deep";\n');
    await until("the file inside a package loaded with no restart", async () => (await ids()).includes("team.deep2"));
    expect((await list()).capabilities.find((c) => c.id === "team.deep2")?.title).toBe("deep");
    for (const path of Object.values(files)) rmSync(path);
    rmSync(nm, { recursive: true, force: true });
    await until("all gone", async () => !(await ids()).some((id) => ["team.alpha", "team.gamma", "team.deep2", "team.plugin", "team.peer1", "team.peer2"].includes(id)) && (await reason(files.gamma)) === "");
  }, 20_000);

  test("live reload: a package installed while serving whose dependency was still being written when docket first met it loads once that dependency is whole (checking tester, session 46: @babel/highlight → js-tokens)", async () => {
    const file = join(root, "capabilities", "team.highlight.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport highlight from "docket-fake-highlight";\nexport default capability({ id: "team.highlight", title: highlight("x"), description: "Uses a package.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("the package's load error", async () => (await reason()).includes("is not installed"));
    // As npm writes it: the dependency's folder made first, its files later.
    const tokens = join(root, "node_modules", "docket-fake-tokens");
    mkdirSync(tokens, { recursive: true });
    const top = join(root, "node_modules", "docket-fake-highlight");
    mkdirSync(top, { recursive: true });
    writeFileSync(join(top, "index.js"), 'const tokens = require("docket-fake-tokens");\nmodule.exports = (text) => `${tokens}:${text}`;\n');
    writeFileSync(join(top, "package.json"), JSON.stringify({ name: "docket-fake-highlight", version: "1.0.0", main: "index.js", dependencies: { "docket-fake-tokens": "^1.0.0" } }));
    await until("the dependency's load error", async () => (await reason()).includes("docket-fake-tokens"));
    // Written whole now, in its own folder: node_modules itself does not change. A save of the file reads it again.
    writeFileSync(join(tokens, "index.js"), 'module.exports = "tok";\n');
    writeFileSync(join(tokens, "package.json"), JSON.stringify({ name: "docket-fake-tokens", version: "1.0.0", main: "index.js" }));
    writeFileSync(file, `${await Bun.file(file).text()}// saved again\n`);
    await until("the file loaded once its dependency was whole", async () => (await list()).capabilities.some((c) => c.id === "team.highlight"));
    expect((await list()).capabilities.find((c) => c.id === "team.highlight")?.title).toBe("tok:x");
    rmSync(file);
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    await until("team.highlight gone", async () => !(await list()).capabilities.some((c) => c.id === "team.highlight") && (await reason()) === "");
  }, 20_000);

  test("live reload: a compile option that changes what code does (experimentalDecorators) changed in the file's tsconfig.json while serving is a new version, served at once (authoring tester, session 46)", async () => {
    const folder = join(root, "capabilities");
    const config = join(folder, "tsconfig.json");
    writeFileSync(config, JSON.stringify({ compilerOptions: { strict: true } }));
    // A method decorator is called with 2 arguments (standard decorators) or 3 (legacy ones).
    writeFileSync(
      join(folder, "team.deco.ts"),
      `import { capability } from "docket";\nimport * as v from "valibot";\nlet argc = 0;\nfunction tag(...args: unknown[]) { argc = args.length; }\nclass K { @tag m() {} }\nvoid K;\nexport default capability({ id: "team.deco", title: "Deco", description: "Says how its decorator was called.", effect: "read", input: v.object({}), output: v.object({ argc: v.number() }), handler: () => ({ argc }) });\n`,
    );
    const call = async () => ((await (await api("team/deco")).json()) as { argc: number }).argc;
    const version = async () => (await list()).capabilities.find((c) => c.id === "team.deco")?.version;
    await until("team.deco loaded", async () => (await version()) !== undefined);
    expect(await call()).toBe(2);
    const standard = await version();
    writeFileSync(config, JSON.stringify({ compilerOptions: { strict: true, experimentalDecorators: true } }));
    // It kept answering 2 under the same version, and answered 3 under that version after an unrelated save.
    await until("the new version", async () => (await version()) !== standard);
    expect(await call()).toBe(3);
    const id = await start("team.deco");
    await until("the execution ended", async () => ["succeeded", "failed"].includes((await get(id)).state));
    expect(await get(id)).toMatchObject({ state: "succeeded", output: { argc: 3 }, capability_version: await version() });
    // An edit of the config that changes nothing of what runs (a checking option) is no new version.
    const legacy = await version();
    writeFileSync(config, JSON.stringify({ compilerOptions: { strict: false, experimentalDecorators: true } }));
    await Bun.sleep(300);
    expect(await version()).toBe(legacy);
    rmSync(join(folder, "team.deco.ts"));
    rmSync(config);
    await until("team.deco gone", async () => (await version()) === undefined);
  }, 20_000);

  test("live reload: a root tsconfig.json written while serving is seen at once: an import it maps, a load error until then (the package is not installed), loads", async () => {
    const file = join(root, "capabilities", "team.mapped.ts");
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { TITLE } from "@mapped/title";\nexport default capability({ id: "team.mapped", title: TITLE, description: "Titled through an alias.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`);
    await until("the unmapped import's load error", async () => (await reason()).includes('the package "@mapped/title" is not installed'));
    mkdirSync(join(root, "mapped"), { recursive: true });
    writeFileSync(join(root, "mapped", "title.ts"), 'export const TITLE = "Mapped";\n');
    const tsconfig = join(root, "tsconfig.json");
    writeFileSync(tsconfig, JSON.stringify({ compilerOptions: { paths: { "@mapped/*": ["./mapped/*"] } } }));
    // No edit of the capability: the tsconfig.json's own change tries it again, and docket's reading of it serves the alias.
    await until("team.mapped loaded through the new alias", async () => (await list()).capabilities.some((c) => c.id === "team.mapped" && c.title === "Mapped"));
    expect(await reason()).toBe("");
    expect((await api("team/mapped", { method: "POST", body: "{}" })).status).toBe(200);
    rmSync(file);
    rmSync(tsconfig);
    rmSync(join(root, "mapped"), { recursive: true, force: true });
    await until("team.mapped gone", async () => !(await list()).capabilities.some((c) => c.id === "team.mapped") && (await reason()) === "");
  });

  test("live reload: an alias added to capabilities/tsconfig.json while serving loads, and every call runs it — never a capability that fails every call as changed on disk (tester, session 33; live since session 39)", async () => {
    const lib = join(root, "liby");
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(lib, "l.ts"), 'export const L = "Aliased";\n');
    const tsconfig = join(root, "capabilities", "tsconfig.json");
    writeFileSync(tsconfig, JSON.stringify({ compilerOptions: { paths: { "~y/*": ["../liby/*"] } } }));
    const file = join(root, "capabilities", "team.tilde.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { L } from "~y/l";\nexport default capability({ id: "team.tilde", title: L, description: "Titled through an alias added while serving.", effect: "read", input: v.object({}), output: v.object({ l: v.string() }), handler: () => ({ l: L }) });\n`);
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("team.tilde loaded", async () => (await list()).capabilities.some((c) => c.id === "team.tilde"));
    expect(await reason()).toBe("");
    const answers = await Promise.all(Array.from({ length: 8 }, async () => (await (await api("team/tilde", { method: "POST", body: "{}" })).json()) as unknown));
    expect(answers).toEqual(Array(8).fill({ l: "Aliased" }));
    rmSync(file);
    rmSync(tsconfig);
    rmSync(lib, { recursive: true, force: true });
    await until("team.tilde gone", async () => !(await list()).capabilities.some((c) => c.id === "team.tilde") && (await reason()) === "");
  });

  test("live reload: a package.json created while serving with an alias a new file imports loads it, and every call runs it — it was listed as loaded and failed every call as changed on disk (tester, session 33; live since session 39)", async () => {
    const sub = join(root, "capabilities", "_o");
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, "o.ts"), 'export const O = "O";\n');
    // The capabilities/ folder's own package.json, created now: its "imports" are newer than the runtime's reading.
    const manifest = join(root, "capabilities", "package.json");
    writeFileSync(manifest, JSON.stringify({ name: "caps", type: "module", imports: { "#o/*": "./_o/*" } }));
    const file = join(root, "capabilities", "team.imp.ts");
    writeFileSync(file, `import { capability } from "docket";\nimport * as v from "valibot";\nimport { O } from "#o/o.ts";\nexport default capability({ id: "team.imp", title: O, description: "Through an alias of a new package.json.", effect: "read", input: v.object({}), output: v.object({ o: v.string() }), handler: () => ({ o: O }) });\n`);
    const reason = async () => (await list()).load_errors.find((e) => e.file === file)?.reason ?? "";
    await until("team.imp loaded", async () => (await list()).capabilities.some((c) => c.id === "team.imp"));
    expect(await reason()).toBe("");
    const answers = await Promise.all(Array.from({ length: 8 }, async () => (await (await api("team/imp", { method: "POST", body: "{}" })).json()) as unknown));
    expect(answers).toEqual(Array(8).fill({ o: "O" }));
    rmSync(file);
    rmSync(manifest);
    rmSync(sub, { recursive: true, force: true });
    await until("team.imp gone", async () => !(await list()).capabilities.some((c) => c.id === "team.imp") && (await reason()) === "");
  });

  test("live reload: a helper created behind an alias after the runtime listed its folder is found (package.json imports)", async () => {
    const lib = join(root, "aliased");
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(lib, "first.ts"), 'export const FIRST = "First";\n');
    const file = join(root, "capabilities", "team.aliased.ts");
    const capability = (name: string, constant: string) =>
      `import { capability } from "docket";\nimport * as v from "valibot";\nimport { ${constant} } from "#aliased/${name}.ts";\nexport default capability({ id: "team.aliased", title: ${constant}, description: "Titled by an aliased helper.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`;
    const title = async () => (await list()).capabilities.find((c) => c.id === "team.aliased")?.title;
    writeFileSync(file, capability("first", "FIRST"));
    await until("the aliased helper served", async () => (await title()) === "First");
    // The runtime has listed aliased/ by now; a helper written there afterwards, then imported.
    writeFileSync(join(lib, "second.ts"), 'export const SECOND = "Second";\n');
    writeFileSync(file, capability("second", "SECOND"));
    await until("the new aliased helper served", async () => (await title()) === "Second");
    // Served where it runs too, not only listed: every thread resolves it alike.
    expect((await (await api("team/aliased", { method: "POST", body: "{}" })).json())).toEqual({});
    rmSync(file);
    rmSync(lib, { recursive: true, force: true });
    await until("team.aliased gone", async () => (await title()) === undefined);
  });

  test("live reload: a .js file beside a .ts of the same name while serving is the same duplicate, won by the same file, as at start: the .ts, so that a build's output beside it never takes its place (authoring tester, session 43)", async () => {
    const twin = (n: number) =>
      `import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "team.twin", title: "Twin", description: "Says which file it is.", effect: "read", input: v.object({}), output: v.object({ n: v.number() }), handler: () => ({ n: ${n} }) });\n`;
    const ts = join(root, "capabilities", "team.twin.ts");
    const js = join(root, "capabilities", "team.twin.js");
    const answer = async () => (await api("team/twin")).json() as Promise<{ n?: number }>;
    writeFileSync(ts, twin(1));
    await until("the .ts served", async () => (await answer()).n === 1);
    writeFileSync(js, twin(3));
    // Files load in name order, an x.ts before its x.js, the first holder staying: the .js refused.
    await until("the .js refused", async () => (await list()).load_errors.some((e) => e.file === js));
    expect((await answer()).n).toBe(1);
    const errors = (await list()).load_errors.filter((e) => e.file === ts || e.file === js);
    expect(errors).toEqual([expect.objectContaining({ file: js, reason: expect.stringContaining(`id "team.twin" is already declared by ${ts}; this file is ignored`) })]);
    rmSync(js);
    rmSync(ts);
    await until("team.twin gone", async () => !(await list()).capabilities.some((c) => c.id === "team.twin") && !(await list()).load_errors.some((e) => e.file === ts || e.file === js));
  });

  test("live reload: a capability file that is a symbolic link reloads when its target is edited", async () => {
    mkdirSync(join(root, "shared"), { recursive: true });
    const target = join(root, "shared", "team.linked.ts");
    const link = join(root, "capabilities", "team.linked.ts");
    const text = (title: string) => EXTRA.replace('"team.extra"', '"team.linked"').replace('title: "Extra"', `title: ${JSON.stringify(title)}`);
    writeFileSync(target, text("Linked one"));
    symlinkSync("../shared/team.linked.ts", link);
    const linked = () => list().then((l) => l.capabilities.find((c) => c.id === "team.linked"));
    await until("team.linked", async () => (await linked())?.title === "Linked one");
    // Only the target changes: the link in capabilities/ stays as it was.
    writeFileSync(target, text("Linked two"));
    await until("the target's edit reloaded", async () => (await linked())?.title === "Linked two");
    expect((await api("team/linked")).status).toBe(200);
    rmSync(link);
    await until("team.linked gone", async () => (await linked()) === undefined);
  });

  test("live reload: a file whose top level never ends, or ends the process, is tried in a worker first and never holds or stops the server", async () => {
    const loops = join(root, "capabilities", "team.loops.ts");
    const exits = join(root, "capabilities", "team.exits.ts");
    const marks = join(root, "loop-began");
    // Its top level says it began, then never returns: on the main thread it would hold everything.
    writeFileSync(loops, `import { capability } from "docket";\nimport { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(marks)}, "x");\nfor (;;) {}\nexport default capability({});\n`);
    // The server answers while the file is being tried (it began, and no error is reported yet).
    await until("the looping file's trial to begin", () => existsSync(marks));
    const during = await api("health/report");
    expect(during.status).toBe(200);
    await until("the looping file's load error", async () => (await list()).load_errors.some((e) => e.file === loops));
    expect((await list()).load_errors.find((e) => e.file === loops)!.reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first");
    expect(logLines.some((line) => line.startsWith(`docket could not load ${loops}`))).toBe(true);

    // process.exit() at the top level ends the trial's thread, not the server.
    writeFileSync(exits, 'import { capability } from "docket";\nprocess.exit(7);\nexport default capability({});\n');
    await until("the exiting file's load error", async () => (await list()).load_errors.some((e) => e.file === exits));
    expect((await list()).load_errors.find((e) => e.file === exits)!.reason).toContain("ended its thread (exit code 7)");

    // A later reload neither tries the looping text again nor runs it: it began exactly once.
    writeFileSync(join(root, "capabilities", "team.extra.ts"), EXTRA);
    await until("team.extra beside the broken files", async () => (await list()).capabilities.some((c) => c.id === "team.extra"));
    expect((await list()).load_errors.find((e) => e.file === loops)!.reason).toContain("did not finish loading within 300 ms when docket tried it in a worker first");
    expect((await list()).load_errors.find((e) => e.file === exits)!.reason).toContain("ended its thread (exit code 7)");
    expect(readFileSync(marks, "utf8")).toBe("x");
    expect(await (await api("team/extra", { method: "POST", body: "{}" })).json()).toEqual({});

    // Fixed, the file loads like any other.
    writeFileSync(loops, greetFile("Loops no more", "fixed").replace('"team.greet"', '"team.loops"'));
    await until("team.loops fixed", async () => (await list()).capabilities.some((c) => c.id === "team.loops"));
    expect(await (await api("team/loops", { method: "POST", body: "{}" })).json()).toEqual({ answer: "fixed" });
    for (const file of [loops, exits, join(root, "capabilities", "team.extra.ts")]) rmSync(file);
    await until("the broken files gone", async () => (await list()).load_errors.length === 0 && !(await list()).capabilities.some((c) => c.id === "team.loops"));
  });
});
