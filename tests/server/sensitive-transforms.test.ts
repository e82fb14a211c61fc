import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, storeFilesText, type ServedCheckout } from "./_support/servers.ts";
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

/** The tester's t.rename: the whole input's transform moves the secret to a field the schema does not name. */
const RENAME = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "t.rename", title: "rename", description: "A secret moved by a transform of the whole input.", effect: "write",
  input: v.pipe(v.object({ user: v.string(), tok: sensitive(v.string()) }), v.transform((o) => ({ user: o.user, auth: { bearer: o.tok } }))),
  output: v.object({ ok: v.boolean(), said: v.string() }),
  async handler(i) {
    console.log("INPUT", JSON.stringify(i));
    return { ok: true, said: \`bearer \${i.auth.bearer}\` };
  },
});
`;

/** The tester's t.wrap: JSON text that the schema parses into an object holding a secret. */
const WRAP = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "t.wrap", title: "wrap", description: "A secret inside JSON text the schema parses.", effect: "write",
  input: v.object({ cfg: v.pipe(v.string(), v.transform((s) => JSON.parse(s)), v.object({ token: sensitive(v.string()) })) }),
  output: v.object({ ok: v.boolean() }),
  async handler(i) {
    console.log("INPUT", JSON.stringify(i), i.cfg.token);
    return { ok: true };
  },
});
`;

/** A secret whose schema transforms it (tester: sec.xf2): still hidden everywhere the input is kept or shown. */
describe("a sensitive value with a transform in its schema", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  let root: string;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.xf2.ts": CAPABILITY, "t.rename.ts": RENAME, "t.wrap.ts": WRAP }, { storeKind: "sqlite" });
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
    const stored = storeFilesText(root);
    for (const text of [JSON.stringify(snapshot), events, page, stored]) {
      for (const secret of [...SECRETS, "493817"]) expect(text).not.toContain(secret);
    }
  });

  /** Starts and awaits one execution over HTTP; its snapshot, events and cockpit page as text. */
  async function run(body: Record<string, unknown>) {
    const live = await openLive(server.url, "");
    await live.waitFor((f) => f.type === "stream.ready");
    const answer = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })).json()) as any;
    const id = answer.execution.id;
    await live.waitFor(completedOf(id));
    await live.close();
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any;
    const events = await (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).text();
    const page = await (await fetch(`${server.url}/cockpit/executions/${id}`)).text();
    return { answer, snapshot, events, page };
  }

  const storedFiles = () => storeFilesText(root);

  test("a secret a transform of the whole input moves is redacted where it was sent, masked in the log and output, and no run_id answer tells a guess (tester: t.rename)", async () => {
    const { answer, snapshot, events, page } = await run({ capability: "t.rename", input: { user: "bob", tok: "RENAMESECRET1" }, run_id: "rename-1" });
    expect(answer.deduplicated).toBe(false);
    expect(snapshot.state).toBe("succeeded");
    expect(snapshot.input).toEqual({ user: "bob", tok: "[redacted]" });
    expect(snapshot.output).toEqual({ ok: true, said: "bearer [redacted]" });
    expect(events).toContain('\\"bearer\\":\\"[redacted]\\"');
    for (const text of [JSON.stringify(snapshot), events, page, storedFiles()]) expect(text).not.toContain("RENAMESECRET1");
    // Run again fills the form the input schema describes: the user, and the secret left to type again.
    const again = await (await fetch(`${server.url}/cockpit/capabilities/t.rename?again=${snapshot.id}`)).text();
    expect(again).toContain(`The form holds the input of ${snapshot.id}.`);
    expect(again).toMatch(/name="input\.user"[^>]*value="bob"|value="bob"[^>]*name="input\.user"/);
    // The right secret and a wrong guess get the same answer: that run.
    for (const tok of ["RENAMESECRET1", "WRONGGUESS22"]) {
      const again = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "t.rename", input: { user: "bob", tok }, run_id: "rename-1" }) })).json()) as any;
      expect({ tok, deduplicated: again.deduplicated, id: again.execution?.id }).toEqual({ tok, deduplicated: true, id: snapshot.id });
    }
  });

  test("JSON text that its schema parses into an object holding a secret is redacted whole, and the secret inside it is masked in the log (tester: t.wrap)", async () => {
    const { snapshot, events, page } = await run({ capability: "t.wrap", input: { cfg: JSON.stringify({ token: "WRAPSECRET22" }) } });
    expect(snapshot.state).toBe("succeeded");
    expect(snapshot.input).toEqual({ cfg: "[redacted]" });
    expect(events).toContain("INPUT");
    for (const text of [JSON.stringify(snapshot), events, page, storedFiles()]) expect(text).not.toContain("WRAPSECRET22");
  });
});
