import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startFastReader } from "./_support/fast-reader-process.ts";
import { completedOf, openLive } from "./_support/live-client.ts";
import { rawUpgrade, type RawUpgrade } from "./_support/raw-ws.ts";

// What a client that stops reading `/events` costs the server (docs/protocol.md, "Backpressure"):
// its queue, bounded by subscriber_queue_bytes, and a socket buffer that stays small however much
// is published meanwhile. The server runs in a process of its own so that its memory is its own;
// the bound is small (4 MiB) against the flood (about 70 MB of frames), so a stalled client that
// took in the flood would be far over the test's bound, and one held to its queue far under it.
const QUEUE_BYTES = 4 * 1024 * 1024;
const FLOOD_EVENTS = 300_000;
// Half follow everything, half the flooding execution: two topic groups.
const STALLED = 8;
// Each burst is less than the bound: a healthy reader that catches up between bursts never lags.
const BURSTS = 10;
const BURST_EVENTS = 10_000;
// Per stalled client: its queue (frames partly shared with the others, plus the runtime's own cost
// per string) and its socket buffer. Generous: twice the bound and 2 MiB of slack; a client that
// took in what was published to it (as one did before) cost 10 × the bound and more.
const BOUND_PER_CLIENT = 2 * QUEUE_BYTES + 2 * 1024 * 1024;
const SERVER = fileURLToPath(new URL("./_support/measured-server.ts", import.meta.url));

/** The measured server's stdout, a JSON line at a time. */
function startMeasured(limits: Record<string, number>) {
  const root = mkdtempSync(join(tmpdir(), "docket-measured-"));
  const child: ChildProcess = spawn(process.execPath, [SERVER, JSON.stringify(limits), root], { stdio: ["pipe", "pipe", "inherit"] });
  const lines: string[] = [];
  let wake: (() => void) | null = null;
  let buffered = "";
  child.stdout!.on("data", (chunk) => {
    buffered += chunk;
    const parts = buffered.split("\n");
    buffered = parts.pop()!;
    lines.push(...parts.filter(Boolean));
    wake?.();
  });
  const next = async (): Promise<any> => {
    while (lines.length === 0) {
      if (child.exitCode !== null) throw new Error("the measured server exited");
      await new Promise<void>((resolve) => (wake = resolve));
    }
    return JSON.parse(lines.shift()!);
  };
  return {
    next,
    /** RSS after a full collection in the server. */
    async rss(): Promise<number> {
      child.stdin!.write("memory\n");
      return (await next()).rss as number;
    },
    /** The JavaScript heap after a full collection in the server: what it holds live. */
    async heap(): Promise<number> {
      child.stdin!.write("memory\n");
      return (await next()).heap as number;
    },
    /** Ends the server (killed if it has not ended within 5 s), then removes its checkout. */
    stop: async () => {
      const ended = new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once("exit", resolve)));
      child.stdin!.end();
      const kill = setTimeout(() => child.exitCode === null && child.kill("SIGKILL"), 5_000);
      await ended;
      clearTimeout(kill);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Each stalled client reads again: it gets what was kept for it, then a stream.lagged that counts a loss. */
async function expectLaggedOnceReading(stalled: RawUpgrade[]): Promise<void> {
  for (const raw of stalled) {
    raw.socket.resume();
    const lagged = JSON.parse(await raw.waitFor((f) => f.includes('"stream.lagged"')));
    expect(lagged.dropped).toBeGreaterThan(0);
    raw.close();
  }
}

describe("live channel: stalled clients", () => {
  let server: ReturnType<typeof startMeasured>;
  let url: string;
  beforeAll(async () => {
    // Few events retained per execution: the store's own memory stays flat from burst to burst.
    server = startMeasured({ subscriber_queue_bytes: QUEUE_BYTES, events_retained: 100 });
    url = (await server.next()).url;
  }, 30_000);
  afterAll(() => server?.stop());

  const start = async (input: object): Promise<string> => {
    const response = await fetch(`${url}/api/v1/executions/start`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ capability: "executions.demonstrate", input }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as any).execution.id;
  };
  /**
   * Resolves when a flood of `events` ended. Its end comes after the cursor, but a connection that
   * joins the flood's topic gets the flood too and may lag: then it asks again from the cursor.
   */
  const ended = async (id: string, events: number) => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const tail = await openLive(url, `execution=${id}&after=${events}`);
      const frame = await tail.waitFor((f) => completedOf(id)(f) || f.type === "stream.lagged");
      await tail.close();
      if (frame.type !== "stream.lagged") return;
    }
    throw new Error(`execution ${id} did not end`);
  };

  test(
    "clients that stop reading cost the server a bounded amount of memory each, lag alone, and a healthy client beside them gets every event",
    async () => {
      // The same flood with nobody stalled first: what the server grows by anyway.
      const warmUp = await start({ steps: 0, delay_ms: 0, events: FLOOD_EVENTS });
      await ended(warmUp, FLOOD_EVENTS);
      const before = await server.rss();
      // One step first: time for the stalled clients to subscribe to the flooding execution.
      const flood = await start({ steps: 1, delay_ms: 500, events: FLOOD_EVENTS });
      const stalled: RawUpgrade[] = [];
      for (let i = 0; i < STALLED; i++) {
        const raw = await rawUpgrade(url, i % 2 === 0 ? "/events" : `/events?execution=${flood}`);
        expect(raw.status).toBe(101);
        raw.socket.pause();
        stalled.push(raw);
      }
      await ended(flood, FLOOD_EVENTS);
      const growth = (await server.rss()) - before;
      expect(growth / STALLED).toBeLessThan(BOUND_PER_CLIENT);

      // A healthy reader beside them (in the same topic group as half of them) gets every event.
      const reader = startFastReader(url);
      try {
        expect(await reader.next()).toBe("ready");
        for (let i = 0; i < BURSTS; i++) {
          const id = await start({ steps: 0, delay_ms: 0, events: BURST_EVENTS });
          expect(JSON.parse(await reader.next())).toEqual({ id, last: BURST_EVENTS + 8, in_order: true, state: "succeeded" });
        }
      } finally {
        reader.stop();
      }
      // Each stalled client, once it reads again, gets what was queued for it and then stream.lagged.
      await expectLaggedOnceReading(stalled);
    },
    120_000,
  );
});

describe("live channel: many clients stalled at different moments", () => {
  // Each stalled client keeps its own stretch of the log (up to QUEUE_BYTES of frames); together
  // they keep at most KEPT_BYTES (lagging_kept_bytes), the longest-kept stretch given up first.
  // Without that bound, eight stretches of the log held about 2.2 MB of heap each here.
  const QUEUE = 2 * 1024 * 1024;
  const KEPT = 2 * 1024 * 1024;
  const FLOOD = 600_000;
  let server: ReturnType<typeof startMeasured>;
  let url: string;
  beforeAll(async () => {
    server = startMeasured({ subscriber_queue_bytes: QUEUE, lagging_kept_bytes: KEPT, events_retained: 100 });
    url = (await server.next()).url;
  }, 30_000);
  afterAll(() => server?.stop());

  const start = async (input: object): Promise<string> => {
    const response = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "executions.demonstrate", input }) });
    expect(response.status).toBe(200);
    return ((await response.json()) as any).execution.id;
  };

  /** The execution's snapshot, as `executions.get` answers it. */
  const snapshot = async (id: string): Promise<{ state: string; last_sequence: number }> => {
    const response = await fetch(`${url}/api/v1/executions/get?id=${id}`);
    return (await response.json()) as any;
  };
  /** Resolves once `id` stored `sequence` events (or finished), looking every few milliseconds. */
  const reached = async (id: string, sequence: number) => {
    for (let look = 0; look < 20_000; look++) {
      const { state, last_sequence } = await snapshot(id);
      if (last_sequence >= sequence || state === "succeeded" || state === "failed") return;
      await Bun.sleep(2);
    }
    throw new Error(`execution ${id} did not reach sequence ${sequence}`);
  };

  test(
    "what they keep all together stays within lagging_kept_bytes, and each is told stream.lagged once it reads again",
    async () => {
      const warmUp = await start({ steps: 0, delay_ms: 0, events: FLOOD });
      await reached(warmUp, Number.POSITIVE_INFINITY);
      const before = await server.heap();
      // Eight floods one after another, a client stalling before each: each stalls at its own
      // stretch of the log, and every flood after it (≥ 13 MB of frames) pushes it past its queue.
      const stalled: RawUpgrade[] = [];
      for (let i = 0; i < 8; i++) {
        const raw = await rawUpgrade(url, "/events");
        expect(raw.status).toBe(101);
        raw.socket.pause();
        stalled.push(raw);
        await reached(await start({ steps: 0, delay_ms: 0, events: FLOOD / 8 }), Number.POSITIVE_INFINITY);
      }
      const growth = (await server.heap()) - before;
      // The log (QUEUE) and the kept stretches (KEPT), with slack: 3.1 MB measured; the eight
      // stretches kept without the bound were 17.8 MB.
      expect(growth).toBeLessThan(2 * (QUEUE + KEPT));
      // Each, once it reads again, gets what it still kept, then one stream.lagged; nothing unannounced.
      await expectLaggedOnceReading(stalled);
    },
    120_000,
  );
});
