// Live channel benchmarks (PERFORMANCE.md): throughput handler → store → one WebSocket client
// against raw Bun.serve corked sends of the same frames; latency at 1,000 events/s for 1 and 100
// clients; Bun adapter against Node adapter. Loopback only, bounded in count and time.
import { spawn } from "node:child_process";
import { Worker } from "node:worker_threads";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootPlane } from "../runtime/boot.ts";
import { resolveLimits, type Limits } from "../runtime/execution/limits.ts";
import { createApp } from "../runtime/server/app.ts";
import { LiveChannel } from "../runtime/server/live-channel.ts";
import { serveWithBun } from "../runtime/server/adapter-bun.ts";
import { startServer } from "../runtime/server/serve.ts";
import type { BenchResult } from "./run.ts";

const EVENTS = 200_000;
const RATE_SECONDS = 3;
const CLIENT_DEADLINE_MS = 60_000;
// The user's path: the default limits (a healthy loopback client loses nothing with them).
const THROUGHPUT_LIMITS = {};

const frameOf = (n: number) =>
  JSON.stringify({ schema_version: "1", event_id: `x-20260908T010203Z-0a1b2c3d#${n}`, execution_id: "x-20260908T010203Z-0a1b2c3d", sequence: n, timestamp: new Date().toISOString(), type: "execution.progress", data: { current: n, total: EVENTS } });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** A reader in its own process (so it does not share the server's thread); resolves each line it prints. */
function reader(args: string[]) {
  const child = spawn(process.execPath, [import.meta.path, "--client", ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const lines: string[] = [];
  let wake: (() => void) | null = null;
  let rest = "";
  let exited = false;
  child.stdout.on("data", (chunk) => {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    lines.push(...parts.filter(Boolean));
    wake?.();
  });
  child.once("exit", () => ((exited = true), wake?.()));
  return {
    async next(): Promise<string> {
      while (lines.length === 0) {
        if (exited) throw new Error("the bench reader exited early");
        await new Promise<void>((r) => (wake = r));
      }
      return lines.shift()!;
    },
    stop: () => void child.kill("SIGKILL"),
  };
}

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
  const frames = Array.from({ length: EVENTS }, (_, i) => frameOf(i + 1));
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

/** The peer: a Node `ws` server sending the same frames to one reader, one send each, pausing while more than 1 MiB is buffered. */
async function wsPeer(): Promise<number> {
  const { WebSocketServer } = await import("ws");
  const frames = Array.from({ length: EVENTS }, (_, i) => frameOf(i + 1));
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  wss.on("connection", (ws) => {
    let next = 0;
    const pump = () => {
      while (next < frames.length) {
        ws.send(frames[next++]!);
        if (ws.bufferedAmount > 1024 * 1024) return void setImmediate(pump);
      }
    };
    ws.once("message", pump);
  });
  const port = (wss.address() as { port: number }).port;
  const client = reader([`ws://127.0.0.1:${port}/`, "raw", String(EVENTS)]);
  try {
    const { frames: got, ms } = JSON.parse(await client.next());
    return got / (ms / 1000);
  } finally {
    client.stop();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
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

// The latency readers run on a worker thread: their own event loop and core, as in a separate
// process, yet on the same clock (timeOrigin + now agrees across threads to ~0.1 ms), so each
// frame's emit time, carried in its progress message, gives its latency.
const LATENCY_READERS = `
const { parentPort, workerData } = require("node:worker_threads");
const { url, clients } = workerData;
const latencies = [];
const FRAME = /"sequence":(\\d+).*"message":"([0-9.]+)"/;
let dropped = 0, ready = 0, done = 0;
for (let i = 0; i < clients; i++) {
  const socket = new WebSocket(url);
  let last = 2;
  socket.onmessage = (message) => {
    const at = performance.timeOrigin + performance.now();
    const text = message.data;
    if (text.charCodeAt(2) === 116) { // {"type":"stream.…
      if (text.includes('"stream.ready"') && ++ready === clients) parentPort.postMessage({ ready: true });
      return;
    }
    const match = FRAME.exec(text);
    const sequence = Number(match ? match[1] : /"sequence":(\\d+)/.exec(text)[1]);
    dropped += sequence - last - 1;
    last = sequence;
    if (match) return void latencies.push(at - Number(match[2]));
    socket.close();
    if (++done === clients) {
      latencies.sort((a, b) => a - b);
      const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
      parentPort.postMessage({ p50: p(0.5), p99: p(0.99), dropped, frames: latencies.length });
    }
  };
}`;

/** Latency store → live channel → `clients` readers at 1,000 events/s for RATE_SECONDS; counts what was dropped. */
async function latencyAtRate(clients: number): Promise<{ p50: number; p99: number; dropped: number; events: number }> {
  const root = mkdtempSync(join(tmpdir(), "docket-bench-live-"));
  const limits: Limits = resolveLimits();
  const booted = await bootPlane({ cwd: root, storeKind: "memory", limits, log: () => {} });
  const live = new LiveChannel({ store: booted.store, limits });
  const config = { host: "127.0.0.1", port: 0, allowedHosts: [], token: null, origin: "" };
  const server = serveWithBun(createApp({ plane: booted.engine, live, config }), live, { host: "127.0.0.1", port: 0 });
  config.origin = server.url;
  const id = "x-20260908T010203Z-0000beef";
  booted.store.create({ id, capability: "executions.demonstrate", input: {}, actor: { kind: "cli", pid: process.pid }, repository: root, run_id: null, session_key: null, request_id: "bench", trace_id: "0af7651916cd43dd8448eb211c80319c", cancellable: false, effect: "read", input_hash: "bench" });
  booted.store.append(id, [{ type: "execution.started", data: {} }]);
  const readers = new Worker(LATENCY_READERS, { eval: true, workerData: { url: `${server.url.replace("http", "ws")}/events?execution=${id}&after=2`, clients } });
  const messages: any[] = [];
  let wake: (() => void) | null = null;
  readers.on("message", (m) => (messages.push(m), wake?.()));
  const next = async () => {
    while (messages.length === 0) await new Promise<void>((r) => (wake = r));
    return messages.shift();
  };
  try {
    await next(); // every reader has its stream.ready
    const started = performance.now();
    let emitted = 0;
    await new Promise<void>((done) => {
      const timer = setInterval(() => {
        const elapsed = performance.now() - started;
        for (const due = Math.min(RATE_SECONDS * 1000, Math.floor(elapsed)); emitted < due; ) {
          emitted++;
          booted.store.append(id, [{ type: "execution.progress", data: { current: emitted, total: RATE_SECONDS * 1000, message: String(performance.timeOrigin + performance.now()) } }]);
        }
        if (elapsed >= RATE_SECONDS * 1000) {
          clearInterval(timer);
          done();
        }
      }, 1);
    });
    booted.store.append(id, [{ type: "execution.completed", data: { state: "succeeded", output: {}, duration_ms: RATE_SECONDS * 1000 } }]);
    const result = await next();
    return { p50: result.p50, p99: result.p99, dropped: result.dropped, events: emitted };
  } finally {
    await readers.terminate();
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

/** The four live-channel figures, each beside its baseline or goal. */
export async function benchLiveChannel(): Promise<BenchResult> {
  const rows: BenchResult["rows"] = [];
  const root = mkdtempSync(join(tmpdir(), "docket-bench-serve-"));
  const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits({ overrides: THROUGHPUT_LIMITS }), capabilityDirs: [], runtime: "bun", log: () => {} });
  const docketRates: number[] = [];
  const rawRates: number[] = [];
  const wsRates: number[] = [];
  let lagged = 0;
  try {
    await docketThroughput(server.url); // warm-up: JIT, workers, sockets
    // Interleaved, so that a busy moment of the machine slows both alike; medians of three.
    for (let i = 0; i < 3; i++) {
      const run = await docketThroughput(server.url);
      docketRates.push(run.rate);
      lagged += run.lagged;
      rawRates.push(await rawBaseline());
      wsRates.push(await wsPeer());
    }
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const bun = { rate: median(docketRates), lagged };
  const raw = median(rawRates);
  rows.push({ figure: `events handler → store → 1 WebSocket client (${EVENTS.toLocaleString("en-US")}), default flags`, docket: Math.round(bun.rate), baseline: Math.round(raw), baseline_is: "raw Bun.serve, corked batches of 256", ratio: bun.rate / raw, goal: "≥ 0.5, none lagged", lagged: bun.lagged });
  const ws = median(wsRates);
  rows.push({ figure: "same, against the peer", docket: Math.round(bun.rate), baseline: Math.round(ws), baseline_is: "Node ws server, one send per frame", ratio: bun.rate / ws, goal: "reported", lagged: bun.lagged });

  const one = await latencyAtRate(1);
  rows.push({ figure: "latency store → 1 client at 1,000 events/s (ms)", docket: `p50 ${one.p50.toFixed(3)} / p99 ${one.p99.toFixed(3)}`, baseline: "", baseline_is: "", ratio: "", goal: "p99 ≤ 1", dropped: one.dropped });
  const hundred = await latencyAtRate(100);
  rows.push({ figure: "latency store → 100 clients at 1,000 events/s (ms)", docket: `p50 ${hundred.p50.toFixed(3)} / p99 ${hundred.p99.toFixed(3)}`, baseline: "", baseline_is: "", ratio: "", goal: "p99 ≤ 10, none dropped", dropped: hundred.dropped });

  const node = await nodeThroughput();
  rows.push({ figure: "events/s, Node adapter vs Bun adapter (same load)", docket: Math.round(node.rate), baseline: Math.round(bun.rate), baseline_is: "Bun adapter", ratio: node.rate / bun.rate, goal: "(reported)", lagged: node.lagged });
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
