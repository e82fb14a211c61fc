// executions.report at the server's edge, as a hostile sender meets it: the numbers of a reported
// event are held to what a run's own engine makes, and the run-identity limit speaks as a start's.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { resolveLimits, type Limits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { tempCheckout } from "./_support/servers.ts";
import { REPORTED_ID as ID, REPORTED_PID as PID, reportedEvent as event, reportOf as report } from "../_support/reported-run.ts";

let server: DocketServer | null = null;
let root: string | null = null;

afterEach(async () => {
  await server?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
  server = null;
  root = null;
});

async function serve(limits: Partial<Limits> = {}, setUp?: (root: string) => void): Promise<DocketServer> {
  root = realpathSync(tempCheckout());
  setUp?.(root);
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits({ overrides: limits }), capabilityDirs: [], token: null, runtime: "bun", importFile: (path) => import(path), log: () => undefined, watch: false });
  return server;
}

const created = (actor: unknown = { kind: "cli", pid: PID }, run_id: string | null = null) =>
  event(1, "execution.created", { capability: "executions.demonstrate", input: { steps: 1 }, actor, run_id, session_key: null });
const STARTED = event(2, "execution.started", {});

async function post(s: DocketServer, path: string, body: unknown): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const response = await fetch(`${s.url}/api/v1/${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, retryAfter: response.headers.get("Retry-After"), body: await response.json() };
}

const eventsOf = async (s: DocketServer) => ((await (await fetch(`${s.url}/api/v1/executions/events?id=${ID}`)).json()) as any).events ?? [];

describe("executions.report: the numbers of a reported event", () => {
  test("executions.report refuses a number no run makes — a negative progress count or total, a negative duration_ms, a cli pid below 1 — with a 400 naming the field and the rule, and stores none of it", async () => {
    const s = await serve();
    expect((await post(s, "executions/report", report([created(), STARTED]))).status).toBe(200);
    const cases: Array<[unknown[], string, string]> = [
      [[event(3, "execution.progress", { current: 5, total: -1 })], "input.events[0].data.total must be a number of 0 or more, or null when the total is unknown, got -1.", "data.total"],
      [[event(3, "execution.progress", { current: -2 })], "input.events[0].data.current must be a number of 0 or more (a progress count), got -2.", "data.current"],
      [[event(3, "execution.log", { level: "info", message: "m" }), event(4, "execution.completed", { state: "succeeded", output: {}, duration_ms: -100 })], "input.events[1].data.duration_ms must be a number of 0 or more (milliseconds), got -100.", "data.duration_ms"],
      [[event(3, "execution.cancel_requested", { actor: { kind: "cli", pid: -7 } })], "input.events[0].data.actor.pid must be a process id, a whole number from 1, got -7.", "data.actor.pid"],
    ];
    for (const [events, message, field] of cases) {
      const answer = await post(s, "executions/report", report(events));
      expect([field, answer.status]).toEqual([field, 400]);
      expect(answer.body.error.error_code).toBe("invalid_input");
      expect(answer.body.error.message).toBe(`Cannot take the report of ${ID}: ${message}`);
      expect(answer.body.error.context).toMatchObject({ field });
    }
    // A first report with a created event of a pid below 1 is refused before the execution exists.
    const other = "x-20260908T010203Z-0a1b2c3e";
    const first = await post(s, "executions/report", { ...report([{ ...created({ kind: "cli", pid: 0 }), event_id: `${other}#1`, execution_id: other }]), id: other });
    expect(first.status).toBe(400);
    expect(first.body.error.message).toContain("data.actor.pid must be a process id");
    expect((await fetch(`${s.url}/api/v1/executions/get?id=${other}`)).status).toBe(404);
    // Nothing of the refused reports was stored: the execution is where the first report left it.
    expect((await eventsOf(s)).map((e: any) => e.sequence)).toEqual([1, 2]);
    expect(((await (await fetch(`${s.url}/api/v1/executions/get?id=${ID}`)).json()) as any).progress).toBeNull();
  });

  test("executions.report takes what a handler may report: a count above its total, an unknown total, a diagnostic at line 0", async () => {
    const s = await serve();
    const events = [
      created(),
      STARTED,
      event(3, "execution.progress", { current: 7, total: 5 }),
      event(4, "execution.progress", { current: 0, total: null }),
      event(5, "execution.diagnostic", { severity: "warning", message: "at the top", line: 0, column: 0 }),
      event(6, "execution.completed", { state: "succeeded", output: {}, duration_ms: 0 }),
    ];
    const answer = await post(s, "executions/report", report(events));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ through: 6, applied: 6, state: "succeeded" });
  });

  test("ctx.progress reports a negative count as 0 and a negative total as unknown, so a run's reports always pass the server's check", async () => {
    registerDocketModules();
    const s = await serve({}, (checkout) => {
      mkdirSync(join(checkout, "capabilities"));
      writeFileSync(
        join(checkout, "capabilities", "team.backwards.ts"),
        [
          'import { capability } from "docket";',
          'import * as v from "valibot";',
          "export default capability({",
          '  id: "team.backwards", title: "Backwards", description: "Reports negative progress.", effect: "read",',
          "  input: v.object({}), output: v.object({}),",
          "  handler(_input, ctx) {",
          "    ctx.progress.progress(5, -1);",
          "    ctx.progress.progress(-3, 10);",
          "    return {};",
          "  },",
          "});",
          "",
        ].join("\n"),
      );
    });
    const started = await post(s, "executions/start", { capability: "team.backwards", input: {} });
    expect(started.status).toBe(200);
    const id = started.body.execution.id as string;
    let events: any[] = [];
    for (const until = Date.now() + 10_000; Date.now() < until; await Bun.sleep(20)) {
      events = ((await (await fetch(`${s.url}/api/v1/executions/events?id=${id}`)).json()) as any).events;
      if (events.some((e) => e.type === "execution.completed")) break;
    }
    expect(events.filter((e) => e.type === "execution.progress").map((e) => e.data)).toEqual([
      { current: 5, total: null },
      { current: 0, total: 10 },
    ]);
  });
});

describe("the run-identity limit", () => {
  test("a start and a run's report refused for the run-identity limit say the same thing, each with its own way around it, never retryable, with no Retry-After", async () => {
    const s = await serve({ run_identities: 1 });
    expect((await post(s, "executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 }, run_id: "first" })).status).toBe(200);
    const start = await post(s, "executions/start", { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 }, run_id: "second" });
    const run = await post(s, "executions/report", report([created({ kind: "cli", pid: PID }, "third"), STARTED], { run_id: "third", input_hash: "a".repeat(64) }));
    const raise = "or raise the server's limit (docket serve --run-identities, or DOCKET_RUN_IDENTITIES).";
    const expected = (runId: string, without: string) => ({
      error_code: "capacity",
      stage: "admit",
      retryability: "never",
      message: `Cannot record run_id "${runId}": the limit of 1 run identities is reached. ${without}, ${raise}`,
      suggestion: `${without}, ${raise}`,
      context: { limit: 1, run_id: runId },
    });
    expect(start.status).toBe(429);
    expect(start.body.error).toMatchObject(expected("second", "Start without a run_id"));
    expect(run.status).toBe(429);
    expect(run.body.error).toMatchObject(expected("third", "Run without --run-id"));
    // Waiting frees no run identity: no Retry-After, which a client obeying it would retry by for ever (tester, session 34).
    expect([start.retryAfter, run.retryAfter]).toEqual([null, null]);
    expect((await fetch(`${s.url}/api/v1/executions/get?id=${ID}`)).status).toBe(404);
  });
});
