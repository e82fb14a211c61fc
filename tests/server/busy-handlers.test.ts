import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { tempCheckout } from "./_support/servers.ts";

// A handler that never yields to its event loop: only the shared cancel flag can reach it.
const SPIN = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "busy.spin", title: "Spin", description: "Burns CPU until cancelled.", effect: "read", cancellable: true,
  input: v.object({}), output: v.object({ spins: v.number() }),
  handler(_input, ctx) {
    let spins = 0;
    while (!ctx.progress.cancelled()) spins++;
    throw ctx.progress.cancellation();
  },
});
`;

let server: DocketServer;
let root: string;

beforeAll(async () => {
  registerDocketModules();
  root = tempCheckout();
  mkdirSync(join(root, "capabilities"));
  writeFileSync(join(root, "capabilities", "busy.spin.ts"), SPIN);
  mkdirSync(join(root, "data"));
  writeFileSync(join(root, "data", "hello.txt"), "hello\n");
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", log: () => undefined });
});

afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);

async function until(predicate: () => Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("busy handlers", () => {
  test("CPU-bound executions on every execution worker block neither the API nor a direct call, and cancel reaches their busy loops", async () => {
    const ids = [(await post("/api/v1/executions/start", { capability: "busy.spin" })).execution.id, (await post("/api/v1/executions/start", { capability: "busy.spin" })).execution.id];
    const state = async (id: string) => ((await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any).state;
    await until(async () => (await state(ids[0])) === "running" && (await state(ids[1])) === "running");

    // Both execution workers spin; the API answers and a direct call runs on its own lane.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const digest = await (await fetch(`${server.url}/api/v1/files/digest?path=data`)).json() as any;
    expect(digest.files).toBe(1);
    expect(digest.manifest).toContain("data/hello.txt");

    for (const id of ids) expect((await post("/api/v1/executions/cancel", { id })).requested).toBe(true);
    await until(async () => (await state(ids[0])) === "cancelled" && (await state(ids[1])) === "cancelled");
    const done = (await (await fetch(`${server.url}/api/v1/executions/get?id=${ids[0]}`)).json()) as any;
    expect(done.failure).toMatchObject({ error_code: "cancelled", outcome_certainty: "not_applied" });
  });
});
