// The forwarding `docket mcp` against a stand-in server that behaves as a real one may when a
// cancel comes late: the cases an actual `docket serve` answers too fast to show.
import { afterEach, expect, test } from "bun:test";
import { PassThrough, Writable } from "node:stream";
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

/**
 * A stand-in MCP server that opens a session, takes notifications and the session's GET and DELETE,
 * and hands every request to `answer`.
 */
function standIn(sessionId: string, answer: (message: any, headers: Record<string, string>) => Response | Promise<Response>) {
  const headers = { "mcp-session-id": sessionId };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      // The session's end (DELETE) and its stream (GET) need nothing here.
      if (request.method !== "POST") return new Response(null, { status: 200, headers });
      const message = await request.json();
      if (message.method === "initialize") {
        return Response.json({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: "stand-in", version: "1" } } }, { headers });
      }
      if (message.id === undefined) return new Response(null, { status: 202, headers });
      return answer(message, headers);
    },
  });
  cleanups.push(() => void server.stop(true));
  return server;
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

test("bridgeStdioToHttp answers each request once while the agent does not read its stdout: an answer waiting for stdout is no call left unanswered when its stream ends (tester R1)", async () => {
  let listed = 0;
  const server = standIn("session-2", (message, headers) => {
    listed++;
    // An answer on an event stream that ends with it, as the server's are.
    const answer = { jsonrpc: "2.0", id: message.id, result: { tools: [], padding: "x".repeat(200) } };
    return new Response(`event: message\ndata: ${JSON.stringify(answer)}\n\n`, { headers: { ...headers, "content-type": "text/event-stream" } });
  });
  // An agent that stops reading: nothing written leaves stdout until the test lets it.
  const held: Array<() => void> = [];
  const lines: string[] = [];
  const stdout = new Writable({
    highWaterMark: 1024,
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      held.push(done);
    },
  });
  const stdin = new PassThrough();
  let hangUp = (_why: "stdin"): void => undefined;
  const done = bridgeStdioToHttp({ url: new URL("/mcp", server.url), token: null, stdin, stdout, hangUp: new Promise((resolve) => (hangUp = resolve)), log: () => undefined });
  stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "agent", version: "1" } } })}\n`);
  while (lines.length === 0) await Bun.sleep(5);
  held.shift()!();
  // In one write: read together, before stdout is full (after that, stdin waits for it to drain).
  stdin.write(Array.from({ length: 20 }, (_, i) => `${JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/list" })}\n`).join(""));
  // The server answered them all and ended their streams, while stdout still holds the answers.
  while (listed < 20) await Bun.sleep(5);
  await Bun.sleep(400);
  // The agent reads again.
  stdin.end();
  hangUp("stdin");
  while (!(await Promise.race([done.then(() => true), Bun.sleep(5).then(() => false)]))) while (held.length > 0) held.shift()!();
  // What the bridge wrote and stdout still holds reaches the agent as it reads (docket mcp ends stdout, then exits).
  while (held.length > 0 || stdout.writableLength > 0) {
    while (held.length > 0) held.shift()!();
    await Bun.sleep(1);
  }
  const answers = lines.map((line) => JSON.parse(line)).filter((message) => message.id !== 0);
  expect(answers.map((message) => message.id)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  expect(answers.every((message) => message.result !== undefined)).toBe(true);
});

test("bridgeStdioToHttp answers a request that reuses the id of one still waiting -32600, sends it nowhere, and still relays the first one's answer (tester M2)", async () => {
  const calls: unknown[] = [];
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = standIn("session-3", async (message, headers) => {
    calls.push(message.params.arguments.tag);
    // The first call is answered only once the test lets it: it waits while the second comes.
    await released;
    return Response.json({ jsonrpc: "2.0", id: message.id, result: { content: [], structuredContent: { tag: message.params.arguments.tag } } }, { headers });
  });
  const agent = bridgeTo(new URL("/mcp", server.url));
  agent.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "agent", version: "1" } } });
  expect((await agent.next()).id).toBe(0);
  const call = (tag: string) => ({ jsonrpc: "2.0", id: "dup", method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.write", input: {}, tag } } });
  agent.send(call("first"));
  while (calls.length === 0) await Bun.sleep(5);
  agent.send(call("second"));
  const refused = await agent.next();
  expect(refused).toMatchObject({ id: "dup", error: { code: -32600 } });
  expect(refused.error.message).toContain('The request id "dup" is already used by a request of this session that has no answer yet');
  release();
  expect(await agent.next()).toMatchObject({ id: "dup", result: { structuredContent: { tag: "first" } } });
  // Once answered, the id is free again.
  agent.send(call("third"));
  expect(await agent.next()).toMatchObject({ id: "dup", result: { structuredContent: { tag: "third" } } });
  expect(calls).toEqual(["first", "third"]);
});
