import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { docket, fromSource, oneJsonDocument } from "../cli/_harness.ts";
import { serveCapabilityFiles, storeFilesText, type ServedCheckout } from "./_support/servers.ts";
import { openLive, completedOf } from "./_support/live-client.ts";

const CAPABILITY = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "sec.keys",
  title: "Secret keys",
  description: "A record whose keys are secrets (API keys by environment), beside one whose keys are not.",
  effect: "read",
  input: v.object({ keys: v.record(sensitive(v.string()), v.string()), labels: v.optional(v.record(v.string(), v.string())), login: v.optional(sensitive(v.strictObject({ user: v.string() }))) }),
  output: v.object({ used: v.array(v.string()) }),
  async handler(input, ctx) {
    const used = Object.keys(input.keys);
    ctx.progress.log(\`using \${used.join(" ")} for \${Object.values(input.keys).join(" ")}\`);
    console.log("keys:", input.keys);
    return { used };
  },
});
`;

const KEY = "sk_live_SUPERSECRET99";
const INPUT = { keys: { [KEY]: "prod" }, labels: { team: "payments" } };
const REDACTED_INPUT = { keys: "[redacted]", labels: { team: "payments" } };

/** Keys a schema marks secret (`v.record(sensitive(v.string()), …)`) are hidden wherever the input is kept or shown (docs/security.md). */
describe("a record whose keys the schema marks sensitive", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  let root: string;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.keys.ts": CAPABILITY }, { storeKind: "sqlite" });
    ({ server, root } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  const api = async (path: string) => (await fetch(`${server.url}${path}`)).json() as Promise<any>;
  const storeFiles = () => storeFilesText(root);
  const expectNoSecret = (what: string, text: string) => {
    if (text.includes("SUPERSECRET99")) throw new Error(`${what} holds the secret key`);
  };

  test("an execution started over HTTP stores and shows the record hidden, and its log and output masked (containment tester, session 47: served in the clear)", async () => {
    const live = await openLive(server.url, "");
    await live.waitFor((f) => f.type === "stream.ready");
    const started = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "sec.keys", input: INPUT }) })).json()) as any;
    expect(started.execution.input).toEqual(REDACTED_INPUT);
    const id = started.execution.id as string;
    const frames = JSON.stringify(await live.waitFor(completedOf(id)));
    await live.close();
    const held = await api(`/api/v1/executions/get?id=${id}`);
    expect(held).toMatchObject({ state: "succeeded", input: REDACTED_INPUT, output: { used: ["[redacted]"] } });
    const events = await (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).text();
    expect(events).toContain("using [redacted] for prod");
    const page = await (await fetch(`${server.url}/cockpit/executions/${id}`)).text();
    const list = await (await fetch(`${server.url}/api/v1/executions`)).text();
    for (const [what, text] of [["the snapshot", JSON.stringify(held)], ["the events", events], ["the live frames", frames], ["the cockpit page", page], ["the list", list], ["the store's files", storeFiles()]] as const) {
      expectNoSecret(what, text);
    }
  });

  test("a direct call and a refused input never quote the key back", async () => {
    const direct = await fetch(`${server.url}/api/v1/sec/keys`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(INPUT) });
    expect(direct.status).toBe(200);
    expectNoSecret("the direct call's answer", await direct.text());
    // A value of the wrong type under the secret key: the problem's path leads into the record.
    const refused = await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "sec.keys", input: { keys: { [KEY]: 5 } } }) });
    expect(refused.status).toBe(400);
    expectNoSecret("the refusal", await refused.text());
    // A key too short to be masked by value is hidden in the problem's path (checking tester, session 47).
    const short = await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "sec.keys", input: { keys: { zq9: 5 }, labels: { abc: 6 } } }) });
    const said = await short.text();
    expect(short.status).toBe(400);
    expect(said).not.toContain("zq9");
    expect(said).toContain("input.keys[…]");
    // A key of a record whose keys are not secret is named as ever.
    expect(said).toContain("input.labels.abc");
    // A member a sensitive object does not have is not named in the message either (fourth checking tester).
    const strict = await fetch(`${server.url}/api/v1/sec/keys`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ keys: {}, login: { user: "u", zz8: 1 } }) });
    const told = await strict.text();
    expect(strict.status).toBe(400);
    expect(told).not.toContain("zz8");
  });

  test("the cockpit types the keys blind, and a form sent back with a problem holds none of them", async () => {
    const page = await (await fetch(`${server.url}/cockpit/capabilities/sec.keys`)).text();
        expect(page).toMatch(/<input type="password"[^>]*name="input\.keys\.0\.key"/);
    expect(page).toMatch(/<input type="text"[^>]*name="input\.labels\.0\.key"/);
    // A second row with a value and no key is the problem.
    const form = new URLSearchParams({ mode: "start", "input.keys.0.key": KEY, "input.keys.0.value": "prod", "input.keys.1.key": "", "input.keys.1.value": "staging" });
    const response = await fetch(`${server.url}/cockpit/capabilities/sec.keys`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url }, body: form });
    const answered = await response.text();
    expect(response.status).toBe(400);
    expect(answered).toContain('name="input.keys.1.value"');
    expectNoSecret("the form sent back", answered);
  });

  test("docket run announces the key to GitHub Actions and masks it; the server stores the record hidden", async () => {
    const ran = await docket(fromSource, ["run", "sec.keys", "--input", JSON.stringify(INPUT), "--format", "json"], { cwd: root, env: { GITHUB_ACTIONS: "true" } });
    expect(ran.code).toBe(0);
    expect(ran.stderr.startsWith(`::add-mask::${KEY}\n`)).toBe(true);
    expectNoSecret("docket run's log", ran.stderr.replace(`::add-mask::${KEY}\n`, ""));
    expectNoSecret("docket run's output", ran.stdout);
    const run = oneJsonDocument(ran.stdout).execution;
    expect(run.input).toEqual(REDACTED_INPUT);
    expect(await api(`/api/v1/executions/get?id=${run.id}`)).toMatchObject({ state: "succeeded", input: REDACTED_INPUT });
    expectNoSecret("the store's files", storeFiles());
  }, 30_000);
});
