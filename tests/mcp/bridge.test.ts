// The forwarding `docket mcp` against a stand-in server that behaves as a real one may when a
// cancel comes late: the cases an actual `docket serve` answers too fast to show.
import { afterEach, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { bridgeStdioToHttp } from "../../runtime/mcp/bridge.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

/** A stand-in MCP server that answers `docket_execution_start` only once its cancel has arrived (a cancel that came too late), and says when the bridge cancels the execution itself. */
function lateCancelServer() {
  let startArrived = (): void => undefined;
  const startSeen = new Promise<void>((resolve) => (startArrived = resolve));
  let cancelArrived = (): void => undefined;
  const cancelSeen = new Promise<void>((resolve) => (cancelArrived = resolve));
  let executionCancelled = (_id: string): void => undefined;
  const executionCancel = new Promise<string>((resolve) => (executionCancelled = resolve));
  const headers = { "mcp-session-id": "session-1" };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      if (request.method !== "POST") return new Response(null, { status: 405 });
      const message = await request.json();
      if (message.method === "initialize") {
        return Response.json({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: "stand-in", version: "1" } } }, { headers });
      }
      if (message.method === "notifications/cancelled") cancelArrived();
      if (message.id === undefined) return new Response(null, { status: 202, headers });
      if (message.params?.name === "docket_execution_start") {
        startArrived();
        const started = { jsonrpc: "2.0", id: message.id, result: { content: [], structuredContent: { execution: { id: "ex_late", state: "running" } } } };
        const body = new ReadableStream({
          async start(controller) {
            controller.enqueue(new TextEncoder().encode(": open\n\n"));
            await cancelSeen;
            controller.enqueue(new TextEncoder().encode(`event: message\ndata: ${JSON.stringify(started)}\n\n`));
            controller.close();
          },
        });
        return new Response(body, { headers: { ...headers, "content-type": "text/event-stream" } });
      }
      if (message.params?.name === "docket_execution_cancel") executionCancelled(message.params.arguments.id);
      return Response.json({ jsonrpc: "2.0", id: message.id, result: { content: [] } }, { headers });
    },
  });
  cleanups.push(() => void server.stop(true));
  return { url: new URL("/mcp", server.url), startSeen, executionCancel };
}

/** The bridge on in-memory stdio: each line the agent writes, and the messages it is answered. */
function bridgeTo(url: URL) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const received: any[] = [];
  let wake = (): void => undefined;
  let buffer = "";
  stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      received.push(JSON.parse(buffer.slice(0, end)));
      buffer = buffer.slice(end + 1);
    }
    wake();
  });
  let hangUp = (_why: "signal"): void => undefined;
  const done = bridgeStdioToHttp({ url, token: null, stdin, stdout, hangUp: new Promise((resolve) => (hangUp = resolve)), log: () => undefined });
  cleanups.push(() => hangUp("signal"));
  return {
    send: (message: unknown) => stdin.write(`${JSON.stringify(message)}\n`),
    async next() {
      while (received.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return received.shift();
    },
    done,
  };
}

test("bridgeStdioToHttp sends a cancel before the answer of the start it cancels, relays no answer the server gives it anyway, and cancels the execution that start made", async () => {
  const server = lateCancelServer();
  const agent = bridgeTo(server.url);
  agent.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "agent", version: "1" } } });
  expect((await agent.next()).id).toBe(0);
  agent.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.wait", input: {} } } });
  // The start is on its way (the server has it) when the agent cancels it.
  await server.startSeen;
  agent.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } });

  expect(await server.executionCancel).toBe("ex_late");
  agent.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  // The next answer the agent reads is the list's: the cancelled start's answer never came through.
  expect((await agent.next()).id).toBe(2);
});
