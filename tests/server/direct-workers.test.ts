import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { tempCheckout } from "./_support/servers.ts";

// Direct calls run on `direct_workers` workers (docs/limits.md): with one, a slow call holds the
// next until it ends; with more, the next runs beside it (a tester's cockpit Run and MCP tools
// waited behind one slow read).

/** Notes that it began (began-<tag>), then waits until release-<tag> exists. */
const GATE = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "gate.wait", title: "Gate", description: "Waits for its release.", effect: "read", cancellable: true,
  input: v.object({ tag: v.string() }), output: v.object({ tag: v.string() }),
  async handler(input, ctx) {
    writeFileSync(join(ctx.root, "began-" + input.tag), "");
    while (!existsSync(join(ctx.root, "release-" + input.tag))) await new Promise((resolve) => setTimeout(resolve, 5));
    return { tag: input.tag };
  },
});
`;

/** GATE as a write: stopped under way, its effect is unknown. */
const WRITE_GATE = GATE.replace('id: "gate.wait", title: "Gate"', 'id: "gate.write", title: "Write gate"').replace('effect: "read"', 'effect: "write"');

let server: DocketServer | null = null;
let root = "";

afterEach(async () => {
  await server?.stop();
  server = null;
  rmSync(root, { recursive: true, force: true });
});

async function serve(limits: Record<string, unknown>): Promise<DocketServer> {
  registerDocketModules();
  root = tempCheckout();
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "gate.wait.ts"), GATE);
  writeFileSync(join(root, "capabilities", "gate.write.ts"), WRITE_GATE);
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits({ overrides: limits }), capabilityDirs: [], runtime: "bun", log: () => undefined });
  return server;
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (const end = Date.now() + 10_000; !check(); await Bun.sleep(5)) if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
}

const call = (s: DocketServer, tag: string) => fetch(`${s.url}/api/v1/gate/wait?tag=${tag}`).then(async (r) => ({ status: r.status, body: (await r.json()) as { tag?: string } }));

describe("direct_workers", () => {
  test("with two direct workers, a direct call runs beside one that waits", async () => {
    const s = await serve({ direct_workers: 2 });
    const first = call(s, "a");
    await until("call a to begin", () => existsSync(join(root, "began-a")));
    const second = call(s, "b");
    await until("call b to begin while a waits", () => existsSync(join(root, "began-b")));
    writeFileSync(join(root, "release-b"), "");
    expect(await second).toEqual({ status: 200, body: { tag: "b" } });
    expect(existsSync(join(root, "release-a"))).toBe(false);
    writeFileSync(join(root, "release-a"), "");
    expect(await first).toEqual({ status: 200, body: { tag: "a" } });
  });

  test("with one (the default), the next direct call begins only once the first ended", async () => {
    const s = await serve({});
    const first = call(s, "a");
    await until("call a to begin", () => existsSync(join(root, "began-a")));
    const second = call(s, "b");
    writeFileSync(join(root, "release-b"), "");
    writeFileSync(join(root, "release-a"), "");
    expect(await first).toEqual({ status: 200, body: { tag: "a" } });
    expect(await second).toEqual({ status: 200, body: { tag: "b" } });
    // b began after a was released: it had waited for the one direct worker.
    expect(statSync(join(root, "began-b")).mtimeMs).toBeGreaterThanOrEqual(statSync(join(root, "release-a")).mtimeMs);
  });

  test("direct calls cut off by the server stopping are 503 interrupted, not 500 'a bug': the one running by its effect, the one waiting not applied; a write is told to check, not to reconcile an execution it does not have (API tester, session 43)", async () => {
    const s = await serve({});
    const write = (tag: string) => fetch(`${s.url}/api/v1/gate/write`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ tag }) }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: Record<string, unknown> } }));
    const running = write("w");
    await until("the write to begin", () => existsSync(join(root, "began-w")));
    const waiting = call(s, "q");
    await Bun.sleep(50);
    const stopped = s.stop();
    const [w, q] = await Promise.all([running, waiting]);
    await stopped;
    server = null;
    expect(w.status).toBe(503);
    expect(w.body.error).toMatchObject({ error_code: "interrupted", stage: "run", outcome_certainty: "unknown", retryability: "manual_reconcile", message: "gate.write was stopped because the process running it shut down." });
    expect(w.body.error.suggestion).toBe("The work may have been done: check what it changed before you call it again. A direct call leaves no execution to settle; start it with executions.start to have one (an id, its events, and executions.reconcile).");
    expect(q.status).toBe(503);
    expect((q.body as unknown as { error: Record<string, unknown> }).error).toMatchObject({ error_code: "interrupted", stage: "queue", outcome_certainty: "not_applied", retryability: "safe", message: "gate.wait did not start: the process running it shut down first." });
  });

  test("the limit is refused outside 1..8", () => {
    expect(() => resolveLimits({ overrides: { direct_workers: 0 } })).toThrow(/--direct-workers .* must be a whole number from 1 to 8/);
    expect(() => resolveLimits({ overrides: { direct_workers: 9 } })).toThrow(/--direct-workers .* must be a whole number from 1 to 8/);
  });
});
