import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";
import { openLive, completedOf } from "./_support/live-client.ts";

const ECHO = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "sec.echo",
  title: "Echo a secret",
  description: "Prints its secret whole, in two pieces and twice over, and returns it twice: careless code.",
  effect: "read",
  input: v.object({ token: sensitive(v.string()) }),
  output: v.object({ twice: v.string() }),
  async handler(i) {
    console.log("token:", i.token);
    const half = Math.floor(i.token.length / 2);
    process.stdout.write("pieces: " + i.token.slice(0, half));
    process.stdout.write(i.token.slice(half) + "\\n");
    console.log(i.token + i.token);
    return { twice: i.token + i.token };
  },
});
`;

const post = (server: DocketServer, path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

/** Secrets whose texts to find start alike or repeat themselves: masked whole, in time that follows the text, or refused when too large. */
describe("large and self-similar secrets", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.echo.ts": ECHO });
    ({ server } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  // Before, each text this run prints took about 20 s to mask in the worker, and its output as long on the server's main thread.
  test("a secret of 20,000 lines that all start alike is masked whole in every log line, piece and output", async () => {
    const token = Array.from({ length: 20_000 }, (_, i) => `AAAAAAAA${i.toString(36).padStart(8, "x")}${"Z".repeat(20)}`).join("\n");
    const live = await openLive(server.url, "");
    await live.waitFor((f) => f.type === "stream.ready");
    const started = (await (await post(server, "/api/v1/executions/start", { capability: "sec.echo", input: { token } })).json()) as any;
    const id = started.execution.id;
    await live.waitFor(completedOf(id));
    await live.close();
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any;
    expect(snapshot).toMatchObject({ state: "succeeded", output: { twice: "[redacted]" } });
    const events = await (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).text();
    expect(events).not.toContain("AAAAAAAA");
    expect(events).toContain("token: [redacted]");
    // Written in two pieces, the secret is held back until the second shows it whole.
    const streamed = (JSON.parse(events).events as any[]).filter((e) => e.type === "execution.stream" && e.data.name === "stdout").map((e) => e.data.chunk);
    expect(streamed.join("")).toBe("pieces: [redacted]\n");
    expect(JSON.stringify(live.frames)).not.toContain("AAAAAAAA");
  }, 30_000);

  // Before, a value of 160,000 repeated characters took 8 s to find in a text twice as long.
  test("a secret that repeats itself, printed and returned twice over, is masked as one", async () => {
    const token = "A".repeat(160_000);
    const answer = (await (await post(server, "/api/v1/sec/echo", { token })).json()) as any;
    expect(answer).toEqual({ twice: "[redacted]" });
  }, 30_000);

  test("an input whose secrets, in every form masked, are more than docket searches texts for is a 400 naming the limit, and nothing is stored", async () => {
    const token = Array.from({ length: 40_000 }, (_, i) => `MIIB${String(i).padStart(8, "0")}${"Qz7kWp3mVb9tRxAbCdEfGh+/".repeat(2)}`).join("\n");
    const refused = await post(server, "/api/v1/executions/start", { capability: "sec.echo", input: { token } });
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as any;
    expect(body.error).toMatchObject({ error_code: "invalid_input", context: { reason: "secrets_too_large", limit: 4_000_000 } });
    expect(JSON.stringify(body)).not.toContain("MIIB0000");
    const direct = await post(server, "/api/v1/sec/echo", { token });
    expect(direct.status).toBe(400);
    const listed = (await (await fetch(`${server.url}/api/v1/executions/list?capability=sec.echo`)).json()) as any;
    expect(listed.items.every((item: any) => item.state === "succeeded")).toBe(true);
  }, 30_000);
});
