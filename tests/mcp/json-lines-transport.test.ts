import { describe, expect, test } from "bun:test";
import { PassThrough, Writable } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { JsonLinesTransport } from "../../runtime/mcp/json-lines-transport.ts";
import { untilSeen } from "./_support.ts";

/** A transport over in-memory pipes: what it hands the server, and what it writes back. */
async function linked(maxLineBytes?: number) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const transport = new JsonLinesTransport(stdin, stdout, maxLineBytes);
  const delivered: JSONRPCMessage[] = [];
  transport.onmessage = (message) => void delivered.push(message);
  await transport.start();
  const written = () =>
    String(stdout.read() ?? "")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  return { stdin, transport, delivered, written };
}

describe("JsonLinesTransport", () => {
  test("JsonLinesTransport reads a message split across chunks, even inside a multi-byte character, and a CRLF line", async () => {
    const { stdin, delivered } = await linked();
    const bytes = Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "café" } })}\r\n`);
    const split = bytes.indexOf(Buffer.from("é")) + 1;
    stdin.write(bytes.subarray(0, split));
    stdin.write(bytes.subarray(split));
    await untilSeen(() => delivered.length > 0, "the message");
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "café" } }]);
  });

  test("JsonLinesTransport skips a byte-order mark before the first line only (MCP/CLI tester, session 48: the initialize was refused at column 1)", async () => {
    const { stdin, delivered, written } = await linked();
    stdin.write(`\uFEFF${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })}\n\uFEFF${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" })}\n`);
    await untilSeen(() => delivered.length > 0, "the first message");
    await Bun.sleep(20);
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: 1, method: "ping" }]);
    // One inside the stream is no whitespace JSON knows: that line is malformed.
    expect(written()).toMatchObject([{ id: null, error: { code: -32700 } }]);
  });

  test("JsonLinesTransport never answers a notification, one whose params do not fit included: it is said on its error channel and dropped (JSON-RPC 2.0; MCP tester)", async () => {
    const { stdin, transport, delivered, written } = await linked();
    const errors: string[] = [];
    transport.onerror = (error) => void errors.push(error.message);
    stdin.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}\n{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}\n');
    // A request that does not fit is still answered, with its id.
    stdin.write('{"jsonrpc":"2.0","id":7,"method":"ping","params":"x"}\n{"jsonrpc":"2.0","id":8,"method":"ping"}\n');
    await untilSeen(() => delivered.length > 0, "the ping after them");
    const answers = written();
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ id: 7, error: { code: -32600 } });
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: 8, method: "ping" }]);
    expect(errors).toHaveLength(2);
    expect(errors[1]).toBe('a notification that does not fit was ignored: "params" must be an object, got "x".');
  });

  test("JsonLinesTransport answers a line over its bound once, skips the rest of it, and reads the next line", async () => {
    const { stdin, delivered, written } = await linked(64);
    stdin.write("x".repeat(50));
    stdin.write("x".repeat(50));
    stdin.write(`${"x".repeat(50)}\n${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" })}\n`);
    await untilSeen(() => delivered.length > 0, "the next line");
    const answers = written();
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(answers[0].error.message).toContain("was skipped. Send a smaller input");
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: 2, method: "ping" }]);
  });

  test("JsonLinesTransport stops reading stdin while stdout holds more than its bound, and reads on once it drains", async () => {
    // A stdout nobody reads: nothing written leaves it until the test lets it.
    const held: Array<() => void> = [];
    const stdout = new Writable({ highWaterMark: 4096, write: (_chunk, _encoding, done) => void held.push(done) });
    const stdin = new PassThrough();
    const transport = new JsonLinesTransport(stdin, stdout);
    let delivered = 0;
    transport.onmessage = (message) => {
      delivered++;
      void transport.send({ jsonrpc: "2.0", id: (message as { id: number }).id, result: { padding: "x".repeat(1024) } });
    };
    await transport.start();
    const requests = 1000;
    stdin.write(Array.from({ length: requests }, (_, id) => `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" })}\n`).join(""));
    // Event-loop turns, not time: however many pass, no more is read while stdout is full.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThanOrEqual(64);
    expect(stdout.writableLength).toBeLessThan(64 * 1100);
    // The agent reads its answers: every request is read and answered.
    const release = () => {
      while (held.length > 0) held.shift()!();
    };
    await untilSeen(() => {
      release();
      return delivered === requests;
    }, "every request to be read");
    await transport.close();
  });

  test("JsonLinesTransport reads what is held back at the end of stdin a turn at a time as stdout drains, not all at once, and says when all is read (MCP tester, session 50: 1.2 GB)", async () => {
    // A stdout nobody reads: nothing written leaves it until the test lets it.
    const held: Array<() => void> = [];
    const stdout = new Writable({ highWaterMark: 4096, write: (_chunk, _encoding, done) => void held.push(done) });
    const stdin = new PassThrough();
    const transport = new JsonLinesTransport(stdin, stdout);
    let delivered = 0;
    transport.onmessage = (message) => {
      delivered++;
      void transport.send({ jsonrpc: "2.0", id: (message as { id: number }).id, result: { padding: "x".repeat(1024) } });
    };
    await transport.start();
    let allRead = false;
    void transport.allRead().then(() => (allRead = true));
    const requests = 1000;
    // The last line has no newline: the end of stdin ends it.
    stdin.end(Array.from({ length: requests }, (_, id) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" })).join("\n"));
    // Event-loop turns, not time: however many pass, no more is read while stdout is full, stdin ended or not.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(stdin.readableEnded).toBe(true);
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThanOrEqual(64);
    expect(stdout.writableLength).toBeLessThan(64 * 1100);
    expect(allRead).toBe(false);
    // The agent reads its answers: every request is read, the last one included, and then all is said read.
    await untilSeen(() => {
      while (held.length > 0) held.shift()!();
      return allRead;
    }, "every request to be read");
    expect(delivered).toBe(requests);
    await transport.close();
  });

  test("JsonLinesTransport finds a held-back cancel however JSON spells its method: \\/ (PHP's json_encode), \\u escapes, an escaped member name (MCP tester, session 50)", async () => {
    const spellings = [
      '{"jsonrpc":"2.0","method":"notifications\\/cancelled","params":{"requestId":100}}',
      '{"jsonrpc":"2.0","method":"notifications\\u002fcancelled","params":{"requestId":100}}',
      '{"jsonrpc":"2.0","method":"\\u006eotifications/\\u0063ancelled","params":{"requestId":100}}',
      '{"jsonrpc":"2.0","\\u006dethod":"notifications\\/cancelled","params":{"requestId":100}}',
    ];
    for (const spelling of spellings) {
      const { stdin, transport, delivered } = await linked();
      let callAnswerable = false;
      let cancelCameInTime = null as boolean | null;
      transport.onmessage = (message) => {
        delivered.push(message);
        const { id, method } = message as { id?: number; method: string };
        if (id === 100) setImmediate(() => (callAnswerable = true));
        if (method === "notifications/cancelled") cancelCameInTime = !callAnswerable;
      };
      // 63 pings and the call (the 64th line, the last read this turn); its cancel is the 65th.
      const pings = Array.from({ length: 63 }, (_, i) => JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "ping" }));
      const call = JSON.stringify({ jsonrpc: "2.0", id: 100, method: "tools/call", params: { name: "slow", arguments: {} } });
      stdin.write(`${[...pings, call, spelling].join("\n")}\n`);
      await untilSeen(() => delivered.length === 65, "every line");
      expect([spelling, cancelCameInTime]).toEqual([spelling, true]);
      expect(delivered[64]).toEqual({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 100 } });
      await transport.close();
    }
  });

  test("JsonLinesTransport reads a cancel of a request it read at once, though lines after that request wait a turn; a cancel of one still held back stays behind it (tester R2)", async () => {
    const { stdin, transport, delivered } = await linked();
    // What a server does with a call: answers it on a later turn. A cancel read after that turn came too late.
    let callAnswerable = false;
    let cancelCameInTime = null as boolean | null;
    transport.onmessage = (message) => {
      delivered.push(message);
      const { id, method } = message as { id?: number; method: string };
      if (id === 100) setImmediate(() => (callAnswerable = true));
      if (method === "notifications/cancelled" && (message as unknown as { params: { requestId: number } }).params.requestId === 100) cancelCameInTime = !callAnswerable;
    };
    const lines = (messages: object[]) => messages.map((message) => `${JSON.stringify(message)}\n`).join("");
    const ping = (id: number) => ({ jsonrpc: "2.0", id, method: "ping" });
    const cancel = (requestId: number) => ({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId } });
    // 63 pings, the call (the 64th line, the last read this turn), its cancel; then a ping and a cancel of it.
    const pings = Array.from({ length: 63 }, (_, i) => ping(i + 1));
    const call = { jsonrpc: "2.0", id: 100, method: "tools/call", params: { name: "slow", arguments: {} } };
    stdin.write(lines([...pings, call, cancel(100), ping(101), cancel(101)]));
    await untilSeen(() => delivered.length === 67, "every line");
    expect(cancelCameInTime).toBe(true);
    const got: unknown[] = delivered;
    expect(got.slice(63, 65)).toEqual([call, cancel(100)]);
    // The ping held back and its cancel stay in order, a turn later.
    expect(got.slice(65)).toEqual([ping(101), cancel(101)]);
    // A cancelled request is never answered: it is not kept as one that waits for its answer.
    const unanswered = (transport as unknown as { unanswered: { has(id: number): boolean } }).unanswered;
    expect([unanswered.has(100), unanswered.has(101), unanswered.has(1)]).toEqual([false, false, true]);
    await transport.close();
  });
});
