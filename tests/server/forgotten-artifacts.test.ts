// An execution forgotten past executions_retained takes its artifacts with it: nothing can
// download or release them once the store no longer holds it, and they counted against the
// storage budget for good (cockpit tester, session 43). Both stores.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";

const ART = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.art", title: "Art", description: "Writes an artifact.", effect: "read", execution: "always",
  input: v.object({ name: v.string() }), output: v.object({}),
  async handler(input, ctx) {
    await ctx.artifacts.write(input.name, "kept " + input.name);
    return {};
  },
});
`;

let served: ServedCheckout | null = null;

afterEach(async () => {
  await served?.stop();
  served = null;
});

async function finished(s: DocketServer, name: string): Promise<string> {
  const started = await fetch(`${s.url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ capability: "team.art", input: { name } }) });
  expect(started.status).toBe(200);
  const id = ((await started.json()) as { execution: { id: string } }).execution.id;
  for (const end = Date.now() + 10_000; Date.now() < end; await Bun.sleep(10)) {
    const got = (await (await fetch(`${s.url}/api/v1/executions/get?id=${id}`)).json()) as { state: string };
    if (got.state === "succeeded") return id;
  }
  throw new Error(`${id} did not finish`);
}

describe.each(["memory", "sqlite"] as const)("artifacts of a forgotten execution (%s store)", (storeKind) => {
  test("go with it once executions_retained forgets it; the retained one keeps its own", async () => {
    served = await serveCapabilityFiles({ "team.art.ts": ART }, { storeKind, limits: { overrides: { executions_retained: 1 } } });
    const { server, root } = served;
    const first = await finished(server, "first.txt");
    const folder = (id: string) => join(root, ".docket", "artifacts", id);
    expect(existsSync(join(folder(first), "first.txt"))).toBe(true);
    const second = await finished(server, "second.txt");
    // The next start looks the store up, which lets the first go once its deletion is committed.
    const third = await finished(server, "third.txt");
    expect((await fetch(`${server.url}/api/v1/executions/get?id=${first}`)).status).toBe(404);
    expect(existsSync(folder(first))).toBe(false);
    expect(existsSync(folder(second))).toBe(false);
    const download = await fetch(`${server.url}/api/v1/executions/artifact?id=${third}&name=third.txt`);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe("kept third.txt");
  });
});
