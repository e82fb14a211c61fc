import { expect, test } from "bun:test";
import { PendingRequests } from "../../runtime/mcp/pending-requests.ts";

const call = (id: number) => ({ jsonrpc: "2.0" as const, id, method: "tools/call", params: { name: "team_greet" } });
const cancel = (requestId: number) => ({ jsonrpc: "2.0" as const, method: "notifications/cancelled", params: { requestId } });
const answer = (id: number) => ({ jsonrpc: "2.0" as const, id, result: {} });

test("PendingRequests passes on a cancel of a request in flight, which then waits for no answer", async () => {
  const pending = new PendingRequests();
  expect(pending.received(call(1))).toBe(true);
  expect(pending.has(1)).toBe(true);
  expect(pending.received(cancel(1))).toBe(true);
  expect(pending.count).toBe(0);
  await pending.settled();
});

test("PendingRequests drops a cancel of a request not yet sent or answered already, and still waits for that request", async () => {
  const pending = new PendingRequests();
  expect(pending.received(cancel(4))).toBe(false);
  expect(pending.received(call(4))).toBe(true);
  expect(pending.waiting()).toEqual([4]);
  pending.answered(answer(4));
  expect(pending.received(cancel(4))).toBe(false);
  expect(pending.received({ jsonrpc: "2.0", method: "notifications/cancelled", params: {} } as never)).toBe(false);
});

test("PendingRequests settles once every request seen has its answer", async () => {
  const pending = new PendingRequests();
  pending.received(call(1));
  pending.received(call(2));
  let settled = false;
  const done = pending.settled().then(() => (settled = true));
  pending.answered(answer(1));
  await Promise.resolve();
  expect(settled).toBe(false);
  pending.answered(answer(2));
  await done;
  expect(settled).toBe(true);
});
