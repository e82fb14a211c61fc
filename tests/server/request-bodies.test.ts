// Request bodies being read at once (server/request-bodies.ts): bounded by request_bytes_in_flight,
// charged the bytes they really hold as they come (a small one its Content-Length, never refused),
// the rest refused 503 with Retry-After, and the share given back once a body is read or its
// client leaves. A real `docket serve` (API, direct POST route, MCP and cockpit mounted) and raw
// TCP clients that send most of a body and stop, or announce one and send nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type Socket } from "node:net";
import { registerDocketModules } from "../../runtime/adapter/bun-modules.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { requestBodies } from "../../runtime/server/request-bodies.ts";
import { startServer, type DocketServer } from "../../runtime/server/serve.ts";
import { removeTempDirs, tempCheckout, writeFiles } from "../cli/_harness.ts";

const KIB = 1024;
const MIB = 1024 * KIB;

/** A direct call that says it began (a file `<gate>.<name>`) and runs until the file `gate` exists: its body is read long before it ends. */
const HOLD = `import { capability } from "docket";
import * as v from "valibot";
import { existsSync, writeFileSync } from "node:fs";

export default capability({
  id: "test.hold",
  title: "Hold",
  description: "Waits for a file, then answers how long its padding was.",
  effect: "read",
  input: v.object({ gate: v.string(), name: v.string(), pad: v.string() }),
  output: v.object({ length: v.number() }),
  async handler(input) {
    writeFileSync(input.gate + "." + input.name, "");
    while (!existsSync(input.gate)) await new Promise((resolve) => setTimeout(resolve, 10));
    return { length: input.pad.length };
  },
});
`;

let checkout = "";
let server: DocketServer;

beforeAll(async () => {
  checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/test.hold.ts": HOLD });
  registerDocketModules();
  server = await startServer({
    cwd: checkout,
    port: 0,
    storeKind: "memory",
    limits: resolveLimits({ overrides: { request_bytes_in_flight: MIB, input_bytes: 2 * MIB } }),
    capabilityDirs: [],
    token: null,
    runtime: "bun",
    importFile: (path) => import(path),
    mounts: defaultMounts,
    log: () => undefined,
  });
});

afterAll(async () => {
  await server.stop();
  removeTempDirs();
});

/** A JSON body of exactly `bytes` bytes. */
function bodyOf(bytes: number, fields: Record<string, string> = {}): string {
  const head = JSON.stringify({ ...fields, pad: "" });
  return `${head.slice(0, -2)}${"x".repeat(bytes - head.length)}"}`;
}

/** A client that declares a body of `declared` bytes, sends all of it but its last byte, and waits: the server holds what came. */
function stalledClient(path: string, declared: number): Promise<Socket> {
  const { hostname, port } = new URL(server.url);
  const body = bodyOf(declared);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
      socket.write(body.slice(0, -1), () => resolve(socket));
    });
    socket.once("error", reject);
  });
}

/** One raw HTTP/1.1 request (its Host added; `Connection: close`, so the server ends it), answered as what the server said. */
function rawRequest(request: string): Promise<string> {
  const { hostname, port } = new URL(server.url);
  const [line, ...rest] = request.split("\r\n");
  return new Promise((resolve, reject) => {
    // Written, not ended: a client that half-closes its side is taken for one that left.
    const socket = connect(Number(port), hostname, () => socket.write([line, `Host: ${hostname}:${port}`, ...rest].join("\r\n")));
    let said = "";
    socket.on("data", (chunk) => (said += chunk));
    socket.on("end", () => resolve(said));
    socket.on("error", reject);
  });
}

/** POSTs `body` to `path` as JSON (other headers added). */
const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

/** Asks until the answer is not refused for request_bytes_in_flight: the share of a client that left comes back. */
async function untilAdmitted(ask: () => Promise<Response>): Promise<Response> {
  for (let i = 0; i < 200; i++) {
    const answer = await ask();
    if (answer.status !== 503) return answer;
    await answer.arrayBuffer();
    await Bun.sleep(25);
  }
  throw new Error("still refused for request_bytes_in_flight");
}

/** Asks until the answer is the 503 of request_bytes_in_flight (the stalled client's bytes have reached the server). */
async function untilRefused(ask: () => Promise<Response>): Promise<Response> {
  for (let i = 0; i < 200; i++) {
    const answer = await ask();
    if (answer.status === 503) return answer;
    await answer.arrayBuffer();
    await Bun.sleep(25);
  }
  throw new Error("never refused for request_bytes_in_flight");
}

describe("requestBodies", () => {
  test("requestBodies admits bodies within the budget, one however large when none is in flight, and gives a share back once", () => {
    const bodies = requestBodies(MIB);
    const large = bodies.claim(3 * MIB);
    expect(typeof large).toBe("function");
    expect(bodies.claim(1)).toEqual({ busy: true, bytes: 1, in_flight: 3 * MIB, limit: MIB });
    (large as () => void)();
    const first = bodies.claim(600 * KIB) as () => void;
    expect(typeof first).toBe("function");
    expect(bodies.claim(500 * KIB)).toMatchObject({ busy: true, in_flight: 600 * KIB });
    const second = bodies.claim(400 * KIB) as () => void;
    expect(typeof second).toBe("function");
    first();
    first();
    // Given back once: 400 KiB is still in flight, so 700 more fit and 700 + 1 do not.
    expect(bodies.claim(624 * KIB + 1)).toMatchObject({ busy: true, in_flight: 400 * KIB });
    expect(typeof bodies.claim(624 * KIB)).toBe("function");
  });

  test("requestBodies.read charges a body as it comes: refused once a chunk would pass the budget beside another's, or at once for a declared length; what it read goes back", async () => {
    const bodies = requestBodies(MIB);
    async function* pieces(count: number, size: number) {
      for (let i = 0; i < count; i++) yield new Uint8Array(size);
    }
    // Alone, a body passes the budget; nothing stays charged once it is read.
    expect(((await bodies.read(pieces(3, 500 * KIB), null, 2 * MIB)) as Uint8Array).byteLength).toBe(1500 * KIB);
    const other = bodies.claim(600 * KIB) as () => void;
    expect(await bodies.read(pieces(3, 200 * KIB), null, 2 * MIB)).toEqual({ busy: true, bytes: 600 * KIB, in_flight: 600 * KIB, limit: MIB });
    expect(await bodies.read(pieces(1, 1), 500 * KIB, 2 * MIB)).toEqual({ busy: true, bytes: 500 * KIB, in_flight: 600 * KIB, limit: MIB });
    expect(await bodies.read(pieces(4, 100 * KIB), null, 300 * KIB)).toBe("too_large");
    other();
    // The refused and the too large gave back what they had read: the whole budget is free.
    expect(typeof bodies.claim(MIB)).toBe("function");
  });
});

describe("request bodies being read at once", () => {
  test("past request_bytes_in_flight a request is refused 503 before its body is read, on every route that reads one; small ones and guards' refusals are not", async () => {
    const stalled = await stalledClient("/api/v1/capabilities/list", 800 * KIB);
    try {
      const big = bodyOf(300 * KIB);
      // The direct POST route (Bun's fast path).
      const direct = await untilRefused(() => post("/api/v1/capabilities/list", big));
      expect(direct.headers.get("retry-after")).toBe("1");
      const { error } = (await direct.json()) as any;
      expect(error).toMatchObject({ error_code: "unavailable", retryability: "safe", context: { reason: "requests_in_flight", bytes: 300 * KIB, limit: MIB } });
      // What the stalled client really sent, not what it declared.
      expect(error.context.in_flight).toBe(800 * KIB - 1);
      expect(error.message).toContain("request_bytes_in_flight");
      // The app's routes: a start, MCP and a cockpit form.
      const start = await post("/api/v1/executions/start", bodyOf(300 * KIB, { capability: "capabilities.list" }));
      expect(start.status).toBe(503);
      expect(((await start.json()) as any).error.context.reason).toBe("requests_in_flight");
      const mcp = await post("/mcp", big, { accept: "application/json, text/event-stream" });
      expect(mcp.status).toBe(503);
      expect(((await mcp.json()) as any).error.context.reason).toBe("requests_in_flight");
      const form = await post("/cockpit/capabilities/capabilities.list", `input=${"x".repeat(300 * KIB)}`, { "content-type": "application/x-www-form-urlencoded" });
      expect(form.status).toBe(503);
      // A chunked body (no length) is charged as it comes: refused once it would pass the budget, not before.
      const chunked = await rawRequest(`POST /api/v1/capabilities/list HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`);
      expect(chunked.split("\r\n")[0]).toBe("HTTP/1.1 503 Service Unavailable");
      const small = await rawRequest(`POST /api/v1/capabilities/list HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n`);
      expect(small.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
      // Within the budget: answered as ever.
      expect((await post("/api/v1/capabilities/list", "{}")).status).toBe(200);
      expect((await post("/api/v1/executions/start", JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } }))).status).toBe(200);
      // A foreign origin is refused for what it is, never read.
      expect((await post("/api/v1/capabilities/list", big, { origin: "https://evil.example" })).status).toBe(403);
    } finally {
      stalled.destroy();
    }
    // The stalled client left: its share is given back.
    const after = await untilAdmitted(() => post("/api/v1/capabilities/list", bodyOf(900 * KIB)));
    expect(after.status).toBe(400);
  });

  test("a body only announced holds nothing: clients declaring large bodies or sending a chunked { and then nothing lock no body out", async () => {
    const { hostname, port } = new URL(server.url);
    const announced = await Promise.all(
      [
        `POST /api/v1/capabilities/list HTTP/1.1\r\nContent-Length: ${900 * KIB}\r\n`,
        `POST /api/v1/executions/start HTTP/1.1\r\nContent-Length: ${900 * KIB}\r\n`,
        `POST /mcp HTTP/1.1\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${900 * KIB}\r\n`,
        `POST /api/v1/capabilities/list HTTP/1.1\r\nTransfer-Encoding: chunked\r\n`,
        `POST /api/v1/executions/start HTTP/1.1\r\nTransfer-Encoding: chunked\r\n`,
      ].map(
        (head) =>
          new Promise<Socket>((resolve, reject) => {
            const socket = connect(Number(port), hostname, () => {
              const chunked = head.includes("chunked");
              socket.write(`${head}Host: ${hostname}:${port}\r\nContent-Type: application/json\r\n\r\n${chunked ? "1\r\n{\r\n" : ""}`, () => resolve(socket));
            });
            socket.once("error", reject);
          }),
      ),
    );
    try {
      // Each used to be charged what it announced (a chunked one the most a route reads): 900 KiB of a 1 MiB budget locked every larger body out.
      for (let i = 0; i < 5; i++) {
        expect((await post("/api/v1/capabilities/list", bodyOf(300 * KIB))).status).toBe(400);
        expect((await post("/api/v1/executions/start", bodyOf(300 * KIB, { capability: "capabilities.list" }))).status).toBe(400);
      }
    } finally {
      for (const socket of announced) socket.destroy();
    }
  });

  test("a small body is never refused for the budget, however full it is of bodies being read", async () => {
    // Sent all but its last byte: alone, it may hold more than the budget.
    const stalled = await stalledClient("/api/v1/capabilities/list", MIB + 100 * KIB);
    try {
      await untilRefused(() => post("/api/v1/capabilities/list", bodyOf(300 * KIB)));
      for (let i = 0; i < 5; i++) {
        expect((await post("/api/v1/capabilities/list", "{}")).status).toBe(200);
        expect((await post("/api/v1/executions/start", JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } }))).status).toBe(200);
      }
    } finally {
      stalled.destroy();
    }
  });

  test("a body's share goes back once it is read, while the direct call it carries still runs", async () => {
    const gate = join(checkout, "gate-open");
    /** Waits until the call named `name` has begun (its body read and checked). */
    const began = async (name: string) => {
      for (let i = 0; i < 1000 && !existsSync(`${gate}.${name}`); i++) await Bun.sleep(10);
      expect(existsSync(`${gate}.${name}`)).toBe(true);
    };
    // Sent chunked, the call goes through the app and is charged the most a route reads (over the
    // budget, admitted as the only one); it then runs until the gate opens.
    const chunk = bodyOf(900 * KIB, { gate, name: "call" });
    const call = rawRequest(`POST /api/v1/test/hold HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`);
    await began("call");
    // Its body is read: a start of 900 KiB of the 1 MiB budget is admitted at once.
    const started = await post("/api/v1/executions/start", JSON.stringify({ capability: "test.hold", input: { gate, name: "start", pad: "x".repeat(900 * KIB) } }));
    expect(started.status).toBe(200);
    await began("start");
    writeFileSync(gate, "");
    const answer = await call;
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(answer).toContain(JSON.stringify({ length: 900 * KIB - JSON.stringify({ gate, name: "call", pad: "" }).length }));
  }, 30_000);
});
