// The cost of acknowledging after durable (docs/durability.md), beside its baselines in the same
// run: the sqlite store publishing after commit against the same store publishing at once (the
// path before, kept behind `publishBeforeCommit` for this only) and the memory store; then the
// engine's pipeline and acknowledged starts on sqlite against memory.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bootPlane } from "../runtime/boot.ts";
import { resolveLimits } from "../runtime/execution/limits.ts";
import type { EdgeInfo } from "../runtime/execution/plane.ts";
import type { EventDraft } from "../runtime/execution/protocol.ts";
import { settled } from "../runtime/execution/settled.ts";
import { createMemoryStore } from "../runtime/store/memory-store.ts";
import { createSqliteStore } from "../runtime/store/sqlite-store.ts";
import type { ExecutionStore, NewExecution } from "../runtime/store/store.ts";
import type { BenchResult } from "./run.ts";

const EVENTS = 200_000;
/** Appended per tick, as the worker's batches arrive (256 events or 16 ms each). */
const PER_TICK = 256;
const EDGE: EdgeInfo = { actor: { kind: "cli", pid: process.pid }, request_id: "bench", trace_id: "0af7651916cd43dd8448eb211c80319c" };
const ID = "x-20260908T010203Z-0a1b2c3d";
const EXECUTION: NewExecution = { id: ID, capability: "bench.progress", input: {}, actor: { kind: "cli", pid: 1 }, repository: "/bench", run_id: null, session_key: null, request_id: "bench", trace_id: EDGE.trace_id, cancellable: false, effect: "read" };

function percentile(sorted: Float64Array | number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Appends EVENTS progress events, PER_TICK a tick, one per call, to a store with one subscriber:
 * events/s until the subscriber has them all, and each event's wait from its append to its delivery.
 */
async function appendAndDeliver(store: ExecutionStore): Promise<{ rate: number; p50: number; p99: number }> {
  store.create(EXECUTION);
  store.append(ID, [{ type: "execution.started", data: {} }]);
  await store.durable();
  const sent = new Float64Array(EVENTS + 3);
  const waits = new Float64Array(EVENTS);
  let got = 0;
  let resolveAll!: () => void;
  const all = new Promise<void>((resolve) => (resolveAll = resolve));
  store.subscribe({ executions: [ID], after: 2 }, (event) => {
    waits[got++] = performance.now() - sent[event.sequence]!;
    if (got === EVENTS) resolveAll();
  });
  const draft = (i: number): EventDraft => ({ type: "execution.progress", data: { current: i, total: EVENTS, message: `${i} file(s) read` } });
  const started = performance.now();
  for (let i = 0; i < EVENTS; ) {
    for (const end = Math.min(EVENTS, i + PER_TICK); i < end; i++) {
      sent[i + 3] = performance.now();
      store.append(ID, [draft(i + 1)]);
    }
    await tick();
  }
  await all;
  const rate = EVENTS / ((performance.now() - started) / 1000);
  waits.sort();
  return { rate, p50: percentile(waits, 50), p99: percentile(waits, 99) };
}

/** The engine on a store kind: the event pipeline's rate, and acknowledged no-op starts one at a time to completed. */
async function engineFigures(storeKind: "memory" | "sqlite"): Promise<{ rate: number; p50: number; p99: number; ackP50: number; ackP99: number }> {
  const root = mkdtempSync(join(tmpdir(), "docket-bench-durable-"));
  mkdirSync(join(root, ".git"));
  const limits = resolveLimits({ overrides: { max_queued: 100_000, executions_retained: 100_000, events_retained: 1_000_000, events_retained_bytes: 1 << 30 } });
  const plane = await bootPlane({ cwd: root, storeKind, limits, files: [join(import.meta.dir, "fixtures", "bench.noop.ts")], log: () => {} });
  const { engine, store } = plane;
  const handle = engine.handle(EDGE);
  try {
    await settled(store, (await handle.start({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: 1000 } })).execution.id);
    const id = (await handle.start({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0, events: EVENTS } })).execution.id;
    let received = 0;
    const subscription = store.subscribe({ executions: [id] }, () => received++);
    const t0 = performance.now();
    await settled(store, id);
    const rate = received / ((performance.now() - t0) / 1000);
    subscription.unsubscribe();
    for (let i = 0; i < 100; i++) await settled(store, (await handle.start({ capability: "bench.noop", input: {} })).execution.id);
    const acks: number[] = [];
    const ends: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const began = performance.now();
      const answer = await handle.start({ capability: "bench.noop", input: {} });
      acks.push(performance.now() - began);
      await settled(store, answer.execution.id);
      ends.push(performance.now() - began);
    }
    acks.sort((a, b) => a - b);
    ends.sort((a, b) => a - b);
    return { rate, p50: percentile(ends, 50), p99: percentile(ends, 99), ackP50: percentile(acks, 50), ackP99: percentile(acks, 99) };
  } finally {
    await plane.close();
    rmSync(root, { recursive: true, force: true });
  }
}

const ms = (n: number) => n.toFixed(3);

/** Publish after commit against at once, and sqlite against memory, in one run. */
export async function benchDurable(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), "docket-bench-durable-"));
  const limits = resolveLimits({ overrides: { events_retained: 1_000_000, events_retained_bytes: 1 << 30 } });
  const rows: BenchResult["rows"] = [];
  try {
    const runs = { after: [] as Awaited<ReturnType<typeof appendAndDeliver>>[], before: [] as Awaited<ReturnType<typeof appendAndDeliver>>[], memory: [] as Awaited<ReturnType<typeof appendAndDeliver>>[] };
    // Interleaved, five rounds each, so that the machine's load falls on all of them alike; the median round is kept.
    for (let round = 0; round < 5; round++) {
      for (const mode of ["after", "before", "memory"] as const) {
        const store =
          mode === "memory" ? createMemoryStore({ limits }) : createSqliteStore({ path: join(dir, `${mode}-${round}.db`), limits, publishBeforeCommit: mode === "before" });
        runs[mode].push(await appendAndDeliver(store));
        store.close();
      }
    }
    const median = (list: Awaited<ReturnType<typeof appendAndDeliver>>[]) => [...list].sort((a, b) => a.rate - b.rate)[2]!;
    const after = median(runs.after);
    const before = median(runs.before);
    const memory = median(runs.memory);
    rows.push({ figure: `sqlite store, ${PER_TICK} appends a tick → 1 subscriber (events/s)`, docket: Math.round(after.rate), baseline: Math.round(before.rate), baseline_is: "same store, publishing at once (before)", ratio: after.rate / before.rate, goal: "≥ 0.8" });
    rows.push({ figure: "  append → delivery (ms)", docket: `p50 ${ms(after.p50)} / p99 ${ms(after.p99)}`, baseline: `p50 ${ms(before.p50)} / p99 ${ms(before.p99)}`, baseline_is: "same store, publishing at once", ratio: after.p99 / Math.max(before.p99, 1e-6), goal: "(reported)" });
    rows.push({ figure: "  against the memory store", docket: Math.round(after.rate), baseline: Math.round(memory.rate), baseline_is: `memory store (p99 ${ms(memory.p99)} ms)`, ratio: after.rate / memory.rate, goal: "(reported)" });

    const sqlite = await engineFigures("sqlite");
    const inMemory = await engineFigures("memory");
    rows.push({ figure: "engine: handler → store → 1 subscriber (events/s)", docket: Math.round(sqlite.rate), baseline: Math.round(inMemory.rate), baseline_is: "memory store, same run", ratio: sqlite.rate / inMemory.rate, goal: "(reported)" });
    rows.push({ figure: "engine: executions.start answered (acknowledged) (ms)", docket: `p50 ${ms(sqlite.ackP50)} / p99 ${ms(sqlite.ackP99)}`, baseline: `p50 ${ms(inMemory.ackP50)} / p99 ${ms(inMemory.ackP99)}`, baseline_is: "memory store", ratio: "", goal: "(reported)" });
    rows.push({ figure: "engine: no-op start → completed, one at a time (ms)", docket: `p50 ${ms(sqlite.p50)} / p99 ${ms(sqlite.p99)}`, baseline: `p50 ${ms(inMemory.p50)} / p99 ${ms(inMemory.p99)}`, baseline_is: "memory store", ratio: "", goal: "(reported)" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { name: "durable", rows };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  console.log(markdownTable((await benchDurable()).rows));
  process.exit(0);
}
