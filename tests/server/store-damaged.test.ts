import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { useDocketModules } from "../_support/capability-fixtures.ts";

useDocketModules();
const roots: string[] = [];
afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

const serve = (root: string) => startServer({ cwd: root, port: 0, storeKind: "sqlite", limits: resolveLimits({ overrides: {} }), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
const post = (server: DocketServer, path: string, body: unknown) => fetch(server.url + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

/** A checkout whose store holds `count` finished executions of 500 progress events each, the server stopped cleanly (everything in state.db). */
async function storeOf(count: number): Promise<{ root: string; file: string; ids: string[] }> {
  const root = mkdtempSync(join(tmpdir(), "docket-store-damaged-"));
  roots.push(root);
  mkdirSync(join(root, ".git"));
  const server = await serve(root);
  const ids: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
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
  return { root, file: join(root, ".docket", "state.db"), ids };
}

/**
 * Three pages of stored events in the middle of the file: what the damage below overwrites. By
 * the file's own page map (dbstat), not a guessed offset: the middle of the file sometimes held
 * the executions table's pages, which every read needs, and no execution was left sound to follow.
 */
function middleEventPages(file: string): Array<{ at: number; size: number }> {
  const db = new Database(file, { readonly: true });
  try {
    const { page_size: size } = db.query("PRAGMA page_size").get() as { page_size: number };
    const pages = (db.query("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno").all() as Array<{ pageno: number }>).map((row) => row.pageno);
    const middle = Math.floor(pages.length / 2);
    return pages.slice(middle - 1, middle + 2).map((pageno) => ({ at: (pageno - 1) * size, size }));
  } finally {
    db.close();
  }
}

/** Overwrites `bytes` of `file` at `at`, as a failing disk or a stray writer would. */
function damage(file: string, at: number, bytes: Buffer): void {
  const fd = openSync(file, "r+");
  writeSync(fd, bytes, 0, bytes.length, at);
  closeSync(fd);
}

/** Asks every execution's events; for each refused, checks the refusal says the store is damaged (API and cockpit). Answers the statuses. */
async function eventsOfEach(server: DocketServer, file: string, ids: string[]): Promise<number[]> {
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
  return statuses;
}

/** Follows one execution's events live from its start: how the connection ended, and how many events it got. */
function follow(server: DocketServer, id: string): Promise<{ code: number; reason: string; events: number }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${server.url.replace("http", "ws")}/events?execution=${id}&after=0`);
    let events = 0;
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data));
      if (typeof frame.sequence === "number") events++;
      if (frame.type === "execution.completed") socket.close(1000, "done");
    };
    socket.onclose = (event) => resolve({ code: event.code, reason: event.reason, events });
  });
}

test("a store file damaged on disk: reads of the damaged part answer 503 unavailable naming the file and what to do, never a 500 'bug'; health turns red and nothing new is admitted (durability tester, session 40)", async () => {
  const { root, file, ids } = await storeOf(30);
  // Three pages of events in the middle of the file overwritten.
  for (const page of middleEventPages(file)) damage(file, page.at, Buffer.alloc(page.size, 0xa5));
  const server = await serve(root);
  try {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const statuses = await eventsOfEach(server, file, ids);
    expect(statuses).toContain(503);
    // Followed live from its start, a damaged execution's connection is closed saying why; a sound one's is whole.
    expect(await follow(server, ids[statuses.indexOf(503)]!)).toMatchObject({ code: 1011, reason: expect.stringContaining("store file is damaged") });
    expect((await follow(server, ids[statuses.indexOf(200)]!)).events).toBeGreaterThan(500);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(503);
    const refused = await post(server, "/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as any).error).toMatchObject({ error_code: "unavailable", retryability: "never", context: { reason: "store_damaged" } });
  } finally {
    await server.stop();
  }
}, 60_000);

test("bytes damaged inside a stored event (a record SQLite reads, JSON does not) are the store's damage too, not a 500 (checking tester, session 40)", async () => {
  const { root, file, ids } = await storeOf(3);
  // One event's JSON made invalid in place, its length kept: SQLite's pages and records stay sound.
  const bytes = readFileSync(file);
  const at = bytes.indexOf(Buffer.from('{"current":250,'));
  expect(at).toBeGreaterThan(0);
  damage(file, at, Buffer.from("#"));
  const server = await serve(root);
  try {
    const statuses = await eventsOfEach(server, file, ids);
    expect(statuses.filter((status) => status === 503)).toHaveLength(1);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(503);
  } finally {
    await server.stop();
  }
}, 60_000);
