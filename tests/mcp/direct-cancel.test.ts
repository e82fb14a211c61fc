// A tools/call of a work capability is a direct call: cancelling the request cancels the call
// (docs/containment.md), so a handler that waits for it stops, and the direct lane is free again.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { BootedPlane } from "../../runtime/boot.ts";
import { bootTestPlane, capabilityFile, connectInProcess, removeCheckout, structured, tempCheckout, untilSeen, WAIT } from "./_support.ts";

let root: string;
let plane: BootedPlane;
let client: Client;

beforeAll(async () => {
  root = tempCheckout({ "capabilities/team.wait.ts": WAIT, "capabilities/team.greet.ts": capabilityFile("team.greet") });
  plane = await bootTestPlane(root);
  client = await connectInProcess(plane);
});

afterAll(async () => {
  await client.close();
  await plane.close();
  removeCheckout(root);
});

test("cancelling a tools/call of a work capability (notifications/cancelled) cancels its direct call, and the lane serves the next", async () => {
  const abort = new AbortController();
  const call = client.callTool({ name: "team_wait", arguments: {} }, undefined, { signal: abort.signal });
  await untilSeen(() => existsSync(join(root, "started.mark")), "the handler to start");
  abort.abort("the agent changed its mind");
  await expect(call).rejects.toThrow();
  await untilSeen(() => existsSync(join(root, "cancelled.mark")), "the handler to see its cancellation");
  expect(structured(await client.callTool({ name: "team_greet", arguments: { name: "Ada" } }))).toEqual({ greeting: "Hello, Ada" });
});
