// docs/protocol.md, "Servers of another version": a run reports to a server of an earlier docket
// that does not know a field the run can do without.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reportToServer } from "../../runtime/cli/_reporter-to-server.ts";
import { serverClient, type ServerClient } from "../../runtime/cli/server-client.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { ownPidNamespace } from "../../runtime/server/lease.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";

const ID = "x-20261203T010203Z-0a1b2c3d";
const EDGE = { actor: { kind: "cli" as const, pid: process.pid }, request_id: "r-skew", trace_id: "0af7651916cd43dd8448eb211c80319c" };

let server: DocketServer | null = null;
let root: string | null = null;

afterEach(async () => {
  await server?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
  server = null;
  root = null;
});

/**
 * A client of a real server that answers like a server of an earlier docket: a report naming a
 * field of `unknown` is refused as that server's input check refuses it (engine.ts, unknown_fields).
 */
function earlierServer(real: ServerClient, unknown: string[], bodies: unknown[]): ServerClient {
  return {
    ...real,
    async request(method, path, options = {}) {
      const body = options.body as Record<string, unknown>;
      bodies.push(structuredClone(body));
      const named = unknown.filter((field) => field in body);
      if (named.length === 0) return real.request(method, path, options);
      const failure = buildFailure({
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot call executions.report: its input has no field ${named.join(", no field ")}; the built-ins that answer about the server never answer with part of the question left out.`,
        context: { reason: "unknown_fields", fields: named },
        request_id: EDGE.request_id,
        trace_id: EDGE.trace_id,
      });
      return { ok: false, status: 400, failure };
    },
  };
}

async function setup() {
  root = mkdtempSync(join(tmpdir(), "docket-skew-"));
  mkdirSync(join(root, ".git"));
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token: null, runtime: "bun", log: () => undefined });
  const limits = resolveLimits();
  const store = createMemoryStore({ limits });
  store.create({ id: ID, capability: "executions.demonstrate", input: { steps: 1 }, actor: EDGE.actor, repository: root, run_id: null, session_key: null, request_id: EDGE.request_id, trace_id: EDGE.trace_id, cancellable: true, effect: "read" });
  store.append(ID, [{ type: "execution.started", data: {} }]);
  const real = serverClient({ url: server.url, pid: process.pid, root, token: null, started_at: new Date().toISOString(), pid_namespace: ownPidNamespace() });
  return { store, limits, real };
}

const held = async (url: string) => (await (await fetch(`${url}/api/v1/executions/get?id=${ID}`)).json()) as { state?: string; last_sequence?: number };

describe("docket run reporting to a server of an earlier docket", () => {
  test("report refused for pid_namespace alone is sent again without it, and every later report leaves it out: the server holds the run", async () => {
    const { store, limits, real } = await setup();
    const bodies: Array<Record<string, unknown>> = [];
    const said: string[] = [];
    const reporter = reportToServer({ server: earlierServer(real, ["pid_namespace"], bodies), plane: { store, limits, cancel: () => undefined as never }, id: ID, edge: EDGE, say: (line) => said.push(line) });
    try {
      store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: null, duration_ms: 1 } }]);
      for (let i = 0; i < 200 && (await held(server!.url)).state !== "succeeded"; i++) await Bun.sleep(10);
      expect(await held(server!.url)).toMatchObject({ state: "succeeded", last_sequence: 3 });
    } finally {
      reporter.stop();
    }
    // This machine names its pid namespace (Linux): the first report carried it, and was refused.
    expect(bodies[0]).toHaveProperty("pid_namespace");
    expect(bodies.slice(1).length).toBeGreaterThan(0);
    for (const body of bodies.slice(1)) expect(body).not.toHaveProperty("pid_namespace");
    expect(said.join("\n")).not.toContain("refused");
  });

  test("report refused for a field the run cannot do without is a refusal as before, never sent again stripped", async () => {
    const { store, limits, real } = await setup();
    const bodies: Array<Record<string, unknown>> = [];
    const reporter = reportToServer({ server: earlierServer(real, ["pid_namespace", "cancellable"], bodies), plane: { store, limits, cancel: () => undefined as never }, id: ID, edge: EDGE, say: () => undefined });
    try {
      const first = await reporter.first;
      expect(first).toMatchObject({ kind: "refused", failure: { error_code: "invalid_input", context: { fields: ["pid_namespace", "cancellable"] } } });
    } finally {
      reporter.stop();
    }
    expect(bodies).toHaveLength(1);
    expect((await fetch(`${server!.url}/api/v1/executions/get?id=${ID}`)).status).toBe(404);
  });
});
