// A tools/call of a work capability is a direct call: cancelling the request cancels the call
// (docs/containment.md), so a handler that waits for it stops, and the direct lane is free again.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { BootedPlane } from "../../runtime/boot.ts";
import { bootTestPlane, capabilityFile, connectInProcess, removeCheckout, structured, tempCheckout } from "./_support.ts";

const WAIT = `import { capability } from "docket";
import * as v from "valibot";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
export default capability({
  id: "team.wait", title: "Wait", description: "Waits until it is cancelled.", effect: "read", cancellable: true,
  input: v.object({}), output: v.object({}),
  async handler(_input, ctx) {
    writeFileSync(join(ctx.root, "started.mark"), "");
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    writeFileSync(join(ctx.root, "cancelled.mark"), "");
    throw ctx.progress.cancellation();
  },
});
`;

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

async function until(look: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 800 && !look(); i++) await Bun.sleep(25);
  if (!look()) throw new Error(`Gave up waiting for ${what}`);
}

test("cancelling a tools/call of a work capability (notifications/cancelled) cancels its direct call, and the lane serves the next", async () => {
  const abort = new AbortController();
  const call = client.callTool({ name: "team_wait", arguments: {} }, undefined, { signal: abort.signal });
  await until(() => existsSync(join(root, "started.mark")), "the handler to start");
  abort.abort("the agent changed its mind");
  await expect(call).rejects.toThrow();
  await until(() => existsSync(join(root, "cancelled.mark")), "the handler to see its cancellation");
  expect(structured(await client.callTool({ name: "team_greet", arguments: { name: "Ada" } }))).toEqual({ greeting: "Hello, Ada" });
});
