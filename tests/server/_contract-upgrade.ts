import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { truncateSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import type { StartFn, StartedServer } from "./_support/servers.ts";
import { client, rawRequest } from "./_support/http.ts";
import { rawUpgrade } from "./_support/raw-ws.ts";

/** A request written on a bare socket as given; the socket, and a promise of everything it received until it closed. */
function rawSocket(url: string, request: string): { socket: Socket; received: Promise<string>; head: Promise<string> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let data = "";
  let headDone!: (head: string) => void;
  const head = new Promise<string>((resolve) => (headDone = resolve));
  socket.on("data", (chunk: Buffer) => {
    data += chunk.toString("latin1");
    const end = data.indexOf("\r\n\r\n");
    if (end >= 0) headDone(data.slice(0, end));
  });
  socket.on("error", () => {});
  const received = new Promise<string>((resolve) => socket.once("close", () => resolve(data)));
  socket.write(request);
  return { socket, received, head };
}

/**
 * Requests that carry an `Upgrade` header other than a live channel's handshake (an h2c offer from
 * `curl --http2`, a stray header): on Node they are no ordinary requests (the server's upgrade
 * listener answers them, runtime/server/_node-upgrade.ts), and they must behave as on Bun.
 */
export function upgradePathContract(name: string, start: StartFn): void {
  describe(`${name}: requests with an Upgrade header`, () => {
    let server: StartedServer;
    let http: ReturnType<typeof client>;
    beforeAll(async () => {
      server = await start();
      http = client(server);
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("an answer that fails while it is sent (an artifact cut short) ends that connection, never the server (checking tester, session 46: Node exited)", async () => {
      const id = await http.start("files.digest", { path: "." });
      await http.completed(id);
      const file = join(server.root, ".docket", "artifacts", id, "manifest.sha256");
      // Larger than artifact_bytes: read from the file as the client takes it.
      writeFileSync(file, Buffer.alloc(32 * 1024 * 1024, 97));
      const host = new URL(server.url).host;
      const raw = rawSocket(server.url, `GET /api/v1/executions/artifact?id=${id}&name=manifest.sha256 HTTP/1.1\r\nHost: ${host}\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`);
      expect(await raw.head).toStartWith("HTTP/1.1 200");
      // The client reads slowly; the file is cut short under it.
      raw.socket.pause();
      truncateSync(file, 1000);
      raw.socket.resume();
      const received = await raw.received;
      expect(received.length).toBeLessThan(32 * 1024 * 1024);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect((await http.get("/api/v1/capabilities/list")).status).toBe(200);
    }, 30_000);

    test("a direct call whose client leaves is cancelled: the next call does not wait for it (checking tester, session 46: 19 s on Node)", async () => {
      const body = JSON.stringify({ steps: 1, delay_ms: 60_000 });
      const host = new URL(server.url).host;
      const raw = rawSocket(server.url, `POST /api/v1/executions/demonstrate HTTP/1.1\r\nHost: ${host}\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await Bun.sleep(700);
      // Running, not refused: nothing was answered yet.
      expect(raw.socket.bytesRead).toBe(0);
      raw.socket.destroy();
      // One direct worker: held for a minute unless the call was cancelled.
      const next = await http.send("/api/v1/executions/demonstrate", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ steps: 0, delay_ms: 0 }) });
      expect(next.status).toBe(200);
    }, 30_000);

    test("a live handshake offering docket.v1 in a list the app reads (an empty item, a repeat) is upgraded, as on Bun (checking tester, session 46: ws refused it in plain text)", async () => {
      for (const offered of ["docket.v1,", "docket.v1, docket.v1", "docket.v1,,x"]) {
        const upgraded = await rawUpgrade(server.url, "/events", { "Sec-WebSocket-Protocol": offered, "X-Request-Id": "ws-list" });
        expect(`${offered}: ${upgraded.status}`).toBe(`${offered}: 101`);
        expect(upgraded.headers["sec-websocket-protocol"]).toBe("docket.v1");
        expect(upgraded.headers["x-request-id"]).toBe("ws-list");
        await upgraded.waitFor((frame) => frame.includes('"stream.ready"'));
        upgraded.close();
      }
    });

    test("a HEAD asking to upgrade /events is refused as a bad handshake with the request's id, as on Bun (serve tester, session 48: Node logged two stack traces and answered a bare 400)", async () => {
      const upgrade = { Upgrade: "websocket", Connection: "Upgrade, close", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==" };
      const refused = await rawRequest(server.url, "HEAD", "/events", { ...upgrade, "X-Request-Id": "ws-head" });
      expect(refused.status).toBe(400);
      expect(refused.headers["x-request-id"]).toBe("ws-head");
      expect(refused.body).toBe("");
    });

    const h2cPost = (host: string, headers: string[]) => [`POST /api/v1/capabilities/get HTTP/1.1`, `Host: ${host}`, "Upgrade: h2c", "Connection: Upgrade, HTTP2-Settings, close", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA", "Content-Type: application/json", ...headers].join("\r\n") + "\r\n\r\n";

    test("a chunked body offered with Upgrade: h2c (curl --http2 streaming a body) is read whole, as on Bun (serve tester, session 48: Node refused it as cut short)", async () => {
      const host = new URL(server.url).host;
      const body = JSON.stringify({ id: "executions.demonstrate" });
      const chunks = `5;name=value\r\n${body.slice(0, 5)}\r\n${(body.length - 5).toString(16).toUpperCase()}\r\n${body.slice(5)}\r\n0\r\n\r\n`;
      const raw = rawSocket(server.url, h2cPost(host, ["Transfer-Encoding: chunked"]) + chunks);
      const received = await raw.received;
      expect(received).toStartWith("HTTP/1.1 200");
      expect(received).toContain('"id":"executions.demonstrate"');
      // A size that is no hexadecimal number is malformed: 400.
      const bad = rawSocket(server.url, h2cPost(host, ["Transfer-Encoding: chunked"]) + `zz\r\n${body}\r\n0\r\n\r\n`);
      expect(await bad.received).toStartWith("HTTP/1.1 400");
    });

    test("a chunked body whose framing comes in writes of its own (a CRLF, a size line alone) is read whole, and a coding other than chunked alone is refused, as on Bun (checking tester, session 48: Node left it unread until its idle timer)", async () => {
      const host = new URL(server.url).host;
      const body = JSON.stringify({ id: "executions.demonstrate" });
      const { hostname, port } = new URL(server.url);
      const socket = connect(Number(port), hostname);
      let received = "";
      socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
      socket.on("error", () => {});
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      for (const piece of [h2cPost(host, ["Transfer-Encoding: chunked"]), `${body.length.toString(16)}\r\n${body}`, "\r\n", "0\r\n", "\r\n"]) {
        socket.write(piece);
        await Bun.sleep(150);
      }
      await Promise.race([closed, Bun.sleep(5_000)]);
      socket.destroy();
      expect(received).toStartWith("HTTP/1.1 200");
      expect(received).toContain('"id":"executions.demonstrate"');
      const gzip = rawSocket(server.url, h2cPost(host, ["Transfer-Encoding: gzip, chunked"]) + `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
      expect(await gzip.received).toStartWith("HTTP/1.1 400");
    }, 15_000);

    test("a client that ends its side mid-body is let go at once, not held until the idle timer (round-2 checking tester, session 48: 10 s on Node)", async () => {
      const host = new URL(server.url).host;
      const raw = rawSocket(server.url, h2cPost(host, ["Transfer-Encoding: chunked"]) + "2\r\n{");
      raw.socket.end();
      // The idle timer is 10 s: well before it, the connection is closed (answered 400, or not at all, as Bun does).
      expect(await Promise.race([raw.received.then(() => "closed"), Bun.sleep(6_000).then(() => "held")])).toBe("closed");
      expect(await raw.received).not.toMatch(/^HTTP\/1\.1 2/);
    }, 15_000);

    test("a chunked body offered with Upgrade: h2c over the input limit is 413, as on Bun (serve tester, session 48: 400 on Node)", async () => {
      const own = await start({ limits: { input_bytes: 1024 } });
      try {
        const host = new URL(own.url).host;
        const big = JSON.stringify({ id: "x".repeat(4000) });
        const raw = rawSocket(own.url, h2cPost(host, ["Transfer-Encoding: chunked"]) + `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`);
        expect(await raw.received).toStartWith("HTTP/1.1 413");
      } finally {
        await own.stop();
      }
    });

    test("Expect: 100-continue with Upgrade: h2c gets its 100 Continue before the body is sent, as on Bun (serve tester, session 48: Node sent nothing until the client gave up waiting)", async () => {
      const host = new URL(server.url).host;
      const body = JSON.stringify({ id: "executions.demonstrate" });
      const raw = rawSocket(server.url, h2cPost(host, [`Content-Length: ${body.length}`, "Expect: 100-continue"]));
      // The head alone is sent; the body only once the server asks for it (the test waits, bounded, for the 100).
      expect(await Promise.race([raw.head, Bun.sleep(8_000).then(() => "no answer in 8 s")])).toStartWith("HTTP/1.1 100");
      raw.socket.write(body);
      const received = await raw.received;
      expect(received).toContain("HTTP/1.1 200");
      expect(received).toContain('"id":"executions.demonstrate"');
    }, 15_000);

    test("a request whose body stalls is ended by the server after 10 s of silence, as an idle connection is, and does not hold its stop (checking tester, session 46: Node held it, and its stop, for as long as the client stayed)", async () => {
      const own = await start();
      const host = new URL(own.url).host;
      const raw = rawSocket(own.url, `POST /api/v1/capabilities/get HTTP/1.1\r\nHost: ${host}\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{"id"`);
      // Ended by the server: the client never closes it.
      await raw.received;
      await own.stop();
    }, 25_000);
  });
}
