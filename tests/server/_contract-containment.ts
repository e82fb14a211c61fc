import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import type { StartedServer, StartFn } from "./_support/servers.ts";

/**
 * Direct calls on both adapters (docs/containment.md): a call longer than the idle timeout (cut to
 * 1 s here) answers by GET and by POST, and one past its deadline answers 504 deadline_exceeded.
 * executions.demonstrate pauses `delay_ms` per step. A request whose head stops half-way is ended.
 */
export function containmentContract(name: string, start: StartFn): void {
  describe(`${name}: direct-call containment`, () => {
    let server: StartedServer;
    beforeAll(async () => {
      server = await start({ limits: { direct_deadline_ms: 3000, grace_ms: 200 }, idleTimeoutSeconds: 1 });
    });
    afterAll(() => server.stop());

    test("a direct call longer than the idle timeout answers by GET and by POST, never an empty reply", async () => {
      // One after the other: the direct lane has one worker, and a queued call's deadline runs too.
      const get = await fetch(`${server.url}/api/v1/executions/demonstrate?steps=1&delay_ms=2000`);
      const post = await fetch(`${server.url}/api/v1/executions/demonstrate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ steps: 1, delay_ms: 2000 }) });
      expect(get.status).toBe(200);
      expect(post.status).toBe(200);
      expect(((await get.json()) as any).steps).toBe(1);
      expect(((await post.json()) as any).steps).toBe(1);
    }, 20_000);

    test("a direct call past direct_deadline_ms answers 504 deadline_exceeded, and the next call is served", async () => {
      const late = await fetch(`${server.url}/api/v1/executions/demonstrate?steps=10&delay_ms=1000`);
      expect(late.status).toBe(504);
      expect(((await late.json()) as any).error).toMatchObject({ error_code: "deadline_exceeded", stage: "run", context: { deadline_ms: 3000 } });
      expect((await fetch(`${server.url}/api/v1/executions/demonstrate?steps=1&delay_ms=0`)).status).toBe(200);
    }, 20_000);

    test("a request whose head stops half-way is ended by the server, not held while the client stays", async () => {
      const { hostname, port } = new URL(server.url);
      const socket = connect({ host: hostname, port: Number(port) });
      // Ended by the server: its end of the stream (Node answers 408 first) or a reset.
      const closed = new Promise<void>((resolve) => {
        socket.once("end", () => resolve());
        socket.once("close", () => resolve());
      });
      socket.on("error", () => {});
      // Read what comes, or the stream's end is never seen.
      socket.resume();
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}:${port}\r\nX-Slow: `);
      // Node's own bound was 60 s: the test's timeout fails it.
      await closed;
    }, 15_000);
  });
}
