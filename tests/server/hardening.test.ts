import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { tempCheckout } from "./_support/servers.ts";

// Requests a hostile or careless client sends: each must get a clear 4xx, never a 500, a stack
// or a path of the runtime.
let server: DocketServer;
let root: string;

beforeAll(async () => {
  root = tempCheckout();
  server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits(), capabilityDirs: [], runtime: "bun", mounts: defaultMounts, log: () => undefined });
});

afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Sends raw bytes (a Host header fetch would never send) and answers the status line and body. */
async function raw(request: string): Promise<{ status: number; text: string }> {
  const { port } = new URL(server.url);
  let received = "";
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname: "127.0.0.1",
      port: Number(port),
      socket: {
        open: (socket) => void socket.write(request),
        data: (_socket, data) => void (received += new TextDecoder().decode(data)),
        close: () => resolve(),
        error: (_socket, error) => reject(error),
      },
    }).catch(reject);
  });
  return { status: Number(received.split(" ")[1]), text: received };
}

const postJson = (path: string, body: string) => fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });

describe("hardening", () => {
  test("a Host with a port no URL can hold is 403, with a request id and no runtime path", async () => {
    for (const host of ["127.0.0.1:99999", "localhost:70000", "[::1]:65536"]) {
      const { status, text } = await raw(`GET /api/v1/capabilities/list HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect({ host, status }).toEqual({ host, status: 403 });
      expect(text.toLowerCase()).toContain("x-request-id");
      expect(text).not.toContain("/work/");
      expect(text).not.toContain("node_modules");
    }
  });

  test("deeply nested JSON is a 400 naming the depth, never a 500", async () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    for (const path of ["/api/v1/executions/get", "/api/v1/executions/start", "/api/v1/executions/report"]) {
      const response = await postJson(path, deep);
      expect({ path, status: response.status }).toEqual({ path, status: 400 });
    }
    const nested = `{"capability":"executions.demonstrate","input":${'{"a":'.repeat(5000)}1${"}".repeat(5000)}}`;
    const response = await postJson("/api/v1/executions/start", nested);
    expect(response.status).toBe(400);
    const error = ((await response.json()) as any).error;
    expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "too_deep" } });
    // The bound is docket's own, said as such (foundation tester, session 44), and is the started capability's 128, naming it (checking tester).
    expect(error.suggestion).toContain("whatever the capability's schema says");
    expect(error.message).toBe('Cannot start "executions.demonstrate": the input nests deeper than 128 levels.');
    expect(error.context.limit).toBe(128);
  });

  test("null or an array where an object input is expected is a 400 that says so", async () => {
    for (const body of ["null", "[]"]) {
      const response = await postJson("/api/v1/executions/demonstrate", body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as any).error.message).toContain("input must be a JSON object");
    }
  });

  test("an id or input of megabytes is refused at once, each failure text within failure_message_bytes and marked cut", async () => {
    const { failure_message_bytes } = resolveLimits();
    const bytesOf = (text: string) => Buffer.byteLength(text);
    const cases: Array<[string, string, number]> = [
      // A "did you mean" over a 3 MB id once held the main thread for ~20 s and took ~3 GB.
      ["/api/v1/executions/start", JSON.stringify({ capability: `${"a".repeat(3_000_000)}.b`, input: {} }), 404],
      ["/api/v1/capabilities/get", JSON.stringify({ id: "A".repeat(1_000_000) }), 404],
      ["/api/v1/executions/get", JSON.stringify({ id: `x-${"0".repeat(1_000_000)}` }), 400],
      ["/api/v1/executions/list", JSON.stringify({ cursor: "c".repeat(1_000_000) }), 400],
      ["/api/v1/executions/demonstrate", JSON.stringify({ steps: "A".repeat(1_000_000) }), 400],
    ];
    for (const [path, body, status] of cases) {
      const response = await postJson(path, body);
      const { error } = (await response.json()) as any;
      expect({ path, status: response.status }).toEqual({ path, status });
      expect({ path, message: bytesOf(error.message) <= failure_message_bytes, suggestion: bytesOf(error.suggestion) <= failure_message_bytes }).toEqual({ path, message: true, suggestion: true });
    }
    // What was cut says so; the server meanwhile answers everyone else.
    const { error } = (await (await postJson("/api/v1/capabilities/get", JSON.stringify({ id: "A".repeat(1_000_000) }))).json()) as any;
    expect(error.message.endsWith("…")).toBe(true);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  test("a malformed multipart cockpit form is a 400 page, not a 500", async () => {
    const response = await fetch(`${server.url}/cockpit/capabilities/executions.demonstrate`, { method: "POST", headers: { "content-type": "multipart/form-data; boundary=XX" }, body: "garbage" });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("malformed");
  });
});
