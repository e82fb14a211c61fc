import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootPlane } from "../../runtime/boot.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { useDocketModules } from "../_support/capability-fixtures.ts";

// A lane whose workers stop being able to start (no threads or memory left, say) while the server
// runs: /healthz and health.report say so, its tasks fail at once, and it runs again once a worker
// starts (docs/containment.md).

const EXITS = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "test.exits",
  title: "Exits",
  description: "Ends its worker's thread.",
  effect: "write",
  input: v.object({}),
  output: v.object({}),
  handler() {
    process.exit(3);
  },
});
`;

let root: string;
let marker: string;
let server: DocketServer;
const logged: string[] = [];

const post = (path: string, body: unknown) => fetch(server.url + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

async function until(probe: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

async function finished(id: string): Promise<any> {
  let snapshot: any;
  await until(async () => ["succeeded", "failed", "cancelled"].includes((snapshot = await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()).state), `${id} to end`);
  return snapshot;
}

beforeAll(async () => {
  useDocketModules();
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-worker-fault-")));
  mkdirSync(join(root, ".git"));
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "test.exits.ts"), EXITS);
  marker = join(root, "workers-broken");
  process.env.DOCKET_TEST_BROKEN_WORKERS = marker;
  server = await startServer({
    cwd: root,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({ overrides: { max_concurrent: 1 } }),
    capabilityDirs: [],
    runtime: "bun",
    mounts: defaultMounts,
    logFile: false,
    log: (line) => logged.push(line),
    workerUrl: new URL("../worker/fixtures/worker-entry-while-broken.ts", import.meta.url),
    boot: (options) => bootPlane({ ...options, workerRestartAfterMs: 300 }),
  });
});

afterAll(async () => {
  await server?.stop();
  delete process.env.DOCKET_TEST_BROKEN_WORKERS;
  rmSync(root, { recursive: true, force: true });
});

describe("a lane with no worker", () => {
  test("/healthz is 503 naming the lane, its tasks fail unavailable at once, and all is well again once a worker starts", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // From now on no worker can start; the handler ends its own, so its replacement must start.
    writeFileSync(marker, "");
    const lost = await finished(((await (await post("/api/v1/executions/start", { capability: "test.exits", input: {} })).json()) as any).execution.id);
    expect(lost.state).toBe("failed");
    await until(async () => (await fetch(`${server.url}/healthz`)).status === 503, "/healthz to say the lane has no worker");

    const health = (await (await fetch(`${server.url}/healthz`)).json()) as any;
    expect(health).toMatchObject({ ok: false, workers: { ok: false, lanes: ["execution"], reason: expect.stringContaining("failed to start 3 times in a row") } });
    expect(health.workers.since).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(health.store).toBeUndefined();
    expect(JSON.stringify(health)).not.toContain(root);
    expect(logged.join("\n")).toContain("An execution worker failed to start 3 times in a row");

    // Its tasks fail at once, never begun, nothing applied.
    const refused = await finished(((await (await post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } })).json()) as any).execution.id);
    expect(refused.state).toBe("failed");
    expect(refused.failure).toMatchObject({ error_code: "unavailable", stage: "queue", outcome_certainty: "not_applied", retryability: "after_delay", context: { reason: "no_worker" } });

    // health.report (a direct call: its lane still runs) names it as an error.
    const report = (await (await post("/api/v1/health/report", {})).json()) as any;
    expect(report.ok).toBe(false);
    expect(report.workers).toMatchObject({ execution: 0, direct: 1, fault: { lanes: ["execution"], since: health.workers.since } });
    expect(report.checks.find((c: any) => c.id === "workers")).toMatchObject({ ok: false });

    // Threads can start again: the lane comes back by itself.
    rmSync(marker);
    await until(async () => (await fetch(`${server.url}/healthz`)).status === 200, "the lane to start a worker again");
    expect(logged.join("\n")).toMatch(/An execution worker started again/);
    const ran = await finished(((await (await post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } })).json()) as any).execution.id);
    expect(ran.state).toBe("succeeded");
    const healthy = (await (await post("/api/v1/health/report", {})).json()) as any;
    expect(healthy.checks.find((c: any) => c.id === "workers")).toMatchObject({ ok: true, message: "1 execution worker(s), 1 direct worker(s)" });
  }, 30_000);
});

describe("a boot whose workers cannot start", () => {
  test("fails, and leaves nothing behind trying to start them again", async () => {
    const bootRoot = realpathSync(mkdtempSync(join(tmpdir(), "docket-worker-fault-boot-")));
    mkdirSync(join(bootRoot, ".git"));
    const bootMarker = join(bootRoot, "workers-broken");
    writeFileSync(bootMarker, "");
    process.env.DOCKET_TEST_BROKEN_WORKERS = bootMarker;
    const lines: string[] = [];
    try {
      await expect(
        bootPlane({
          cwd: bootRoot,
          storeKind: "sqlite",
          limits: resolveLimits({ overrides: { max_concurrent: 2 } }),
          importFile: (path) => import(path),
          workerUrl: new URL("../worker/fixtures/worker-entry-while-broken.ts", import.meta.url),
          workerRestartAfterMs: 50,
          log: (line) => lines.push(line),
        }),
      ).rejects.toThrow(/could not start/);
      // Workers could start now: a pool left behind would start them within its 50 ms wait.
      rmSync(bootMarker);
      await Bun.sleep(500);
      expect(lines.join("\n")).toContain("failed to start 3 times in a row");
      // The boot fails: its log does not promise another try.
      expect(lines.join("\n")).toContain("giving up its start");
      expect(lines.join("\n")).not.toContain("trying again");
      expect(lines.join("\n")).not.toContain("started again");
    } finally {
      process.env.DOCKET_TEST_BROKEN_WORKERS = marker;
      rmSync(bootRoot, { recursive: true, force: true });
    }
  }, 30_000);
});
