// What clients that stop reading `/events` cost the server (docs/protocol.md, "What a stalled
// client costs"): STALLED raw clients following everything each stall at their own moment of one
// flood of FLOOD events, and never read again. A fresh server per row, default flags but the one
// named, memory store, loopback only, bounded in count and time. The baseline is the same server
// with `lagging_kept_bytes` at its maximum (4 GiB): each stalled client then keeps its own stretch
// of up to subscriber_queue_bytes, as before the bound existed.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { resolveLimits } from "../runtime/execution/limits.ts";
import { startServer } from "../runtime/server/serve.ts";
import type { BenchResult } from "./run.ts";

const FLOOD = Number(process.env.DOCKET_BENCH_STALLED_EVENTS ?? 2_000_000);
const STALLED = 8;
const DEADLINE_MS = 120_000;
const MB = 1e6;

/** Child side: a server of its own (so its memory is its own); answers "memory" with what it holds after a full collection, and its peak. */
async function serveHere(overrides: Record<string, number>): Promise<void> {
  setTimeout(() => process.exit(3), DEADLINE_MS * 2).unref();
  const root = mkdtempSync(join(tmpdir(), "docket-bench-stalled-"));
  mkdirSync(join(root, ".git"));
  const server = await startServer({ cwd: root, port: 0, storeKind: "memory", limits: resolveLimits({ overrides }), capabilityDirs: [], token: null, runtime: "bun", log: () => undefined });
  let peak = 0;
  setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 50).unref();
  console.log(JSON.stringify({ url: server.url }));
  for await (const line of createInterface({ input: process.stdin })) {
    if (line !== "memory") continue;
    Bun.gc(true);
    const { rss, heapUsed } = process.memoryUsage();
    console.log(JSON.stringify({ rss, heap: heapUsed, peak: Math.max(peak, rss) }));
  }
  await server.stop();
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
}

/** A server child and the lines it prints. */
function startServerChild(overrides: Record<string, number>) {
  const child = spawn(process.execPath, [import.meta.path, "--serve", JSON.stringify(overrides)], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<any> => JSON.parse(String((await lines.next()).value));
  return {
    next,
    memory: async (): Promise<{ rss: number; heap: number; peak: number }> => (child.stdin!.write("memory\n"), await next()),
    stop: () => {
      child.stdin!.end();
      setTimeout(() => child.exitCode === null && child.kill("SIGKILL"), 5_000).unref();
    },
  };
}

/** A client that upgrades to `/events` and then never reads. */
function stall(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET /events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${btoa("docket-bench-key")}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
      socket.once("data", (chunk) => {
        if (!String(chunk).startsWith("HTTP/1.1 101")) return reject(new Error(`the upgrade was refused: ${String(chunk).slice(0, 80)}`));
        socket.pause();
        resolve(socket);
      });
    });
    socket.on("error", () => undefined);
  });
}

async function demonstrate(url: string, events: number): Promise<string> {
  const response = await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events } }) });
  if (response.status !== 200) throw new Error(`executions.start answered ${response.status}`);
  return ((await response.json()) as { execution: { id: string } }).execution.id;
}

/** Resolves once execution `id` stored `sequence` events, or finished. */
async function reached(url: string, id: string, sequence: number): Promise<void> {
  const until = Date.now() + DEADLINE_MS;
  while (Date.now() < until) {
    const snapshot = (await (await fetch(`${url}/api/v1/executions/get?id=${id}`)).json()) as { state: string; last_sequence: number };
    if (snapshot.last_sequence >= sequence || snapshot.state === "succeeded" || snapshot.state === "failed") return;
    await Bun.sleep(5);
  }
  throw new Error(`execution ${id} did not reach ${sequence} within ${DEADLINE_MS} ms`);
}

/** One fresh server: a warm-up flood, then the measured one with `stalled` clients stalling one after another through it. */
async function measure(overrides: Record<string, number>, stalled: number) {
  const server = startServerChild(overrides);
  const sockets: Socket[] = [];
  try {
    const { url } = await server.next();
    await reached(url, await demonstrate(url, FLOOD), Number.POSITIVE_INFINITY);
    const before = await server.memory();
    const flood = await demonstrate(url, FLOOD);
    for (let i = 0; i < stalled; i++) {
      await reached(url, flood, Math.round(((i + 1) * FLOOD) / (stalled + 2)));
      sockets.push(await stall(url));
    }
    await reached(url, flood, Number.POSITIVE_INFINITY);
    const after = await server.memory();
    return { heap_held_mb: (after.heap - before.heap) / MB, rss_after_mb: after.rss / MB, rss_peak_mb: after.peak / MB };
  } finally {
    for (const socket of sockets) socket.destroy();
    server.stop();
  }
}

export async function benchStalled(): Promise<BenchResult> {
  const flags = `memory store, ${FLOOD.toLocaleString("en-US")}-event flood (executions.demonstrate), ${STALLED} raw clients of /events stalling one after another through it; heap held = JS heap after a full collection, after the flood minus before it`;
  const none = await measure({}, 0);
  const bounded = await measure({}, STALLED);
  const unbounded = await measure({ lagging_kept_bytes: 4096 * 1024 * 1024 }, STALLED);
  const rows = [
    { path: "no stalled client (the flood alone)", flags: `default flags; ${flags}`, stalled: 0, ...none, vs_unbounded: none.heap_held_mb / unbounded.heap_held_mb },
    { path: "stalled clients, default flags (subscriber_queue_bytes 64 MiB, lagging_kept_bytes 128 MiB)", flags: `default flags; ${flags}`, stalled: STALLED, ...bounded, vs_unbounded: bounded.heap_held_mb / unbounded.heap_held_mb },
    { path: "stalled clients, kept stretches unbounded (each its own 64 MiB: the code before lagging_kept_bytes)", flags: `--lagging-kept-bytes 4294967296; ${flags}`, stalled: STALLED, ...unbounded, vs_unbounded: 1 },
  ];
  return { name: "stalled", rows };
}

if (import.meta.main && process.argv[2] === "--serve") {
  await serveHere(JSON.parse(process.argv[3] ?? "{}"));
} else if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchStalled()).rows));
  process.exit(0);
}
