// Engine benchmarks (issue "executions"): the event pipeline, per-execution overhead, memory.
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import { bootPlane } from "../runtime/boot.ts";
import { resolveLimits } from "../runtime/execution/limits.ts";
import { settled } from "../runtime/execution/settled.ts";
import type { EdgeInfo } from "../runtime/execution/plane.ts";
import type { BenchResult } from "./run.ts";
import { PISCINA_CONFIG, startPiscina } from "./peers/piscina.ts";

const EDGE: EdgeInfo = { actor: { kind: "cli", pid: process.pid }, request_id: "bench", trace_id: "0af7651916cd43dd8448eb211c80319c" };
const EVENTS = 200_000;
const EXECUTIONS = 5_000;
// Default limits except the retention and queue bounds, raised so that 5,000 executions and 200k
// events stay retained; the memory store; the default 2 execution workers.
const OVERRIDES = { max_queued: 100_000, executions_retained: 100_000, events_retained: 1_000_000 };
const FLAGS = "in-process engine, memory store, default limits except max_queued 100000, executions_retained 100000, events_retained 1000000";

/** A worker that posts `n` progress objects to the main thread, one message each: the bare baseline. */
async function bareWorkerEvents(n: number): Promise<number> {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    for (let i = 1; i <= workerData; i++) parentPort.postMessage({ type: "execution.progress", data: { current: i, total: workerData } });
    parentPort.postMessage("done");`;
  const worker = new Worker(source, { eval: true, workerData: n });
  const started = performance.now();
  let seen = 0;
  await new Promise<void>((resolve) => worker.on("message", (m) => (m === "done" ? resolve() : seen++)));
  const seconds = (performance.now() - started) / 1000;
  await worker.terminate();
  if (seen !== n) throw new Error(`bare worker delivered ${seen} of ${n}`);
  return n / seconds;
}

/** A bare echo worker round trip, one message in flight at a time, `n` times: what one pool slot can do at best. */
async function bareRoundTrips(n: number): Promise<number> {
  const worker = new Worker(`require("node:worker_threads").parentPort.on("message", (m) => require("node:worker_threads").parentPort.postMessage(m));`, { eval: true });
  const ask = (m: unknown) => new Promise((resolve) => { worker.once("message", resolve); worker.postMessage(m); });
  for (let i = 0; i < 500; i++) await ask({ i });
  const started = performance.now();
  for (let i = 0; i < n; i++) await ask({ capability: "bench.noop", input: {}, i });
  const rate = n / ((performance.now() - started) / 1000);
  await worker.terminate();
  return rate;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The three engine figures, each beside its baseline. */
export async function benchEngine(): Promise<BenchResult> {
  const limits = resolveLimits({ overrides: OVERRIDES });
  const plane = await bootPlane({ cwd: process.cwd(), storeKind: "memory", limits, files: [join(import.meta.dir, "fixtures", "bench.noop.ts")], log: () => {} });
  const { engine, store } = plane;
  const rows: BenchResult["rows"] = [];
  try {
    // 1. Event pipeline: handler → worker batching → store, with one subscriber attached.
    const warm = engine.start({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: 1000 } }, EDGE).execution.id;
    await settled(store, warm);
    const id = engine.start({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: EVENTS } }, EDGE).execution.id;
    let received = 0;
    const subscription = store.subscribe({ executions: [id] }, () => received++);
    const t0 = performance.now();
    const done = await settled(store, id);
    const pipelineSeconds = (performance.now() - t0) / 1000;
    subscription.unsubscribe();
    if (done.state !== "succeeded") throw new Error(`demonstrate ended ${done.state}: ${done.failure?.message}`);
    const pipelineRate = received / pipelineSeconds;
    const bareRate = await bareWorkerEvents(EVENTS);
    rows.push({ figure: "events handler → store (1 subscriber)", docket: Math.round(pipelineRate), baseline: Math.round(bareRate), baseline_is: "bare worker postMessage per object", ratio: pipelineRate / bareRate, goal: "≥ 0.5" });

    // 1b. Direct-call overhead (issue 2): registry → validation → direct lane → output check.
    for (let i = 0; i < 500; i++) await engine.call("bench.noop", {}, EDGE);
    const t3 = performance.now();
    for (let i = 0; i < 10_000; i++) await engine.call("bench.noop", {}, EDGE);
    const directRate = 10_000 / ((performance.now() - t3) / 1000);
    const bareRate1 = await bareRoundTrips(10_000);
    rows.push({ figure: "direct calls of a no-op, one at a time (10,000)", docket: Math.round(directRate), baseline: Math.round(bareRate1), baseline_is: "bare worker_threads echo, one at a time", ratio: directRate / bareRate1, goal: "(reported)" });

    // 2. Per-execution overhead: no-op executions start → completed, vs direct calls.
    for (let i = 0; i < 200; i++) await settled(store, engine.start({ capability: "bench.noop", input: {} }, EDGE).execution.id);
    const latencies: number[] = [];
    const t1 = performance.now();
    const inFlight: Promise<unknown>[] = [];
    for (let i = 0; i < EXECUTIONS; i++) {
      const began = performance.now();
      const execution = engine.start({ capability: "bench.noop", input: {} }, EDGE).execution.id;
      inFlight.push(settled(store, execution).then(() => latencies.push(performance.now() - began)));
      if (inFlight.length >= 64) await Promise.all(inFlight.splice(0));
    }
    await Promise.all(inFlight);
    const execRate = EXECUTIONS / ((performance.now() - t1) / 1000);
    const sequential: number[] = [];
    for (let i = 0; i < 500; i++) {
      const began = performance.now();
      await settled(store, engine.start({ capability: "bench.noop", input: {} }, EDGE).execution.id);
      sequential.push(performance.now() - began);
    }
    sequential.sort((a, b) => a - b);
    latencies.sort((a, b) => a - b);
    const t2 = performance.now();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < EXECUTIONS; i++) {
      calls.push(engine.call("bench.noop", {}, EDGE));
      if (calls.length >= 64) await Promise.all(calls.splice(0));
    }
    await Promise.all(calls);
    const callRate = EXECUTIONS / ((performance.now() - t2) / 1000);
    // The in-process peer, right after docket's figures on the same (now idle) pool threads' cores.
    const piscina = await startPiscina(limits.max_concurrent);
    let piscinaRate: number;
    let piscinaTimes: number[];
    try {
      piscinaRate = await piscina.rate(EXECUTIONS, 64);
      piscinaTimes = await piscina.latencies(500);
    } finally {
      await piscina.close();
    }
    rows.push({ figure: "no-op executions/s (64 in flight)", docket: Math.round(execRate), baseline: Math.round(callRate), baseline_is: "direct calls, same capability", ratio: execRate / callRate, goal: "≥ 0.25" });
    rows.push({ figure: "no-op executions/s (64 in flight), against the peer", docket: Math.round(execRate), baseline: Math.round(piscinaRate), baseline_is: `no-op tasks, 64 in flight: ${PISCINA_CONFIG}`, ratio: execRate / piscinaRate, goal: "≥ 0.5" });
    rows.push({ figure: "no-op execution start → completed, one at a time (ms; ratio of p50s, peer ÷ docket)", docket: `p50 ${percentile(sequential, 50).toFixed(3)} / p99 ${percentile(sequential, 99).toFixed(3)}`, baseline: `p50 ${percentile(piscinaTimes, 50).toFixed(3)} / p99 ${percentile(piscinaTimes, 99).toFixed(3)}`, baseline_is: `no-op task round trip, one at a time (500): ${PISCINA_CONFIG}`, ratio: percentile(piscinaTimes, 50) / percentile(sequential, 50), goal: "p50 ≤ 0.25 ms" });
    rows.push({ figure: "no-op execution latency, 64 in flight (ms)", docket: `p50 ${percentile(latencies, 50).toFixed(3)} / p99 ${percentile(latencies, 99).toFixed(3)}`, baseline: "", baseline_is: "", ratio: "", goal: "" });

    // 3. Memory: RSS growth per retained finished execution with 100 events.
    const gc = () => (globalThis as { Bun?: { gc(force: boolean): void } }).Bun?.gc(true);
    gc();
    const before = process.memoryUsage().rss;
    const count = 2000;
    for (let i = 0; i < count; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, () => settled(store, engine.start({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: 97 } }, EDGE).execution.id)),
      );
    }
    gc();
    const after = process.memoryUsage().rss;
    const perExecution = (after - before) / count;
    const events = store.get(store.list({ limit: 1 }).items[0]!.id)!.last_sequence;
    rows.push({ figure: `RSS per retained finished execution (${events} events)`, docket: `${(perExecution / 1024).toFixed(1)} KiB`, baseline: "", baseline_is: "", ratio: "", goal: "bounded" });
  } finally {
    await plane.close();
  }
  return { name: "engine", rows: rows.map((row) => ({ ...row, flags: FLAGS })) };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchEngine()).rows));
  process.exit(0);
}
