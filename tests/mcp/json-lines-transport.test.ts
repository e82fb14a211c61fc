import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { JsonLinesTransport } from "../../runtime/mcp/json-lines-transport.ts";

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
    await Bun.sleep(0);
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "café" } }]);
  });

  test("JsonLinesTransport answers a line over its bound once, skips the rest of it, and reads the next line", async () => {
    const { stdin, delivered, written } = await linked(64);
    stdin.write("x".repeat(50));
    stdin.write("x".repeat(50));
    stdin.write(`${"x".repeat(50)}\n${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" })}\n`);
    await Bun.sleep(0);
    const answers = written();
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(answers[0].error.message).toContain("was skipped. Send a smaller input");
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: 2, method: "ping" }]);
  });
});
