// Full-history replays on `/events` (docs/protocol.md, "What a replay costs" and "Such connections
// take turns"): a `docket serve` (memory store, default flags but for how many executions it
// keeps) holding EXECUTIONS finished executions of 20 events each (bench.twenty), then CLIENTS
// WebSocket clients at once, each asking `/events?after=0` and reading all of it as fast as it can.
// The server's resident memory is sampled every 20 ms from before the clients to the last one
// done. The baseline is one client alone (what one replay costs), in the same run; the peer is
// `ws` on Node sending one client the same number of frames it made beforehand (the floor of
// sending them; it reads nothing from any store). Loopback only; every loop bounded in time.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { KeepAliveConnection } from "./_keep-alive.ts";
import { serveChild } from "./http-dispatch.ts";
import type { BenchResult } from "./run.ts";

const EXECUTIONS = Number(process.env.DOCKET_BENCH_REPLAY_EXECUTIONS ?? 40_000);
const EVENTS_EACH = 20;
const CROWDS = [10, 30];
const DEADLINE_MS = 120_000;
const MB = 1024 * 1024;

/** A process's resident memory in bytes, from /proc (Linux); NaN elsewhere. */
function residentBytes(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/**
 * Waits until a process's resident memory has settled (changed by under 2 MiB over a second, after
 * at least three; at most twenty): what the work before left to collect and return is gone.
 */
async function settled(pid: number): Promise<number> {
  const started = performance.now();
  let last = residentBytes(pid);
  for (;;) {
    await Bun.sleep(1000);
    const now = residentBytes(pid);
    const quiet = Math.abs(now - last) < 2 * MB;
    last = now;
    if ((quiet && performance.now() - started >= 3000) || performance.now() - started >= 20_000) return now;
  }
}

/** Samples a process's resident memory every 20 ms until stopped: its peak. */
function peakOf(pid: number): { stop(): number } {
  let peak = residentBytes(pid);
  const timer = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), 20);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, residentBytes(pid));
    },
  };
}

/** `clients` WebSockets at once on `url`, each reading until it has `expect(ready)` frames after its first; resolves with the seconds until the last is done. */
async function readAll(url: string, clients: number, expect: (first: string) => number, hello?: string): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from(
      { length: clients },
      () =>
        new Promise<void>((resolve, reject) => {
          const socket = new WebSocket(url);
          const timer = setTimeout(() => (socket.close(), reject(new Error(`a client of ${url} was not done within ${DEADLINE_MS / 1000} s`))), DEADLINE_MS);
          let want = -1;
          let got = 0;
          socket.onopen = () => hello !== undefined && socket.send(hello);
          socket.onerror = () => (clearTimeout(timer), reject(new Error(`a client of ${url} failed`)));
          socket.onmessage = (message) => {
            if (want < 0) want = expect(message.data as string);
            else got++;
            if (want >= 0 && got >= want) {
              clearTimeout(timer);
              socket.close();
              resolve();
            }
          };
        }),
    ),
  );
  return (performance.now() - started) / 1000;
}

/** Starts EXECUTIONS of bench.twenty, 64 at a time, and waits until every one finished. */
async function populate(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const connections = await Promise.all(Array.from({ length: 64 }, () => KeepAliveConnection.open(hostname, Number(port))));
  const body = JSON.stringify({ capability: "bench.twenty", input: { path: "src/lib", pattern: "TODO" } });
  let next = 0;
  await Promise.all(
    connections.map(async (connection) => {
      while (next < EXECUTIONS) {
        next++;
        const answer = await connection.post("/api/v1/executions/start", body);
        if (answer.status !== 200) throw new Error(`executions.start answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      }
    }),
  );
  for (const connection of connections) connection.close();
  const deadline = performance.now() + DEADLINE_MS;
  for (;;) {
    const page = (await (await fetch(`${url}/api/v1/executions/list?limit=1`)).json()) as { counts: Record<string, number> };
    if (page.counts.succeeded === EXECUTIONS) return;
    if (performance.now() > deadline) throw new Error(`the executions did not all finish within ${DEADLINE_MS / 1000} s: ${JSON.stringify(page.counts)}`);
    await Bun.sleep(100);
  }
}

/** The figures of one crowd of replays: time, rate, and the server's memory before and at the peak. */
function row(path: string, clients: number, seconds: number, before: number, peak: number, flags: string) {
  const events = clients * EXECUTIONS * EVENTS_EACH;
  return { path, clients, events_each: EXECUTIONS * EVENTS_EACH, seconds, events_per_second: Math.round(events / seconds), rss_before_mb: Math.round(before / MB), rss_peak_mb: Math.round(peak / MB), growth_mb: Math.round((peak - before) / MB), flags };
}

/** docket: one server, populated once; one client alone, then each crowd, the memory let settle in between. */
async function docketRows(): Promise<Array<ReturnType<typeof row>>> {
  const server = await serveChild("memory", { DOCKET_EXECUTIONS_RETAINED: String(EXECUTIONS + 100), DOCKET_MAX_QUEUED: String(EXECUTIONS) });
  const pid = server.child.pid!;
  const flags = `docket serve --store memory, DOCKET_EXECUTIONS_RETAINED=${EXECUTIONS + 100} (else defaults); /events?after=0`;
  try {
    await populate(server.url);
    const rows = [];
    // The one client last: an idle server collects nothing, so its memory right after the
    // executions were created is far above what it holds; after a crowd it has been collected.
    for (const clients of [...CROWDS, 1]) {
      // What the executions' creation (or the crowd before) left to collect and return goes first.
      const before = await settled(pid);
      const sampler = peakOf(pid);
      const seconds = await readAll(`${server.url.replace(/^http/, "ws")}/events?after=0`, clients, (first) => JSON.parse(first).replayed);
      rows.push(row(clients === 1 ? "docket: one client replays every execution (the baseline)" : `docket: ${clients} clients replay every execution at once`, clients, seconds, before, sampler.stop(), flags));
    }
    // The baseline first in the table.
    return [rows.at(-1)!, ...rows.slice(0, -1)];
  } finally {
    await server.stop();
  }
}

/** The `ws` peer: one client sent the same number of frames, made before it connected. */
async function wsRow(): Promise<ReturnType<typeof row>> {
  const count = EXECUTIONS * EVENTS_EACH;
  const child = spawn("node", [join(import.meta.dir, "peers", "ws-server.mjs"), String(count)], { stdio: ["pipe", "pipe", "inherit"] });
  try {
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const port = Number(String((await lines.next()).value).split(" ")[1]);
    const before = await settled(child.pid!);
    const sampler = peakOf(child.pid!);
    // The peer sends no ready frame: the first frame is the first event.
    const seconds = await readAll(`ws://127.0.0.1:${port}`, 1, () => count - 1, "go");
    return row("ws on Node: one client sent as many pre-made frames (the floor of sending them)", 1, seconds, before, sampler.stop(), "bench/peers/ws-server.mjs, one send each, pausing past 1 MiB buffered; frames made before the client came");
  } finally {
    child.stdin!.end();
    child.kill("SIGKILL");
  }
}

export async function benchReplay(): Promise<BenchResult> {
  const rows: Array<Record<string, unknown>> = await docketRows();
  const alone = rows[0]!;
  for (const r of rows.slice(1)) {
    // Under 10 MB, one client's growth is noise, no baseline to divide by.
    r.growth_vs_one = (alone.growth_mb as number) >= 10 ? (r.growth_mb as number) / (alone.growth_mb as number) : "(one client's growth under 10 MB)";
    r.seconds_vs_one_each = (r.seconds as number) / ((alone.seconds as number) * (r.clients as number));
  }
  const peer = await wsRow();
  alone.rate_vs_ws = (alone.events_per_second as number) / peer.events_per_second;
  rows.push(peer);
  return { name: "replay", rows };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchReplay()).rows));
  process.exit(0);
}
