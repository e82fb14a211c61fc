import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { StartFn, StartedServer } from "./_support/servers.ts";
import { client, frameValidator, rawRequest } from "./_support/http.ts";
import { completedOf, openLive } from "./_support/live-client.ts";
import { rawUpgrade } from "./_support/raw-ws.ts";

const sequencesOf = (frames: any[], id: string) => frames.filter((f) => f.execution_id === id).map((f) => f.sequence as number);
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/**
 * Reads one execution's events from `after`, keeping at most `take` of them, then disconnects
 * (frames that arrive after the cut are what a vanished client never saw).
 */
async function readSome(url: string, id: string, after: number, take: number, sink: any[]): Promise<{ sequences: number[]; done: boolean }> {
  const sequences: number[] = [];
  let done = false;
  let finish!: () => void;
  const enough = new Promise<void>((r) => (finish = r));
  const live = await openLive(url, `execution=${id}&after=${after}`, {
    onFrame(frame) {
      sink.push(frame);
      if (done || sequences.length >= take || frame.execution_id !== id) return;
      sequences.push(frame.sequence);
      if (frame.type === "execution.completed") done = true;
      if (done || sequences.length >= take) finish();
    },
  });
  await enough;
  await live.close();
  return { sequences, done };
}

/** The live channel (docs/protocol.md): order, cursors, several executions, reconnects, refusals by shape. */
export function liveContract(name: string, start: StartFn, sink: any[]): void {
  describe(`${name}: live channel`, () => {
    let server: StartedServer;
    let http: ReturnType<typeof client>;
    beforeAll(async () => {
      server = await start();
      http = client(server);
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("plain GET /events is 426 naming the HTTP routes of the same events", async () => {
      const response = await fetch(`${server.url}/events?execution=x-20260908T010203Z-0a1b2c3d`);
      expect(response.status).toBe(426);
      expect(response.headers.get("upgrade")).toBe("websocket");
      const body = (await response.json()) as any;
      expect(body.error.message).toContain("/api/v1/executions/events?id=x-20260908T010203Z-0a1b2c3d");
      expect(body.error.message).toContain("/api/v1/executions");
    });

    test("wrong shapes are 400 before the handshake", async () => {
      for (const query of ["execution=nope", "execution=x-20261306T150621Z-d36daac4", "execution=x-20260908T010203Z-0a1b2c3d&after=-1", "after=abc", "executions=x-20260908T010203Z-0a1b2c3d", "cursor=3"]) {
        const refused = await rawUpgrade(server.url, `/events?${query}`);
        expect(refused.status).toBe(400);
      }
      // A misspelt parameter is named, never taken for "follow everything" (over plain HTTP too).
      const misspelt = (await (await fetch(`${server.url}/events?executions=x-20260908T010203Z-0a1b2c3d`)).json()) as any;
      expect(misspelt.error).toMatchObject({ error_code: "invalid_input", context: { parameter: "executions" } });
      expect(misspelt.error.message).toContain('/events takes no parameter "executions"; did you mean execution?');
    });

    test("a handshake the runtime cannot complete, and any request with an Upgrade header, get the app's own answer whole: descriptor, X-Request-Id and body (serve tester, session 46)", async () => {
      const upgrade = { Upgrade: "websocket", Connection: "Upgrade, close", "Sec-WebSocket-Version": "13" };
      // No key, and a key that is not 16 bytes in base64: 400 bad_handshake as JSON (Node's `ws` answered in plain text, without the id).
      for (const key of [null, "short"]) {
        const refused = await rawRequest(server.url, "GET", "/events", { ...upgrade, ...(key === null ? {} : { "Sec-WebSocket-Key": key }), "X-Request-Id": "ws-key" });
        expect(refused.status).toBe(400);
        expect(refused.headers["x-request-id"]).toBe("ws-key");
        expect(JSON.parse(refused.body).error).toMatchObject({ error_code: "invalid_input", context: { reason: "bad_handshake" } });
      }
      const key = { "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==" };
      // A POST asking to upgrade /events is told the method (Node saw every upgrade request as a GET).
      const posted = await rawRequest(server.url, "POST", "/events", { ...upgrade, ...key });
      expect(posted.status).toBe(405);
      expect(JSON.parse(posted.body).error).toMatchObject({ context: { reason: "method_not_allowed" } });
      // A refusal before the handshake carries its body (Node's upgrade path sent none).
      const foreign = await rawRequest(server.url, "GET", "/events", { ...upgrade, ...key, Origin: "http://evil.example" });
      expect(foreign.status).toBe(403);
      expect(JSON.parse(foreign.body).error.message).toContain("http://evil.example");
      // An HTTP/2 upgrade offer (`curl --http2`) is answered as HTTP/1.1: Node held the connection open without an answer.
      const h2c = await rawRequest(server.url, "GET", "/healthz", { Upgrade: "h2c", Connection: "Upgrade, HTTP2-Settings, close", "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA" });
      expect(h2c.status).toBe(200);
      expect(JSON.parse(h2c.body)).toMatchObject({ ok: true });
      // A POST carrying an Upgrade header is read with its body, as without one.
      const body = JSON.stringify({ id: "executions.demonstrate" });
      const read = await rawRequest(server.url, "POST", "/api/v1/capabilities/get", { ...upgrade, "Content-Type": "application/json" }, body);
      expect(read.status).toBe(200);
      expect(JSON.parse(read.body)).toMatchObject({ id: "executions.demonstrate" });
    });

    test("an execution the server does not hold is 404 before the handshake; the refusal carries X-Request-Id", async () => {
      const refused = await rawUpgrade(server.url, "/events?execution=x-20260908T010203Z-00000000", { "X-Request-Id": "ws-404" });
      expect(refused.status).toBe(404);
      expect(refused.headers["x-request-id"]).toBe("ws-404");
    });

    test("the 101 answer carries X-Request-Id too, the one asked for when well-formed (API tester, session 43)", async () => {
      const id = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      const given = await rawUpgrade(server.url, `/events?execution=${id}`, { "X-Request-Id": "ws-101" });
      expect(given.status).toBe(101);
      expect(given.headers["x-request-id"]).toBe("ws-101");
      given.close();
      const made = await rawUpgrade(server.url, `/events?execution=${id}`);
      expect(made.status).toBe(101);
      expect(made.headers["x-request-id"]).toMatch(/^r-[0-9a-f]{20}$/);
      made.close();
    });

    test("one execution: stream.ready first, then its history, then live, each sequence once", async () => {
      const id = await http.start("executions.demonstrate", { steps: 3, delay_ms: 20 });
      const live = await openLive(server.url, `execution=${id}`, { onFrame: (f) => sink.push(f) });
      await live.waitFor(completedOf(id));
      await live.close();
      expect(live.frames[0]).toMatchObject({ type: "stream.ready", subscribed: [id], truncated: false });
      const last = live.frames.at(-1).sequence;
      expect(sequencesOf(live.frames, id)).toEqual(range(1, last));
      expect(live.frames[0].replayed).toBeGreaterThanOrEqual(1);
    });

    test("a cursor: after=n replays only what follows n", async () => {
      const id = await http.start("executions.demonstrate", { steps: 2, delay_ms: 0 });
      const done = await http.completed(id);
      const live = await openLive(server.url, `execution=${id}&after=3`, { onFrame: (f) => sink.push(f) });
      await live.waitFor(completedOf(id));
      await live.close();
      expect(live.frames[0]).toMatchObject({ type: "stream.ready", replayed: done.sequence - 3 });
      expect(sequencesOf(live.frames, id)).toEqual(range(4, done.sequence));
    });

    test("several executions, a cursor each; one named twice is followed once", async () => {
      const a = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      const b = await http.start("executions.demonstrate", { steps: 2, delay_ms: 0 });
      const [doneA, doneB] = [await http.completed(a), await http.completed(b)];
      const live = await openLive(server.url, `execution=${a}&execution=${b}&execution=${a}&after=2`, { onFrame: (f) => sink.push(f) });
      await live.waitFor(completedOf(a));
      await live.waitFor(completedOf(b));
      await live.close();
      expect(live.frames[0]).toMatchObject({ type: "stream.ready", subscribed: [a, b], replayed: doneA.sequence - 2 + doneB.sequence - 2 });
      expect(sequencesOf(live.frames, a)).toEqual(range(3, doneA.sequence));
      expect(sequencesOf(live.frames, b)).toEqual(range(3, doneB.sequence));
    });

    test("every execution: live events of executions started after connecting", async () => {
      const live = await openLive(server.url, "", { onFrame: (f) => sink.push(f) });
      await live.waitFor((f) => f.type === "stream.ready");
      const id = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      const done = await live.waitFor(completedOf(id));
      await live.close();
      expect(live.frames[0]).toMatchObject({ type: "stream.ready", subscribed: "all", replayed: 0 });
      expect(sequencesOf(live.frames, id)).toEqual(range(1, done.sequence));
    });

    test("reconnects with after at random points deliver every sequence exactly once, in order", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 6 }), async (cuts) => {
          const id = await http.start("executions.demonstrate", { steps: 3, delay_ms: 5, events: 150 });
          const seen: number[] = [];
          let done = false;
          for (const take of [...cuts, Number.MAX_SAFE_INTEGER]) {
            const part = await readSome(server.url, id, seen.at(-1) ?? 0, take, sink);
            seen.push(...part.sequences);
            if (part.done) {
              done = true;
              break;
            }
          }
          expect(done).toBe(true);
          expect(seen).toEqual(range(1, seen.at(-1)!));
        }),
        { numRuns: 8 },
      );
    }, 30_000);

    test("a client message past 4 KiB closes its connection at once: the server reads none, and never holds one", async () => {
      const live = await rawUpgrade(server.url, "/events", { "Sec-WebSocket-Protocol": "docket.v1" });
      expect(live.status).toBe(101);
      await live.waitFor((frame) => JSON.parse(frame).type === "stream.ready");
      // A small message and a ping are read (and the message ignored): the ping is answered.
      live.send(1, new TextEncoder().encode("hello"));
      live.send(9, new Uint8Array(0));
      await live.pong;
      const other = await rawUpgrade(server.url, "/events", { "Sec-WebSocket-Protocol": "docket.v1" });
      await other.waitFor((frame) => JSON.parse(frame).type === "stream.ready");
      // 8 KiB, far under a runtime's own default (Bun: 16 MiB): refused, so the ping after it is never answered.
      other.send(2, new Uint8Array(8 * 1024));
      other.send(9, new Uint8Array(0));
      const first = await Promise.race([other.pong.then(() => "answered"), other.ended.then(() => "closed")]);
      expect(first).toBe("closed");
      live.close();
    });

    test("a client flooding pings is closed 1008 \"too many pings\": its pongs are not queued without bound", async () => {
      const live = await rawUpgrade(server.url, "/events", { "Sec-WebSocket-Protocol": "docket.v1" });
      await live.waitFor((frame) => JSON.parse(frame).type === "stream.ready");
      // A few pings, as a keep-alive sends them, are answered; a thousand in a row close the connection.
      live.send(9, new Uint8Array(0));
      await live.pong;
      for (let i = 0; i < 1000; i++) live.send(9, new Uint8Array(125));
      expect(await live.closing).toEqual({ code: 1008, reason: "too many pings" });
      live.close();
    });

    test("every frame received validates against the schemas executions.protocol serves", async () => {
      const protocol = (await (await http.get("/api/v1/executions/protocol")).json()) as any;
      const check = frameValidator(protocol);
      expect(sink.length).toBeGreaterThan(100);
      const problems = sink.map(check).filter((p) => p !== null);
      expect(problems).toEqual([]);
    });
  });
}
