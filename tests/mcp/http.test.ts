import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { Hono } from "hono";
import type { BootedPlane } from "../../runtime/boot.ts";
import { createMcpApp } from "../../runtime/mcp/http.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { EVENT_META_KEY } from "../../runtime/mcp/progress-relay.ts";
import { rawRequest } from "../server/_support/http.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { bootTestPlane, capabilityFile, completedOverLive, removeCheckout, serveCheckout, structured, tempCheckout, untilSeen, WAIT, type SeenProgress } from "./_support.ts";

let root: string;
let server: DocketServer;
const clients: Client[] = [];

beforeAll(async () => {
  root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
  server = await serveCheckout(root);
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await server.stop();
  removeCheckout(root);
});

/** An SDK client over Streamable HTTP to `/mcp` of the server. */
async function connect(name: string, url = server.url, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

const INITIALIZE = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
const MCP_HEADERS = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };

/** How a body is sent: with its Content-Length, or chunked (a stream: no length declared). */
type Framing = "sized" | "chunked";

function framed(body: string, framing: Framing): BodyInit {
  if (framing === "sized") return body;
  const bytes = new TextEncoder().encode(body);
  const half = Math.floor(bytes.length / 2);
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.subarray(0, half));
      controller.enqueue(bytes.subarray(half));
      controller.close();
    },
  });
}

describe("MCP over Streamable HTTP at /mcp", () => {
  test("/mcp of docket serve lists the registry's tools, including a capability file of the checkout", async () => {
    const client = await connect("http-agent");
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names.slice(0, 6)).toEqual(["docket_execution_start", "docket_executions", "docket_execution", "docket_execution_events", "docket_execution_cancel", "docket_execution_protocol"]);
    expect(names).toContain("team_greet");
    expect(structured(await client.callTool({ name: "team_greet", arguments: { name: "Grace" } }))).toEqual({ greeting: "Hello, Grace" });
  });

  test("/mcp: a waiting start streams progress, and the execution is in the server's API with actor mcp and the client's name", async () => {
    const client = await connect("http-agent");
    const seen: SeenProgress[] = [];
    const result = await client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 2, delay_ms: 5 }, wait: true } },
      undefined,
      { onprogress: (p) => void seen.push(p as SeenProgress) },
    );
    const { execution } = structured(result);
    expect(execution.state).toBe("succeeded");
    expect(seen.at(-1)).toMatchObject({ progress: 2, total: 2 });
    const listed = (await (await fetch(`${server.url}/api/v1/executions?capability=executions.demonstrate`)).json()) as { items: Array<{ id: string; actor: unknown }> };
    expect(listed.items.find((i) => i.id === execution.id)!.actor).toEqual({ kind: "mcp", client: "http-agent" });
  });

  test("/mcp: cancelling a waiting start cancels the execution on the server", async () => {
    const client = await connect("http-agent");
    const abort = new AbortController();
    let id: string | null = null;
    const call = client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait: true } },
      undefined,
      {
        signal: abort.signal,
        onprogress: (p) => {
          id ??= (p as SeenProgress)._meta![EVENT_META_KEY].execution_id;
          abort.abort();
        },
      },
    );
    await expect(call).rejects.toThrow();
    const end = await completedOverLive(server.url, id!);
    expect(end.data.state).toBe("cancelled");
  });

  test("/mcp ends the event stream of a cancelled call, which gets no answer, for a waiting start and a direct call alike", async () => {
    const waitRoot = tempCheckout({ "capabilities/team.wait.ts": WAIT });
    const waitServer = await serveCheckout(waitRoot);
    try {
      const opened = await fetch(`${waitServer.url}/mcp`, { method: "POST", headers: MCP_HEADERS, body: INITIALIZE });
      await opened.text();
      const session = { ...MCP_HEADERS, "Mcp-Session-Id": opened.headers.get("mcp-session-id")!, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION };
      const post = (message: unknown) => fetch(`${waitServer.url}/mcp`, { method: "POST", headers: session, body: JSON.stringify(message) });
      await (await post({ jsonrpc: "2.0", method: "notifications/initialized" })).text();
      const calls = [
        { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait: true } },
        { name: "team_wait", arguments: {} },
      ];
      for (const [index, params] of calls.entries()) {
        const id = 10 + index;
        const call = await post({ jsonrpc: "2.0", id, method: "tools/call", params });
        expect(call.headers.get("content-type")).toContain("text/event-stream");
        const cancel = await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "the agent changed its mind" } });
        expect(cancel.status).toBe(202);
        // Without the end of its stream, this read would wait for as long as the session lives.
        const body = await call.text();
        expect(body).not.toContain(`"id":${id}`);
      }
      // The cancel still reached the call: the execution ends cancelled.
      const listed = (await (await fetch(`${waitServer.url}/api/v1/executions?capability=executions.demonstrate`)).json()) as { items: Array<{ id: string }> };
      expect((await completedOverLive(waitServer.url, listed.items[0]!.id)).data.state).toBe("cancelled");
    } finally {
      await waitServer.stop();
      removeCheckout(waitRoot);
    }
  }, 30_000);

  test("/mcp: a session ended by the client (DELETE) is gone, and an unknown session is a 404", async () => {
    const client = new Client({ name: "short-lived", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL("/mcp", server.url));
    await client.connect(transport);
    const session = transport.sessionId!;
    expect(session).toBeString();
    await transport.terminateSession();
    await client.close();
    const after = await rawRequest(server.url, "POST", "/mcp", { ...MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION }, JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }));
    expect(after.status).toBe(404);
    expect(JSON.parse(after.body).error.code).toBe(-32001);
  });

  test("/mcp refuses a foreign Origin and a Host that is not an address, like every route", async () => {
    const port = new URL(server.url).port;
    const foreign = await rawRequest(server.url, "POST", "/mcp", { ...MCP_HEADERS, Origin: "http://evil.example" }, INITIALIZE);
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body).error.context.reason).toBe("origin_not_allowed");
    const rebound = await rawRequest(server.url, "POST", "/mcp", { ...MCP_HEADERS, Host: `evil.example:${port}` }, INITIALIZE);
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.context.reason).toBe("host_not_allowed");
    // Another loopback name on the same port may be another program's page (docs/security.md); the server's own origin is let through.
    expect((await rawRequest(server.url, "POST", "/mcp", { ...MCP_HEADERS, Origin: `http://localhost:${port}` }, INITIALIZE)).status).toBe(403);
    const own = await rawRequest(server.url, "POST", "/mcp", { ...MCP_HEADERS, Origin: server.url }, INITIALIZE);
    expect(own.status).toBe(200);
    expect(own.headers["mcp-session-id"]).toBeString();
  });
});

describe("MCP over Streamable HTTP: a client that leaves", () => {
  test.each(["sized", "chunked"] as const)("/mcp: a client that drops its tools/call request (%s body) cancels the direct call, and the direct lane serves the next call", async (framing) => {
    const waitRoot = tempCheckout({ "capabilities/team.wait.ts": WAIT, "capabilities/team.greet.ts": capabilityFile("team.greet") });
    const waitServer = await serveCheckout(waitRoot);
    try {
      const opened = await fetch(`${waitServer.url}/mcp`, { method: "POST", headers: MCP_HEADERS, body: INITIALIZE });
      await opened.text();
      const session = { ...MCP_HEADERS, "Mcp-Session-Id": opened.headers.get("mcp-session-id")!, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION };
      await (await fetch(`${waitServer.url}/mcp`, { method: "POST", headers: session, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();

      // As `curl -m 2` does: the request is sent, then the client gives up on it (no notifications/cancelled).
      const abort = new AbortController();
      const call = fetch(`${waitServer.url}/mcp`, { method: "POST", headers: session, signal: abort.signal, body: framed(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "team_wait", arguments: {} } }), framing) });
      await untilSeen(() => existsSync(join(waitRoot, "started.mark")), "the handler to start");
      abort.abort();
      await call.then((response) => response.text()).catch(() => undefined);
      await untilSeen(() => existsSync(join(waitRoot, "cancelled.mark")), "the handler to see its cancellation");
      const report = await fetch(`${waitServer.url}/api/v1/health/report`);
      expect(report.status).toBe(200);
    } finally {
      await waitServer.stop();
      removeCheckout(waitRoot);
    }
  }, 30_000);
});

describe("MCP over Streamable HTTP: requests that do not fit", () => {
  /** Posts one JSON-RPC message to /mcp of the server and returns the one it answers, read from JSON or an event stream. */
  async function post(message: unknown, session?: string, framing: Framing = "sized"): Promise<{ headers: Headers; answer: any }> {
    const headers: Record<string, string> = { ...MCP_HEADERS, ...(session ? { "Mcp-Session-Id": session, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION } : {}) };
    const response = await fetch(new URL("/mcp", server.url), { method: "POST", headers, body: framed(JSON.stringify(message), framing) });
    const text = await response.text();
    const json = response.headers.get("content-type")?.includes("text/event-stream") ? text.split("\n").find((line) => line.startsWith("data: "))!.slice(6) : text;
    return { headers: response.headers, answer: JSON.parse(json) };
  }

  test("/mcp answers params that do not fit (tools/call arguments not an object or no name, a task, an initialize without params) with -32602 naming what is wrong", async () => {
    const session = (await post(JSON.parse(INITIALIZE))).headers.get("mcp-session-id")!;
    expect(session).toBeString();
    await fetch(new URL("/mcp", server.url), { method: "POST", headers: { ...MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION }, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });

    const notAnObject = (await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "team_greet", arguments: ["Ada"] } }, session)).answer;
    expect(notAnObject).toMatchObject({ id: 2, error: { code: -32602 } });
    expect(notAnObject.error.message).toContain("params.arguments must be an object, got an array");
    expect(notAnObject.error.message).not.toContain("MCP error");
    const noName = (await post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: { name: "Ada" } } }, session)).answer;
    expect(noName).toMatchObject({ id: 3, error: { code: -32602 } });
    expect(noName.error.message).toContain("params.name must be a string, got nothing");
    const task = (await post({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" }, task: { ttl: 1000 } } }, session)).answer;
    expect(task).toMatchObject({ id: 6, error: { code: -32602 } });
    expect(task.error.message).toContain("params.task asks to run the request as an MCP task, which docket does not offer");
    // An initialize that does not fit is said so, not taken for a request without a session ("Server not initialized").
    const noParams = (await post({ jsonrpc: "2.0", id: 7, method: "initialize" })).answer;
    expect(noParams).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(noParams.error.message).toStartWith("Invalid params of initialize: params must be an object, got nothing. Send params as {");
    const badVersion = (await post({ jsonrpc: "2.0", id: 8, method: "initialize", params: { protocolVersion: 5, capabilities: {}, clientInfo: { name: "raw", version: "1" } } })).answer;
    expect(badVersion).toMatchObject({ id: 8, error: { code: -32602 } });
    expect(badVersion.error.message).toContain("params.protocolVersion must be a string, got 5");
    const badUri = (await post({ jsonrpc: "2.0", id: 4, method: "resources/read", params: { uri: 42 } }, session)).answer;
    expect(badUri).toMatchObject({ id: 4, error: { code: -32602 } });
    expect(badUri.error.message).toContain("params.uri must be a string, got 42");
    // The session goes on: a call that fits is answered.
    const fits = (await post({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }, session)).answer;
    expect(fits.result.structuredContent).toEqual({ greeting: "Hello, Ada" });
  });

  test.each(["sized", "chunked"] as const)("/mcp answers a message that is not one as stdio does: params by position -32602, a batch or a bad _meta -32600 naming it, a missing session header named (tester R), for a %s body", async (framing) => {
    const send = (message: unknown, session?: string) => post(message, session, framing);
    const session = (await send(JSON.parse(INITIALIZE))).headers.get("mcp-session-id")!;
    const byPosition = (await send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: [1] }, session)).answer;
    expect(byPosition).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(byPosition.error.message).toContain("take params by name");
    for (const batch of [[], [{ jsonrpc: "2.0", id: 8, method: "tools/list" }, { jsonrpc: "2.0", id: 9, method: "tools/list" }], [{ jsonrpc: "2.0", id: 8, method: "ping" }, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }]]) {
      const refused = await send(batch, session);
      expect(refused.answer).toMatchObject({ id: null, error: { code: -32600 } });
      expect(refused.answer.error.message).toContain("a batch (a JSON array) is not taken: MCP sends one message per request");
    }
    const meta = (await send({ jsonrpc: "2.0", id: 10, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" }, _meta: 1 } }, session)).answer;
    expect(meta).toMatchObject({ id: 10, error: { code: -32600 } });
    expect(meta.error.message).toContain("params._meta");
    const version = (await send({ jsonrpc: "1.0", id: 13, method: "ping" }, session)).answer;
    expect(version).toMatchObject({ id: 13, error: { code: -32600 } });
    expect(version.error.message).toContain('"jsonrpc" must be "2.0", got "1.0"');
    const noSession = (await send({ jsonrpc: "2.0", id: 11, method: "tools/list" })).answer;
    expect(noSession).toMatchObject({ id: 11, error: { code: -32000 } });
    expect(noSession.error.message).toContain("no Mcp-Session-Id header");
    for (const method of ["GET", "DELETE"]) {
      const bare = await fetch(new URL("/mcp", server.url), { method, headers: { Accept: "application/json, text/event-stream" } });
      expect(bare.status).toBe(400);
      expect(((await bare.json()) as any).error.message).toContain(`a ${method} of /mcp needs the Mcp-Session-Id header`);
    }
    // The session goes on.
    expect((await send({ jsonrpc: "2.0", id: 12, method: "tools/list" }, session)).answer.result.tools.length).toBeGreaterThan(0);
  });

  test.each(["sized", "chunked"] as const)("/mcp answers a %s body over its bound 413 naming what to do, and serves on", async (framing) => {
    const limits = resolveLimits();
    const large = JSON.stringify({ ...JSON.parse(INITIALIZE), padding: "x".repeat(limits.input_bytes + 128 * 1024) });
    const response = await fetch(new URL("/mcp", server.url), { method: "POST", headers: MCP_HEADERS, body: framed(large, framing) });
    expect(response.status).toBe(413);
    const answer = (await response.json()) as { error: { code: number; message: string } };
    expect(answer.error.message).toContain("Payload Too Large");
    expect(answer.error.message).toContain("Send a smaller input");
    expect((await post(JSON.parse(INITIALIZE))).answer.result.serverInfo.name).toBe("docket");
  });

  test("/mcp answers a compressed body 415 naming its Content-Encoding, instead of calling it malformed JSON", async () => {
    const response = await fetch(new URL("/mcp", server.url), { method: "POST", headers: { ...MCP_HEADERS, "Content-Encoding": "gzip" }, body: Bun.gzipSync(new TextEncoder().encode(INITIALIZE)) });
    expect(response.status).toBe(415);
    expect(response.headers.get("accept-encoding")).toBe("identity");
    const answer = (await response.json()) as { id: unknown; error: { code: number; message: string } };
    expect(answer).toMatchObject({ id: null, error: { code: -32600 } });
    expect(answer.error.message).toContain('Content-Encoding "gzip"');
    expect(answer.error.message).toContain("send it uncompressed");
  });

  test("/mcp answers a body said to be in a charset other than UTF-8 415 naming it, instead of reading it as UTF-8 (tester H)", async () => {
    const response = await fetch(new URL("/mcp", server.url), { method: "POST", headers: { ...MCP_HEADERS, "Content-Type": "application/json; charset=latin1" }, body: INITIALIZE });
    expect(response.status).toBe(415);
    const answer = (await response.json()) as { id: unknown; error: { code: number; message: string } };
    expect(answer).toMatchObject({ id: null, error: { code: -32600 } });
    expect(answer.error.message).toContain('charset="latin1"');
    // UTF-8 named, or a parameter that only holds "charset=" inside its quotes: read as ever.
    for (const type of ["application/json; charset=UTF-8", 'application/json; profile="a;charset=x"']) {
      expect((await fetch(new URL("/mcp", server.url), { method: "POST", headers: { ...MCP_HEADERS, "Content-Type": type }, body: INITIALIZE })).status).toBe(200);
    }
  });
});

describe("MCP over Streamable HTTP with a token", () => {
  let tokenRoot: string;
  let guarded: DocketServer;
  const token = "mcp-test-token-0123456789";

  beforeAll(async () => {
    tokenRoot = tempCheckout();
    guarded = await serveCheckout(tokenRoot, { token });
  });

  afterAll(async () => {
    await guarded.stop();
    removeCheckout(tokenRoot);
  });

  test("/mcp requires the server's token as a Bearer header when the server has one", async () => {
    await expect(connect("no-token", guarded.url)).rejects.toThrow(/401|token/i);
    const client = await connect("with-token", guarded.url, { Authorization: `Bearer ${token}` });
    expect((await client.listTools()).tools.length).toBeGreaterThan(6);
  });
});

describe("createMcpApp sessions", () => {
  let planeRoot: string;
  let plane: BootedPlane;

  beforeAll(async () => {
    planeRoot = tempCheckout();
    plane = await bootTestPlane(planeRoot);
  });

  afterAll(async () => {
    await plane.close();
    removeCheckout(planeRoot);
  });

  /** An MCP app of at most `maxSessions` sessions, and SDK clients whose requests go straight to it (no socket, the same Request/Response). */
  function sessionsApp(maxSessions: number) {
    const app = new Hono().route("/mcp", createMcpApp(plane.engine, { maxSessions }));
    const fetchApp = async (url: string | URL, init?: RequestInit) => app.fetch(new Request(url, init));
    const open = async (name: string) => {
      const client = new Client({ name, version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL("http://127.0.0.1/mcp"), { fetch: fetchApp }));
      clients.push(client);
      return client;
    };
    return { fetchApp, open };
  }

  test("createMcpApp keeps at most maxSessions sessions and closes the least recently used first", async () => {
    const { fetchApp, open } = sessionsApp(2);
    const first = await open("first");
    const second = await open("second");
    // A request without a session that is no initialize makes no room: nobody's session is closed for it.
    const stray = await fetchApp("http://127.0.0.1/mcp", { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }) });
    expect(stray.status).toBeGreaterThanOrEqual(400);
    expect((await second.listTools()).tools.length).toBeGreaterThan(6);
    await first.listTools(); // first is now the most recently used
    await open("third");
    expect((await first.listTools()).tools.length).toBeGreaterThan(6);
    await expect(second.listTools()).rejects.toThrow(/404|Session not found/);
  });

  test("a call answered as an event stream opens it with a comment at once, so a client waiting for its headers (docket mcp relaying in order) does not wait for the call", async () => {
    const app = new Hono().route("/mcp", createMcpApp(plane.engine));
    const post = (body: unknown, session?: string) =>
      app.fetch(
        new Request("http://127.0.0.1/mcp", {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...(session ? { "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18" } : {}) },
          body: JSON.stringify(body),
        }),
      );
    const initialized = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    const session = initialized.headers.get("mcp-session-id")!;
    await initialized.text();
    await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session);
    const call = await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 3, delay_ms: 100 }, wait: true } } }, session);
    expect(call.headers.get("content-type")).toContain("text/event-stream");
    const reader = call.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe(": open\n\n");
    // The answer follows on the same stream.
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toContain('"id":2');
    expect(rest).toContain("succeeded");
  });

  test("/mcp answers a request that reuses the id of one still waiting -32600 and runs nothing of it; the first is answered on its own stream, and the id is free again after (tester)", async () => {
    const post = (body: unknown, session?: string) =>
      fetch(`${server.url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, ...(session ? { "Mcp-Session-Id": session, "Mcp-Protocol-Version": LATEST_PROTOCOL_VERSION } : {}) }, body: JSON.stringify(body) });
    const opened = await post(JSON.parse(INITIALIZE));
    const session = opened.headers.get("mcp-session-id")!;
    await opened.text();
    await (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session)).text();
    const executions = async () => ((await (await fetch(`${server.url}/api/v1/executions/list?capability=executions.demonstrate`)).json()) as { items: Array<{ input: { steps: number } }> }).items;
    const start = (steps: number) => ({ jsonrpc: "2.0", id: "dup", method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps, delay_ms: 150 }, wait: true } } });
    const first = post(start(3), session);
    await Bun.sleep(100);
    // Sent while the first waits, with its id: refused, and no execution of it is made.
    const second = await post(start(7), session);
    expect(second.status).toBe(400);
    const refused = (await second.json()) as { id: string; error: { code: number; message: string } };
    expect(refused).toMatchObject({ id: "dup", error: { code: -32600 } });
    expect(refused.error.message).toContain("already used by a request of this session that has no answer yet");
    // An initialize with that id too: answered with the session's result, it was a second answer to "dup" (checking tester).
    const initialize = await post({ ...JSON.parse(INITIALIZE), id: "dup" }, session);
    expect(initialize.status).toBe(400);
    expect(await initialize.json()).toMatchObject({ id: "dup", error: { code: -32600 } });
    // The first is answered on its own stream, as itself.
    const answer = await (await first).text();
    const message = JSON.parse(answer.split("\n").find((line) => line.startsWith("data: "))!.slice(6));
    expect(message).toMatchObject({ id: "dup", result: { structuredContent: { execution: { state: "succeeded", input: { steps: 3 } } } } });
    expect((await executions()).some((execution) => execution.input.steps === 7)).toBe(false);
    // Answered, its id may be used again.
    const again = await (await post(start(2), session)).text();
    expect(JSON.parse(again.split("\n").find((line) => line.startsWith("data: "))!.slice(6))).toMatchObject({ id: "dup", result: { structuredContent: { execution: { state: "succeeded" } } } });
  });

  test("/mcp answers a second initialize on a session with that session's own result, its id kept: the session is negotiated once, as docket mcp answers it (checking tester)", async () => {
    const post = (body: unknown, session?: string) =>
      fetch(`${server.url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, ...(session ? { "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-03-26" } : {}) }, body: JSON.stringify(body) });
    const initialize = (id: number, protocolVersion: string, name: string) => ({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo: { name, version: "1" } } });
    const opened = await post(initialize(1, "2025-03-26", "a"));
    const session = opened.headers.get("mcp-session-id")!;
    const first = JSON.parse((await opened.text()).split("\n").find((line) => line.startsWith("data: "))!.slice(6));
    expect(first.result.protocolVersion).toBe("2025-03-26");
    const again = await post(initialize(2, "2024-11-05", "b"), session);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ jsonrpc: "2.0", id: 2, result: first.result });
  });

  test("a session whose client waits for an answer is never the one closed; with every session waiting, a new one is refused 503", async () => {
    const { fetchApp, open } = sessionsApp(2);
    const waitingCall = (client: Client) => client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 4, delay_ms: 150 }, wait: true } }, undefined, { timeout: 20_000 });
    const busy = await open("busy");
    const waiting = waitingCall(busy);
    await Bun.sleep(100);
    const idle = await open("idle");
    await idle.listTools();
    // The least recently used is the busy one: the idle one goes instead, and the call is answered.
    await open("third");
    await expect(idle.listTools()).rejects.toThrow(/404|Session not found/);
    expect((await waiting).isError).toBeFalsy();

    const [a, b] = [await open("a"), await open("b")];
    const calls = [waitingCall(a), waitingCall(b)];
    await Bun.sleep(100);
    const refused = await fetchApp("http://127.0.0.1/mcp", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "late", version: "1" } } }),
    });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as any).error.message).toContain("are waiting for answers");
    for (const call of calls) expect((await call).isError).toBeFalsy();
  });
});
