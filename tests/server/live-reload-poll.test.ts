import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { bootPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { silentWatch } from "../_support/silent-watch.ts";

// Live reload where the file system reports no change at all (docs/authoring.md, "Live reload"):
// a checkout on WSL's /mnt/c edited from Windows, a network share. The server's poll alone sees
// a file added, a helper outside the capability folders edited, and a file removed.


const greetFile = (id: string) =>
  [
    'import { capability } from "docket";',
    'import * as v from "valibot";',
    'import { answer } from "../lib/answer.ts";',
    `export default capability({ id: ${JSON.stringify(id)}, title: "Greet", description: "Answers what its helper says.", effect: "read", input: v.object({}), output: v.object({ answer: v.string() }), handler: () => ({ answer }) });`,
    "",
  ].join("\n");

let root: string;
let server: DocketServer;
const logLines: string[] = [];

/** Waits until `check` holds, for 20 s at most (a poll every 200 ms here). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const began = performance.now();
  while (performance.now() - began < 20_000) {
    if (await check()) return;
    await Bun.sleep(20);
  }
  throw new Error(`gave up waiting for ${what}`);
}

const call = async (path: string) => fetch(`${server.url}/api/v1/${path}`);
const ids = async () => ((await (await call("capabilities/list")).json()) as { capabilities: Array<{ id: string }> }).capabilities.map((c) => c.id);

beforeAll(async () => {
  registerDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-reload-poll-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  mkdirSync(join(root, "lib"));
  writeFileSync(join(root, "lib", "answer.ts"), 'export const answer = "one";\n');
  server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({ overrides: {} }),
    capabilityDirs: [],
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: (line) => logLines.push(line),
    boot: (options) => bootPlane(options),
    watchOptions: { debounceMs: 30, pollMs: 200, watch: silentWatch },
  });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("docket serve live reload with no change events", () => {
  test("live reload by polling alone: a file added, its helper outside the capability folders edited, the file removed", async () => {
    expect(await ids()).not.toContain("team.greet");
    writeFileSync(join(root, "capabilities", "team.greet.ts"), greetFile("team.greet"));
    await until("team.greet on capabilities.list", async () => (await ids()).includes("team.greet"));
    expect(await (await call("team/greet")).json()).toEqual({ answer: "one" });

    // Watched once the capability imports it, and polled like the capability folders.
    writeFileSync(join(root, "lib", "answer.ts"), 'export const answer = "two";\n');
    await until("the helper's edit served", async () => ((await (await call("team/greet")).json()) as { answer: string }).answer === "two");

    rmSync(join(root, "capabilities", "team.greet.ts"));
    await until("team.greet gone", async () => !(await ids()).includes("team.greet"));
    expect((await call("team/greet")).status).toBe(404);
    expect(logLines.filter((line) => line.startsWith("docket reloaded capabilities"))).toEqual([
      "docket reloaded capabilities: added team.greet",
      "docket reloaded capabilities: changed team.greet",
      "docket reloaded capabilities: removed team.greet",
    ]);
  });
});
