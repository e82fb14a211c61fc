import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";

// Live reload while a folder is never quiet (docs/authoring.md, "Live reload"): a build stamp
// rewritten every 20 ms beside the capability forces a reload every 300 ms, quiet or not. A save
// that takes the file (or a helper) away for a moment — Vim's rename to a backup, an unlink then a
// create, a truncate then a write — must not answer 404 for a capability that was fine; a file
// deleted for good is still removed, a few seconds later.

const echoFile = (mark: string) =>
  [
    'import { capability } from "docket";',
    'import * as v from "valibot";',
    'import { E } from "./_e.ts";',
    "export default capability({",
    '  id: "team.echo", title: "Echo", description: "Echoes its version marker.", effect: "read",',
    "  input: v.object({}),",
    "  output: v.object({ mark: v.string(), e: v.string() }),",
    `  handler: () => ({ mark: ${JSON.stringify(mark)}, e: E }),`,
    "});",
    "",
  ].join("\n");

let root: string;
let capabilities: string;
let server: DocketServer;
const logLines: string[] = [];
/** Each reload the watch asked for, once it ended: whether it held a file back. */
const reloads: Array<{ held: string[] }> = [];
let stamps: ReturnType<typeof setInterval> | null = null;

/** Resolves once `check` is true, asking again every 20 ms; fails after a bound far above the longest hold. */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await Bun.sleep(20);
  }
  throw new Error(`gave up waiting for ${what}`);
}

const call = async () => {
  const response = await fetch(`${server.url}/api/v1/team.echo`);
  return { status: response.status, body: (await response.json()) as { mark?: string; e?: string; error?: { error_code: string; message: string } } };
};
const list = async () => (await (await fetch(`${server.url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }>; load_errors: Array<{ file: string; reason: string }> };

/** Calls team.echo until `passes` more reloads have ended, and says every answer that was a 404. */
async function callsThrough(passes: number): Promise<string[]> {
  const target = reloads.length + passes;
  const notFound: string[] = [];
  for (let i = 0; i < 1000 && reloads.length < target; i++) {
    const { status, body } = await call();
    if (status === 404) notFound.push(`${body.error?.error_code}: ${body.error?.message}`);
    await Bun.sleep(20);
  }
  expect(reloads.length).toBeGreaterThanOrEqual(target);
  return notFound;
}

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-reload-saves-")));
  mkdirSync(join(root, ".git"));
  capabilities = join(root, "capabilities");
  mkdirSync(capabilities);
  writeFileSync(join(capabilities, "_e.ts"), 'export const E = "e1";\n');
  writeFileSync(join(capabilities, "team.echo.ts"), echoFile("m1"));
  server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({}),
    capabilityDirs: [],
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: (line) => logLines.push(line),
    boot: async (options) => {
      const plane = await bootPlane(options);
      const reload = plane.reload.bind(plane);
      plane.reload = async (settled) => {
        const change = await reload(settled);
        reloads.push({ held: change.held });
        return change;
      };
      return plane;
    },
    // Quiet means 250 ms without a change: a stamp every 20 ms never leaves the folder so, even on
    // a busy machine, and each reload is the one forced after 300 ms.
    watchOptions: { debounceMs: 250, maxWaitMs: 300 },
  });
  expect((await call()).body).toEqual({ mark: "m1", e: "e1" });
  let stamp = 0;
  stamps = setInterval(() => {
    // Bounded: the tests below take far less than 4,000 stamps.
    if (stamp++ < 4000) writeFileSync(join(capabilities, ".stamp"), String(stamp));
  }, 20);
});

afterAll(async () => {
  if (stamps) clearInterval(stamps);
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("docket serve live reload in a folder that is never quiet", () => {
  test("live reload: a capability file renamed to a backup mid-save (Vim) keeps its capability served through several forced reloads, never a 404, and its new text is served once written (tester B)", async () => {
    const file = join(capabilities, "team.echo.ts");
    renameSync(file, `${file}~`);
    const notFound = await callsThrough(3);
    writeFileSync(file, echoFile("m2"));
    rmSync(`${file}~`);
    await until("the new text served", async () => (await call()).body.mark === "m2");
    expect(notFound).toEqual([]);
    expect(reloads.some((reload) => reload.held.includes(file))).toBe(true);
    expect(logLines.filter((line) => line.includes("removed team.echo") || line.includes("could not load"))).toEqual([]);
  });

  test("live reload: a helper truncated mid-save (its export not there yet) keeps the capability importing it served, its load error never shown (tester B)", async () => {
    const helper = join(capabilities, "_e.ts");
    writeFileSync(helper, "");
    const notFound = await callsThrough(3);
    expect((await list()).load_errors).toEqual([]);
    writeFileSync(helper, 'export const E = "e2";\n');
    await until("the helper's new text served", async () => (await call()).body.e === "e2");
    expect(notFound).toEqual([]);
    expect(logLines.filter((line) => line.includes("removed team.echo") || line.includes("could not load"))).toEqual([]);
  });

  test("live reload: a capability file deleted for good while the folder stays busy is removed once the longest hold has passed", async () => {
    rmSync(join(capabilities, "team.echo.ts"));
    await until("team.echo removed", async () => (await call()).status === 404);
    expect((await call()).body.error?.error_code).toBe("not_found");
    expect((await list()).capabilities.some((c) => c.id === "team.echo")).toBe(false);
    await until("the removal logged", () => logLines.some((line) => line.includes("docket reloaded capabilities: removed team.echo")));
  });
});
