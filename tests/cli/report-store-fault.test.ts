// docket run reporting to a server whose store cannot write (a full disk): the server holds its
// reports until it can, and the run says that, not that the server does not answer (durability
// tester, session 40).
import { afterEach, expect, test } from "bun:test";
import { reportToServer } from "../../runtime/cli/_reporter-to-server.ts";
import { ServerUnreachableError, type ServerClient } from "../../runtime/cli/server-client.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";

const ID = "x-20261203T010203Z-0a1b2c3d";
const EDGE = { actor: { kind: "cli" as const, pid: process.pid }, request_id: "r-fault", trace_id: "0af7651916cd43dd8448eb211c80319c" };

let health: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  health?.stop(true);
  health = null;
});

/** What the run says when its reports go unanswered and the server's /healthz answers `status` with `body`. */
async function saidWhenSilent(status: number, body: unknown): Promise<string> {
  health = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => (new URL(request.url).pathname === "/healthz" ? Response.json(body, { status }) : new Response("no", { status: 404 })) });
  const url = `http://127.0.0.1:${health.port}`;
  const silent: ServerClient = {
    url,
    root: "/nowhere",
    pid: process.pid,
    request: async () => {
      throw new ServerUnreachableError(url, "no answer in time");
    },
    liveChannel: () => ({ url, protocols: [] }),
  };
  const limits = resolveLimits();
  const store = createMemoryStore({ limits });
  store.create({ id: ID, capability: "executions.demonstrate", input: {}, actor: EDGE.actor, repository: "/nowhere", run_id: null, session_key: null, request_id: EDGE.request_id, trace_id: EDGE.trace_id, cancellable: true, effect: "read" });
  store.append(ID, [{ type: "execution.started", data: {} }]);
  const said: string[] = [];
  const reporter = reportToServer({ server: silent, plane: { store, limits, cancel: () => undefined as never }, id: ID, edge: EDGE, say: (line) => said.push(line) });
  try {
    for (let i = 0; i < 300 && said.length === 0; i++) await Bun.sleep(10);
  } finally {
    reporter.stop();
  }
  return said.join("\n");
}

test("a server that does not answer a report while its /healthz says its store cannot write: the run says so", async () => {
  const said = await saidWhenSilent(503, { ok: false, store: { ok: false, reason: "ENOSPC: no space left on device", since: "2026-12-05T20:00:00.000Z" } });
  expect(said).toContain("answers, but cannot take this run's reports now: its store cannot write to disk since 2026-12-05T20:00:00.000Z (ENOSPC: no space left on device), and it holds reports until it can; this run goes on and keeps trying to report to it");
  expect(said).not.toContain("does not answer");
});

test("a server that does not answer and whose /healthz is fine does not answer, as before", async () => {
  expect(await saidWhenSilent(200, { ok: true })).toContain("does not answer (no answer in time); this run goes on");
});
