import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { StartFn, StartedServer } from "./_support/servers.ts";
import { client, rawRequest } from "./_support/http.ts";
import { openLive } from "./_support/live-client.ts";
import { rawUpgrade } from "./_support/raw-ws.ts";

const TOKEN = "test-token-0123456789abcdef";

/** Host (DNS rebinding), Origin and token checks, on the API and on the live channel before the handshake. */
export function securityContract(name: string, start: StartFn): void {
  describe(`${name}: host and origin`, () => {
    let server: StartedServer;
    beforeAll(async () => {
      server = await start();
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("a Host that is not an address or localhost is 403 on the API and on /events", async () => {
      const port = new URL(server.url).port;
      const api = await rawRequest(server.url, "GET", "/api/v1/capabilities/list", { Host: `evil.example:${port}` });
      expect(api.status).toBe(403);
      expect(JSON.parse(api.body).error.context.reason).toBe("host_not_allowed");
      expect(api.headers["x-request-id"]).toBeDefined();
      const live = await rawUpgrade(server.url, "/events", { Host: `evil.example:${port}` });
      expect(live.status).toBe(403);
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, "127.0.0.1"]) {
        expect((await rawRequest(server.url, "GET", "/healthz", { Host: host })).status).toBe(200);
      }
    });

    test("a foreign Origin is 403 on POST and on /events before the handshake; own or absent Origin passes", async () => {
      const body = JSON.stringify({ id: "executions.demonstrate" });
      const json = { "Content-Type": "application/json" };
      const foreign = await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: "http://evil.example" }, body);
      expect(foreign.status).toBe(403);
      expect(JSON.parse(foreign.body).error.context.reason).toBe("origin_not_allowed");
      expect((await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: "null" }, body)).status).toBe(403);
      expect((await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: server.url }, body)).status).toBe(200);
      expect((await rawRequest(server.url, "POST", "/api/v1/capabilities/get", json, body)).status).toBe(200);
      const port = new URL(server.url).port;
      // Another loopback address on the same port is another program's, unless the server is bound there.
      for (const other of [`http://localhost:${port}`, `http://[::1]:${port}`]) {
        expect((await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: other }, body)).status).toBe(403);
        expect((await rawUpgrade(server.url, "/events", { Origin: other })).status).toBe(403);
      }
      expect((await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: `http://localhost:${Number(port) + 1}` }, body)).status).toBe(403);
      // A GET from another origin reads nothing it could not read anyway (no CORS headers): allowed.
      expect((await rawRequest(server.url, "GET", "/api/v1/capabilities/list", { Origin: "http://evil.example" })).status).toBe(200);
      const live = await rawUpgrade(server.url, "/events", { Origin: "http://evil.example" });
      expect(live.status).toBe(403);
      const own = await rawUpgrade(server.url, "/events", { Origin: server.url });
      expect(own.status).toBe(101);
      own.close();
    });
  });

  describe(`${name}: bound to localhost`, () => {
    let server: StartedServer;
    beforeAll(async () => {
      server = await start({ host: "localhost" });
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("a server asked to bind localhost is at the address it bound: a page of localhost is sent there, and may not act as its own", async () => {
      const bound = new URL(server.url);
      expect(["127.0.0.1", "[::1]"]).toContain(bound.hostname);
      const body = JSON.stringify({ id: "executions.demonstrate" });
      const json = { "Content-Type": "application/json" };
      // Another program may listen on the other loopback address at this port: its pages say localhost too.
      const localhost = `http://localhost:${bound.port}`;
      const posted = await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: localhost }, body);
      expect(posted.status).toBe(403);
      expect(JSON.parse(posted.body).error.context.reason).toBe("origin_not_allowed");
      expect((await rawUpgrade(server.url, "/events", { Origin: localhost })).status).toBe(403);
      expect((await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...json, Origin: server.url }, body)).status).toBe(200);
      const page = { Accept: "text/html", "Sec-Fetch-Mode": "navigate" };
      const byName = await rawRequest(server.url, "GET", "/cockpit?x=1", { ...page, Host: `localhost:${bound.port}` });
      expect(byName.status).toBe(307);
      expect(byName.headers.location).toBe(`${server.url}/cockpit?x=1`);
      // At the bound address the page stays where it is: never sent on to localhost.
      expect((await rawRequest(server.url, "GET", "/cockpit", { ...page, Host: bound.host })).status).not.toBe(307);
    });
  });

  describe(`${name}: token`, () => {
    let server: StartedServer;
    beforeAll(async () => {
      server = await start({ token: TOKEN });
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("every route but /healthz requires Authorization: Bearer <token> (401 with a descriptor)", async () => {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const missing = await fetch(`${server.url}/api/v1/capabilities/list`);
      expect(missing.status).toBe(401);
      expect(missing.headers.get("www-authenticate")).toContain("Bearer");
      expect(((await missing.json()) as any).error.context.reason).toBe("unauthorized");
      const wrong = await fetch(`${server.url}/api/v1/capabilities/list`, { headers: { Authorization: "Bearer not-the-token" } });
      expect(wrong.status).toBe(401);
      expect((await client(server).get("/api/v1/capabilities/list")).status).toBe(200);
      const doc = (await (await client(server).get("/api/v1/openapi.json")).json()) as any;
      expect(doc.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" });
    });

    test("the live channel takes the token as Bearer, ?token= or the docket.token.<token> subprotocol; without it 401", async () => {
      expect((await rawUpgrade(server.url, "/events")).status).toBe(401);
      expect((await rawUpgrade(server.url, "/events?token=wrong")).status).toBe(401);
      const bearer = await rawUpgrade(server.url, "/events", { Authorization: `Bearer ${TOKEN}` });
      expect(bearer.status).toBe(101);
      bearer.close();
      const query = await openLive(server.url, `token=${TOKEN}`);
      expect((await query.waitFor((f) => f.type === "stream.ready")).type).toBe("stream.ready");
      await query.close();
      const protocol = await openLive(server.url, "", { protocols: ["docket.v1", `docket.token.${TOKEN}`] });
      expect(protocol.socket.protocol).toBe("docket.v1");
      await protocol.waitFor((f) => f.type === "stream.ready");
      await protocol.close();
      // The answer is docket.v1 whatever the order of the offer; the token is never echoed back.
      const tokenFirst = await rawUpgrade(server.url, "/events", { "Sec-WebSocket-Protocol": `docket.token.${TOKEN}, docket.v1` });
      expect(tokenFirst.status).toBe(101);
      expect(tokenFirst.headers["sec-websocket-protocol"]).toBe("docket.v1");
      expect(JSON.stringify(tokenFirst.headers)).not.toContain(TOKEN);
      tokenFirst.close();
      // Several tokens in one handshake: every one must be the server's (else one request tries many).
      const guesses: Array<Record<string, string>> = [{ "Sec-WebSocket-Protocol": `docket.v1, docket.token.wrong-guess-0123456, docket.token.${TOKEN}` }, { Authorization: "Bearer wrong-guess-0123456", "Sec-WebSocket-Protocol": `docket.v1, docket.token.${TOKEN}` }];
      for (const headers of guesses) {
        const guessing = await rawUpgrade(server.url, "/events", headers);
        expect(guessing.status).toBe(401);
        guessing.close();
      }
      // An offer without docket.v1 is refused, saying what to offer, and names no token.
      const tokenOnly = await rawUpgrade(server.url, "/events", { "Sec-WebSocket-Protocol": `docket.token.${TOKEN}` });
      expect(tokenOnly.status).toBe(400);
      expect(JSON.stringify(tokenOnly.headers)).not.toContain(TOKEN);
      expect(JSON.parse(tokenOnly.body).error).toMatchObject({ message: expect.stringContaining('subprotocol "docket.v1"'), context: { reason: "subprotocol" } });
      expect(tokenOnly.body).not.toContain(TOKEN);
      tokenOnly.close();
    });
  });
}
