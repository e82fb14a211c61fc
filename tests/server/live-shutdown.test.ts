import { afterAll, describe, expect, test } from "bun:test";
import { fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream } from "../cli/_harness.ts";
import { rawUpgrade, type RawUpgrade } from "./_support/raw-ws.ts";

// Stopping the server while clients are behind (docs/protocol.md, "Closing"): `docket serve` gets
// SIGTERM in the middle of a flood; each client is still told `stream.closing` — after what its
// socket already held — rather than seeing the connection just end when the process exits.

afterAll(removeTempDirs);

const CLIENTS = 6;

describe("live channel: shutdown", () => {
  test("clients that fell behind during a flood read what they were sent, then stream.closing, then the close", async () => {
    const child = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: tempCheckout() });
    const stderr = watchStream(child.stderr);
    const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
    const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    const clients: RawUpgrade[] = [];
    try {
      for (let i = 0; i < CLIENTS; i++) {
        const raw = await rawUpgrade(url, "/events");
        expect(raw.status).toBe(101);
        await raw.waitFor((f) => f.includes('"stream.ready"'));
        clients.push(raw);
      }
      // They stop reading; a flood fills their sockets and leaves them behind in the log.
      for (const raw of clients) raw.socket.pause();
      const response = await fetch(`${url}/api/v1/executions/start`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: 200_000 } }),
      });
      expect(response.status).toBe(200);
      await Bun.sleep(300);
    } finally {
      child.kill("SIGTERM");
    }
    const closed = clients.map((raw) => new Promise<void>((resolve) => raw.socket.once("close", () => resolve())));
    // They read again while the server stops.
    for (const raw of clients) raw.socket.resume();
    expect(await child.exited).toBe(0);
    await Promise.all(closed);
    for (const raw of clients) {
      expect(raw.frames.filter((f) => f.includes('"sequence"')).length).toBeGreaterThan(0);
      expect(JSON.parse(raw.frames.at(-1)!)).toMatchObject({ type: "stream.closing", reason: "server stopping (SIGTERM)" });
    }
  }, 60_000);
});
