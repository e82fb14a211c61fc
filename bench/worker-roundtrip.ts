// The worker boundary: docket's pool against bare node:worker_threads, side by side in one run.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { createWorkerPool } from "../runtime/worker/pool.ts";
import type { WorkerPool, WorkerTask } from "../runtime/worker/task.ts";
import { PISCINA_CONFIG, startPiscina } from "./peers/piscina.ts";

/** One measured figure against its baseline from the same run (a type, so it is a plain record for bench/run.ts). */
export type BenchRow = {
  metric: string;
  unit: string;
  docket: number;
  baseline: number;
  baseline_name: string;
  /** For rates docket / baseline, for times baseline / docket: above 1 docket is faster. */
  ratio: number;
  /** docket's settings for this row. */
  flags: string;
};

/** Options of `benchWorkerRoundtrip`; the defaults are the figures bench/RESULTS.md quotes. */
export interface WorkerBenchOptions {
  calls?: number;
  inFlight?: number;
  events?: number;
  workers?: number;
  /** Each figure is the median of this many runs. */
  runs?: number;
}

const NOOP_CAPABILITY = `
import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "bench.noop", title: "No-op", description: "Returns at once.", effect: "read",
  input: v.unknown(), output: v.unknown(),
  handler: (input) => input,
});
`;

const EVENTS_CAPABILITY = `
import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "bench.events", title: "Events", description: "Emits progress events.", effect: "read",
  input: v.object({ count: v.number() }), output: v.number(),
  handler(input, ctx) {
    for (let i = 0; i < input.count; i++) ctx.progress.progress(i, input.count, "item");
    return input.count;
  },
});
`;

/** Events per message of the hand-batched bare baseline: the same size docket's worker batches at. */
const BARE_BATCH = 256;

/** Calls per run of the one-at-a-time round-trip times (pool and piscina alike). */
const ONE_AT_A_TIME = 1_000;

// The bare baselines: an echo; one posted object per event (the naive design); and hand-made
// batches of JSON (the best a bare worker can do, what docket's batching should come close to).
const BARE_WORKER = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", (m) => {
  if (m.type === "echo") return parentPort.postMessage(m);
  let batch = [];
  for (let i = 0; i < m.count; i++) {
    const event = { type: "execution.progress", data: { current: i, total: m.count, message: "item" } };
    if (!m.batched) parentPort.postMessage(event);
    else if (batch.push(event) === ${BARE_BATCH}) { parentPort.postMessage(JSON.stringify(batch)); batch = []; }
  }
  if (batch.length) parentPort.postMessage(JSON.stringify(batch));
  parentPort.postMessage({ type: "done" });
});
`;

/** No-op round trips and the event path through docket's pool vs bare workers. */
export async function benchWorkerRoundtrip(options: WorkerBenchOptions = {}): Promise<{ name: string; rows: BenchRow[] }> {
  const calls = options.calls ?? 10_000;
  const inFlight = options.inFlight ?? 64;
  const events = options.events ?? 200_000;
  const workers = options.workers ?? 2;
  const runs = options.runs ?? 5;

  const dir = await mkdtemp(join(tmpdir(), "docket-bench-worker-"));
  const pool = createWorkerPool({ executionWorkers: workers, hostFacts: () => ({}) as never });
  const bare = Array.from({ length: workers }, () => new Worker(BARE_WORKER, { eval: true }));
  const piscina = await startPiscina(workers);
  try {
    await writeFile(join(dir, "bench.noop.ts"), NOOP_CAPABILITY);
    await writeFile(join(dir, "bench.events.ts"), EVENTS_CAPABILITY);
    await pool.warm();
    const noop = taskFor(join(dir, "bench.noop.ts"), "bench.noop", { n: 1 });
    const emitter = taskFor(join(dir, "bench.events.ts"), "bench.events", { count: events });

    // Warm-up: JIT, module loads, the first batches.
    await poolCalls(pool, noop, 2_000, inFlight);
    await bareCalls(bare, 2_000, inFlight);
    await poolEvents(pool, taskFor(emitter.source.file, "bench.events", { count: 20_000 }));
    await bareEvents(bare[0]!, 20_000, false);
    await bareEvents(bare[0]!, 20_000, true);

    // Interleaved (A B C, A B C, …) so that load from elsewhere on the machine hits every
    // figure alike; each figure is then the median of its runs.
    const samples: number[][] = [[], [], [], [], [], [], []];
    const poolTimes: number[] = [];
    const piscinaTimes: number[] = [];
    for (let i = 0; i < runs; i++) {
      samples[0]!.push(await poolCalls(pool, noop, calls, inFlight));
      samples[1]!.push(await bareCalls(bare, calls, inFlight));
      samples[2]!.push(await bareCalls(bare, calls, workers));
      samples[6]!.push(await piscina.rate(calls, inFlight));
      poolTimes.push(...(await poolLatencies(pool, noop, ONE_AT_A_TIME)));
      piscinaTimes.push(...(await piscina.latencies(ONE_AT_A_TIME)));
      samples[3]!.push(await poolEvents(pool, emitter));
      samples[4]!.push(await bareEvents(bare[0]!, events, false));
      samples[5]!.push(await bareEvents(bare[0]!, events, true));
    }
    const [poolRate, pipelined, lockstep, poolEventRate, bareEventRate, bareBatchedRate, piscinaRate] = samples.map(median) as [number, number, number, number, number, number, number];
    poolTimes.sort((a, b) => a - b);
    piscinaTimes.sort((a, b) => a - b);

    const flags = `createWorkerPool, ${workers} execution workers (docket's default max_concurrent)`;
    const row = (metric: string, unit: string, docket: number, baseline: number, baseline_name: string): BenchRow => ({
      metric,
      unit,
      docket: unit === "ms" ? Math.round(docket * 1000) / 1000 : Math.round(docket),
      baseline: unit === "ms" ? Math.round(baseline * 1000) / 1000 : Math.round(baseline),
      baseline_name,
      ratio: Math.round((unit === "ms" ? baseline / docket : docket / baseline) * 100) / 100,
      flags,
    });
    const oneAtATime = `no-op task round trip, one at a time (${runs} × ${ONE_AT_A_TIME.toLocaleString("en-US")})`;
    return {
      name: "worker-roundtrip",
      rows: [
        row(`no-op task round trips (${workers} workers, ${inFlight} in flight)`, "calls/s", poolRate, pipelined, `bare echo, ${inFlight} in flight (pipelined)`),
        row(`no-op task round trips (${workers} workers, ${inFlight} in flight)`, "calls/s", poolRate, lockstep, "bare echo, one in flight per worker (as a pool runs)"),
        row(`no-op task round trips (${workers} workers, ${inFlight} in flight)`, "calls/s", poolRate, piscinaRate, `peer: ${PISCINA_CONFIG}`),
        row(`${oneAtATime}, p50`, "ms", percentile(poolTimes, 50), percentile(piscinaTimes, 50), `peer: ${PISCINA_CONFIG}`),
        row(`${oneAtATime}, p99`, "ms", percentile(poolTimes, 99), percentile(piscinaTimes, 99), `peer: ${PISCINA_CONFIG}`),
        row(`progress events of one handler (${events})`, "events/s", poolEventRate, bareEventRate, "bare worker, one postMessage per event"),
        row(`progress events of one handler (${events})`, "events/s", poolEventRate, bareBatchedRate, `bare worker, one JSON string per ${BARE_BATCH} events`),
      ],
    };
  } finally {
    await pool.close();
    await piscina.close();
    await Promise.all(bare.map((w) => w.terminate()));
    await rm(dir, { recursive: true, force: true });
  }
}

function taskFor(file: string, capability: string, input: unknown): WorkerTask {
  return {
    capability,
    source: { kind: "file", file },
    input,
    execution: null,
    root: tmpdir(),
    artifacts_dir: null,
    artifact_limits: { files: 0, bytes: 0, total_bytes: 0, disk_free_floor: 0 },
  };
}

/** Calls per second through the pool, `inFlight` outstanding at any time. */
async function poolCalls(pool: WorkerPool, task: WorkerTask, calls: number, inFlight: number): Promise<number> {
  let started = 0;
  const began = performance.now();
  const lane = async () => {
    while (started < calls) {
      started++;
      const outcome = await pool.run(task, { lane: "execution" }).outcome;
      if (!outcome.ok) throw new Error(`bench task failed: ${JSON.stringify(outcome.error)}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return calls / ((performance.now() - began) / 1000);
}

/** Round-trip times in ms through the pool, one call at a time. */
async function poolLatencies(pool: WorkerPool, task: WorkerTask, calls: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const began = performance.now();
    const outcome = await pool.run(task, { lane: "execution" }).outcome;
    if (!outcome.ok) throw new Error(`bench task failed: ${JSON.stringify(outcome.error)}`);
    times.push(performance.now() - began);
  }
  return times;
}

/** Calls per second of a bare echo, round-robin over the workers, `inFlight` outstanding. */
async function bareCalls(workers: Worker[], calls: number, inFlight: number): Promise<number> {
  const pending = workers.map(() => [] as Array<() => void>);
  const listeners = workers.map((worker, i) => {
    const listener = () => pending[i]!.shift()!();
    worker.on("message", listener);
    return listener;
  });
  let started = 0;
  let next = 0;
  const began = performance.now();
  const lane = async () => {
    while (started < calls) {
      started++;
      const i = next++ % workers.length;
      await new Promise<void>((resolve) => {
        pending[i]!.push(resolve);
        workers[i]!.postMessage({ type: "echo", n: 1 });
      });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const rate = calls / ((performance.now() - began) / 1000);
  workers.forEach((worker, i) => worker.off("message", listeners[i]!));
  return rate;
}

/** Events per second from one handler, counted as they reach onEvents, until the outcome. */
async function poolEvents(pool: WorkerPool, task: WorkerTask): Promise<number> {
  let received = 0;
  const began = performance.now();
  const outcome = await pool.run(task, { lane: "execution", onEvents: (drafts) => (received += drafts.length) }).outcome;
  const seconds = (performance.now() - began) / 1000;
  if (!outcome.ok || received !== (task.input as { count: number }).count) throw new Error(`bench events: got ${received}, outcome ${JSON.stringify(outcome)}`);
  return received / seconds;
}

/** Events per second of a bare worker: one object per event, or JSON batches parsed on arrival. */
async function bareEvents(worker: Worker, count: number, batched: boolean): Promise<number> {
  let received = 0;
  const began = performance.now();
  await new Promise<void>((resolve) => {
    const listener = (message: string | { type: string }) => {
      if (typeof message === "string") received += (JSON.parse(message) as unknown[]).length;
      else if (message.type !== "done") received++;
      else {
        worker.off("message", listener);
        resolve();
      }
    };
    worker.on("message", listener);
    worker.postMessage({ type: "events", count, batched });
  });
  if (received !== count) throw new Error(`bare events: got ${received} of ${count}`);
  return received / ((performance.now() - began) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

if (import.meta.main) {
  const { name, rows } = await benchWorkerRoundtrip();
  console.log(name);
  console.table(rows.map((r) => ({ metric: r.metric, docket: `${r.docket.toLocaleString("en")} ${r.unit}`, baseline: `${r.baseline.toLocaleString("en")} ${r.unit}`, "against": r.baseline_name, ratio: r.ratio, flags: r.flags })));
}
