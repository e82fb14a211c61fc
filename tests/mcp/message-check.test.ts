import { expect, test } from "bun:test";
import { checkMessage } from "../../runtime/mcp/_message-check.ts";

/** The refusal of `value` as one message on a line, failing the test when it is taken. */
function refusal(value: unknown): { id: unknown; code: number; message: string } {
  const checked = checkMessage(value, "line");
  if (checked.ok) throw new Error(`${JSON.stringify(value)} was taken as a message`);
  return checked;
}

test("checkMessage names a member a JSON-RPC message does not have, not a member of another kind of message", () => {
  const extra = refusal({ jsonrpc: "2.0", id: 15, method: "ping", extra: 1 });
  expect(extra).toMatchObject({ id: 15, code: -32600 });
  expect(extra.message).toStartWith('Invalid Request: "extra" is no member of a JSON-RPC message');
  expect(extra.message).not.toContain("received undefined");
  const several = refusal({ jsonrpc: "2.0", method: "notifications/initialized", a: 1, b: 2 });
  expect(several.message).toContain('"a", "b" are no members');
});

test("checkMessage says an id must be a string or an integer, naming a fractional or too large one, and answers it with id null (it could not be read)", () => {
  for (const [id, shown] of [[1.5, "1.5"], [-1.25, "-1.25"], [1e300, "1e+300"], [2 ** 53, "9007199254740992"], [true, "true"], [null, "null"]] as const) {
    const refused = refusal({ jsonrpc: "2.0", id, method: "tools/list" });
    expect(refused).toMatchObject({ id: null, code: -32600 });
    expect(refused.message).toBe(`Invalid Request: "id" must be a string or an integer, got ${shown}.`);
  }
  // Integers a JSON-RPC id may be, negative ones included, are read.
  expect(refusal({ jsonrpc: "2.0", id: -7, method: "tools/list", extra: 1 }).id).toBe(-7);
});

test("checkMessage answers params of initialize that do not fit, and a task, -32602 naming each problem and what to send", () => {
  const noParams = refusal({ jsonrpc: "2.0", id: 3, method: "initialize" });
  expect(noParams).toMatchObject({ id: 3, code: -32602 });
  expect(noParams.message).toContain("params must be an object, got nothing");
  expect(noParams.message).toContain('"clientInfo": {"name": "<client>", "version": "<version>"}');
  const version = refusal({ jsonrpc: "2.0", id: 4, method: "initialize", params: { protocolVersion: 5, capabilities: {}, clientInfo: { name: "a", version: "1" } } });
  expect(version.message).toContain("params.protocolVersion must be a string, got 5");
  const task = refusal({ jsonrpc: "2.0", id: 5, method: "tools/list", params: { task: {} } });
  expect(task).toMatchObject({ id: 5, code: -32602 });
  expect(task.message).toContain("params.task asks to run the request as an MCP task");
});

test("checkMessage takes a message that fits, an initialize included", () => {
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "a", version: "1" } } };
  expect(checkMessage(initialize, "request")).toEqual({ ok: true, message: initialize as never });
  expect(checkMessage({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } }, "line").ok).toBe(true);
});

test("checkMessage names a number JSON cannot hold as what was sent, not as the null JSON writes for it, and a message that is both a request and a response as such (checking tester)", () => {
  expect(refusal({ jsonrpc: "2.0", id: Number.POSITIVE_INFINITY, method: "tools/list" }).message).toBe('Invalid Request: "id" must be a string or an integer, got Infinity (a number too large for JSON to hold).');
  const both = refusal({ jsonrpc: "2.0", id: 3, method: "tools/list", result: {} });
  expect(both).toMatchObject({ id: 3, code: -32600 });
  expect(both.message).toStartWith('Invalid Request: a message has "method" (a request or a notification) or "result" or "error" (a response), never both.');
});

test("checkMessage refuses a cancellation whose requestId is no request id, as a notification whose params do not fit; one with none, or an id, is taken (MCP tester, session 41)", () => {
  for (const [requestId, said] of [[{ a: 1 }, "params.requestId must be a string or a number, got an object"], [null, "got null"], [1.5, "params.requestId must be a string or an integer, got 1.5"]] as const) {
    const checked = checkMessage({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId } }, "request");
    expect(checked).toMatchObject({ ok: false, id: null, code: -32602, notification: true });
    expect((checked as { message: string }).message).toContain(said);
    expect((checked as { message: string }).message).toContain('Send params like {"requestId": 7');
  }
  expect(checkMessage({ jsonrpc: "2.0", method: "notifications/cancelled", params: {} }, "line").ok).toBe(true);
  expect(checkMessage({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "r-1", reason: "timed out" } }, "line").ok).toBe(true);
});

test("params sent by position are -32602 with what that method takes, not always a tool call's (MCP/CLI tester, session 48)", () => {
  const hint = (method: string) => refusal({ jsonrpc: "2.0", id: 7, method, params: [1] }).message;
  expect(hint("tools/call")).toEndWith('was sent an array. Send params like {"name": "<tool>", "arguments": {…}}.');
  expect(hint("initialize")).toContain('was sent an array. Send params as {"protocolVersion": ');
  expect(hint("resources/read")).toEndWith('Send params like {"uri": "docket://executions/<id>"}.');
  expect(hint("tools/list")).toEndWith("Send params as an object, or none at all when the method takes none.");
  expect(refusal({ jsonrpc: "2.0", id: 7, method: "initialize", params: [1] })).toMatchObject({ id: 7, code: -32602 });
});

test("a method the server does not answer is -32601 whatever its params, and a long name is cut whole characters, said to be cut (MCP/CLI checking tester, session 48)", () => {
  const refused = refusal({ jsonrpc: "2.0", id: 9, method: "prompts/list", params: [] });
  expect(refused).toMatchObject({ id: 9, code: -32601 });
  expect(refused.message).toStartWith('Method not found: docket\'s MCP server does not answer "prompts/list"; it answers initialize, ping,');
  const long = refusal({ jsonrpc: "2.0", id: 10, method: `${"m".repeat(79)}😀tail`, params: [] }).message;
  expect(long).toContain(`"${"m".repeat(79)}😀…"`);
  expect(long).not.toContain("\\ud83d");
});
