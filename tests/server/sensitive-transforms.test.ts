import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";
import { openLive, completedOf } from "./_support/live-client.ts";

const CAPABILITY = `import { capability, sensitive } from "docket";
import * as v from "valibot";

const echo = (s: string) => s;

export default capability({
  id: "sec.xf2",
  title: "Transformed secrets",
  description: "Secrets whose schemas transform them, marked around, after and before the transform.",
  effect: "read",
  input: v.object({
    a: v.optional(sensitive(v.pipe(v.string(), v.transform(echo), v.string()))),
    n: v.optional(sensitive(v.pipe(v.string(), v.transform(Number), v.number()))),
    after: v.optional(v.pipe(v.string(), v.transform(echo), sensitive(v.string()))),
    list: v.optional(v.array(sensitive(v.pipe(v.string(), v.transform(echo), v.string())))),
  }),
  output: v.object({ ok: v.boolean() }),
  async handler(i, ctx) {
    ctx.progress.log(\`got \${i.a} \${i.after} \${i.list?.join(",")}\`);
    return { ok: true };
  },
});
`;

const SECRETS = ["SecretA111", "SecretAfter222", "SecretList333"];

/** A secret whose schema transforms it (tester: sec.xf2): still hidden everywhere the input is kept or shown. */
describe("a sensitive value with a transform in its schema", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  let root: string;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.xf2.ts": CAPABILITY }, { storeKind: "sqlite" });
    ({ server, root } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  test("is published as sensitive, redacted in the stored input and the store's files, and masked in the log", async () => {
    const capability = (await (await fetch(`${server.url}/api/v1/capabilities/get?id=sec.xf2`)).json()) as any;
    for (const key of ["a", "n", "after"]) expect(capability.input_schema.properties[key]["x-docket-sensitive"]).toBe(true);

    const live = await openLive(server.url, "");
    await live.waitFor((f) => f.type === "stream.ready");
    const input = { a: SECRETS[0], n: "493817", after: SECRETS[1], list: [SECRETS[2]] };
    const started = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "sec.xf2", input }) })).json()) as any;
    const id = started.execution.id;
    await live.waitFor(completedOf(id));
    await live.close();
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any;
    expect(snapshot.state).toBe("succeeded");
    expect(snapshot.input).toEqual({ a: "[redacted]", n: "[redacted]", after: "[redacted]", list: ["[redacted]"] });
    const events = await (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).text();
    expect(events).toContain("got [redacted] [redacted] [redacted]");
    const page = await (await fetch(`${server.url}/cockpit/executions/${id}`)).text();
    const files = ["state.db", "state.db-wal"].map((name) => join(root, ".docket", name)).filter((file) => existsSync(file));
    expect(files.length).toBeGreaterThan(0);
    const stored = files.map((file) => readFileSync(file).toString("latin1")).join("");
    for (const text of [JSON.stringify(snapshot), events, page, stored]) {
      for (const secret of [...SECRETS, "493817"]) expect(text).not.toContain(secret);
    }
  });
});
