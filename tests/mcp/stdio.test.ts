import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { JSONRPCMessageSchema, LATEST_PROTOCOL_VERSION, ToolListChangedNotificationSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { isProcessAlive } from "../../runtime/server/lease.ts";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { EVENT_META_KEY } from "../../runtime/mcp/progress-relay.ts";
import { fromSource, spawnDocket, watchStream } from "../cli/_harness.ts";
import { BUN, FROM_SOURCE, capabilityFile, completedOverLive, removeCheckout, serveCheckout, structured, tempCheckout, untilSeen, WAIT, waitedExecution, type SeenProgress } from "./_support.ts";

/** `docket mcp` as an agent runs it: a child on stdio, with what it says on stderr and every client error kept. */
interface Agent {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  /** Errors of the client: a line on stdout that is not a JSON-RPC message lands here. */
  errors: Error[];
}

const cleanups: Array<() => Promise<void> | void> = [];

/**
 * The client's errors but one: SDK 1.x clients handle a notification a microtask later than a
 * response, so a last progress notification read from the pipe in the same chunk as the answer
 * is reported as "for an unknown token" (typescript-sdk issue 2580), a race no server can avoid.
 * Anything else (a line on stdout that is not JSON-RPC, say) stays.
 */
function protocolErrors(agent: Agent): string[] {
  return agent.errors.map((e) => e.message).filter((m) => !m.startsWith("Received a progress notification for an unknown token"));
}

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function startAgent(root: string, name: string): Promise<Agent> {
  const transport = new StdioClientTransport({ command: BUN, args: [...FROM_SOURCE.slice(1), "mcp"], cwd: root, stderr: "pipe" });
  let stderr = "";
  transport.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name, version: "1.0.0" });
  const errors: Error[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(transport);
  const pid = transport.pid!;
  cleanups.push(async () => {
    await client.close();
    // The child ends when its stdin closes; this only guards against a test that failed midway.
    if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
  });
  return { client, transport, stderr: () => stderr, errors };
}

/** `docket mcp` driven line by line, as a careless or hostile agent writes: each line it is sent, and what it answers in order. */
interface RawAgent {
  send(line: string): void;
  /** Ends the agent's side of stdin, as an agent that hung up after its last request does. */
  closeStdin(): void;
  /** The next message docket mcp wrote to stdout; a line that is not JSON fails the test. */
  next(): Promise<any>;
  pid: number;
  /** What docket mcp wrote to stderr, once it has exited. */
  stderrAtExit(): Promise<string>;
}

/** `docket mcp` over a checkout, its initialize sent and answered; the agent holds its stdout's reader, to close it. */
async function leavingAgent(root: string) {
  const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
  const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
  send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "leaving", version: "1" } } });
  const reader = child.stdout.getReader();
  await reader.read();
  return { child, send, reader };
}

async function startRawAgent(root: string, { initialize = true } = {}): Promise<RawAgent> {
  const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
  const received: any[] = [];
  let wake = (): void => undefined;
  let ended = false;
  const stderr = new Response(child.stderr).text();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of child.stdout) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 1);
        received.push(JSON.parse(line));
      }
      wake();
    }
    ended = true;
    wake();
  })();
  const agent: RawAgent = {
    pid: child.pid,
    stderrAtExit: async () => {
      await child.exited;
      return await stderr;
    },
    send(line) {
      child.stdin.write(`${line}\n`);
      child.stdin.flush();
    },
    closeStdin() {
      child.stdin.end();
    },
    async next() {
      while (received.length === 0) {
        if (ended) throw new Error("docket mcp closed its stdout");
        await new Promise<void>((resolve) => (wake = resolve));
      }
      return received.shift();
    },
  };
  if (!initialize) return agent;
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
  expect((await agent.next()).result.serverInfo.name).toBe("docket");
  agent.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  return agent;
}

/**
 * A request before initialize is refused -32600 and runs nothing, a ping is answered, and the
 * session then begins as usual: the same whether docket mcp stands alone or forwards (tester, session 32).
 */
async function expectRequestsBeforeInitializeRefused(root: string): Promise<void> {
  const agent = await startRawAgent(root, { initialize: false });
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "executions.demonstrate" } } }));
  const refused = await agent.next();
  expect(refused).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32600 } });
  expect(refused.error.message).toBe('Invalid Request: "tools/call" came before initialize. An MCP session begins with an initialize request (then notifications/initialized): send it first, then this request again.');
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }));
  expect(await agent.next()).toMatchObject({ jsonrpc: "2.0", id: 2, result: {} });
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
  expect((await agent.next()).result.serverInfo.name).toBe("docket");
  agent.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }));
  expect((await agent.next()).result.structuredContent).toEqual({ greeting: "Hello, Ada" });
  // The start refused before initialize made no execution, here or on the server.
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "docket_executions", arguments: {} } }));
  expect((await agent.next()).result.structuredContent.items).toEqual([]);
}

const NOISY = capabilityFile("team.noisy", {
  description: "Prints to stdout, as careless code does.",
  input: "v.object({})",
  output: "v.object({ ok: v.boolean() })",
  body: 'console.log("noise from console.log"); process.stdout.write("noise from stdout.write\\n"); return { ok: true };',
});

/** `docket serve` in `root`, serving; ended at cleanup even if a test froze it (SIGSTOP). */
async function serveToFreeze(root: string) {
  const server = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: root });
  cleanups.push(() => {
    if (!isProcessAlive(server.pid!)) return;
    server.kill("SIGCONT");
    server.kill("SIGKILL");
  });
  await watchStream(server.stderr!).until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
  return server;
}

/** A read that leaves a mark where its input says, and answers "marked". */
const MARK = capabilityFile("team.mark", {
  input: "v.object({ path: v.string() })",
  body: 'require("node:fs").writeFileSync(input.path, ""); return { greeting: "marked" };',
});

/** A checkout whose team.slow answers its tag after 400 ms, and ignores a cancel. */
async function slowCheckout(): Promise<string> {
  const root = tempCheckout({
    "capabilities/team.slow.ts": capabilityFile("team.slow", { input: "v.object({ tag: v.string() })", body: "return new Promise((resolve) => setTimeout(() => resolve({ greeting: input.tag }), 400));" }),
  });
  cleanups.push(() => removeCheckout(root));
  return root;
}

/**
 * A call, its cancel and a call reusing its id, in one write: the second is refused -32600 and
 * runs nothing, the cancelled one is never answered, and the session goes on. Before, the cancel
 * reached the second call and the first one's answer was given as the second's (MCP tester).
 */
async function expectCancelledIdRefused(root: string): Promise<void> {
  const agent = await startRawAgent(root);
  const call = (tag: string) => JSON.stringify({ jsonrpc: "2.0", id: "X", method: "tools/call", params: { name: "team_slow", arguments: { tag } } });
  const cancel = JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "X" } });
  agent.send(`${call("first")}\n${cancel}\n${call("second")}`);
  const refused = await agent.next();
  expect(refused).toMatchObject({ id: "X", error: { code: -32600 } });
  expect(refused.error.message).toContain('The request id "X" is already used by a request of this session that was cancelled');
  // Long enough for the cancelled call to have ended: its answer, were it given, would come first.
  await Bun.sleep(800);
  agent.send(JSON.stringify({ jsonrpc: "2.0", id: "after", method: "tools/call", params: { name: "team_slow", arguments: { tag: "after" } } }));
  expect(await agent.next()).toMatchObject({ id: "after", result: { structuredContent: { greeting: "after" } } });
}

describe("docket mcp without a server", () => {
  test("docket mcp serves a plane of its own on stdio, says so once on stderr, and its stdout carries JSON-RPC only", async () => {
    const root = tempCheckout({ "capabilities/team.noisy.ts": NOISY });
    cleanups.push(() => removeCheckout(root));
    const agent = await startAgent(root, "stdio-agent");
    const names = (await agent.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("team_noisy");
    expect(names).toContain("docket_execution_start");

    expect(structured(await agent.client.callTool({ name: "team_noisy", arguments: {} }))).toEqual({ ok: true });
    // The first progress notification cancels the execution (a second request on the same pipe),
    // so the answer cannot come before it was handled, however the pipe is read.
    const seen: SeenProgress[] = [];
    const result = await agent.client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait: true } },
      undefined,
      {
        onprogress: (p) => {
          seen.push(p as SeenProgress);
          if (seen.length === 1) void agent.client.callTool({ name: "docket_execution_cancel", arguments: { id: (p as SeenProgress)._meta![EVENT_META_KEY].execution_id } });
        },
      },
    );
    // A cancelled execution is a failed tool call: isError, the descriptor, and the execution as text.
    expect(result.isError).toBe(true);
    expect(structured(result)).toMatchObject({ error_code: "cancelled" });
    expect(waitedExecution(result)).toMatchObject({ state: "cancelled", actor: { kind: "mcp", client: "stdio-agent" } });
    expect(seen[0]).toMatchObject({ progress: 1, total: 100, message: "step 1 done" });
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);

    // What the handler printed went to stderr; stdout held nothing the client could not parse.
    expect(protocolErrors(agent)).toEqual([]);
    expect(agent.stderr()).toContain("noise from console.log");
    expect(agent.stderr()).toContain("noise from stdout.write");
    expect(agent.stderr().match(/visible to this process alone/g)).toHaveLength(1);
  });

  test("docket mcp ends when the agent closes its stdin", async () => {
    const root = tempCheckout();
    cleanups.push(() => removeCheckout(root));
    const agent = await startAgent(root, "stdio-agent");
    const pid = agent.transport.pid!;
    const exited = new Promise<void>((resolve) => agent.transport.onclose = resolve);
    await agent.client.close();
    await exited;
    expect(isProcessAlive(pid)).toBe(false);
  });

  test("docket mcp answers the requests it read before stdin ended, and every line of its stdout is a JSON-RPC message", async () => {
    const root = tempCheckout({ "capabilities/team.noisy.ts": NOISY });
    cleanups.push(() => removeCheckout(root));
    const messages: JSONRPCMessage[] = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "piped", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "team_noisy", arguments: {} } },
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 2, delay_ms: 20 }, wait: true }, _meta: { progressToken: "p" } } },
    ];
    // stdin holds the four messages and then ends: the agent half-closed after its last request.
    const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: new Blob([messages.map(serializeMessage).join("")]), stdout: "pipe", stderr: "pipe" });
    cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(code).toBe(0);
    const lines = out.trimEnd().split("\n").map((line) => JSONRPCMessageSchema.parse(JSON.parse(line)) as any);
    // Every request answered once; 2 (a direct call, its worker cold) and 3 (an execution) run at once, so either may end first.
    const answered = lines.filter((m) => "id" in m).map((m) => m.id as number);
    expect(answered[0]).toBe(1);
    expect(answered.toSorted()).toEqual([1, 2, 3]);
    expect(lines.find((m) => m.id === 2).result.structuredContent).toEqual({ ok: true });
    expect(lines.find((m) => m.id === 3).result.structuredContent.execution.state).toBe("succeeded");
    const progress = lines.filter((m) => m.method === "notifications/progress").map((m) => m.params.progress);
    expect(progress.at(-1)).toBe(2);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]);
    // Progress precedes the answer it belongs to.
    expect(lines.findIndex((m) => m.method === "notifications/progress")).toBeLessThan(lines.findIndex((m) => m.id === 3));
    expect(err).toContain("noise from console.log");
  });

  test("docket mcp keeps stdout for JSON-RPC when a capability writes to fd 1 itself or runs a child with inherited stdio", async () => {
    const LOUD = [
      'import { capability } from "docket";',
      'import * as v from "valibot";',
      'import { execSync, spawnSync } from "node:child_process";',
      'import { writeSync } from "node:fs";',
      'console.log("LOUD-AT-LOAD");',
      "export default capability({",
      '  id: "team.loud", title: "Loud", description: "Prints to fd 1 every way.", effect: "read",',
      "  input: v.object({}), output: v.object({ ok: v.boolean() }),",
      "  handler: async () => {",
      '    writeSync(1, "LOUD-FD-1\\n");',
      '    await Bun.write(Bun.stdout, "LOUD-BUN-STDOUT\\n");',
      '    execSync("echo LOUD-EXEC-INHERIT", { stdio: "inherit" });',
      '    spawnSync("echo", ["LOUD-SPAWN-INHERIT"], { stdio: "inherit" });',
      "    return { ok: true };",
      "  },",
      "});",
      "",
    ].join("\n");
    const root = tempCheckout({ "capabilities/team.loud.ts": LOUD });
    cleanups.push(() => removeCheckout(root));
    const messages: JSONRPCMessage[] = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "piped", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "team_loud", arguments: {} } },
    ];
    const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: new Blob([messages.map(serializeMessage).join("")]), stdout: "pipe", stderr: "pipe" });
    cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(code).toBe(0);
    const lines = out.trimEnd().split("\n");
    const notJson = lines.filter((line) => {
      try {
        JSONRPCMessageSchema.parse(JSON.parse(line));
        return false;
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
    expect(lines.map((line) => JSON.parse(line)).find((m) => m.id === 2).result.structuredContent).toEqual({ ok: true });
    for (const noise of ["LOUD-AT-LOAD", "LOUD-FD-1", "LOUD-BUN-STDOUT", "LOUD-EXEC-INHERIT", "LOUD-SPAWN-INHERIT"]) expect(err).toContain(noise);
  });

  test("docket mcp ignores a cancel of a request not yet sent, answers that request, and exits at the end of stdin", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const greet = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } });
    const cancel = (requestId: number) => ({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId } });
    const messages = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "piped", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      // Request 4 is not in flight when its cancel comes (MCP: ignored), so it is answered.
      cancel(4),
      greet(4),
      // Request 5 is, so it is cancelled before its call began, and not answered.
      greet(5),
      cancel(5),
    ];
    const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: new Blob([messages.map((m) => `${JSON.stringify(m)}\n`).join("")]), stdout: "pipe", stderr: "pipe" });
    cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    expect(code).toBe(0);
    const answers = out.trimEnd().split("\n").map((line) => JSON.parse(line));
    expect(answers.map((m) => m.id)).toEqual([1, 4]);
    expect(answers[1].result.structuredContent).toEqual({ greeting: "Hello, Ada" });
    // The call cancelled before it began fails cancelled, and nobody is left to hear it: no uncaught error.
    expect(err).not.toContain("FailureError");
    expect(err).not.toContain("cancelled");
  });

  test("docket mcp ends when the agent closes its end of stdout, though stdin stays open: what it asks can be answered no more (tester R2)", async () => {
    const root = tempCheckout();
    cleanups.push(() => removeCheckout(root));
    const { child, send, reader } = await leavingAgent(root);
    // The agent stops reading and closes its end; the next answer docket mcp writes finds it gone.
    await reader.cancel();
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "ping" });
    child.stdin.flush();
    expect(await child.exited).toBe(0);
  });

  test("docket mcp ends when the agent closes its end of stdout while it has nothing to write: idle, or with a call running long (tester M3)", async () => {
    const root = tempCheckout({ "capabilities/team.slow.ts": capabilityFile("team.slow", { input: "v.object({})", body: "return new Promise((resolve) => setTimeout(() => resolve({ greeting: 'late' }), 120_000));" }) });
    cleanups.push(() => removeCheckout(root));
    for (const call of [false, true]) {
      const { child, send, reader } = await leavingAgent(root);
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
      if (call) send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "team_slow", arguments: {} } });
      child.stdin.flush();
      // The agent stops reading and closes its end, and sends nothing more; stdin stays open.
      await reader.cancel();
      expect(await child.exited).toBe(0);
    }
  });

  test("docket mcp answers a request that reuses the id of one still waiting -32600 and runs nothing of it; the first is answered, and the id is free again after (tester M2)", async () => {
    const root = tempCheckout({
      "capabilities/team.slow.ts": capabilityFile("team.slow", { input: "v.object({ tag: v.string() })", body: "return new Promise((resolve) => setTimeout(() => resolve({ greeting: input.tag }), 400));" }),
    });
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root);
    const call = (tag: string) => JSON.stringify({ jsonrpc: "2.0", id: "dup", method: "tools/call", params: { name: "team_slow", arguments: { tag } } });
    agent.send(call("first"));
    agent.send(call("second"));
    const refused = await agent.next();
    expect(refused).toMatchObject({ id: "dup", error: { code: -32600 } });
    expect(refused.error.message).toContain("already used by a request of this session that has no answer yet");
    expect(await agent.next()).toMatchObject({ id: "dup", result: { structuredContent: { greeting: "first" } } });
    agent.send(call("third"));
    expect(await agent.next()).toMatchObject({ id: "dup", result: { structuredContent: { greeting: "third" } } });
  });

  test("docket mcp refuses a write whose arguments hold a __proto__ member, as HTTP does: the SDK's copy of the arguments dropped it, and the write ran without it (MCP tester)", async () => {
    const tags = capabilityFile("team.tags", { input: "v.object({ tags: v.record(v.string(), v.number()) })", output: "v.object({ got: v.string() })", body: 'require("node:fs").appendFileSync(ctx.root + "/ran.txt", "ran\\n"); return { got: JSON.stringify(input) };' }).replace('effect: "read"', 'effect: "write"').replace("handler(input)", "handler(input, ctx)");
    const root = tempCheckout({ "capabilities/team.tags.ts": tags });
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root);
    agent.send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"team_tags","arguments":{"tags":{"a":2},"__proto__":{"x":1}}}}');
    const refused = await agent.next();
    expect(refused).toMatchObject({ id: 1, result: { isError: true, structuredContent: { error_code: "invalid_input" } } });
    expect(refused.result.structuredContent.message).toContain('its input has no field "__proto__"');
    agent.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docket_execution_start","arguments":{"capability":"team.tags","input":{"tags":{"a":2}},"__proto__":{"x":1}}}}');
    expect(await agent.next()).toMatchObject({ id: 2, result: { isError: true, structuredContent: { error_code: "invalid_input" } } });
    expect(existsSync(join(root, "ran.txt"))).toBe(false);
    // Without it, the same call runs.
    agent.send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"team_tags","arguments":{"tags":{"a":2}}}}');
    expect(await agent.next()).toMatchObject({ id: 3, result: { structuredContent: { got: '{"tags":{"a":2}}' } } });
  });

  test("docket mcp alone answers a request that reuses the id of one the agent cancelled -32600 and runs nothing of it; the cancelled one is not answered (MCP tester)", async () => {
    await expectCancelledIdRefused(await slowCheckout());
  });

  test("docket mcp alone answers a second initialize with the session's own result, as forwarding and HTTP do: the session is negotiated once (tester)", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root, { initialize: false });
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
    const first = await agent.next();
    expect(first.result.protocolVersion).toBe("2025-06-18");
    agent.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "1999-01-01", capabilities: {}, clientInfo: { name: "again", version: "2" } } }));
    expect(await agent.next()).toEqual({ jsonrpc: "2.0", id: 1, result: first.result });
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }));
    expect((await agent.next()).result.tools.some((tool: { name: string }) => tool.name === "team_greet")).toBe(true);
    // Sent before the first one's answer (in one write, as a pipe delivers them): answered the same (checking tester).
    const piped = await startRawAgent(root, { initialize: false });
    const initialize = (id: number, protocolVersion: string, name: string) => JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo: { name, version: "1" } } });
    piped.send(`${initialize(1, "2025-03-26", "a")}\n${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n${initialize(2, "2024-11-05", "b")}`);
    const [one, two] = [await piped.next(), await piped.next()];
    expect(one.result.protocolVersion).toBe("2025-03-26");
    expect(two).toEqual({ jsonrpc: "2.0", id: 2, result: one.result });
  });

  test("docket mcp alone exits once it answered everything when an agent spawned by Node (stdin a socket) ends stdin while docket mcp holds its reading back: it never heard the end, and spun a core (tester)", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const agent = Bun.spawn(["node", join(import.meta.dir, "_socket-agent.mjs"), JSON.stringify(FROM_SOURCE), root], { stdout: "pipe", stderr: "pipe" });
    cleanups.push(() => void (isProcessAlive(agent.pid) && agent.kill("SIGKILL")));
    const [out, err] = await Promise.all([new Response(agent.stdout).text(), new Response(agent.stderr).text(), agent.exited]);
    const seen = JSON.parse(out.trim() || `{"error":${JSON.stringify(err)}}`) as { sent: number; answered: number; ended: { code: number | null; signal: string | null } | null };
    // Enough requests to fill its stdout first; every one answered (and the initialize), then the exit.
    expect(seen.sent).toBeGreaterThan(200);
    expect(seen).toEqual({ sent: seen.sent, answered: seen.sent + 1, ended: { code: 0, signal: null } });
  }, 90_000);

  test("docket mcp alone answers what it holds back at the end of stdin as stdout takes it, not all at once into memory, and exits once all is answered (MCP tester, session 50: 1.2 GB)", async () => {
    const root = tempCheckout({ "capabilities/team.mark.ts": MARK });
    cleanups.push(() => removeCheckout(root));
    const mark = join(root, "marked");
    const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
    const reader = child.stdout.getReader();
    const out: Uint8Array[] = [];
    let readBytes = 0;
    const readChunk = async () => {
      const { value, done } = await reader.read();
      if (value) {
        out.push(value);
        readBytes += value.length;
      }
      return !done;
    };
    const send = (messages: object[]) => child.stdin.write(messages.map((m) => `${JSON.stringify(m)}\n`).join(""));
    // The plane is up once initialize is answered.
    send([{ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "writer", version: "1" } } }]);
    while (!Buffer.concat(out).includes("\n")) expect(await readChunk()).toBe(true);
    // Hundreds of tools/list (each answer tens of KB), then a call that leaves a mark when it runs; stdin ends.
    const lists = 600;
    send([{ jsonrpc: "2.0", method: "notifications/initialized" }, ...Array.from({ length: lists }, (_, id) => ({ jsonrpc: "2.0", id: id + 1, method: "tools/list" })), { jsonrpc: "2.0", id: "mark", method: "tools/call", params: { name: "team_mark", arguments: { path: mark } } }]);
    child.stdin.end();
    // The agent reads nothing for a while. Read all at once at the end of stdin, the call ran now,
    // every answer before it held in memory; read as stdout takes the answers, it does not run at
    // all meanwhile, so this look is bounded (there is nothing to await) and no time is asserted.
    for (let look = 0; look < 60 && !existsSync(mark); look++) await Bun.sleep(50);
    // Then it reads everything; where it was when the call had run says how much was answered ahead of it.
    let readWhenMarked = existsSync(mark) ? readBytes : null;
    while (await readChunk()) if (readWhenMarked === null && existsSync(mark)) readWhenMarked = readBytes;
    expect(await child.exited).toBe(0);
    const answers = Buffer.concat(out).toString("utf8").trimEnd().split("\n").map((line) => JSON.parse(line));
    expect(answers.filter((m) => typeof m.id === "number" && m.result?.tools).length).toBe(lists);
    expect(answers.find((m) => m.id === "mark")).toMatchObject({ id: "mark", result: { structuredContent: { greeting: "marked" } } });
    // The call is read only once all but the last few MB of answers before it were taken by the agent.
    expect(readBytes).toBeGreaterThan(16 * 1024 * 1024);
    expect(readWhenMarked).not.toBeNull();
    expect(readWhenMarked!).toBeGreaterThan(readBytes - 8 * 1024 * 1024);
  }, 90_000);

  test("docket mcp alone cancels a start whose cancel, in the same write, spells its method with JSON escapes (PHP writes notifications\\/cancelled): the start is not answered (MCP tester, session 50)", async () => {
    const root = tempCheckout({ "capabilities/team.wait.ts": WAIT });
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root);
    const seen: any[] = [];
    const answerTo = async (id: string) => {
      for (;;) {
        const message = await agent.next();
        if (message.id === id) return message;
        seen.push(message);
      }
    };
    const call = async (id: string, name: string, args: object) => {
      agent.send(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }));
      return answerTo(id);
    };
    const spellings = ["notifications\\/cancelled", "notifications\\u002fcancelled"];
    for (const [round, spelling] of spellings.entries()) {
      // Nothing waits for a turn when the write comes: the start is the 64th line, the last read in its turn.
      agent.send(JSON.stringify({ jsonrpc: "2.0", id: `sync-${round}`, method: "ping" }));
      await answerTo(`sync-${round}`);
      const lines = Array.from({ length: 63 }, (_, i) => JSON.stringify({ jsonrpc: "2.0", id: `ping-${round}-${i}`, method: "ping" }));
      lines.push(JSON.stringify({ jsonrpc: "2.0", id: `start-${round}`, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.wait", input: {} } } }));
      lines.push(`{"jsonrpc":"2.0","method":"${spelling}","params":{"requestId":"start-${round}","reason":"changed my mind"}}`);
      agent.send(lines.join("\n"));
    }
    const listed = await call("list", "docket_executions", {});
    // None of the cancelled starts is answered.
    expect(seen.filter((m) => String(m.id).startsWith("start-"))).toEqual([]);
    // Whatever of them ran ends cancelled; none waits on for ever.
    for (const execution of structured(listed.result).items as Array<{ id: string }>) {
      let state = "";
      for (let look = 0; look < 200 && !["cancelled", "succeeded", "failed"].includes(state); look++) {
        if (look > 0) await Bun.sleep(50);
        state = structured((await call(`get-${execution.id}-${look}`, "docket_execution", { id: execution.id })).result).state;
      }
      expect(state).toBe("cancelled");
    }
  });

  test("docket mcp alone refuses a request sent before initialize -32600, running nothing, and answers a ping", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    await expectRequestsBeforeInitializeRefused(root);
  });

  test("docket mcp alone refuses starts and writes once a docket serve starts on its checkout, naming it, and still answers reads and the executions it holds (MCP/CLI tester, session 44)", async () => {
    const write = [
      'import { capability } from "docket";',
      'import * as v from "valibot";',
      'import { appendFileSync } from "node:fs";',
      'import { join } from "node:path";',
      'export default capability({ id: "team.write", title: "Write", description: "Writes a line.", effect: "write",',
      "  input: v.object({ tag: v.string() }), output: v.object({ tag: v.string() }),",
      '  handler(input, ctx) { appendFileSync(join(ctx.root, "wrote.txt"), input.tag + "\\n"); return { tag: input.tag }; } });',
      "",
    ].join("\n");
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet"), "capabilities/team.write.ts": write });
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root);
    let id = 1;
    const call = async (name: string, args: object) => {
      agent.send(JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }));
      return (await agent.next()).result;
    };
    const before = await call("docket_execution_start", { capability: "team.greet", input: { name: "Ada" }, run_id: "early-1", wait: true });
    expect(before.structuredContent.execution.state).toBe("succeeded");
    const server = await serveToFreeze(root);
    // A start whose input is refused runs nothing either way: asked until the server is seen.
    let refused: any = null;
    for (let i = 0; i < 100 && refused === null; i++) {
      const answer = await call("docket_execution_start", { capability: "team.greet", input: { name: 5 } });
      if (answer.structuredContent.error_code === "unavailable") refused = answer.structuredContent;
      else await Bun.sleep(100);
    }
    expect(refused).not.toBeNull();
    expect(refused.message).toContain(`started serving ${root} after this docket mcp`);
    expect(refused.message).toContain("nothing ran");
    expect(refused.suggestion).toContain("Restart docket mcp");
    expect(refused.context.pid).toBe(server.pid);
    // A write is refused, and did not run; a read runs; the execution held here is still read.
    const wrote = await call("team_write", { tag: "late" });
    expect(wrote.isError).toBe(true);
    expect(wrote.structuredContent.error_code).toBe("unavailable");
    expect(existsSync(join(root, "wrote.txt"))).toBe(false);
    expect((await call("team_greet", { name: "Bo" })).structuredContent).toEqual({ greeting: "Hello, Bo" });
    expect((await call("docket_execution", { id: before.structuredContent.execution.id })).structuredContent.state).toBe("succeeded");
    // Frozen, it still holds the checkout: still refused (checking tester, session 44).
    server.kill("SIGSTOP");
    await Bun.sleep(2500);
    expect((await call("team_write", { tag: "frozen" })).structuredContent.error_code).toBe("unavailable");
    expect(existsSync(join(root, "wrote.txt"))).toBe(false);
    // Gone, this plane is the checkout's only one again: work runs here.
    server.kill("SIGCONT");
    server.kill("SIGKILL");
    await server.exited;
    let again: any = null;
    for (let i = 0; i < 100 && again === null; i++) {
      const answer = await call("docket_execution_start", { capability: "team.greet", input: { name: 5 } });
      if (answer.structuredContent.error_code === "invalid_input") again = answer;
      else await Bun.sleep(100);
    }
    expect(again).not.toBeNull();
    expect((await call("team_write", { tag: "after" })).structuredContent).toEqual({ tag: "after" });
  }, 60_000);

  test("docket mcp given a folder as stdin says so and exits 2, never an EISDIR stack (MCP/CLI checking tester, session 48)", async () => {
    const root = tempCheckout({});
    cleanups.push(() => removeCheckout(root));
    const folder = openSync(root, "r");
    try {
      const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: folder, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect(code).toBe(2);
      expect(stdout).toBe("");
      expect(stderr).toContain("docket mcp reads JSON-RPC messages, one a line, on stdin, but its stdin is a folder");
      expect(stderr).not.toContain("    at ");
    } finally {
      closeSync(folder);
    }
  });

  test("docket mcp reads a last line that stdin ends without a newline", async () => {
    const root = tempCheckout({});
    cleanups.push(() => removeCheckout(root));
    const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "printf", version: "1" } } };
    const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: new Blob([`${JSON.stringify(initialize)}\n${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" })}`]), stdout: "pipe", stderr: "pipe" });
    cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
    const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    expect(code).toBe(0);
    expect(out.trimEnd().split("\n").map((line) => JSON.parse(line).id)).toEqual([1, 2]);
  });

  test("docket mcp answers a line that is not JSON with -32700 and one that is not a JSON-RPC message with -32600, and serves on", async () => {
    const root = tempCheckout();
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root);

    agent.send("this is not json {");
    const parse = await agent.next();
    expect(parse).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    expect(parse.error.message).toContain("not JSON");
    expect(parse.error.message).toContain("one JSON-RPC message per line");
    // Where, never what: the line may hold a secret argument (tester U).
    expect(parse.error.message).toContain("at column 2");
    expect(parse.error.message).not.toContain("this is not json");

    // Its id, when it has a usable one, is answered with, so the agent knows which request failed.
    agent.send(JSON.stringify({ jsonrpc: "1.0", id: 7, method: "tools/list" }));
    const wrongVersion = await agent.next();
    expect(wrongVersion).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32600 } });
    expect(wrongVersion.error.message).toContain('"jsonrpc": "2.0"');
    for (const line of ["42", "[]", JSON.stringify([{ jsonrpc: "2.0", id: 8, method: "tools/list" }]), JSON.stringify({ jsonrpc: "2.0", method: 5 })]) {
      agent.send(line);
      expect(await agent.next()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    }

    // A line of whitespace JSON does not know (a no-break space) is no blank line: a parse error.
    agent.send("\u00a0");
    expect(await agent.next()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    // A blank line is no message and gets no answer; the next request is answered as usual.
    agent.send("");
    agent.send(" \t");
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }));
    const listed = await agent.next();
    expect(listed.id).toBe(9);
    expect(listed.result.tools.map((t: { name: string }) => t.name)).toContain("docket_execution_start");
    expect(isProcessAlive(agent.pid)).toBe(true);
  });

  test("docket mcp answers params that do not fit (tools/call arguments not an object or no name, initialize without params, a task) with -32602 naming what is wrong", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const agent = await startRawAgent(root);

    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "team_greet", arguments: "Ada" } }));
    const notAnObject = await agent.next();
    expect(notAnObject).toMatchObject({ id: 1, error: { code: -32602 } });
    expect(notAnObject.error.message).toContain('params.arguments must be an object, got "Ada"');
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { arguments: {} } }));
    const noName = await agent.next();
    expect(noName).toMatchObject({ id: 2, error: { code: -32602 } });
    expect(noName.error.message).toContain("params.name must be a string, got nothing");
    expect(noName.error.message).toContain("tools/list");
    // Params by position are JSON-RPC's, not MCP's: the params are wrong, not the message.
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: ["team_greet", { name: "Ada" }] }));
    const byPosition = await agent.next();
    expect(byPosition).toMatchObject({ id: 4, error: { code: -32602 } });
    expect(byPosition.error.message).toContain("take params by name");
    // What the SDK itself refuses before docket's handlers (-32603 with its schema report) is said the same way.
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "initialize" }));
    const noParams = await agent.next();
    expect(noParams).toMatchObject({ id: 5, error: { code: -32602 } });
    expect(noParams.error.message).toStartWith("Invalid params of initialize: params must be an object, got nothing. Send params as {");
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 6, method: "initialize", params: { protocolVersion: 5, capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
    const badVersion = await agent.next();
    expect(badVersion).toMatchObject({ id: 6, error: { code: -32602 } });
    expect(badVersion.error.message).toContain("params.protocolVersion must be a string, got 5");
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" }, task: { ttl: 1000 } } }));
    const task = await agent.next();
    expect(task).toMatchObject({ id: 7, error: { code: -32602 } });
    expect(task.error.message).toContain("params.task asks to run the request as an MCP task, which docket does not offer");
    expect(task.error.message).toContain("docket_execution_start");

    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }));
    expect((await agent.next()).result.structuredContent).toEqual({ greeting: "Hello, Ada" });
  });

  test("docket mcp alone watches the capability folders: a new file is announced with notifications/tools/list_changed and listed", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const agent = await startAgent(root, "watching-agent");
    expect(agent.client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    const changed = new Promise<void>((resolve) => agent.client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    expect((await agent.client.listTools()).tools.map((t) => t.name)).not.toContain("team_late");

    writeFileSync(join(root, "capabilities", "team.late.ts"), capabilityFile("team.late"));
    await changed;
    expect((await agent.client.listTools()).tools.map((t) => t.name)).toContain("team_late");
    expect(agent.stderr()).toContain("docket reloaded capabilities: added team.late");
  });

  test("docket mcp --help shows an example and what stdout carries", async () => {
    const child = Bun.spawn([...FROM_SOURCE, "mcp", "--help"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    expect(code).toBe(0);
    expect(out).toContain("USAGE docket mcp");
    expect(out).toMatch(/^EXAMPLES$/m);
    expect(out).toContain('{"mcpServers":{"docket":{"command":"docket","args":["mcp"]');
    expect(out).toContain("Stdout carries MCP messages only");
    expect(out).toContain("--capabilities");
  });
});

describe("docket mcp beside a server", () => {
  async function serveAndAgent(): Promise<{ server: DocketServer; agent: Agent }> {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    const agent = await startAgent(root, "forwarded-agent");
    return { server, agent };
  }

  test("docket mcp forwarding answers a request that reuses the id of one the agent cancelled -32600 and sends it nowhere; the cancelled one is not answered (MCP tester)", async () => {
    const root = await slowCheckout();
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    await expectCancelledIdRefused(root);
  });

  test("docket mcp forwarding refuses a number JSON cannot hold (1e400) as the server does, and runs nothing: sent on, it read as null and a write ran with it (MCP tester)", async () => {
    const limited = capabilityFile("team.limit", { input: "v.object({ limit: v.nullable(v.number()) })", output: "v.object({ limit: v.nullable(v.number()) })", body: 'require("node:fs").appendFileSync(ctx.root + "/ran.txt", JSON.stringify(input) + "\\n"); return input;' }).replace('effect: "read"', 'effect: "write"').replace("handler(input)", "handler(input, ctx)");
    const root = tempCheckout({ "capabilities/team.limit.ts": limited });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    const agent = await startRawAgent(root);
    agent.send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"team_limit","arguments":{"limit":1e400}}}');
    const direct = await agent.next();
    expect(direct).toMatchObject({ id: 1, result: { isError: true, structuredContent: { error_code: "invalid_input", context: { reason: "not_finite", path: "limit" } } } });
    expect(direct.result.structuredContent.message).toBe("Cannot call team_limit: limit is a number too large for JSON to hold (it reads as Infinity).");
    agent.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docket_execution_start","arguments":{"capability":"team.limit","input":{"limit":-1e999}}}}');
    expect(await agent.next()).toMatchObject({ id: 2, result: { isError: true, structuredContent: { error_code: "invalid_input", context: { reason: "not_finite", path: "input.limit" } } } });
    // Where no handler reads it, it changes nothing, as for the server and a standalone docket mcp (checking tester).
    agent.send('{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":1e400}}');
    expect(await agent.next()).toMatchObject({ id: 4, result: {} });
    // A number JSON holds goes through as before.
    agent.send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"team_limit","arguments":{"limit":1e300}}}');
    expect(await agent.next()).toMatchObject({ id: 3, result: { structuredContent: { limit: 1e300 } } });
    expect(readFileSync(join(root, "ran.txt"), "utf8")).toBe('{"limit":1e+300}\n');
  });

  test("docket mcp forwarding answers a call whose answer is megabytes once, with its result: not first 'the server stopped' while the answer was still being parsed (MCP tester)", async () => {
    const big = capabilityFile("team.big", { input: "v.object({ mb: v.number() })", output: "v.object({ s: v.string() })", body: 'return { s: "x".repeat(Math.floor(input.mb * 1_000_000)) };' });
    const root = tempCheckout({ "capabilities/team.big.ts": big });
    cleanups.push(() => removeCheckout(root));
    // A server of its own process, as in use: it sends the answer's bytes as fast as they go.
    await serveToFreeze(root);
    const agent = await startRawAgent(root);
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.big", input: { mb: 7.5 }, wait: true } } }));
    const first = await agent.next();
    // Before, a -32000 "stopped answering … crashed or restarted" came first, then the result.
    expect(first.error).toBeUndefined();
    expect(first.id).toBe(1);
    expect(first.result.structuredContent.execution.state).toBe("succeeded");
    // Nothing more for id 1: the next message is the answer to the next request.
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }));
    expect(await agent.next()).toMatchObject({ id: 2, result: {} });
  }, 60_000);

  test("docket mcp forwards to the server of its checkout: the agent's execution is in the server's list with actor mcp", async () => {
    const { server, agent } = await serveAndAgent();
    expect(agent.stderr()).toContain(`forwarding to the docket server at ${server.url}`);
    expect((await agent.client.listTools()).tools.map((t) => t.name)).toContain("team_greet");

    const result = await agent.client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 2, delay_ms: 0 }, wait: true } });
    const { execution } = structured(result);
    expect(execution.state).toBe("succeeded");
    const listed = (await (await fetch(`${server.url}/api/v1/executions`)).json()) as { items: Array<{ id: string; actor: unknown }> };
    expect(listed.items.find((i) => i.id === execution.id)!.actor).toEqual({ kind: "mcp", client: "forwarded-agent" });
    expect(protocolErrors(agent)).toEqual([]);
    expect(agent.stderr()).not.toContain("visible to this process alone");
  });

  test("docket mcp forwarding: a request the server refuses (too large) or that cannot be written (nested too deep) is the request's fault, said so, not a server to restart; and a fast call does not wait behind a slow one", async () => {
    const { agent } = await serveAndAgent();
    let deep: unknown = [];
    for (let i = 0; i < 20_000; i++) deep = [deep];
    // Refused by the server as any too deep input is, or, deeper than the relay can write, by docket mcp: never "restart".
    const deepAnswer = await agent.client.callTool({ name: "team_greet", arguments: { name: deep as never } }).then(
      (result) => JSON.stringify(result),
      (error) => String(error),
    );
    expect(deepAnswer).toMatch(/nests deeper than 128 levels|nest too deeply to be written as JSON/);
    expect(deepAnswer).not.toContain("Restart docket mcp");
    // Too large for the server: a tool result naming the input's fault, as a standalone docket mcp answers.
    const tooLarge = await agent.client.callTool({ name: "team_greet", arguments: { name: "y".repeat(9_000_000) } });
    expect(tooLarge).toMatchObject({ isError: true, structuredContent: { error_code: "invalid_input", context: { reason: "too_large" } } });
    expect(JSON.stringify(tooLarge.content)).toContain("larger than the docket server takes");
    expect(agent.stderr()).not.toContain("did not take a message");
    // The agent goes on: its next call is answered.
    expect(structured(await agent.client.callTool({ name: "team_greet", arguments: { name: "Ada" } }))).toBeTruthy();
    // A slow call and a fast one: the fast one is answered first, not behind it.
    const order: string[] = [];
    const slow = agent.client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 5, delay_ms: 200 }, wait: true } }).then(() => order.push("slow"));
    await Bun.sleep(50);
    await agent.client.callTool({ name: "docket_executions", arguments: { limit: 1 } }).then(() => order.push("fast"));
    await slow;
    expect(order).toEqual(["fast", "slow"]);
  });

  test("docket mcp forwarding answers a line that is not JSON with -32700 itself and forwards the next request as usual", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    const agent = await startRawAgent(root);

    agent.send("{not json");
    expect(await agent.next()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }));
    expect((await agent.next()).result.structuredContent).toEqual({ greeting: "Hello, Ada" });
  });

  test("docket mcp forwarding answers a second initialize as a standalone one does, with the session's result, and serves on", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    const agent = await startRawAgent(root);

    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
    const again = await agent.next();
    expect(again).toMatchObject({ id: 9, result: { protocolVersion: LATEST_PROTOCOL_VERSION, serverInfo: { name: "docket" }, capabilities: { tools: {} } } });
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 10, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }));
    expect((await agent.next()).result.structuredContent).toEqual({ greeting: "Hello, Ada" });
  });

  test("docket mcp forwarding refuses a request sent before initialize as a standalone one does, runs nothing on the server, and answers a ping", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    await expectRequestsBeforeInitializeRefused(root);
  });

  test("docket mcp forwarding answers a call whose server is killed under it, instead of leaving the agent waiting, and exits when stdin ends", async () => {
    const root = tempCheckout({});
    cleanups.push(() => removeCheckout(root));
    // A server of its own process, to be SIGKILLed: nothing of it answers the call any more.
    const server = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: root });
    cleanups.push(() => void (isProcessAlive(server.pid!) && server.kill("SIGKILL")));
    await watchStream(server.stderr!).until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const agent = await startAgent(root, "orphaned-agent");
    expect(agent.stderr()).toContain("forwarding to the docket server");
    const call = agent.client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 100 }, wait: true } },
      undefined,
      // The SDK's own request timeout is far away: what ends the call must be docket mcp's answer.
      { timeout: 60_000, onprogress: () => void (isProcessAlive(server.pid!) && server.kill("SIGKILL")) },
    );
    await expect(call).rejects.toThrow(/stopped answering this request before its answer came.*docket_executions/);
    expect(agent.stderr()).toContain("closed a call's answer before it was given");
    const pid = agent.transport.pid!;
    await agent.client.close();
    for (let i = 0; i < 100 && isProcessAlive(pid); i++) await Bun.sleep(50);
    expect(isProcessAlive(pid)).toBe(false);
  });

  test("docket mcp forwarding never hands the checkout's token to whatever takes the port of a server that died under it", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const server = spawnDocket(fromSource, ["serve", "--port", "0", "--token", "checkout-secret-token"], { cwd: root });
    cleanups.push(() => void (isProcessAlive(server.pid!) && server.kill("SIGKILL")));
    const banner = await watchStream(server.stderr!).until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const port = Number(banner.match(/127\.0\.0\.1:(\d+)/)![1]);
    const agent = await startAgent(root, "careful-agent");
    const call = agent.client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 100 }, wait: true } },
      undefined,
      { timeout: 60_000, onprogress: () => void (isProcessAlive(server.pid!) && server.kill("SIGKILL")) },
    );
    await expect(call).rejects.toThrow(/stopped answering this request/);
    await server.exited;
    // Someone else takes the port and records what it is sent.
    const heard: Array<string | null> = [];
    const impostor = Bun.serve({ hostname: "127.0.0.1", port, fetch: (request) => (heard.push(request.headers.get("authorization")), Response.json({ root, pid: server.pid })) });
    cleanups.push(() => void impostor.stop(true));
    await expect(agent.client.callTool({ name: "team_greet", arguments: { name: "Ada" } })).rejects.toThrow(/no docket server serves the checkout now/);
    expect(heard.filter((header) => header?.includes("checkout-secret-token"))).toEqual([]);
  });

  test("docket mcp forwarding answers a ping itself: at once with its server frozen, and with it gone, where the ping went unanswered or failed (MCP/CLI tester, session 44)", async () => {
    const root = tempCheckout({});
    cleanups.push(() => removeCheckout(root));
    const server = await serveToFreeze(root);
    const agent = await startRawAgent(root);
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }));
    expect(await agent.next()).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    server.kill("SIGSTOP");
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }));
    expect(await agent.next()).toEqual({ jsonrpc: "2.0", id: 2, result: {} });
    server.kill("SIGCONT");
    server.kill("SIGKILL");
    await server.exited;
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "ping" }));
    expect(await agent.next()).toEqual({ jsonrpc: "2.0", id: 3, result: {} });
  }, 30_000);

  test("docket mcp forwarding gives up on a frozen server once stdin ends, answering what waits, and a signal stops it at once", async () => {
    const root = tempCheckout({});
    cleanups.push(() => removeCheckout(root));
    const server = await serveToFreeze(root);
    const agent = await startRawAgent(root);
    const second = await startRawAgent(root);
    server.kill("SIGSTOP");
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "docket_executions", arguments: { limit: 1 } } }));
    agent.closeStdin();
    const answer = await agent.next();
    expect(answer).toMatchObject({ id: 7, error: { code: -32000 } });
    expect(answer.error.message).toContain("stopped answering (frozen or gone) and stdin has ended");
    for (let i = 0; i < 100 && isProcessAlive(agent.pid); i++) await Bun.sleep(50);
    expect(isProcessAlive(agent.pid)).toBe(false);

    // A signal, with a call waiting on the frozen server, stops it too (it waited for the server before).
    second.send(JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "docket_executions", arguments: { limit: 1 } } }));
    await Bun.sleep(200);
    process.kill(second.pid, "SIGTERM");
    for (let i = 0; i < 100 && isProcessAlive(second.pid); i++) await Bun.sleep(50);
    expect(isProcessAlive(second.pid)).toBe(false);
  }, 30_000);

  test("docket mcp forwarding follows a server restarted under it (a new process, a new port): the next call is answered on a new session and the agent is told to list the tools again", async () => {
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const serve = async () => {
      const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: root });
      cleanups.push(() => void (isProcessAlive(child.pid!) && child.kill("SIGKILL")));
      const banner = await watchStream(child.stderr!).until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
      return { child, url: banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]! };
    };
    const first = await serve();
    const agent = await startAgent(root, "patient-agent");
    let listChanged = 0;
    agent.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanged++);
    expect(structured(await agent.client.callTool({ name: "team_greet", arguments: { name: "Ada" } }))).toEqual({ greeting: "Hello, Ada" });

    first.child.kill("SIGTERM");
    await first.child.exited;
    const second = await serve();
    expect(second.url).not.toBe(first.url);

    expect(structured(await agent.client.callTool({ name: "team_greet", arguments: { name: "Grace" } }))).toEqual({ greeting: "Hello, Grace" });
    expect(agent.stderr()).toContain(`a new session is open at ${second.url}`);
    // What happened, in docket's words alone: not the runtime's fetch hints nor the SDK's retry count.
    const said = agent.stderr();
    for (const raw of ["verbose: true", "Is the computer able to access the url", "Maximum reconnection attempts", "SSE stream"]) expect(said).not.toContain(raw);
    expect(said.trim().split("\n").slice(1)).toEqual([`docket mcp: the docket server's session was lost (it restarted, or it ended this session for others: it keeps at most --mcp-sessions); a new session is open at ${second.url}.`]);
    for (let i = 0; i < 40 && listChanged === 0; i++) await Bun.sleep(25);
    expect(listChanged).toBeGreaterThan(0);
    // The execution the agent starts now is the new server's.
    const { execution } = structured(await agent.client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 }, wait: true } }));
    const listed = (await (await fetch(`${second.url}/api/v1/executions`)).json()) as { items: Array<{ id: string }> };
    expect(listed.items.map((item) => item.id)).toContain(execution.id);
  });

  test("docket mcp forwarding that dies under a direct call (SIGKILL, SIGTERM) cancels the call on the server, whose direct lane serves the next", async () => {
    const root = tempCheckout({ "capabilities/team.wait.ts": WAIT });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    for (const signal of ["SIGKILL", "SIGTERM"] as const) {
      const agent = await startRawAgent(root);
      agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "team_wait", arguments: {} } }));
      await untilSeen(() => existsSync(join(root, "started.mark")), "the handler to start");
      process.kill(agent.pid, signal);
      await untilSeen(() => existsSync(join(root, "cancelled.mark")), `the handler to see its cancellation after ${signal}`);
      // Its own stop ended the call's answer stream: not the server's doing, and not said to be (MCP/CLI tester, session 50).
      expect(await agent.stderrAtExit()).not.toContain("closed a call's answer");
      expect((await fetch(`${server.url}/api/v1/health/report`)).status).toBe(200);
      rmSync(join(root, "started.mark"));
      rmSync(join(root, "cancelled.mark"));
    }
  }, 30_000);

  test("docket mcp forwards notifications/cancelled: the server cancels the execution the agent waits on", async () => {
    const { server, agent } = await serveAndAgent();
    const abort = new AbortController();
    let id: string | null = null;
    const call = agent.client.callTool(
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
  test("docket mcp forwarding cancels a start whose cancel came in the same write, and answers none of them, as a standalone docket mcp does", async () => {
    const root = tempCheckout({ "capabilities/team.wait.ts": WAIT });
    cleanups.push(() => removeCheckout(root));
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
    const agent = await startRawAgent(root);
    const lines: string[] = [];
    for (let id = 1; id <= 5; id++) {
      lines.push(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.wait", input: {} } } }));
      lines.push(JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "changed my mind" } }));
    }
    agent.send(lines.join("\n"));
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "docket_executions", arguments: {} } }));
    // The next answer is the list's: none of the cancelled starts is answered.
    const listed = await agent.next();
    expect(listed.id).toBe(6);
    // Whatever of them reached the server ends cancelled; none is left waiting its 20 s out.
    for (const execution of structured(listed.result).items as Array<{ id: string }>) {
      expect((await completedOverLive(server.url, execution.id)).data.state).toBe("cancelled");
    }
  });
});


/** A write that leaves a trace: each run appends its tag to written.txt in the checkout. */
const APPENDING_WRITE = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";

export default capability({
  id: "team.write",
  title: "Append a tag",
  description: "Appends its tag to written.txt.",
  effect: "write",
  input: v.object({ tag: v.string() }),
  output: v.object({ ok: v.boolean() }),
  handler(input, ctx) {
    appendFileSync(join(ctx.root, "written.txt"), input.tag + "\\n");
    return { ok: true };
  },
});
`;

describe("docket mcp beside a server that does not answer", () => {
  test("docket mcp started while the server still loads its capability files (`docket serve &` just before) waits for it and forwards to it", async () => {
    const slow = capabilityFile("team.slow").replace("export default capability({", "await new Promise((r) => setTimeout(r, 3000));\nexport default capability({");
    const root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet"), "capabilities/team.slow.ts": slow });
    cleanups.push(() => removeCheckout(root));
    const server = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: root });
    cleanups.push(() => void (isProcessAlive(server.pid!) && server.kill("SIGKILL")));
    await untilSeen(() => existsSync(join(root, ".docket", "serve.lock")), "the server to hold its lock");
    expect(existsSync(join(root, ".docket", "lease.json"))).toBe(false);
    const agent = await startAgent(root, "early-agent");
    // Before, it took the server for a silent one for good: no start, no write, until restarted.
    expect(agent.stderr()).toContain(`docket mcp: the docket server (pid ${server.pid}) serving ${root} is starting (loading its capability files); waiting up to 20 s for it to answer.`);
    expect(agent.stderr()).toContain("docket mcp: forwarding to the docket server at http://127.0.0.1:");
    expect(structured(await agent.client.callTool({ name: "team_slow", arguments: { name: "Ada" } }))).toEqual({ greeting: "Hello, Ada" });
  }, 30_000);

  test("docket mcp beside a frozen server runs no start or write of its own (a run_id the server holds never runs twice): it refuses them naming the server, and answers direct reads", async () => {
    const root = tempCheckout({ "capabilities/team.write.ts": APPENDING_WRITE, "capabilities/team.greet.ts": capabilityFile("team.greet") });
    cleanups.push(() => removeCheckout(root));
    const server = await serveToFreeze(root);
    const start = { name: "docket_execution_start", arguments: { capability: "team.write", input: { tag: "dup" }, run_id: "dup-1", wait: true } };
    const first = await startAgent(root, "first-agent");
    expect(waitedExecution(await first.client.callTool(start)).state).toBe("succeeded");
    await first.client.close();

    server.kill("SIGSTOP");
    const agent = await startRawAgent(root);
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: start }));
    const again = await agent.next();
    expect(again).toMatchObject({ id: 1, result: { isError: true, structuredContent: { error_code: "unavailable", outcome_certainty: "not_applied", context: { pid: server.pid } } } });
    expect(again.result.structuredContent.message).toContain("executions.start team.write with run_id \"dup-1\"");
    expect(again.result.structuredContent.message).toContain(`the docket server (pid ${server.pid})`);
    expect(again.result.structuredContent.suggestion).toContain(`kill -CONT ${server.pid}`);
    // A start without a run_id and a direct write are refused too: the server would not know of them.
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.write", input: { tag: "fresh" } } } }));
    expect(await agent.next()).toMatchObject({ id: 2, result: { isError: true, structuredContent: { error_code: "unavailable" } } });
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "team_write", arguments: { tag: "direct" } } }));
    expect(await agent.next()).toMatchObject({ id: 3, result: { isError: true, structuredContent: { error_code: "unavailable" } } });
    // The executions are the server's: not an empty list of this process's own.
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "docket_executions", arguments: {} } }));
    expect(await agent.next()).toMatchObject({ id: 4, result: { isError: true, structuredContent: { error_code: "unavailable" } } });
    agent.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "team_greet", arguments: { name: "Ada" } } }));
    expect(await agent.next()).toMatchObject({ id: 5, result: { structuredContent: { greeting: "Hello, Ada" } } });
    expect(readFileSync(join(root, "written.txt"), "utf8")).toBe("dup\n");
  }, 30_000);
});
