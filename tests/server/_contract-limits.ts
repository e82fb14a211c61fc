import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { StartFn, StartedServer } from "./_support/servers.ts";
import { client } from "./_support/http.ts";
import { completedOf, openLive } from "./_support/live-client.ts";
import { rawUpgrade } from "./_support/raw-ws.ts";
import { startFastReader } from "./_support/fast-reader-process.ts";

/** The live channel at the edges of its limits: history dropped, frames too large, heartbeats, slow readers, connections, stop. */
export function limitsContract(name: string, start: StartFn, sink: any[]): void {
  describe(`${name}: live channel at its limits`, () => {
    let server: StartedServer;
    let http: ReturnType<typeof client>;
    beforeAll(async () => {
      server = await start({ limits: { events_retained: 10, frame_bytes: 1024, heartbeat_ms: 50 } });
      http = client(server);
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("history beyond events_retained is flagged truncated and replays what is left", async () => {
      const id = await http.start("executions.demonstrate", { steps: 2, delay_ms: 0, events: 30 });
      const done = await http.completed(id);
      const live = await openLive(server.url, `execution=${id}`, { onFrame: (f) => sink.push(f) });
      await live.waitFor(completedOf(id));
      await live.close();
      expect(live.frames[0]).toMatchObject({ type: "stream.ready", truncated: true, dropped: done.sequence - 10, replayed: 10 });
      const sequences = live.frames.filter((f) => f.execution_id === id).map((f) => f.sequence);
      expect(sequences).toEqual(Array.from({ length: 10 }, (_, i) => done.sequence - 9 + i));
    });

    test("a connection names no more executions than its stream.ready can list within frame_bytes: 25 at 1 KiB, all in one frame; 26 is a 400 saying so", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 25; i++) ids.push(await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 }));
      const query = ids.map((id) => `execution=${id}`).join("&");
      const raw = await rawUpgrade(server.url, `/events?${query}`);
      expect(raw.status).toBe(101);
      const ready = await raw.waitFor((frame) => frame.includes('"stream.ready"'));
      expect(Buffer.byteLength(ready)).toBeLessThanOrEqual(1024);
      expect(JSON.parse(ready).subscribed).toHaveLength(25);
      raw.close();
      const refused = await rawUpgrade(server.url, `/events?${query}&execution=x-20260908T010203Z-0a1b2c3d`);
      expect(refused.status).toBe(400);
      if (refused.body !== "") expect(JSON.parse(refused.body).error).toMatchObject({ context: { parameter: "execution", limit: 25 } });
      refused.close();
    });

    test("an output larger than frame_bytes is withheld on the channel, the connection stays open, the snapshot holds it", async () => {
      const live = await openLive(server.url, "", { onFrame: (f) => sink.push(f) });
      await live.waitFor((f) => f.type === "stream.ready");
      const id = await http.start("health.report", {});
      const done = await live.waitFor(completedOf(id));
      expect(done.data.output).toMatchObject({ withheld: "too_large", limit: 1024, self: `/api/v1/executions/get?id=${id}` });
      expect(done.data.output.bytes).toBeGreaterThan(1024);
      // Still open: the next heartbeat arrives on the same connection.
      const at = live.frames.length;
      await live.waitFor((f) => f.type === "stream.heartbeat" && live.frames.indexOf(f) >= at);
      await live.close();
      const snapshot = (await (await http.get(`/api/v1/executions/get?id=${id}`)).json()) as any;
      expect(snapshot.output.checks.length).toBeGreaterThan(0);
      expect(JSON.stringify(snapshot.output).length).toBe(done.data.output.bytes);
    });

    test("a quiet connection gets a ping and a stream.heartbeat every heartbeat_ms", async () => {
      const raw = await rawUpgrade(server.url, "/events");
      expect(raw.status).toBe(101);
      const beat = JSON.parse(await raw.waitFor((f) => f.includes('"stream.heartbeat"')));
      expect(beat.type).toBe("stream.heartbeat");
      expect(Number.isNaN(Date.parse(beat.timestamp))).toBe(false);
      await raw.waitPing();
      expect(raw.pings).toBeGreaterThan(0);
      raw.close();
    });

    test("a quiet connection whose peer answers pings stays open; one that never answers is closed a heartbeat later", async () => {
      const answering = await openLive(server.url, "", { onFrame: (f) => sink.push(f) });
      const silent = await rawUpgrade(server.url, "/events");
      expect(silent.status).toBe(101);
      // 50 ms heartbeats: closed once a ping stayed unanswered for one of them.
      const closed = await silent.closing;
      expect(closed).toEqual({ code: 1001, reason: "no answer to ping" });
      silent.close();
      // The client that answers (a WebSocket client does) is still there, and still gets heartbeats.
      const at = answering.frames.length;
      await answering.waitFor((f) => f.type === "stream.heartbeat" && answering.frames.indexOf(f) >= at);
      await answering.waitFor((f) => f.type === "stream.heartbeat" && answering.frames.indexOf(f) >= at + 3);
      await answering.close();
    });
  });

  describe(`${name}: a healthy reader under a burst`, () => {
    let server: StartedServer;
    beforeAll(async () => {
      // The default limits: what a user gets.
      server = await start({});
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test(
      "a client reading as fast as it can follows a 200,000-event burst with the default limits, losing nothing",
      async () => {
        const fast = startFastReader(server.url);
        try {
          expect(await fast.next()).toBe("ready");
          const id = await client(server).start("executions.demonstrate", { steps: 0, delay_ms: 0, events: 200_000 });
          // The reader prints {lagged} the moment it is told it fell behind: the next line must be the end.
          expect(JSON.parse(await fast.next())).toEqual({ id, last: 200_008, in_order: true, state: "succeeded" });
        } finally {
          fast.stop();
        }
      },
      120_000,
    );
  });

  describe(`${name}: a slow reader`, () => {
    let server: StartedServer;
    let http: ReturnType<typeof client>;
    beforeAll(async () => {
      // Far less than the 20 bursts (about 50 MB of frames), far more than one burst (about 2.5 MB).
      server = await start({ limits: { subscriber_queue_bytes: 8 * 1024 * 1024 } });
      http = client(server);
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test(
      "a client that stops reading gets stream.lagged; another receives everything; every execution completes",
      async () => {
        const slow = await rawUpgrade(server.url, "/events");
        expect(slow.status).toBe(101);
        slow.socket.pause();
        const fast = startFastReader(server.url);
        try {
          expect(await fast.next()).toBe("ready");
          // Bursts, so that the reader (sharing two cores with the server) catches up between them,
          // while the stalled one falls ever further behind.
          for (let i = 0; i < 20; i++) {
            const id = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0, events: 10_000 });
            const seen = JSON.parse(await fast.next());
            expect(seen).toEqual({ id, last: 10_008, in_order: true, state: "succeeded" });
          }
        } finally {
          fast.stop();
        }
        slow.socket.resume();
        const lagged = JSON.parse(await slow.waitFor((f) => f.includes('"stream.lagged"')));
        sink.push(lagged);
        expect(lagged.dropped).toBeGreaterThan(0);
        expect(Object.keys(lagged.last_sequence).length).toBeGreaterThan(0);
        slow.close();
      },
      60_000,
    );
  });

  describe(`${name}: connections and stop`, () => {
    let server: StartedServer;
    beforeAll(async () => {
      server = await start({ limits: { live_connections: 2 } });
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("beyond live_connections the upgrade is refused with 503", async () => {
      const one = await openLive(server.url);
      const two = await openLive(server.url);
      await one.waitFor((f) => f.type === "stream.ready");
      await two.waitFor((f) => f.type === "stream.ready");
      const third = await rawUpgrade(server.url, "/events");
      expect(third.status).toBe(503);
      await one.close();
      await two.close();
    });

    test("stopping the server ends what runs first: a client following it gets its end (interrupted), then stream.closing, then the close", async () => {
      const id = await client(server).start("executions.demonstrate", { steps: 100, delay_ms: 200 });
      const live = await openLive(server.url, `execution=${id}`, { onFrame: (f) => sink.push(f) });
      await live.waitFor((f) => f.execution_id === id && f.type === "execution.step");
      // The other connections of this server may still be closing: wait for this one's frames only.
      await server.stop();
      const closing = await live.waitFor((f) => f.type === "stream.closing");
      expect(closing.reason).toContain("stopping");
      // It was told stream.closing first, and never learned how the execution ended (lifecycle tester, session 42).
      const types = live.frames.map((f) => f.type);
      expect(types.indexOf("execution.completed")).toBeGreaterThan(-1);
      expect(types.indexOf("execution.completed")).toBeLessThan(types.indexOf("stream.closing"));
      expect(live.frames.find((f) => f.type === "execution.completed")!.data).toMatchObject({ state: "failed", failure: { error_code: "interrupted" } });
      expect(await live.closed).toBeGreaterThan(0);
    });
  });
}
