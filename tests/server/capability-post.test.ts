// The direct route of capability calls by POST (runtime/server/capability-post.ts): what it takes
// itself and what it hands to the app must be answered as the app answers them, guards included.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { startBun, type StartedServer } from "./_support/servers.ts";

const TOKEN = "a-token-of-twenty-characters";
let open: StartedServer;
let guarded: StartedServer;

beforeAll(async () => {
  open = await startBun({ limits: { input_bytes: 1024 } });
  guarded = await startBun({ token: TOKEN });
});
afterAll(async () => {
  await open.stop();
  await guarded.stop();
});

const post = (server: StartedServer, path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/api/v1/${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

/** One raw HTTP/1.1 request (fetch always sends its own Host), answered as status and head. */
function raw(server: StartedServer, request: string): Promise<string> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let said = "";
    socket.on("data", (chunk) => (said += chunk));
    socket.on("end", () => resolve(said));
    socket.on("error", reject);
    setTimeout(() => (socket.destroy(), resolve(said)), 5000);
  });
}

describe("capability POST route", () => {
  test("capability POST route answers a call with its output and echoes X-Request-Id", async () => {
    const answer = await post(open, "capabilities/list", "{}", { "x-request-id": "req-42" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-request-id")).toBe("req-42");
    expect(answer.headers.get("content-type")).toBe("application/json");
    const body = (await answer.json()) as { capabilities: Array<{ id: string }> };
    expect(body.capabilities.map((c) => c.id)).toContain("executions.start");
  });

  test("capability POST route projects a failure of the call as the app does (status and descriptor)", async () => {
    const answer = await post(open, "executions/start", JSON.stringify({ capability: "no.such.thing" }));
    expect(answer.status).toBe(404);
    const body = (await answer.json()) as { error: { error_code: string; request_id: string } };
    expect(body.error.error_code).toBe("not_found");
    expect(answer.headers.get("x-request-id")).toBe(body.error.request_id);
  });

  test("capability POST route hands malformed JSON, an oversized body and a foreign Origin to the app's refusals", async () => {
    const malformed = await post(open, "capabilities/list", "{nope");
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { context: { reason: string } } }).error.context.reason).toBe("malformed_json");
    // Where the body stops being JSON, and not a word of it: a token may be a secret.
    const secret = await post(open, "executions/start", '{"capability":"executions.demonstrate",\n "input":{"token":hunter2secret}}');
    const refused = ((await secret.json()) as { error: { message: string; context: Record<string, unknown> } }).error;
    expect(secret.status).toBe(400);
    expect(refused.context).toEqual({ reason: "malformed_json", line: 2, column: 19 });
    expect(refused.message).toContain("at line 2, column 19");
    expect(JSON.stringify(refused)).not.toContain("hunter2");
    const large = await post(open, "capabilities/list", JSON.stringify({ pad: "x".repeat(2000) }));
    expect(large.status).toBe(413);
    const foreign = await post(open, "capabilities/list", "{}", { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    const text = await post(open, "capabilities/list", "{}", { "content-type": "text/plain" });
    expect(text.status).toBe(415);
  });

  test("capability POST route hands a request with a name the server does not answer to to the Host guard", async () => {
    const head = await raw(open, `POST /api/v1/capabilities/list HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 403 Forbidden");
  });

  test("capability POST route takes the token as Bearer or hands it to the app (cookie), and refuses a wrong one", async () => {
    expect((await post(guarded, "capabilities/list", "{}", { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const signIn = await fetch(`${guarded.url}/cockpit?token=${TOKEN}`, { redirect: "manual" });
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(cookie).toStartWith("docket_session_");
    expect((await post(guarded, "capabilities/list", "{}", { cookie })).status).toBe(200);
    expect((await post(guarded, "capabilities/list", "{}", { authorization: "Bearer wrong-token-of-twenty-chars" })).status).toBe(401);
    expect((await post(guarded, "capabilities/list", "{}")).status).toBe(401);
  });

  test("capability POST route: a declared body over Bun's own 128 MiB cap gets the app's 413 descriptor, not the runtime's bare one", async () => {
    const head = await raw(open, `POST /api/v1/executions/start HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${200 * 1024 * 1024}\r\n\r\n{}`);
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 413 Payload Too Large");
    expect(head.toLowerCase()).toContain("x-request-id:");
    expect(head).toContain('"reason":"too_large"');
  });

  test("capability POST route leaves an unknown capability and a query string to the app", async () => {
    expect((await post(open, "no/such", "{}")).status).toBe(404);
    // The app refuses a query string on a POST: it would not be read (tester R's ?dry_run=true).
    const refused = await post(open, "capabilities/list?x=1&x=2&y=", "{}");
    expect(refused.status).toBe(400);
    const error = ((await refused.json()) as any).error;
    expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "query_on_post", parameters: ["x", "y"] } });
    expect(error.message).toContain("takes its input as a JSON body only");
    expect(error.suggestion).toContain("GET");
    expect((await post(open, "capabilities/list?", "{}")).status).toBe(200);
  });

  test("a start whose run_id came in the query string is refused, not run without it: nothing starts", async () => {
    const before = ((await (await fetch(`${open.url}/api/v1/executions/list?limit=500`)).json()) as any).items.length;
    for (let i = 0; i < 2; i++) {
      const answer = await post(open, "executions/start?run_id=retry-1", JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } }));
      expect(answer.status).toBe(400);
      const error = ((await answer.json()) as any).error;
      expect(error.context).toEqual({ reason: "query_on_post", parameters: ["run_id"] });
      expect(error.suggestion).toBe("Put those fields in the JSON body.");
    }
    const after = ((await (await fetch(`${open.url}/api/v1/executions/list?limit=500`)).json()) as any).items.length;
    expect(after).toBe(before);
  });
});

describe("capability GET route", () => {
  test("a GET with a body is refused naming it, never answered for the defaults; an empty one is no body", async () => {
    const host = new URL(open.url).host;
    const get = (headers: string, body = "") => raw(open, `GET /api/v1/capabilities/list HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${headers}\r\n${body}`);
    for (const said of [await get("Content-Type: application/json\r\nContent-Length: 19\r\n", '{"capability":"x"}\n'), await get("Transfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n")]) {
      expect(said.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
      const error = JSON.parse(said.slice(said.indexOf("\r\n\r\n") + 4)).error;
      expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "body_on_get" } });
      expect(error.message).toContain("GET /api/v1/capabilities/list takes its input as a query string only; the request's body");
      expect(error.suggestion).toContain("POST /api/v1/capabilities/list");
    }
    expect((await get("Content-Length: 0\r\n")).split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });
});

describe("capability POST route, a client that leaves mid-body", () => {
  test("capability POST route and the app both take a body cut short by its client as the client's doing: no server error logged", async () => {
    const { startServer } = await import("../../runtime/server/serve.ts");
    const { resolveLimits } = await import("../../runtime/execution/limits.ts");
    const { tempCheckout } = await import("./_support/servers.ts");
    const { rmSync } = await import("node:fs");
    const root = tempCheckout();
    const lines: string[] = [];
    const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], token: null, runtime: "bun", log: (line: string) => lines.push(line) });
    try {
      const { hostname, port } = new URL(server.url);
      // The fast path, then the app (a query string hands the request to it).
      for (const path of ["/api/v1/executions/start", "/api/v1/executions/start?"]) {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), hostname, () => {
            socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"capability":`, () => setTimeout(() => (socket.destroy(), resolve()), 100));
          });
          socket.on("error", () => resolve());
        });
      }
      // Whatever the server does with the cut request happens on its own turns: a call after it is answered after it.
      await Bun.sleep(200);
      const after = await fetch(`${server.url}/api/v1/capabilities/list`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(after.status).toBe(200);
      expect(lines.filter((line) => line.includes("[docket]"))).toEqual([]);
    } finally {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
