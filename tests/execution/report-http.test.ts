// executions.report over HTTP: validated at the edge like any capability, behind the lease's token.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { REPORTED_ID as ID, REPORTED_PID as PID, reportedEvent as event, reportOf as report } from "../_support/reported-run.ts";

const TOKEN = "report-test-token-0123456789";

let server: DocketServer | null = null;
let root: string | null = null;

afterEach(async () => {
  await server?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
  server = null;
  root = null;
});

async function serve(token: string | null = null): Promise<DocketServer> {
  root = mkdtempSync(join(tmpdir(), "docket-report-"));
  mkdirSync(join(root, ".git"));
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token, runtime: "bun", log: () => undefined });
  return server;
}

const CREATED = event(1, "execution.created", { capability: "executions.demonstrate", input: { steps: 1 }, actor: { kind: "cli", pid: PID }, run_id: null, session_key: null });
const STARTED = event(2, "execution.started", {});

function post(s: DocketServer, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${s.url}/api/v1/executions/report`, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
}

describe("POST /api/v1/executions/report", () => {
  test("executions.report over HTTP takes a report and every projection shows the execution with actor cli", async () => {
    const s = await serve();
    const response = await post(s, report([CREATED, STARTED]));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: ID, through: 2, applied: 2, gap: false, state: "running", ended: false, silence_ms: 30_000 });
    const listed = (await (await fetch(`${s.url}/api/v1/executions`)).json()) as any;
    expect(listed.items.map((e: any) => [e.id, e.actor, e.state])).toEqual([[ID, { kind: "cli", pid: PID }, "running"]]);
    const events = (await (await fetch(`${s.url}/api/v1/executions/events?id=${ID}`)).json()) as any;
    expect(events.events.map((e: any) => [e.sequence, e.type])).toEqual([[1, "execution.created"], [2, "execution.started"]]);
  });

  test("a start of executions.report, or of another capability that never runs as an execution, is refused saying where it can be called (MCP/CLI tester, session 44)", async () => {
    const s = await serve();
    const start = async (capability: string) => {
      const response = await fetch(`${s.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability, input: {} }) });
      expect(response.status).toBe(400);
      return ((await response.json()) as any).error;
    };
    const report = await start("executions.report");
    expect(report.error_code).toBe("not_runnable");
    expect(report.suggestion).toContain("is what docket run sends");
    const list = await start("executions.list");
    // Only where it can be called: no docket run (it starts executions only), no MCP tool it has not (checking tester, session 44).
    expect(list.suggestion).toBe("Call it directly: POST /api/v1/executions/list (docket run starts executions only).");
  });

  test("executions.report refuses a malformed report with 400 invalid_input, never a 500, and loses nothing stored", async () => {
    const s = await serve();
    await post(s, report([CREATED, STARTED]));
    const bad: Array<[unknown, string]> = [
      ['{"id": "x-', "malformed_json"],
      [{}, "input.id"],
      [{ ...report([]), pid: -1 }, "input.pid"],
      [{ ...report([]), pid_namespace: "../../proc" }, "input.pid_namespace"],
      [{ ...report([]), events: "all of them" }, "input.events"],
      [report([event(3, "execution.progress", { current: "three" })]), "input.events[0]"],
      [report([event(3, "execution.step", { id: "s", title: "S" }), event(5, "execution.log", { level: "info", message: "m" })]), "dense"],
      [report([event(3, "execution.started", {})]), "from running to running"],
    ];
    for (const [body, says] of bad) {
      const response = await post(s, body);
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as any;
      expect(error.error_code).toBe("invalid_input");
      expect(JSON.stringify(error)).toContain(says);
    }
    const snapshot = (await (await fetch(`${s.url}/api/v1/executions/get?id=${ID}`)).json()) as any;
    expect(snapshot).toMatchObject({ state: "running", last_sequence: 2 });
  });

  test("executions.report is POST only, and a server with a token requires it as Bearer", async () => {
    const s = await serve(TOKEN);
    expect((await fetch(`${s.url}/api/v1/executions/report`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(405);
    expect((await post(s, report([CREATED]))).status).toBe(401);
    expect((await post(s, report([CREATED]), { Authorization: "Bearer not-the-token-at-all" })).status).toBe(401);
    const answered = await post(s, report([CREATED]), { Authorization: `Bearer ${TOKEN}` });
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ through: 1, state: "queued" });
  });

  test("executions.report answers a report that starts after a gap with 200, gap and through, applying nothing", async () => {
    const s = await serve();
    const response = await post(s, report([STARTED]));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ through: 0, applied: 0, gap: true, state: null });
    expect(((await (await fetch(`${s.url}/api/v1/executions`)).json()) as any).items).toEqual([]);
  });
});
