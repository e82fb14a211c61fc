// `docket mcp` once the agent's stdin has ended, and while requests wait long: a signal or the
// agent closing its stdout still stops it at once, requests read ahead of their answers are
// bounded, and a reused id's refusal leaves the first request's cancel in force, alone and
// forwarding (MCP checking tester, session 50).
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { isProcessAlive } from "../../runtime/server/lease.ts";
import { MAX_UNANSWERED_REQUESTS } from "../../runtime/mcp/json-lines-transport.ts";
import { FROM_SOURCE, removeCheckout, serveCheckout, structured, tempCheckout, WAIT } from "./_support.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A direct call that takes a second unless it is cancelled, and appends a line to finished.txt when it ran to its end. */
const SECOND = `import { capability } from "docket";
import * as v from "valibot";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "team.second", title: "A second", description: "Takes a second.", effect: "read", cancellable: true,
  input: v.object({}), output: v.object({}),
  async handler(_input, ctx) {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 1000);
      ctx.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(undefined); });
    });
    if (ctx.signal.aborted) throw ctx.progress.cancellation();
    appendFileSync(join(ctx.root, "finished.txt"), "done\\n");
    return {};
  },
});
`;

/** A checkout with team.second and team.wait, served by an in-process docket serve when `forwarding`. */
async function checkout(forwarding: boolean): Promise<string> {
  const root = tempCheckout({ "capabilities/team.second.ts": SECOND, "capabilities/team.wait.ts": WAIT });
  cleanups.push(() => removeCheckout(root));
  if (forwarding) {
    const server = await serveCheckout(root);
    cleanups.push(() => server.stop());
  }
  return root;
}

/** How many calls of team.second ran to their end. */
const finished = (root: string) => (existsSync(join(root, "finished.txt")) ? readFileSync(join(root, "finished.txt"), "utf8").split("\n").filter(Boolean).length : 0);

/** `docket mcp` in `root`, initialized; the agent reads its stdout message by message and may close it. */
async function agentOf(root: string) {
  const child = Bun.spawn([...FROM_SOURCE, "mcp"], { cwd: root, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  cleanups.push(() => void (isProcessAlive(child.pid) && child.kill("SIGKILL")));
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const received: any[] = [];
  const send = (messages: object[]) => {
    child.stdin.write(messages.map((m) => `${JSON.stringify(m)}\n`).join(""));
    child.stdin.flush();
  };
  /** The next message docket mcp wrote, or null once its stdout ended. */
  const next = async (): Promise<any> => {
    for (;;) {
      if (received.length > 0) return received.shift();
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        received.push(JSON.parse(buffer.slice(0, end)));
        buffer = buffer.slice(end + 1);
      }
    }
  };
  send([{ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "after-eof", version: "1" } } }]);
  expect((await next()).id).toBe("init");
  send([{ jsonrpc: "2.0", method: "notifications/initialized" }]);
  return { child, send, next, reader };
}

const call = (id: number | string, name: string) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } });

describe.each([
  ["alone", false],
  ["forwarding", true],
] as const)("docket mcp %s, once stdin has ended", (_how, forwarding) => {
  test("docket mcp stops at once when the agent closes its stdout after stdin ended, not after running every call it had read (MCP checking tester, session 50: 19 s, all 20 ran)", async () => {
    const root = await checkout(forwarding);
    const agent = await agentOf(root);
    const calls = 20;
    agent.send(Array.from({ length: calls }, (_, i) => call(i + 1, "team_second")));
    agent.child.stdin.end();
    expect((await agent.next()).id).toBe(1);
    // The agent goes away: nothing it asked can reach it any more.
    await agent.reader.cancel();
    expect(await agent.child.exited).toBe(0);
    // Counted when it exited: the calls one after another take a second each, and nowhere near all ran.
    expect(finished(root)).toBeLessThan(calls / 2);
  }, 30_000);

  test("docket mcp winds down at a SIGTERM after stdin ended as before (exit 0), not by the runtime's default (143), and runs no more of what it had read (MCP checking tester, session 50)", async () => {
    const root = await checkout(forwarding);
    const agent = await agentOf(root);
    const calls = 20;
    agent.send(Array.from({ length: calls }, (_, i) => call(i + 1, "team_second")));
    agent.child.stdin.end();
    expect((await agent.next()).id).toBe(1);
    agent.child.kill("SIGTERM");
    expect(await agent.child.exited).toBe(0);
    expect(agent.child.signalCode).toBeNull();
    expect(finished(root)).toBeLessThan(calls / 2);
  }, 30_000);
});

describe.each([
  ["alone", false],
  ["forwarding", true],
] as const)("docket mcp %s, with many requests waiting", (_how, forwarding) => {
  test("docket mcp reads no further request while MAX_UNANSWERED_REQUESTS wait for their answers, and reads on once some are cancelled (MCP checking tester, session 50: 511 MB and rising)", async () => {
    const root = await checkout(forwarding);
    const agent = await agentOf(root);
    const waiting = MAX_UNANSWERED_REQUESTS + 40;
    // Calls that end only when cancelled, then a ping that is answered as soon as it is read.
    agent.send([...Array.from({ length: waiting }, (_, i) => call(i + 1, "team_wait")), { jsonrpc: "2.0", id: "probe", method: "ping" }]);
    // Nothing is answered while they wait, so nothing is awaited here: a bounded look (no time is
    // asserted) for the ping's answer, which reading everything ahead gave at once.
    const seen: any[] = [];
    const reading = (async () => {
      for (let message = await agent.next(); message !== null; message = await agent.next()) seen.push(message);
    })();
    for (let look = 0; look < 40 && seen.length === 0; look++) await Bun.sleep(50);
    expect(seen).toEqual([]);
    // Cancels are read all along, and each cancelled call is done with: room for the ping.
    agent.send(Array.from({ length: waiting - MAX_UNANSWERED_REQUESTS + 1 }, (_, i) => ({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: i + 1 } })));
    for (let look = 0; look < 400 && !seen.some((m) => m.id === "probe"); look++) await Bun.sleep(50);
    expect(seen.find((m) => m.id === "probe")).toEqual({ jsonrpc: "2.0", id: "probe", result: {} });
    agent.child.kill("SIGKILL");
    await reading;
  }, 60_000);
});

test("docket mcp alone cancels a start whose cancel, held back a turn, follows a request reusing its id: the refusal of that request is no answer of the start (MCP checking tester, session 50)", async () => {
  const root = await checkout(false);
  const agent = await agentOf(root);
  const answerTo = async (id: string) => {
    for (let message = await agent.next(); message !== null; message = await agent.next()) if (message.id === id) return message;
    throw new Error(`docket mcp closed its stdout before answering ${id}`);
  };
  const seen: any[] = [];
  // Nothing waits for a turn when the write comes: the start's duplicate is the 64th line, the last read in its turn.
  agent.send([{ jsonrpc: "2.0", id: "sync", method: "ping" }]);
  await answerTo("sync");
  const start = { jsonrpc: "2.0", id: "s", method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "team.wait", input: {} } } };
  agent.send([...Array.from({ length: 62 }, (_, i) => ({ jsonrpc: "2.0", id: `ping-${i}`, method: "ping" })), start, start, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "s" } }]);
  agent.send([call("list", "docket_executions")]);
  for (let message = await agent.next(); message !== null && message.id !== "list"; message = await agent.next()) seen.push(message);
  const answersToS = seen.filter((m) => m.id === "s");
  // The duplicate is refused; the start itself, cancelled, is never answered.
  expect(answersToS).toHaveLength(1);
  expect(answersToS[0].error.code).toBe(-32600);
  // Whatever of it ran ends cancelled: none waits on for ever.
  agent.send([call("list-again", "docket_executions")]);
  let items = structured((await answerTo("list-again")).result).items as Array<{ id: string; state: string }>;
  for (let look = 0; look < 200 && items.some((item) => item.state !== "cancelled"); look++) {
    await Bun.sleep(50);
    agent.send([call(`list-${look}`, "docket_executions")]);
    items = structured((await answerTo(`list-${look}`)).result).items;
  }
  expect(items.map((item) => item.state)).toEqual(items.map(() => "cancelled"));
});
