// How far JsonLinesTransport reads ahead of its answers: requests read and not yet answered are
// bounded in count and in bytes, cancels are read all along, and a refusal of a reused id is no
// answer of the request waiting with it (MCP checking tester, session 50).
import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { JsonLinesTransport, MAX_UNANSWERED_BYTES, MAX_UNANSWERED_REQUESTS } from "../../runtime/mcp/json-lines-transport.ts";
import { untilSeen } from "./_support.ts";

/** Event-loop turns, not time: however many pass, nothing more is read while the bound holds. */
async function turns(count = 20): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** A transport over in-memory pipes whose server answers nothing by itself; stdout is read as it comes. */
async function linked() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  stdout.resume();
  const transport = new JsonLinesTransport(stdin, stdout);
  const delivered: JSONRPCMessage[] = [];
  transport.onmessage = (message) => void delivered.push(message);
  await transport.start();
  const requests = () => delivered.filter((m) => "id" in m && "method" in m) as Array<JSONRPCMessage & { id: number | string }>;
  const answer = (id: number | string) => transport.send({ jsonrpc: "2.0", id, result: {} });
  return { stdin, transport, delivered, requests, answer };
}

const line = (message: object) => `${JSON.stringify(message)}\n`;

describe("JsonLinesTransport's bound on requests read and not answered", () => {
  test("JsonLinesTransport reads no request past MAX_UNANSWERED_REQUESTS unanswered, notifications not counted, and reads on as answers and cancels go out (MCP checking tester, session 50: 272 MB read ahead)", async () => {
    const { stdin, transport, delivered, requests, answer } = await linked();
    const total = 1000;
    // Each request followed by a notification: those are no request waiting for an answer.
    stdin.write(Array.from({ length: total }, (_, id) => line({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "slow", arguments: {} } }) + line({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: id, progress: 1 } })).join(""));
    await turns();
    expect(requests().length).toBe(MAX_UNANSWERED_REQUESTS);
    // Every notification before the last request read was read too.
    expect(delivered.length).toBe(2 * MAX_UNANSWERED_REQUESTS - 1);

    // A cancel of one of them is read at once, bound or not, and that request is done with: one more is read.
    stdin.write(line({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5 } }));
    await untilSeen(() => delivered.some((m) => (m as { method?: string }).method === "notifications/cancelled"), "the cancel");
    await turns();
    expect(requests().length).toBe(MAX_UNANSWERED_REQUESTS + 1);

    // Ten answers, ten more requests.
    for (let id = 0; id < 10; id++) if (id !== 5) await answer(id);
    await turns();
    expect(requests().length).toBe(MAX_UNANSWERED_REQUESTS + 10);

    // Answered as they come, every request is read, in order.
    await untilSeen(() => {
      for (const request of requests()) void answer(request.id);
      return requests().length === total;
    }, "every request");
    expect(requests().map((r) => r.id)).toEqual(Array.from({ length: total }, (_, id) => id));
    await transport.close();
  });

  test("JsonLinesTransport reads no request past MAX_UNANSWERED_BYTES of unanswered request lines, and reads on as they are answered (MCP checking tester, session 50)", async () => {
    const { stdin, transport, requests, answer } = await linked();
    const padding = "x".repeat(1024 * 1024);
    const total = 40;
    for (let id = 0; id < total; id++) stdin.write(line({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "slow", arguments: { padding } } }));
    // Turns enough for every line stdin holds to be read, were nothing bounding it.
    await untilSeen(() => requests().length > 0, "the first request");
    await turns(200);
    const lineBytes = line(requests()[0]!).length;
    expect(requests().length).toBe(Math.ceil(MAX_UNANSWERED_BYTES / lineBytes));
    await untilSeen(() => {
      for (const request of requests()) void answer(request.id);
      return requests().length === total;
    }, "every request");
    await transport.close();
  });

  test("JsonLinesTransport keeps a request waiting when a request reusing its id is refused: a cancel of it held back a turn is still read at once (MCP checking tester, session 50)", async () => {
    const { stdin, transport, delivered } = await linked();
    let callAnswerable = false;
    let cancelCameInTime = null as boolean | null;
    let seenStart = 0;
    transport.onmessage = (message) => {
      delivered.push(message);
      const { id, method } = message as { id?: string | number; method: string };
      // The first is run (answerable a turn later); the second reuses its id and is refused at once, as docket mcp does.
      if (id === "s" && seenStart++ === 0) setImmediate(() => (callAnswerable = true));
      else if (id === "s") void transport.send({ jsonrpc: "2.0", id: "s", error: { code: -32600, message: "reused id" } });
      if (method === "notifications/cancelled") cancelCameInTime = !callAnswerable;
    };
    // 62 pings, the start and its duplicate (the 64th line, the last read this turn); the cancel is the 65th.
    const pings = Array.from({ length: 62 }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "ping" }));
    const start = { jsonrpc: "2.0", id: "s", method: "tools/call", params: { name: "docket_execution_start", arguments: {} } };
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "s" } };
    stdin.write([...pings, start, start, cancel].map(line).join(""));
    await untilSeen(() => delivered.length === 65, "every line");
    expect(cancelCameInTime).toBe(true);
    await transport.close();
  });

  test("JsonLinesTransport's own refusal of a line bearing a waiting request's id is no answer of that request (MCP checking tester, session 50)", async () => {
    const { stdin, transport, delivered } = await linked();
    stdin.write(line({ jsonrpc: "2.0", id: "w", method: "tools/call", params: { name: "slow", arguments: {} } }));
    // JSON, but no message (method not a string): answered -32600 with its id by the transport itself.
    stdin.write('{"jsonrpc":"2.0","id":"w","method":5}\n');
    await untilSeen(() => delivered.length === 1, "the request");
    await turns();
    const unanswered = (transport as unknown as { unanswered: { has(id: string): boolean } }).unanswered;
    expect(unanswered.has("w")).toBe(true);
    await transport.close();
  });
});
