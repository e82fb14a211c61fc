import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { useDocketModules } from "../_support/capability-fixtures.ts";

useDocketModules();
const root = mkdtempSync(join(tmpdir(), "docket-store-damaged-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const serve = () => startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits({ overrides: {} }), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
const post = (server: DocketServer, path: string, body: unknown) => fetch(server.url + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

test("a store file damaged on disk: reads of the damaged part answer 503 unavailable naming the file and what to do, never a 500 'bug'; health turns red and nothing new is admitted (durability tester, session 40)", async () => {
  mkdirSync(join(root, ".git"));
  let server = await serve();
  const ids: string[] = [];
  try {
    for (let i = 0; i < 30; i++) {
      const started = (await (await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: 500 } })).json()) as any;
      ids.push(started.execution.id);
    }
    for (const id of ids) {
      for (let tries = 0; tries < 400; tries++) {
        const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any;
        if (snapshot.state === "succeeded") break;
        await Bun.sleep(25);
      }
    }
  } finally {
    await server.stop();
  }
  // Three pages in the middle of the file overwritten, as a failing disk or a stray writer would.
  const file = join(root, ".docket", "state.db");
  const size = statSync(file).size;
  const fd = openSync(file, "r+");
  const garbage = Buffer.alloc(3 * 16384, 0xa5);
  writeSync(fd, garbage, 0, garbage.length, Math.floor(size / 16384 / 2) * 16384);
  closeSync(fd);

  server = await serve();
  try {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const statuses: number[] = [];
    for (const id of ids) {
      const response = await fetch(`${server.url}/api/v1/executions/events?id=${id}&limit=1000`);
      statuses.push(response.status);
      if (response.status === 200) continue;
      expect(response.status).toBe(503);
      const { error } = (await response.json()) as any;
      expect(error).toMatchObject({ error_code: "unavailable", retryability: "never", context: { reason: "store_damaged" } });
      expect(error.message).toContain(`The execution store ${file} is damaged`);
      expect(error.suggestion).toContain("move it aside");
      const page = await fetch(`${server.url}/cockpit/executions/${id}`);
      expect(page.status).toBe(503);
      expect(await page.text()).toContain("is damaged");
    }
    expect(statuses).toContain(503);
    // Followed live from its start, a damaged execution's connection is closed saying why; a sound one's is whole.
    const follow = (id: string) =>
      new Promise<{ code: number; reason: string; events: number }>((resolve) => {
        const socket = new WebSocket(`${server.url.replace("http", "ws")}/events?execution=${id}&after=0`);
        let events = 0;
        socket.onmessage = (message) => {
          const frame = JSON.parse(String(message.data));
          if (typeof frame.sequence === "number") events++;
          if (frame.type === "execution.completed") socket.close(1000, "done");
        };
        socket.onclose = (event) => resolve({ code: event.code, reason: event.reason, events });
      });
    const damagedId = ids[statuses.indexOf(503)]!;
    const soundId = ids[statuses.indexOf(200)]!;
    expect(await follow(damagedId)).toMatchObject({ code: 1011, reason: expect.stringContaining("store file is damaged") });
    expect((await follow(soundId)).events).toBeGreaterThan(500);
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(503);
    const refused = await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as any).error).toMatchObject({ error_code: "unavailable", retryability: "never", context: { reason: "store_damaged" } });
  } finally {
    await server.stop();
  }
}, 60_000);
