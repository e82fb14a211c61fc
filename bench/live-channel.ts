// Live channel benchmarks (PERFORMANCE.md): throughput handler → store → one WebSocket client
// against raw Bun.serve corked sends of the same frames and against the peers (`ws`, Socket.IO);
// latency at 1,000 events/s for 1 and 100 clients, docket beside the same peers; Bun adapter
// against Node adapter. Loopback only, bounded in count and time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootPlane } from "../runtime/boot.ts";
import { resolveLimits, type Limits } from "../runtime/execution/limits.ts";
import { createApp } from "../runtime/server/app.ts";
import { LiveChannel } from "../runtime/server/live-channel.ts";
import { serveWithBun } from "../runtime/server/adapter-bun.ts";
import { startServer } from "../runtime/server/serve.ts";
import { startChild } from "./_child.ts";
import type { LatencyFigures } from "./_latency-readers.ts";
import { frameOf, now } from "./peers/_frame.mjs";
import { peerBurst, peerLatency, startLatencyReaders, type LivePeer } from "./peers/live-peer.ts";
import { SOCKET_IO_PEER } from "./peers/socket-io.ts";
import { WS_PEER } from "./peers/ws.ts";
import type { BenchResult } from "./run.ts";

const EVENTS = 200_000;
const RATE_SECONDS = 3;
/** Rounds of the 100-client latency, docket and peers interleaved; each figure is the median. */
const LATENCY_ROUNDS = 3;
const CLIENT_DEADLINE_MS = 60_000;
// The user's path: the default limits (a healthy loopback client loses nothing with them).
const THROUGHPUT_LIMITS = {};
const FLAGS = "docket serve on Bun, memory store, default limits";
const PEERS: LivePeer[] = [WS_PEER, SOCKET_IO_PEER];

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** A reader in its own process (so it does not share the server's thread): this file's `--client` mode. */
const reader = (args: string[]) => startChild(process.execPath, [import.meta.path, "--client", ...args]);

/** Child side: `docket` mode counts frames until execution.completed; `raw` mode asks for n frames and times them. */
async function runClient(url: string, mode: string, count: number): Promise<void> {
  const socket = new WebSocket(url);
  let frames = 0;
  let lagged = 0;
  let started = 0;
  setTimeout(() => process.exit(3), CLIENT_DEADLINE_MS);
  socket.onopen = () => {
    if (mode !== "raw") return;
    started = performance.now();
    socket.send("go");
  };
  socket.onmessage = (message) => {
    const text = message.data as string;
    if (mode === "raw") {
      if (++frames === count) {
        console.log(JSON.stringify({ frames, ms: performance.now() - started }));
        process.exit(0);
      }
      return;
    }
    if (text.charCodeAt(2) === 116 /* {"type":"stream.… */) {
      if (text.includes('"stream.ready"')) console.log("ready");
      else if (text.includes('"stream.lagged"')) lagged++;
      return;
    }
    frames++;
    if (text.includes('"execution.completed"')) {
      console.log(JSON.stringify({ frames, lagged }));
      process.exit(0);
    }
  };
}

/** Raw Bun.serve: the same number of similar frames, corked in batches of 256, honouring backpressure. */
async function rawBaseline(): Promise<number> {
  const frames = Array.from({ length: EVENTS }, (_, i) => frameOf(i + 1, { current: i + 1, total: EVENTS }));
  let next = 0;
  const pump = (ws: import("bun").ServerWebSocket<undefined>) => {
    while (next < frames.length) {
      let blocked = false;
      ws.cork(() => {
        for (const end = Math.min(frames.length, next + 256); next < end; ) if (ws.sendText(frames[next++]!) === -1) return void (blocked = true);
      });
      if (blocked) return;
    }
  };
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req, s) => (s.upgrade(req) ? undefined : new Response("no", { status: 400 })), websocket: { message: (ws) => pump(ws), drain: (ws) => pump(ws) } });
  const client = reader([`ws://127.0.0.1:${server.port}/`, "raw", String(EVENTS)]);
  try {
    const { frames: got, ms } = JSON.parse(await client.next());
    return got / (ms / 1000);
  } finally {
    client.stop();
    await server.stop(true);
  }
}

/** handler → store → live channel → one reader: executions.demonstrate emitting EVENTS, from start to completed. */
async function docketThroughput(url: string, token: string | null = null): Promise<{ rate: number; lagged: number }> {
  const client = reader([`${url.replace(/^http/, "ws")}/events${token ? `?token=${token}` : ""}`, "docket", "0"]);
  try {
    if ((await client.next()) !== "ready") throw new Error("reader not ready");
    const started = performance.now();
    const response = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: EVENTS } }) });
    if (!response.ok) throw new Error(`start → ${response.status}`);
    const { frames, lagged } = JSON.parse(await client.next());
    return { rate: frames / ((performance.now() - started) / 1000), lagged };
  } finally {
    client.stop();
  }
}

/** Latency store → live channel → `clients` readers at 1,000 events/s for RATE_SECONDS; counts what was dropped. */
async function latencyAtRate(clients: number): Promise<LatencyFigures & { events: number }> {
  const root = mkdtempSync(join(tmpdir(), "docket-bench-live-"));
  const limits: Limits = resolveLimits();
  const booted = await bootPlane({ cwd: root, storeKind: "memory", limits, log: () => {} });
  const live = new LiveChannel({ store: booted.store, limits });
  const config = { host: "127.0.0.1", port: 0, allowedHosts: [], token: null, origin: "" };
  const server = serveWithBun(createApp({ plane: booted.engine, live, config }), live, { host: "127.0.0.1", port: 0 });
  config.origin = server.url;
  const id = "x-20260908T010203Z-0000beef";
  booted.store.create({ id, capability: "executions.demonstrate", input: {}, actor: { kind: "cli", pid: process.pid }, repository: root, run_id: null, session_key: null, request_id: "bench", trace_id: "0af7651916cd43dd8448eb211c80319c", cancellable: false, effect: "read" });
  booted.store.append(id, [{ type: "execution.started", data: {} }]);
  const readers = startLatencyReaders({ url: `${server.url.replace("http", "ws")}/events?execution=${id}&after=2`, clients, kind: "docket", after: 2 });
  try {
    await readers.next(); // every reader has its stream.ready
    const started = performance.now();
    let emitted = 0;
    await new Promise<void>((done) => {
      const timer = setInterval(() => {
        const elapsed = performance.now() - started;
        for (const due = Math.min(RATE_SECONDS * 1000, Math.floor(elapsed)); emitted < due; ) {
          emitted++;
          booted.store.append(id, [{ type: "execution.progress", data: { current: emitted, total: RATE_SECONDS * 1000, message: String(now()) } }]);
        }
        if (elapsed >= RATE_SECONDS * 1000) {
          clearInterval(timer);
          done();
        }
      }, 1);
    });
    booted.store.append(id, [{ type: "execution.completed", data: { state: "succeeded", output: {}, duration_ms: RATE_SECONDS * 1000 } }]);
    const result = (await readers.next()) as LatencyFigures;
    return { ...result, events: emitted };
  } finally {
    await readers.stop();
    live.closeAll("bench done");
    await server.stop();
    await booted.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The Node adapter under the same load: the server in a `node` child process running the bundle the tests use. */
async function nodeThroughput(): Promise<{ rate: number; lagged: number }> {
  const { buildNodeBundle, nodeStarter } = await import("../tests/server/_support/servers.ts");
  const out = mkdtempSync(join(tmpdir(), "docket-bench-node-"));
  try {
    const server = await nodeStarter(await buildNodeBundle(out))({ limits: THROUGHPUT_LIMITS });
    try {
      return await docketThroughput(server.url);
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** The live-channel figures, each beside its baseline, its peers or its goal. */
export async function benchLiveChannel(): Promise<BenchResult> {
  const rows: BenchResult["rows"] = [];
  const root = mkdtempSync(join(tmpdir(), "docket-bench-serve-"));
  const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits({ overrides: THROUGHPUT_LIMITS }), capabilityDirs: [], runtime: "bun", log: () => {} });
  const docketRates: number[] = [];
  const rawRates: number[] = [];
  const peerRates: number[][] = PEERS.map(() => []);
  let lagged = 0;
  try {
    await docketThroughput(server.url); // warm-up: JIT, workers, sockets
    // Interleaved, so that a busy moment of the machine slows every figure alike; medians of three.
    for (let i = 0; i < 3; i++) {
      const run = await docketThroughput(server.url);
      docketRates.push(run.rate);
      lagged += run.lagged;
      rawRates.push(await rawBaseline());
      for (const [j, peer] of PEERS.entries()) peerRates[j]!.push(await peerBurst(peer, EVENTS));
    }
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const bun = { rate: median(docketRates), lagged };
  const raw = median(rawRates);
  const burst = `events handler → store → 1 WebSocket client (${EVENTS.toLocaleString("en-US")})`;
  rows.push({ figure: burst, docket: Math.round(bun.rate), baseline: Math.round(raw), baseline_is: "raw Bun.serve, corked batches of 256 of the same frames", ratio: bun.rate / raw, goal: "≥ 0.5, none lagged", lagged: bun.lagged, flags: FLAGS });
  for (const [j, peer] of PEERS.entries()) {
    const rate = median(peerRates[j]!);
    rows.push({ figure: `${burst}, against the peer`, docket: Math.round(bun.rate), baseline: Math.round(rate), baseline_is: `peer: ${peer.config}`, ratio: bun.rate / rate, goal: "(reported)", lagged: bun.lagged, flags: FLAGS });
  }

  const latencyRow = (clients: number, docket: LatencyFigures, peer: LivePeer | null, baseline: LatencyFigures | null, goal: string) => ({
    figure: `latency emit → ${clients === 1 ? "1 client" : `${clients} clients`} at 1,000 events/s, ${RATE_SECONDS} s (ms)${clients > 1 ? `, medians of ${LATENCY_ROUNDS}` : ""}${peer ? ", against the peer" : ""}`,
    docket: `p50 ${docket.p50.toFixed(3)} / p99 ${docket.p99.toFixed(3)}, dropped ${docket.dropped}`,
    baseline: baseline ? `p50 ${baseline.p50.toFixed(3)} / p99 ${baseline.p99.toFixed(3)}, dropped ${baseline.dropped}` : "",
    baseline_is: peer ? `peer: ${peer.config}` : "",
    // For times, peer ÷ docket: above 1 docket is faster, as in every other ratio.
    ratio: baseline ? `p99 ${(baseline.p99 / docket.p99).toFixed(2)}` : "",
    goal,
    flags: `${FLAGS}; docket: store.append → /events readers (Bun WebSocket)`,
  });
  const one = await latencyAtRate(1);
  rows.push(latencyRow(1, one, null, null, "p99 ≤ 1"));
  for (const peer of PEERS) rows.push(latencyRow(1, one, peer, await peerLatency(peer, 1, RATE_SECONDS), "(reported)"));
  // 100 clients, docket and each peer in turn, LATENCY_ROUNDS times; the median of each percentile
  // and the most dropped of any round.
  const rounds: LatencyFigures[][] = [[], ...PEERS.map(() => [])];
  for (let i = 0; i < LATENCY_ROUNDS; i++) {
    rounds[0]!.push(await latencyAtRate(100));
    for (const [j, peer] of PEERS.entries()) rounds[j + 1]!.push(await peerLatency(peer, 100, RATE_SECONDS));
  }
  const summary = (runs: LatencyFigures[]): LatencyFigures => ({ p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)), dropped: Math.max(...runs.map((r) => r.dropped)), frames: median(runs.map((r) => r.frames)) });
  const hundred = summary(rounds[0]!);
  rows.push({ ...latencyRow(100, hundred, null, null, "p99 ≤ 10, none dropped"), p99_runs: rounds[0]!.map((r) => r.p99.toFixed(2)).join(" ") });
  for (const [j, peer] of PEERS.entries()) {
    const figures = summary(rounds[j + 1]!);
    const goal = peer === WS_PEER ? "docket p99 ≤ 0.5 × ws" : "docket p99 ≪ Socket.IO";
    rows.push({ ...latencyRow(100, hundred, peer, figures, goal), p99_runs: rounds[j + 1]!.map((r) => r.p99.toFixed(2)).join(" ") });
  }

  const node = await nodeThroughput();
  rows.push({ figure: "events/s, Node adapter vs Bun adapter (same load)", docket: Math.round(node.rate), baseline: Math.round(bun.rate), baseline_is: "Bun adapter", ratio: node.rate / bun.rate, goal: "(reported)", lagged: node.lagged, flags: "docket serve on Node 20 (the tests' bundle), memory store, default limits" });
  return { name: "live-channel", rows };
}

if (import.meta.main) {
  if (process.argv[2] === "--client") {
    await runClient(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
  } else {
    const { markdownTable } = await import("./run.ts");
    const result = await benchLiveChannel();
    console.log(`## ${result.name}\n\n${markdownTable(result.rows)}`);
  }
}
