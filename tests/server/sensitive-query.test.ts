// A field its schema marks sensitive is never taken from a URL (server/query-input.ts holdsSecret):
// a GET carrying one is refused before anything runs, and OpenAPI does not offer it as a query
// parameter. URLs end up in logs, as README says of `?token=`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";

const SECRET = "QuerySecret99";

/** Writes a marker when it runs: a refused call must leave none. */
const LEAK = `import { capability, sensitive } from "docket";
import * as v from "valibot";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export default capability({
  id: "sec.leak",
  title: "Leak",
  description: "Says whether it was given a token.",
  effect: "read",
  input: v.object({ mode: v.string(), token: v.optional(sensitive(v.string())) }),
  output: v.object({ mode: v.string(), given: v.boolean() }),
  async handler(input, ctx) {
    writeFileSync(join(ctx.root, "ran-" + input.mode), "");
    return { mode: input.mode, given: input.token !== undefined };
  },
});
`;

const NEED = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "sec.need",
  title: "Need",
  description: "Cannot run without its token.",
  effect: "read",
  input: v.object({ token: sensitive(v.string()), note: v.optional(v.string()) }),
  output: v.object({ ok: v.boolean() }),
  handler: () => ({ ok: true }),
});
`;

/** A secret behind a reference (v.lazy): published as a $ref into $defs, still a secret. */
const LAZY = `import { capability, sensitive } from "docket";
import * as v from "valibot";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export default capability({
  id: "sec.lazy",
  title: "Lazy",
  description: "Takes a key through v.lazy.",
  effect: "read",
  input: v.object({ mode: v.string(), key: v.optional(v.lazy(() => sensitive(v.string()))) }),
  output: v.object({ given: v.boolean() }),
  async handler(input, ctx) {
    writeFileSync(join(ctx.root, "ran-" + input.mode), "");
    return { given: input.key !== undefined };
  },
});
`;

describe("a sensitive field in the query string", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  let root: string;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.leak.ts": LEAK, "sec.need.ts": NEED, "sec.lazy.ts": LAZY });
    ({ server, root } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  test("a GET carrying a sensitive field is refused 400 naming it, not its value, and nothing runs; HEAD alike", async () => {
    const answer = await fetch(`${server.url}/api/v1/sec/leak?mode=log&token=${SECRET}`);
    expect(answer.status).toBe(400);
    const text = await answer.text();
    expect(text).not.toContain(SECRET);
    const { error } = JSON.parse(text);
    expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "sensitive_in_query", parameter: "token" } });
    expect(error.message).toContain('"token" is not taken from the query string');
    expect(error.suggestion).toContain("JSON body");
    expect((await fetch(`${server.url}/api/v1/sec/leak?mode=head&token=${SECRET}`, { method: "HEAD" })).status).toBe(400);
    expect(existsSync(join(root, "ran-log"))).toBe(false);
    expect(existsSync(join(root, "ran-head"))).toBe(false);
  });

  test("a sensitive field behind a reference (v.lazy) is refused in the query string and not offered there by openapi.json", async () => {
    const answer = await fetch(`${server.url}/api/v1/sec/lazy?mode=lazy&key=${SECRET}`);
    expect(answer.status).toBe(400);
    expect((await answer.json()).error).toMatchObject({ context: { reason: "sensitive_in_query", parameter: "key" } });
    expect(existsSync(join(root, "ran-lazy"))).toBe(false);
    const doc = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as any;
    expect(doc.paths["/api/v1/sec/lazy"].get.parameters.map((p: any) => p.name)).toEqual(["mode"]);
  });

  test("a GET whose query string is not percent-encoded UTF-8 is refused 400 naming the parameter's place, not its value, and nothing runs (testers M7, T7)", async () => {
    for (const [mode, bad] of [["bytes", "%FF"], ["cut", "%E0%A4%A"], ["nothex", "%ZZ"]]) {
      const answer = await fetch(`${server.url}/api/v1/sec/leak?mode=${mode}&other=${bad}`);
      expect(answer.status).toBe(400);
      const { error } = await answer.json();
      expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "query_not_utf8", parameter: "#2" } });
      expect(error.message).toStartWith("Parameter 2 of the query string is not percent-encoded UTF-8");
      expect(existsSync(join(root, `ran-${mode}`))).toBe(false);
    }
    // Bytes that are no UTF-8 sent raw, not percent-encoded (tester R5): the same mistake.
    const raw = await new Promise<string>((resolve, reject) => {
      let got = "";
      const { port, hostname } = new URL(server.url);
      const socket = connect(Number(port), hostname, () => socket.write(Buffer.concat([Buffer.from("GET /api/v1/sec/leak?mode=raw&other="), Buffer.from([0xff, 0xc3, 0x28]), Buffer.from(` HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n\r\n`)])));
      socket.on("data", (chunk) => (got += chunk));
      socket.on("end", () => resolve(got));
      socket.on("error", reject);
    });
    expect(raw).toStartWith("HTTP/1.1 400");
    expect(raw).toContain("query_not_utf8");
    expect(existsSync(join(root, "ran-raw"))).toBe(false);
    // Encoded UTF-8, a + for a space and a literal % encoded as %25 are as sent.
    const good = await fetch(`${server.url}/api/v1/sec/leak?mode=${encodeURIComponent("é 100%")}+x`);
    expect(await good.json()).toEqual({ mode: "é 100% x", given: false });
  });

  test("a GET without the sensitive field runs, and a POST takes it in its body", async () => {
    const get = await fetch(`${server.url}/api/v1/sec/leak?mode=get`);
    expect(await get.json()).toEqual({ mode: "get", given: false });
    const post = await fetch(`${server.url}/api/v1/sec/leak`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ mode: "post", token: SECRET }) });
    expect(await post.json()).toEqual({ mode: "post", given: true });
  });

  test("openapi.json offers no sensitive field as a query parameter, and no GET that could never carry a required one", async () => {
    const doc = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as any;
    const leak = doc.paths["/api/v1/sec/leak"];
    expect(leak.get.parameters.map((p: any) => p.name)).toEqual(["mode"]);
    expect(leak.get.description).toContain("POST body only, never from the query string: token (sensitive)");
    expect(leak.post.requestBody.content["application/json"].schema.properties.token["x-docket-sensitive"]).toBe(true);
    const need = doc.paths["/api/v1/sec/need"];
    expect(need.get).toBeUndefined();
    expect(need.post).toBeDefined();
  });
});
