// The user's path for executions (PERFORMANCE.md, issue 11): no-op executions started with
// `POST /api/v1/executions/start` and seen `execution.completed` on `/events`, 64 in flight, against
// a real `docket serve` with its default flags in a process of its own, once per store. Beside it,
// in the same run: the same engine in-process (bootPlane, the baseline), BullMQ on a private
// Redis (queue.add → completed), and the floor: a bare Bun.serve doing the same I/O with nothing of
// docket (bench/peers/http-floor.ts). Loopback only; every loop bounded in count and time.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootPlane } from "../runtime/boot.ts";
import { resolveLimits } from "../runtime/execution/limits.ts";
import type { EdgeInfo } from "../runtime/execution/plane.ts";
import { capabilityPost } from "../runtime/server/capability-post.ts";
import { largeAnswers } from "../runtime/server/large-answers.ts";
import { requestBodies } from "../runtime/server/request-bodies.ts";
import { LiveChannel } from "../runtime/server/live-channel.ts";
import type { LiveSocket } from "../runtime/server/live-socket.ts";
import { KeepAliveConnection } from "./_keep-alive.ts";
import { redisMissing, startRedis } from "./_redis.ts";
import type { BenchResult } from "./run.ts";

const EXECUTIONS = 5_000;
// Every side (the server, the in-process engine, BullMQ) runs this many of its own before it is
// measured: a server is a fresh process each round, and its JIT compiler takes its first ~20,000
// executions to settle (34–39 µs of CPU per execution over the first 10,000, 0–4 after 20,000),
// while the in-process engine shares the bench process, warm from earlier rounds. Measured cold,
// the comparison was a cold server against a warm engine; now both are what a running one is.
const WARMUP = 20_000;
const IN_FLIGHT = 64;
/** Rounds of every part, in turn; each row is the median round (DOCKET_BENCH_ROUNDS for a quick look). */
const ROUNDS = Number(process.env.DOCKET_BENCH_ROUNDS ?? 5);
/** Each measured loop gives up after this long, and says so in its row. */
const DEADLINE_MS = 60_000;
const FIXTURES = join(import.meta.dir, "fixtures");
const MAIN = join(import.meta.dir, "..", "runtime", "cli", "main.ts");
const FLOOR = join(import.meta.dir, "peers", "http-floor.ts");
const EDGE: EdgeInfo = { actor: { kind: "cli", pid: process.pid }, request_id: "bench", trace_id: "0af7651916cd43dd8448eb211c80319c" };

type Store = "memory" | "sqlite";

/**
 * The environment of the "allocator keeps freed pages" rows, for the server and the engine alike:
 * Bun's allocator (mimalloc) then never gives freed pages back to the OS. By default it does, and
 * the JavaScript heap's blocks freed after each collection are faulted in again by the next
 * allocations: on this VM, 1.0–1.5 page faults per HTTP execution (0.2 in-process), and with them
 * the madvise calls and TLB shootdowns that interrupt the main thread. Not a default of docket:
 * the price is that memory a burst took is never returned (docs/limits.md, "Allocator").
 */
const KEEP_PAGES = { MIMALLOC_PURGE_DELAY: "-1" };

/** What one measured loop gives: its rate and its start → completed latencies. */
interface Run {
  done: number;
  seconds: number;
  latencies: number[];
  timedOut: boolean;
}

/** Minor page faults a process (all its threads) has taken so far, from /proc (Linux); NaN elsewhere. */
function minorFaults(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[7]);
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds (user + system) a process of ours has used so far, from /proc (Linux); NaN elsewhere.
 * With `thread`, that thread's alone (the process id is its main thread's).
 */
function cpuSeconds(pid: number, thread?: number): number {
  try {
    // Fields 14 and 15 after the command name (which may hold spaces, hence the split at ")").
    const fields = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Seconds a process's main thread has spent runnable but not running (waiting for a CPU), from
 * /proc/<pid>/task/<pid>/schedstat (Linux); NaN elsewhere. On 2 cores the load generator, the
 * workers and the server take turns: this is what the server's main thread lost to them.
 */
function waitingSeconds(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e9;
  } catch {
    return NaN;
  }
}

const ownCpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/**
 * Runs `count` jobs with `inFlight` at a time (a sliding window, not waves), each `job` resolving
 * when its unit is completed; stops early at `deadlineMs`.
 */
async function window(count: number, inFlight: number, deadlineMs: number, job: (lane: number) => Promise<void>): Promise<Run> {
  const latencies: number[] = [];
  let next = 0;
  let timedOut = false;
  const started = performance.now();
  const deadline = started + deadlineMs;
  const lane = async (_: unknown, index: number) => {
    while (next < count) {
      if (performance.now() > deadline) return void (timedOut = true);
      next++;
      const began = performance.now();
      await job(index);
      latencies.push(performance.now() - began);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { done: latencies.length, seconds, latencies, timedOut };
}

/** A row's figures: rate, p50 and p99. */
function figures(run: Run) {
  return {
    per_second: Math.round(run.done / run.seconds),
    p50_ms: percentile(run.latencies, 50),
    p99_ms: percentile(run.latencies, 99),
    done: `${run.done}${run.timedOut ? ` (deadline ${DEADLINE_MS / 1000} s hit)` : ""}`,
  };
}

/**
 * `docket serve --port 0 --store <store>` from the CLI entry (or, for "floor", bench/peers/http-floor.ts;
 * or another script of Bun's) in a fresh checkout; resolves once it prints its URL. With
 * DOCKET_BENCH_CPU_PROF=<dir> it writes a CPU profile of its main thread there, sampled every
 * DOCKET_BENCH_CPU_PROF_INTERVAL µs (1000 by default; 100 sees a 50 µs request).
 */
export async function serveChild(store: Store | "floor" | { script: string }, env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "docket-bench-http-"));
  const profile = process.env.DOCKET_BENCH_CPU_PROF;
  const flags = profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`, `--cpu-prof-name=serve-${typeof store === "object" ? "script" : store}.cpuprofile`, `--cpu-prof-interval=${process.env.DOCKET_BENCH_CPU_PROF_INTERVAL ?? 1000}`] : [];
  const command = typeof store === "object" ? [store.script] : store === "floor" ? [FLOOR] : [MAIN, "serve", "--port", "0", "--store", store, "--capabilities", FIXTURES];
  const child = spawn(process.execPath, [...flags, ...command], { cwd: dir, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  let said = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`docket serve did not start within 30 s: ${said}`)), 30_000);
    child.stderr!.on("data", (chunk) => {
      said += chunk;
      const serving = / at (http:\/\/127\.0\.0\.1:\d+)/.exec(said);
      if (serving) (clearTimeout(timer), resolve(serving[1]!));
    });
    child.once("exit", (code) => (clearTimeout(timer), reject(new Error(`docket serve exited ${code}: ${said}`))));
  }).catch(async (error) => {
    await stop();
    throw error;
  });
  return { url, child, stop };
}

/**
 * The load generator (in the bench process; the server is a child): one `/events` socket for every
 * execution, and IN_FLIGHT keep-alive connections, each POSTing a start and waiting for that id's
 * `execution.completed`.
 */
async function driveHttp(url: string, count: number, warm: () => void = () => {}): Promise<Run> {
  const { hostname, port } = new URL(url);
  const connections = await Promise.all(Array.from({ length: IN_FLIGHT }, () => KeepAliveConnection.open(hostname, Number(port))));
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/events`);
  const waiting = new Map<string, () => void>();
  // A completion may arrive before its start's answer does: kept until the answer names it.
  const early = new Set<string>();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("/events sent no stream.ready within 10 s")), 10_000);
    socket.onerror = () => (clearTimeout(timer), reject(new Error("/events failed to open")));
    socket.onmessage = (message) => {
      const text = message.data as string;
      if (text.includes('"stream.ready"')) (clearTimeout(timer), resolve());
      if (!text.includes('"execution.completed"')) return;
      const id = /"execution_id":"([^"]+)"/.exec(text)![1]!;
      const wake = waiting.get(id);
      if (wake) (waiting.delete(id), wake());
      else early.add(id);
    };
  });
  const body = JSON.stringify({ capability: "bench.noop", input: {} });
  const start = async (lane: number) => {
    const answer = await connections[lane]!.post("/api/v1/executions/start", body);
    if (answer.status !== 200) throw new Error(`executions.start answered ${answer.status}: ${answer.body}`);
    // The id is the snapshot's first member (a regex costs the client less than parsing it all).
    const id = /^\{"execution":\{"id":"([^"]+)"/.exec(answer.body)?.[1];
    if (!id) throw new Error(`executions.start answered without an execution id: ${answer.body.slice(0, 200)}`);
    if (early.delete(id)) return;
    await new Promise<void>((resolve) => waiting.set(id, resolve));
  };
  try {
    await window(WARMUP, IN_FLIGHT, DEADLINE_MS, start);
    warm();
    return await window(count, IN_FLIGHT, DEADLINE_MS, start);
  } finally {
    socket.close();
    for (const connection of connections) connection.close();
  }
}

/**
 * How much of the HTTP path the in-process engine runs: `engine` alone (the baseline), `live` with
 * the live channel writing every event to one `/events` reader (a socket that takes every frame
 * at once: no native send), `route` starting each execution through the `POST` route of the
 * server (capability-post.ts) with `Request`s built here (no network). The breakdown rows.
 */
type InProcessParts = "engine" | "live" | "route";

/** A live-channel socket that takes every frame at once (the breakdown's `/events` reader). */
const takingSocket: LiveSocket = { send: () => "ok", bufferedAmount: () => 0, ping() {}, cork: (fn) => fn(), close() {} };

/**
 * The same engine in this process, followed the way the HTTP path is: one subscriber for every
 * execution (what `/events` is), each start acknowledged (`durable()`, as the HTTP answer waits)
 * and then waiting for its `execution.completed`. Same window. `parts`: see InProcessParts.
 */
async function inProcess(store: Store, warm: () => void = () => {}, parts: InProcessParts = "engine"): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "docket-bench-engine-"));
  const limits = resolveLimits();
  const plane = await bootPlane({ cwd: dir, storeKind: store, limits, files: [join(FIXTURES, "bench.noop.ts")], log: () => {} });
  const { engine } = plane;
  const live = parts === "engine" ? null : new LiveChannel({ store: plane.store, limits });
  live?.open(takingSocket, { executions: "all" });
  const route = parts === "route" ? capabilityPost({ plane: engine, config: { host: "127.0.0.1", port: 4700, allowedHosts: [], token: null, origin: "http://127.0.0.1:4700" }, answers: largeAnswers(limits.answer_bytes_in_flight), bodies: requestBodies(limits.request_bytes_in_flight), log: (line) => process.stderr.write(`${line}\n`) }) : null;
  const body = JSON.stringify({ capability: "bench.noop", input: {} });
  const headers = { host: "127.0.0.1:4700", "content-type": "application/json", "content-length": String(body.length) };
  const noApp = { app: () => new Response("the bench's route handed a request on", { status: 500 }) };
  /** Starts one execution through the route; its id, from the answer as the HTTP client reads it. */
  const startByRoute = async (): Promise<string> => {
    const answer = await route!(new Request("http://127.0.0.1:4700/api/v1/executions/start", { method: "POST", headers, body }), noApp);
    const text = await answer.text();
    const id = /^\{"execution":\{"id":"([^"]+)"/.exec(text)?.[1];
    if (answer.status !== 200 || !id) throw new Error(`the route answered ${answer.status}: ${text.slice(0, 200)}`);
    return id;
  };
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  const subscription = plane.store.subscribe({ executions: "all" }, (event) => {
    if (event.type !== "execution.completed") return;
    const wake = waiting.get(event.execution_id);
    if (wake) (waiting.delete(event.execution_id), wake());
    else early.add(event.execution_id);
  });
  const start = async () => {
    let id: string;
    if (route) id = await startByRoute();
    else {
      id = engine.start({ capability: "bench.noop", input: {} }, EDGE).execution.id;
      await plane.store.durable();
    }
    if (early.delete(id)) return;
    await new Promise<void>((resolve) => waiting.set(id, resolve));
  };
  try {
    await window(WARMUP, IN_FLIGHT, DEADLINE_MS, start);
    warm();
    return await window(EXECUTIONS, IN_FLIGHT, DEADLINE_MS, start);
  } finally {
    await live?.closeAll("the bench is over");
    subscription.unsubscribe();
    await plane.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** BullMQ: `queue.add` → the `completed` of QueueEvents, the worker in a process of its own. */
async function bullmq(): Promise<Run> {
  const { Queue, QueueEvents } = await import("bullmq");
  const redis = await startRedis();
  const connection = { host: redis.host, port: redis.port };
  // BullMQ's own runtime, as the other peers run (bench/peers/).
  const worker = spawn("node", [join(import.meta.dir, "peers", "bullmq-worker.mjs"), String(redis.port)], { stdio: ["ignore", "pipe", "inherit"] });
  const queue = new Queue("bench", { connection });
  const events = new QueueEvents("bench", { connection });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the BullMQ worker was not ready within 10 s")), 10_000);
      worker.stdout!.on("data", (chunk) => String(chunk).includes("ready") && (clearTimeout(timer), resolve()));
    });
    await events.waitUntilReady();
    const waiting = new Map<string, () => void>();
    const early = new Set<string>();
    events.on("completed", ({ jobId }) => {
      const wake = waiting.get(jobId);
      if (wake) (waiting.delete(jobId), wake());
      else early.add(jobId);
    });
    const add = async () => {
      const job = await queue.add("noop", {});
      if (early.delete(job.id!)) return;
      await new Promise<void>((resolve) => waiting.set(job.id!, resolve));
    };
    await window(WARMUP, IN_FLIGHT, DEADLINE_MS, add);
    return await window(EXECUTIONS, IN_FLIGHT, DEADLINE_MS, add);
  } finally {
    worker.kill("SIGKILL");
    await events.close();
    await queue.close();
    await redis.stop();
  }
}

type Figures = ReturnType<typeof figures> & { cpu_per_execution?: string };

/**
 * The same engine in a process of its own, fresh as each server is (or more of the HTTP path:
 * `parts`), with its CPU per execution. Measured in the bench process, it ran after the benches
 * before it had grown and aged that process's heap, and ran 13–27k/s on the same code from one
 * run to the next: a baseline that moved with what ran before it.
 */
async function engineFigures(store: Store, parts: InProcessParts = "engine", env: Record<string, string> = {}): Promise<Figures> {
  const child = spawn(process.execPath, [import.meta.path, "--in-process", store, parts], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  let said = "";
  child.stdout!.on("data", (chunk) => (said += chunk));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = said.trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !line.startsWith("{")) throw new Error(`the in-process ${parts} (${store}) exited ${code}: ${said.slice(-300)}`);
  return JSON.parse(line) as Figures;
}

/** The child side of engineFigures: measures in this process and prints the figures as one JSON line. */
async function engineFiguresHere(store: Store, parts: InProcessParts): Promise<Figures> {
  let [cpu0, main0, wait0, faults0] = [0, 0, 0, 0];
  const run = figures(await inProcess(store, () => ([cpu0, main0, wait0, faults0] = [ownCpuSeconds(), cpuSeconds(process.pid, process.pid), waitingSeconds(process.pid), minorFaults(process.pid)]), parts));
  const per = (seconds: number) => Math.round((seconds * 1e6) / EXECUTIONS);
  // Read after the plane closed: its workers' faults until then are in the process's count.
  const faults = ((minorFaults(process.pid) - faults0) / EXECUTIONS).toFixed(2);
  return { ...run, cpu_per_execution: `${per(ownCpuSeconds() - cpu0)} µs (main thread ${per(cpuSeconds(process.pid, process.pid) - main0)}, waiting for a CPU ${per(waitingSeconds(process.pid) - wait0)}); ${faults} page faults` };
}

/** A `docket serve` of `store` (or the floor) driven over HTTP, with the CPU each side spent per execution. */
async function httpFigures(store: Store | "floor", env: Record<string, string> = {}): Promise<Figures> {
  const server = await serveChild(store, env);
  try {
    const pid = server.child.pid!;
    let [server0, main0, wait0, load0, faults0] = [0, 0, 0, 0, 0];
    const run = figures(await driveHttp(server.url, EXECUTIONS, () => ([server0, main0, wait0, load0, faults0] = [cpuSeconds(pid), cpuSeconds(pid, pid), waitingSeconds(pid), ownCpuSeconds(), minorFaults(pid)])));
    // Per measured execution: what each side costs, less sensitive to a busy machine than rates.
    // The server's main thread apart: it serves HTTP, the engine and /events alone, so it bounds the rate.
    const per = (seconds: number) => Math.round((seconds * 1e6) / EXECUTIONS);
    const faults = ((minorFaults(pid) - faults0) / EXECUTIONS).toFixed(2);
    return { ...run, cpu_per_execution: `server ${per(cpuSeconds(pid) - server0)} µs (main thread ${per(cpuSeconds(pid, pid) - main0)}, waiting for a CPU ${per(waitingSeconds(pid) - wait0)}; ${faults} page faults), load generator ${per(ownCpuSeconds() - load0)} µs` };
  } finally {
    await server.stop();
  }
}

/** The round of median rate among `runs` (its p50 and p99 with it: they belong together). */
function median(runs: Figures[]): Figures {
  return [...runs].sort((a, b) => a.per_second - b.per_second)[runs.length >> 1]!;
}

/**
 * Every row of the HTTP dispatch comparison: ROUNDS rounds, each running every part once in turn
 * (so a busy moment of the shared machine falls on all of them), each row the median round.
 * `only` (run directly: `bun bench/http-dispatch.ts sqlite`) keeps the rows of those stores and,
 * with "bullmq", the peer.
 */
export async function benchHttpDispatch(only: string[] = []): Promise<BenchResult> {
  const wanted = (part: string) => only.length === 0 || only.includes(part);
  const nodeMissing = () => (spawnSync("node", ["--version"]).status === 0 ? null : "node is not on PATH (the BullMQ worker runs on Node); BullMQ rows skipped");
  const missing = wanted("bullmq") ? (redisMissing() ?? nodeMissing()) : "not asked for";
  const stores = (["memory", "sqlite"] as const).filter(wanted);
  // Where the HTTP path's time goes, in-process (memory store): with the live channel, then the route too.
  const breakdown = stores.includes("memory") && wanted("breakdown");
  // What the platform does with the same I/O and nothing of docket: the HTTP path's floor here.
  const floor = wanted("floor");
  // What Bun's allocator costs the path when it gives freed pages back to the OS (its default):
  // both sides again, like for like, with it keeping them (KEEP_PAGES). Not a goal row.
  const allocator = stores.includes("memory") && wanted("allocator");
  const runs = new Map<string, Figures[]>();
  const record = (key: string, run: Figures) => {
    // Every round on stderr, for whoever wants the spread behind the medians.
    process.stderr.write(`http-dispatch round: ${key} ${run.per_second}/s p50 ${run.p50_ms.toFixed(1)} ms p99 ${run.p99_ms.toFixed(1)} ms ${run.cpu_per_execution ?? ""}\n`);
    runs.set(key, [...(runs.get(key) ?? []), run]);
  };
  for (let round = 0; round < ROUNDS; round++) {
    if (!missing) record("bullmq", figures(await bullmq()));
    for (const store of stores) {
      record(`engine ${store}`, await engineFigures(store));
      record(`http ${store}`, await httpFigures(store));
    }
    if (floor) record("floor", await httpFigures("floor"));
    if (allocator) {
      record("engine memory, pages kept", await engineFigures("memory", "engine", KEEP_PAGES));
      record("http memory, pages kept", await httpFigures("memory", KEEP_PAGES));
    }
    if (breakdown) {
      record("engine memory + live", await engineFigures("memory", "live"));
      record("engine memory + live + route", await engineFigures("memory", "route"));
    }
  }
  const rounds = `median of ${ROUNDS} rounds, each side measured after ${WARMUP.toLocaleString("en-US")} of its own`;
  const rows: BenchResult["rows"] = [];
  const peer = missing ? null : median(runs.get("bullmq")!);
  if (peer) rows.push({ path: "BullMQ on Redis: queue.add → QueueEvents completed", flags: `bullmq@5, worker concurrency 2 in its own process on Node (bench/peers/bullmq-worker.mjs), producer + QueueEvents in the bench process (Bun); redis-server 127.0.0.1, no persistence; default job options; ${rounds}`, ...peer, vs_engine: "", goal: "" });
  else rows.push({ path: "BullMQ on Redis", flags: missing, per_second: "", p50_ms: "", p99_ms: "", done: "skipped", vs_engine: "", goal: "" });
  const bare = floor ? median(runs.get("floor")!) : null;
  const engineMemory = stores.includes("memory") ? median(runs.get("engine memory")!) : null;
  if (bare) {
    rows.push({
      path: "floor: bare Bun.serve doing the same I/O, nothing of docket (POST → JSON body parsed, a 0.9 KB answer; a worker round trip, one task per worker; 3 frames of docket's size to /events, corked per turn)",
      flags: `bench/peers/http-floor.ts, its own process, 2 workers; the same load generator; ${rounds}`,
      ...bare,
      vs_engine: engineMemory ? bare.per_second / engineMemory.per_second : "",
      goal: "",
    });
  }
  for (const store of stores) {
    const engine = median(runs.get(`engine ${store}`)!);
    const http = median(runs.get(`http ${store}`)!);
    rows.push({ path: `in-process engine, ${store} store: engine.start → execution.completed (one subscriber for all)`, flags: `bootPlane in a process of its own (fresh, as the server is), default limits, ${store} store (${store === "sqlite" ? "temp .docket/state.db" : "in memory"}); ${rounds}`, ...engine, vs_engine: 1, goal: "" });
    const beatsPeer = peer !== null && http.per_second >= peer.per_second && http.p99_ms < peer.p99_ms;
    // Each round's HTTP rate over the engine's of the same round: on a shared machine the spread
    // of this pairing says how far one run's verdict can be trusted.
    const paired = runs.get(`http ${store}`)!.map((run, i) => run.per_second / runs.get(`engine ${store}`)![i]!.per_second).sort((a, b) => a - b);
    rows.push({
      path: `HTTP: POST executions.start → execution.completed on /events, ${store} store`,
      flags: `docket serve --port 0 --store ${store} (defaults otherwise), its own process; load generator in the bench process: ${IN_FLIGHT} keep-alive HTTP/1.1 connections (Bun TCP, one request at a time each) + one WebSocket; ${rounds}`,
      ...http,
      vs_engine: http.per_second / engine.per_second,
      vs_floor: bare ? http.per_second / bare.per_second : "",
      vs_engine_per_round: `${paired.map((r) => r.toFixed(2)).join(", ")} (median ${paired[paired.length >> 1]!.toFixed(2)})`,
      goal: `≥ 0.5 × engine: ${http.per_second >= engine.per_second / 2 ? "met" : "not met"}${peer ? `; ≥ BullMQ ${peer.per_second}/s with p99 < ${peer.p99_ms.toFixed(1)} ms: ${beatsPeer ? "met" : "not met"}` : ""}`,
    });
  }
  if (allocator) {
    const keptEnv = Object.entries(KEEP_PAGES).map(([name, value]) => `${name}=${value}`).join(" ");
    const engine = median(runs.get("engine memory, pages kept")!);
    const http = median(runs.get("http memory, pages kept")!);
    const paired = runs.get("http memory, pages kept")!.map((run, i) => run.per_second / runs.get("engine memory, pages kept")![i]!.per_second).sort((a, b) => a - b);
    rows.push({ path: "in-process engine, memory store, the allocator keeping freed pages (not a default)", flags: `${keptEnv}; otherwise as the engine row above; ${rounds}`, ...engine, vs_engine: 1, goal: "" });
    rows.push({
      path: "HTTP, memory store, the allocator keeping freed pages (not a default: memory a burst took is never returned)",
      flags: `${keptEnv} docket serve --port 0 --store memory, and the engine beside it run the same way; otherwise as the HTTP row above; ${rounds}`,
      ...http,
      vs_engine: http.per_second / engine.per_second,
      vs_engine_per_round: `${paired.map((r) => r.toFixed(2)).join(", ")} (median ${paired[paired.length >> 1]!.toFixed(2)})`,
      goal: "",
    });
  }
  if (breakdown) {
    const engine = median(runs.get("engine memory")!);
    const parts = [
      ["engine memory + live", "in-process, memory store: + the live channel writing every event to one /events reader (a socket that takes every frame at once: no native send)"],
      ["engine memory + live + route", "in-process, memory store: + each start through the POST executions.start route (capability-post.ts; Requests built in-process, no network)"],
    ] as const;
    for (const [key, path] of parts) {
      const part = median(runs.get(key)!);
      rows.push({ path, flags: `breakdown of the HTTP path (not a goal): bootPlane in a process of its own, default limits; ${rounds}`, ...part, vs_engine: part.per_second / engine.per_second, goal: "" });
    }
  }
  return { name: "http-dispatch", rows: rows.map((r) => ({ ...r, in_flight: IN_FLIGHT })) };
}

if (import.meta.main && process.argv[2] === "--in-process") {
  const [store, parts] = [process.argv[3] as Store, process.argv[4] as InProcessParts];
  console.log(JSON.stringify(await engineFiguresHere(store, parts)));
  process.exit(0);
} else if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchHttpDispatch(process.argv.slice(2))).rows));
  process.exit(0);
}
