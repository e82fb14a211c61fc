import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { docket, fromSource, oneJsonDocument } from "../cli/_harness.ts";
import { serveCapabilityFiles, storeFilesText, type ServedCheckout } from "./_support/servers.ts";
import { openLive, completedOf } from "./_support/live-client.ts";

const CAPABILITY = `import { capability, CapabilityError, sensitive } from "docket";
import * as v from "valibot";

type Node = { token: string; name: string; children: Node[] };
const node: v.GenericSchema<Node> = v.object({ token: sensitive(v.string()), name: v.string(), children: v.array(v.lazy(() => node)) });

export default capability({
  id: "sec.tree",
  title: "A tree of secrets",
  description: "Each node of a recursive schema holds a secret; one more sits inside v.lazy.",
  effect: "read",
  input: v.object({ tree: node, key: v.lazy(() => sensitive(v.string())), fail: v.optional(v.boolean()) }),
  output: v.object({ tokens: v.array(v.string()) }),
  async handler(input, ctx) {
    const tokens: string[] = [];
    const walk = (at: Node) => {
      tokens.push(at.token);
      at.children.forEach(walk);
    };
    walk(input.tree);
    ctx.progress.log(\`tokens \${tokens.join(" ")} key \${input.key}\`);
    console.log("the whole input:", JSON.stringify(input));
    if (input.fail) throw new CapabilityError("refused", \`refused with \${tokens.at(-1)}\`, { context: { deepest: tokens.at(-1) } });
    return { tokens };
  },
});
`;

/** One secret per level of the tree (the first level was always redacted; the others were not), and the v.lazy one. */
const TOKENS = ["LevelOne-111", "LevelTwo-222", "LevelThree-333"];
const KEY = "LazyKey-444";
const SECRETS = [...TOKENS, KEY];

const leaf = (token: string) => ({ token, name: `node ${token.length}`, children: [] as unknown[] });
const INPUT = { tree: { ...leaf(TOKENS[0]!), children: [{ ...leaf(TOKENS[1]!), children: [leaf(TOKENS[2]!)] }] }, key: KEY };
const REDACTED_INPUT = {
  tree: { token: "[redacted]", name: "node 12", children: [{ token: "[redacted]", name: "node 12", children: [{ token: "[redacted]", name: "node 14", children: [] }] }] },
  key: "[redacted]",
};

/** A secret marked inside a recursive schema (v.lazy): hidden at every level wherever the input is kept or shown (docs/security.md). */
describe("a sensitive value inside a recursive schema", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  let root: string;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.tree.ts": CAPABILITY }, { storeKind: "sqlite" });
    ({ server, root } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  const api = async (path: string) => (await fetch(`${server.url}${path}`)).json() as Promise<any>;
  const storeFiles = () => storeFilesText(root);
  const expectNoSecret = (what: string, text: string) => {
    for (const secret of SECRETS) if (text.includes(secret)) throw new Error(`${what} holds the secret ${secret}`);
  };

  test("an execution started over HTTP stores, shows and logs every level's secret redacted, and its output and failure masked", async () => {
    const live = await openLive(server.url, "");
    await live.waitFor((f) => f.type === "stream.ready");
    const ids: string[] = [];
    for (const fail of [false, true]) {
      const started = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "sec.tree", input: { ...INPUT, fail } }) })).json()) as any;
      expect(started.execution.input).toEqual({ ...REDACTED_INPUT, fail });
      ids.push(started.execution.id);
      await live.waitFor(completedOf(started.execution.id));
    }
    await live.close();
    const [ok, failed] = await Promise.all(ids.map((id) => api(`/api/v1/executions/get?id=${id}`)));
    expect(ok.state).toBe("succeeded");
    expect(ok.output).toEqual({ tokens: ["[redacted]", "[redacted]", "[redacted]"] });
    expect(failed.state).toBe("failed");
    expect(failed.failure).toMatchObject({ error_code: "refused", message: "refused with [redacted]", context: { deepest: "[redacted]" } });
    const events = await Promise.all(ids.map(async (id) => (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).text()));
    expect(events[0]).toContain("tokens [redacted] [redacted] [redacted] key [redacted]");
    const pages = await Promise.all(ids.map(async (id) => (await fetch(`${server.url}/cockpit/executions/${id}`)).text()));
    const list = await (await fetch(`${server.url}/api/v1/executions`)).text();
    for (const [what, text] of [["the snapshots", JSON.stringify([ok, failed])], ["the events", events.join("")], ["the cockpit pages", pages.join("")], ["the list", list], ["the store's files", storeFiles()]] as const) {
      expectNoSecret(what, text);
    }
  });

  test("docket run reporting to the server announces every level's secret to GitHub Actions and masks it; the server stores it redacted", async () => {
    const ran = await docket(fromSource, ["run", "sec.tree", "--input", JSON.stringify(INPUT), "--format", "json"], { cwd: root, env: { GITHUB_ACTIONS: "true" } });
    expect(ran.code).toBe(0);
    // The runner masks from the first line on: every secret is announced before anything else.
    const announced = SECRETS.map((secret) => `::add-mask::${secret}\n`);
    expect(ran.stderr.slice(0, announced.join("").length).split(/(?<=\n)/).sort()).toEqual([...announced].sort());
    expectNoSecret("docket run's log", announced.reduce((text, line) => text.replace(line, ""), ran.stderr));
    expectNoSecret("docket run's output", ran.stdout);
    const run = oneJsonDocument(ran.stdout).execution;
    expect(run.input).toEqual(REDACTED_INPUT);
    const held = await api(`/api/v1/executions/get?id=${run.id}`);
    expect(held).toMatchObject({ state: "succeeded", actor: { kind: "cli" }, input: REDACTED_INPUT, output: { tokens: ["[redacted]", "[redacted]", "[redacted]"] } });
    expectNoSecret("the reported run's events", await (await fetch(`${server.url}/api/v1/executions/events?id=${run.id}`)).text());
    expectNoSecret("the store's files", storeFiles());
  }, 30_000);

  test("the cockpit types the v.lazy secret and the tree's secrets blind, and a form sent back with a problem holds none of them", async () => {
    const page = await (await fetch(`${server.url}/cockpit/capabilities/sec.tree`)).text();
    expect(page).toMatch(/<input type="password"[^>]*name="input\.key"/);
    expect(page).toMatch(/<input type="password"[^>]*name="input\.tree\.token"/);
    // The tree's children, rows of secrets, are one JSON box typed blind.
    expect(page).toMatch(/<input type="password"[^>]*name="input\.tree\.children"/);
    const children = JSON.stringify(INPUT.tree.children);
    const form = new URLSearchParams({ mode: "call", "input.key": KEY, "input.tree.token": TOKENS[0]!, "input.tree.name": "", "input.tree.children": children });
    const response = await fetch(`${server.url}/cockpit/capabilities/sec.tree`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url }, body: form });
    const answered = await response.text();
    expect(response.status).toBe(400);
    // The form comes back for the empty name (the cockpit reads an empty box as not given), holding no secret.
    expect(answered).toContain('name="input.tree.name"');
    expectNoSecret("the form sent back", answered);
  });
});
