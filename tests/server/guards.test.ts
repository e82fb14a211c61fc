import { describe, expect, test } from "bun:test";
import { createApp } from "../../runtime/server/app.ts";
import type { ServerConfig } from "../../runtime/server/_app-env.ts";
import { isAllowedHost, isOwnOrigin, sameSecret } from "../../runtime/server/guards.ts";
import { ownPageOrigin } from "../../runtime/server/own-origin.ts";
import { edgeIdSource, requestIdFrom, traceIdFrom } from "../../runtime/server/edge-ids.ts";
import { LiveChannel } from "../../runtime/server/live-channel.ts";
import { stubPlane } from "./_support/stub-plane.ts";

const ORIGIN = "http://127.0.0.1:4700";

function appWith(config: Partial<ServerConfig> = {}) {
  const { plane, calls } = stubPlane();
  const logged: string[] = [];
  const full: ServerConfig = { host: "127.0.0.1", port: 4700, allowedHosts: [], token: null, origin: ORIGIN, ...config };
  const app = createApp({ plane, live: new LiveChannel({ store: plane.store, limits: plane.limits }), config: full, log: (line) => logged.push(line) });
  const request = (path: string, init: RequestInit = {}) => app.request(`http://127.0.0.1:4700${path}`, { ...init, headers: { Host: "127.0.0.1:4700", ...(init.headers as Record<string, string>) } });
  return { app, calls, logged, request };
}

describe("guards", () => {
  test("isAllowedHost accepts IP literals and localhost with a port, and configured names only", () => {
    for (const host of ["127.0.0.1", "127.0.0.1:4700", "localhost:4700", "LOCALHOST", "[::1]:4700", "[::1]", "10.0.0.7:80"]) expect(isAllowedHost(host, [])).toBe(true);
    for (const host of [undefined, "", "evil.example", "evil.example:4700", "localhost.evil.example", "127.0.0.1.nip.io", "[evil]:1", "a b"]) expect(isAllowedHost(host, [])).toBe(false);
    expect(isAllowedHost("docket.lan:4700", ["docket.lan"])).toBe(true);
  });

  test("isOwnOrigin accepts the bound address and allowed names on the same scheme and port, never another loopback address the server is not bound to", () => {
    const config = { origin: ORIGIN, allowedHosts: ["docket.lan"] };
    for (const origin of [ORIGIN, "http://docket.lan:4700"]) expect(isOwnOrigin(origin, config)).toBe(true);
    // Another program may listen on [::1]:4700 beside 127.0.0.1:4700, and a browser's localhost may be it.
    for (const origin of ["http://localhost:4700", "http://[::1]:4700", "http://127.0.0.2:4700", "null", "http://127.0.0.1:4701", "https://127.0.0.1:4700", "http://evil.example:4700", "http://127.0.0.1:4700/path", ""]) {
      expect(`${origin}: ${isOwnOrigin(origin, config)}`).toBe(`${origin}: false`);
    }
    // A wildcard bind listens on the loopback addresses of its families.
    expect(isOwnOrigin("http://127.0.0.1:4700", { origin: "http://0.0.0.0:4700", allowedHosts: [] })).toBe(true);
    expect(isOwnOrigin("http://[::1]:4700", { origin: "http://0.0.0.0:4700", allowedHosts: [] })).toBe(false);
    for (const origin of ["http://127.0.0.1:4700", "http://[::1]:4700"]) expect(isOwnOrigin(origin, { origin: "http://[::]:4700", allowedHosts: [] })).toBe(true);
    expect(isOwnOrigin("http://[::1]:4700", { origin: "http://[::1]:4700", allowedHosts: [] })).toBe(true);
    expect(isOwnOrigin("http://127.0.0.1:4700", { origin: "http://[::1]:4700", allowedHosts: [] })).toBe(false);
  });

  test("ownPageOrigin sends a page reached by another name of this machine to the bound origin; never one of another port or a wildcard's other address", () => {
    const config = { origin: ORIGIN, allowedHosts: ["docket.lan"] };
    expect(ownPageOrigin("localhost:4700", config)).toBe(ORIGIN);
    expect(ownPageOrigin("LOCALHOST:4700", config)).toBe(ORIGIN);
    expect(ownPageOrigin("[::1]:4700", config)).toBe(ORIGIN);
    for (const host of ["127.0.0.1:4700", "docket.lan:4700", "localhost:8080", "localhost"]) expect(ownPageOrigin(host, config)).toBeNull();
    expect(ownPageOrigin("localhost:4700", { origin: "http://0.0.0.0:4700", allowedHosts: [] })).toBe("http://127.0.0.1:4700");
    expect(ownPageOrigin("192.168.1.5:4700", { origin: "http://0.0.0.0:4700", allowedHosts: [] })).toBeNull();
    expect(ownPageOrigin("localhost", { origin: "http://127.0.0.1:80", allowedHosts: [] })).toBe("http://127.0.0.1");
  });

  test("sameSecret compares in constant time whatever the lengths", () => {
    expect(sameSecret("abc", "abc")).toBe(true);
    expect(sameSecret("abc", "abd")).toBe(false);
    expect(sameSecret("", "abc")).toBe(false);
  });

  test("request ids are kept when well-formed; traceparent with non-zero ids gives the trace id", () => {
    expect(requestIdFrom("a.b:c-1_2")).toBe("a.b:c-1_2");
    expect(requestIdFrom("x".repeat(129))).not.toBe("x".repeat(129));
    expect(requestIdFrom("has space")).toMatch(/^r-[0-9a-f]{20}$/);
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(traceIdFrom(`00-${trace}-00f067aa0ba902b7-01`)).toBe(trace);
    // A later version is read by its first fields, with or without more after them (lifecycle tester, session 42).
    expect(traceIdFrom(`01-${trace}-00f067aa0ba902b7-01`)).toBe(trace);
    expect(traceIdFrom(`cc-${trace}-00f067aa0ba902b7-01-what-the-future-has`)).toBe(trace);
    for (const bad of [`ff-${trace}-00f067aa0ba902b7-01`, `00-${trace}-00f067aa0ba902b7-01-more`, `01-${trace}-00f067aa0ba902b7-01more`, `00-${"0".repeat(32)}-00f067aa0ba902b7-01`, `00-${trace}-${"0".repeat(16)}-01`, `00-${trace.toUpperCase()}-00f067aa0ba902b7-01`, "garbage", undefined]) {
      expect(traceIdFrom(bad)).toBeNull();
    }
  });

  test("edgeIdSource keeps well-formed ids and makes fresh ones of the same shapes, never twice the same, across refills of its pool", () => {
    const ids = edgeIdSource();
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(ids.requestId("a.b:c-1_2")).toBe("a.b:c-1_2");
    expect(ids.traceId(`00-${trace}-00f067aa0ba902b7-01`)).toBe(trace);
    const seen = new Set<string>();
    // 26 bytes a request against a 1 KiB pool: 200 requests refill it several times.
    for (let i = 0; i < 200; i++) {
      const request = ids.requestId(i % 2 ? undefined : "has space");
      const traced = ids.traceId(i % 2 ? undefined : "garbage");
      expect(request).toMatch(/^r-[0-9a-f]{20}$/);
      expect(traced).toMatch(/^[0-9a-f]{32}$/);
      seen.add(request).add(traced);
    }
    expect(seen.size).toBe(400);
  });
});

describe("app", () => {
  test("an unexpected exception is a 500 internal descriptor with a correlation id; the stack goes to the log only", async () => {
    const { request, logged } = appWith();
    const response = await request("/api/v1/demo/crash");
    expect(response.status).toBe(500);
    const text = await response.text();
    const { error } = JSON.parse(text);
    expect(error.error_code).toBe("internal");
    expect(error.correlation_id).toMatch(/^c-/);
    expect(text).not.toContain("boom");
    expect(text).not.toContain("/secret");
    expect(logged.join("\n")).toContain(error.correlation_id);
    expect(logged.join("\n")).toContain("boom");
    expect(response.headers.get("x-request-id")).toBe(error.request_id);
  });

  test("the Host check holds for every request: an allowed Host remembered does not let a different one through", async () => {
    const { request } = appWith({ allowedHosts: ["docket.lan"] });
    const host = (name: string) => request("/api/v1/demo/echo", { headers: { Host: name } });
    expect((await host("127.0.0.1:4700")).status).toBe(200);
    expect((await host("evil.example:4700")).status).toBe(403);
    expect((await host("127.0.0.1:4700")).status).toBe(200);
    expect((await host("docket.lan:4700")).status).toBe(200);
    expect((await host("evil.example")).status).toBe(403);
    expect((await host("docket.lan:4700")).status).toBe(200);
  });

  test("a page loaded by another name of this machine is sent to the bound origin, path and query kept; a script's request and the Origin of such a page are not served as the server's own", async () => {
    const { request } = appWith();
    const navigate = { Host: "localhost:4700", "Sec-Fetch-Mode": "navigate", Accept: "text/html" };
    for (const headers of [navigate, { Host: "localhost:4700", Accept: "text/html,application/xhtml+xml" }]) {
      for (const method of ["GET", "HEAD"]) {
        const page = await request("/cockpit/executions?state=running", { method, headers });
        expect(page.status).toBe(307);
        expect(page.headers.get("location")).toBe("http://127.0.0.1:4700/cockpit/executions?state=running");
      }
    }
    // A script asks as it asked; what it loads is no page of an origin.
    expect((await request("/api/v1/demo/echo", { headers: { Host: "localhost:4700" } })).status).toBe(200);
    expect((await request("/api/v1/demo/echo", { headers: { Host: "localhost:4700", "Sec-Fetch-Mode": "cors", Accept: "text/html" } })).status).toBe(200);
    expect((await request("/api/v1/demo/echo", { headers: { ...navigate, Host: "127.0.0.1:4700" } })).status).toBe(200);
    const post = (origin: string) => request("/api/v1/demo/echo", { method: "POST", headers: { Host: "127.0.0.1:4700", Origin: origin, "Content-Type": "application/json" }, body: "{}" });
    expect((await post(ORIGIN)).status).toBe(200);
    for (const origin of ["http://localhost:4700", "http://[::1]:4700"]) {
      const refused = await post(origin);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as any).error.context.reason).toBe("origin_not_allowed");
    }
  });

  test("the edge passes actor http (an X-Docket-Actor header claims nothing), with the request and trace ids", async () => {
    const { request, calls } = appWith();
    await request("/api/v1/demo/echo?n=1", { headers: { "X-Request-Id": "abc" } });
    await request("/api/v1/demo/echo", { method: "POST", headers: { "Content-Type": "application/json", "X-Docket-Actor": "cockpit" }, body: "{}" });
    expect(calls[0]!.edge).toMatchObject({ actor: { kind: "http" }, request_id: "abc", trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(calls[1]!.edge.actor).toEqual({ kind: "http" });
  });

  test("with a token, everything but /healthz needs it; on /events ?token= and the subprotocol count too", async () => {
    const { request } = appWith({ token: "s3cret-s3cret-s3cret" });
    expect((await request("/healthz")).status).toBe(200);
    expect((await request("/api/v1/demo/echo")).status).toBe(401);
    expect((await request("/api/v1/demo/echo?token=s3cret-s3cret-s3cret")).status).toBe(401);
    expect((await request("/api/v1/demo/echo", { headers: { Authorization: "Bearer s3cret-s3cret-s3cret" } })).status).toBe(200);
    const upgrade = { Upgrade: "websocket", Connection: "Upgrade", "Sec-WebSocket-Version": "13" };
    expect((await request("/events", { headers: upgrade })).status).toBe(401);
    // Past the guard, this app has no WebSocket adapter: 501 proves the token was accepted.
    expect((await request("/events?token=s3cret-s3cret-s3cret", { headers: upgrade })).status).toBe(501);
    expect((await request("/events", { headers: { ...upgrade, "Sec-WebSocket-Protocol": "docket.v1, docket.token.s3cret-s3cret-s3cret" } })).status).toBe(501);
    // A WebSocket version other than 13 is told the one spoken, with a descriptor and its request id (tester T1).
    const old = await request("/events?token=s3cret-s3cret-s3cret", { headers: { ...upgrade, "Sec-WebSocket-Version": "8" } });
    expect(old.status).toBe(426);
    expect(old.headers.get("sec-websocket-version")).toBe("13");
    expect(old.headers.get("x-request-id")).toBeTruthy();
    expect(((await old.json()) as any).error).toMatchObject({ error_code: "invalid_input", context: { reason: "websocket_version" } });
    // An upgrade without Connection: Upgrade is no handshake (RFC 6455 §4.1); one listing it among others is (Firefox: "keep-alive, Upgrade").
    const noConnection = await request("/events?token=s3cret-s3cret-s3cret", { headers: { Upgrade: "websocket", "Sec-WebSocket-Version": "13" } });
    expect(noConnection.status).toBe(400);
    expect(((await noConnection.json()) as any).error).toMatchObject({ error_code: "invalid_input", context: { reason: "bad_handshake" } });
    expect((await request("/events?token=s3cret-s3cret-s3cret", { headers: { ...upgrade, Connection: "keep-alive, Upgrade" } })).status).toBe(501);
    // A Sec-WebSocket-Protocol naming no subprotocol is no handshake either: it was upgraded with the header echoed empty (API tester, session 41).
    const noProtocol = await request("/events?token=s3cret-s3cret-s3cret", { headers: { ...upgrade, "Sec-WebSocket-Protocol": ", ," } });
    expect(noProtocol.status).toBe(400);
    expect(((await noProtocol.json()) as any).error).toMatchObject({ error_code: "invalid_input", context: { reason: "bad_handshake" } });
    // Two ?token= are two tokens, in either order: refused as two, never the first one taken (tester T1).
    for (const query of ["token=s3cret-s3cret-s3cret&token=bad", "token=bad&token=s3cret-s3cret-s3cret"]) {
      const twice = await request(`/events?${query}`, { headers: upgrade });
      expect(`${query}: ${twice.status}`).toBe(`${query}: 401`);
      expect(((await twice.json()) as any).error.message).toContain("More than one token was sent");
    }
  });

  test("an Authorization header docket cannot read a token from is told so, not told to send one (tester note, session 32)", async () => {
    const { request } = appWith({ token: "s3cret-s3cret-s3cret" });
    // Two Authorization headers reach the app as Bun gives them: one value, joined by ", ".
    const twoHeaders = { Authorization: "Bearer s3cret-s3cret-s3cret, Bearer wrong-wrong-wrong" };
    for (const headers of [twoHeaders, { Authorization: "Basic czNjcmV0" }, { Authorization: "Bearer" }]) {
      const refused = await request("/api/v1/demo/echo", { headers });
      expect(refused.status).toBe(401);
      const { message } = ((await refused.json()) as any).error;
      expect(message).toBe("The Authorization header holds no token docket can read: send it once, as Bearer and the token (two Authorization headers arrive as one, joined by a comma).");
    }
    expect(((await (await request("/api/v1/demo/echo", { headers: { Authorization: "  " } })).json()) as any).error.message).toBe("This server requires a token: send Authorization: Bearer <token>.");
  });

  test("the cockpit and MCP mount points answer a 404 descriptor until mounted; / goes to the cockpit", async () => {
    const { request } = appWith();
    for (const path of ["/cockpit", "/cockpit/executions", "/mcp"]) {
      const response = await request(path);
      expect(response.status).toBe(404);
      expect(((await response.json()) as any).error.error_code).toBe("not_found");
    }
    const root = await request("/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/cockpit");
    expect(root.headers.get("x-request-id")).toBeTruthy();
  });

  test("a capacity failure is 429 with Retry-After from its context", async () => {
    const { request } = appWith();
    const response = await request("/api/v1/demo/echo?n=429");
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("3");
    expect(((await response.json()) as any).error.error_code).toBe("capacity");
  });

  test("unsupported methods on a read capability are 405 with Allow: GET, POST", async () => {
    const { request } = appWith();
    const response = await request("/api/v1/demo/echo", { method: "DELETE" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, POST");
  });
});
