// executions.reconcile end to end: a real server, real workers, a user's capability file with its
// own reconcile(), and every surface — HTTP, the CLI from source, an MCP client, the cockpit form.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { docket, fromSource, oneJsonDocument, removeTempDirs, tempCheckout, writeFiles } from "../cli/_harness.ts";
import { api, pollUntil } from "../cli/_report-support.ts";

/** Writes a marker holding its secret, then loses its connection (throws): a write with an unknown outcome. Its check reads the marker back. */
const PUSH = `import { capability, sensitive } from "docket";
import * as v from "valibot";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export default capability({
  id: "demo.push",
  title: "Push",
  description: "Writes a marker, then fails as if the connection dropped.",
  effect: "write",
  input: v.object({ name: v.string(), token: sensitive(v.string()) }),
  output: v.object({}),
  async handler(input, ctx) {
    writeFileSync(join(ctx.root, input.name), input.token);
    throw new Error("the remote hung up before it answered");
  },
  reconcile(input, ctx) {
    const path = join(ctx.root, input.name);
    if (!existsSync(path)) return { outcome: "not_applied", evidence: { missing: input.name } };
    // Only the real input (never stored: the token is sensitive) matches what the handler wrote.
    const same = readFileSync(path, "utf8") === input.token;
    return { outcome: same ? "applied" : "unknown", evidence: { found: input.name, execution: ctx.execution && ctx.execution.id } };
  },
});
`;

let checkout = "";
let server: DocketServer;
let http: ReturnType<typeof api>;
const ids: Record<string, string> = {};

/** Starts demo.push for `name` and waits for it to fail with an unknown outcome. */
async function unknownEnding(name: string): Promise<string> {
  const started = await http.post("/api/v1/executions/start", { capability: "demo.push", input: { name, token: `secret-${name}` } });
  expect(started.status).toBe(200);
  const id = started.body.execution.id as string;
  const ended = await pollUntil(() => http.get(`/api/v1/executions/get?id=${id}`), (s) => s.state === "failed", `${id} to fail`);
  expect(ended.failure).toMatchObject({ error_code: "internal", outcome_certainty: "unknown", retryability: "manual_reconcile" });
  expect(ended.input).toEqual({ name, token: "[redacted]" });
  return id;
}

beforeAll(async () => {
  checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/demo.push.ts": PUSH });
  registerDocketModules();
  server = await startServer({
    cwd: checkout,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits(),
    capabilityDirs: [],
    token: null,
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: () => undefined,
  });
  http = api(server.url);
  for (const name of ["http", "cli", "mcp", "cockpit"]) ids[name] = await unknownEnding(`marker-${name}`);
});

afterAll(async () => {
  await server.stop();
  removeTempDirs();
});

describe("executions.reconcile against a real server", () => {
  test("POST /api/v1/executions/reconcile without an outcome runs the capability's reconcile() with the real input and records its evidence", async () => {
    const id = ids.http!;
    expect(existsSync(join(checkout, "marker-http"))).toBe(true);
    const refused = await http.post("/api/v1/executions/release", { id });
    expect(refused.status).toBe(400);
    const answer = await http.post("/api/v1/executions/reconcile", { id });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id, state: "failed", reconciled: true, reconciliation: { outcome: "applied", method: "check", actor: { kind: "http" }, evidence: { found: "marker-http", execution: id } } });
    const snapshot = await http.get(`/api/v1/executions/get?id=${id}`);
    expect(snapshot).toMatchObject({ state: "failed", failure: { error_code: "internal" }, reconciliation: { outcome: "applied", method: "check" } });
    const events = await http.get(`/api/v1/executions/events?id=${id}`);
    expect(events.events.map((e: { type: string }) => e.type).slice(-2)).toEqual(["execution.completed", "execution.reconciled"]);
    expect((await http.post("/api/v1/executions/release", { id })).status).toBe(200);

    const again = await http.post("/api/v1/executions/reconcile", { id, outcome: "not_applied" });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ error_code: "invalid_input", context: { reason: "already_reconciled" } });
  });

  test("POST /api/v1/executions/reconcile refuses bad requests as 4xx: a GET, malformed JSON, an unknown outcome, a long note, a known outcome", async () => {
    const get = await fetch(`${server.url}/api/v1/executions/reconcile?id=${ids.cli}`);
    expect(get.status).toBe(405);
    const malformed = await fetch(`${server.url}/api/v1/executions/reconcile`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{nope" });
    expect(malformed.status).toBe(400);
    expect((await http.post("/api/v1/executions/reconcile", { id: ids.cli, outcome: "maybe" })).status).toBe(400);
    expect((await http.post("/api/v1/executions/reconcile", { id: ids.cli, outcome: "applied", note: "x".repeat(5000) })).status).toBe(400);
    expect((await http.post("/api/v1/executions/reconcile", { id: "x-1", outcome: "applied" })).status).toBe(400);
    expect((await http.post("/api/v1/executions/reconcile", { id: "x-20260908T010203Z-0a1b2c3d", outcome: "applied" })).status).toBe(404);
    const done = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 } });
    await pollUntil(() => http.get(`/api/v1/executions/get?id=${done.body.execution.id}`), (s) => s.state === "succeeded", "demonstrate to succeed");
    const known = await http.post("/api/v1/executions/reconcile", { id: done.body.execution.id, outcome: "applied" });
    expect(known.status).toBe(400);
    expect(known.body.error.context.reason).toBe("outcome_known");
    // Nothing above touched the execution the CLI settles next.
    expect((await http.get(`/api/v1/executions/get?id=${ids.cli}`)).reconciliation).toBeUndefined();
  });

  test("docket executions reconcile records a person's outcome and note; show prints it", async () => {
    const id = ids.cli!;
    const both = await docket(fromSource, ["executions", "reconcile", id, "--applied", "--not-applied"], { cwd: checkout });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("contradict");
    const result = await docket(fromSource, ["executions", "reconcile", id, "--not-applied", "--note", "the marker is stale; nothing was pushed"], { cwd: checkout });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`reconciled — ${id} is reconciled as not_applied`);
    const shown = await docket(fromSource, ["executions", "show", id], { cwd: checkout });
    expect(shown.stdout).toMatch(/reconciled as not_applied by hand, by http at/);
    expect(shown.stdout).toContain("note: the marker is stale; nothing was pushed");
    const again = await docket(fromSource, ["executions", "reconcile", id, "--applied", "--format", "json"], { cwd: checkout });
    expect(again.code).toBe(2);
    expect(oneJsonDocument(again.stdout).error).toMatchObject({ error_code: "invalid_input", context: { reason: "already_reconciled" } });
  });

  test("docket_execution_reconcile settles an execution for an agent, in the agent's name", async () => {
    const client = new Client({ name: "reconciling-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", server.url)));
    try {
      const tools = await client.listTools();
      expect(tools.tools.find((t) => t.name === "docket_execution_reconcile")?.annotations).toMatchObject({ readOnlyHint: false });
      const result = (await client.callTool({ name: "docket_execution_reconcile", arguments: { id: ids.mcp, outcome: "applied", note: "verified on the remote" } })) as { isError?: boolean; structuredContent?: any };
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ reconciled: true, reconciliation: { outcome: "applied", method: "manual", actor: { kind: "mcp" }, note: "verified on the remote" } });
      const refused = (await client.callTool({ name: "docket_execution_reconcile", arguments: { id: ids.mcp, outcome: "applied" } })) as { isError?: boolean; structuredContent?: any };
      expect(refused.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  test("the cockpit's execution page offers the reconcile form, refuses it unconfirmed, and shows the reconciliation after", async () => {
    const id = ids.cockpit!;
    const page = await (await fetch(`${server.url}/cockpit/executions/${id}`)).text();
    expect(page).toContain("Outcome unknown: reconcile");
    expect(page).toContain(`action="/cockpit/executions/${id}/reconcile"`);
    expect(page).toContain("Let demo.push check");
    expect(page).toContain("data-confirm=");
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/cockpit/executions/${id}/reconcile`, { method: "POST", redirect: "manual", headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers }, body });
    expect((await post("outcome=applied&note=x")).status).toBe(400);
    expect((await post("confirmed=1&outcome=perhaps")).status).toBe(400);
    expect((await post("confirmed=1&outcome=applied", { Origin: "http://evil.example" })).status).toBe(403);
    const done = await post("confirmed=&confirmed=1&outcome=check&note=checked+from+the+cockpit");
    expect(done.status).toBe(303);
    // The notice is a token this server keeps for that page (cockpit/notices.ts).
    expect(done.headers.get("location")).toMatch(new RegExp(`^/cockpit/executions/${id}\\?notice=[0-9a-f]{16}$`));
    const after = await (await fetch(`${server.url}${done.headers.get("location")}`)).text();
    expect(after).toContain("Reconciled. The execution keeps its state");
    expect(after).toContain("Reconciled: it took effect");
    expect(after).toContain("by its capability&#39;s check");
    expect(after).toContain("checked from the cockpit");
    expect(after).not.toContain("Outcome unknown: reconcile");
    expect((await http.get(`/api/v1/executions/get?id=${id}`)).reconciliation).toMatchObject({ outcome: "applied", method: "check", actor: { kind: "cockpit" } });
  });
});
