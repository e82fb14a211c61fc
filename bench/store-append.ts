// Memory-store appends (the hot path: handler → engine → store → subscribers) beside a plain
// loop doing the least any pipeline must: keep the event and hand it to one callback; and the
// sqlite store's appends, written to its file, beside the memory store's in the same run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventDraft } from "../runtime/execution/protocol.ts";
import { defaultLimits } from "../runtime/execution/limits.ts";
import { createMemoryStore } from "../runtime/store/index.ts";
import type { ExecutionStore, NewExecution } from "../runtime/store/store.ts";

const EVENTS = 200_000;
const RUNS = 5;
const ID = "x-20260908T010203Z-0a1b2c3d";

const EXECUTION: NewExecution = {
  id: ID,
  capability: "bench.progress",
  input: {},
  actor: { kind: "cli", pid: 1 },
  repository: "/bench",
  run_id: null,
  session_key: null,
  request_id: "bench",
  trace_id: "0af7651916cd43dd8448eb211c80319c",
  cancellable: false,
  effect: "read",
};

function drafts(): EventDraft[] {
  return Array.from({ length: EVENTS }, (_, i) => ({ type: "execution.progress", data: { current: i + 1, total: EVENTS, message: `${i + 1} file(s) read` } }));
}

/** Median of RUNS timed runs (after one warm-up), in milliseconds. */
function medianMs(run: () => void): number {
  run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    (globalThis as { Bun?: { gc(force: boolean): void } }).Bun?.gc(true);
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!;
}

/** Median of RUNS runs (after one warm-up) of a run that times itself, in milliseconds. */
function medianOfTimed(run: () => number): number {
  run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    (globalThis as { Bun?: { gc(force: boolean): void } }).Bun?.gc(true);
    times.push(run());
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!;
}

/** Appends every draft to the store with one subscriber, `batch` drafts a call. */
function appendAll(store: ExecutionStore, all: EventDraft[], batch: number): void {
  store.create(EXECUTION);
  let bytes = 0;
  // A subscriber that needs each event's JSON (the live channel's, once it writes it).
  store.subscribe({ executions: [ID] }, (event, json) => {
    bytes += (json ?? JSON.stringify(event)).length;
  });
  store.append(ID, [{ type: "execution.started", data: {} }]);
  if (batch === 1) for (const draft of all) store.append(ID, [draft]);
  else for (let i = 0; i < all.length; i += batch) store.append(ID, all.slice(i, i + batch));
  if (bytes === 0) throw new Error("the subscriber received nothing");
}

/** Appends every draft to a fresh memory store (default limits) with one subscriber, `batch` drafts a call. */
function storeRun(all: EventDraft[], batch: number): () => void {
  return () => {
    const store = createMemoryStore({ limits: defaultLimits() });
    appendAll(store, all, batch);
    store.close();
  };
}

/**
 * The same on a fresh sqlite store file (default limits): opening it, the appends, and the write
 * of everything to the file (`flush`) are timed. Closing — SQLite's checkpoint of its log into
 * the database, with its fsyncs — is measured apart: a server pays it when it stops, or when the
 * log reaches SQLite's checkpoint size, not per append.
 */
async function sqliteRuns(all: EventDraft[], batch: number): Promise<{ ms: number; closeMs: number }> {
  const { createSqliteStore } = await import("../runtime/store/sqlite-store.ts");
  const dir = mkdtempSync(join(tmpdir(), "docket-bench-sqlite-"));
  const closes: number[] = [];
  let n = 0;
  try {
    const ms = medianOfTimed(() => {
      const start = performance.now();
      const store = createSqliteStore({ path: join(dir, `${++n}.db`), limits: defaultLimits() });
      appendAll(store, all, batch);
      store.flush();
      const ms = performance.now() - start;
      const closing = performance.now();
      store.close();
      closes.push(performance.now() - closing);
      return ms;
    });
    return { ms, closeMs: closes.sort((a, b) => a - b)[Math.floor(closes.length / 2)]! };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Memory-store append throughput with one subscriber, beside plain-loop baselines, as rows for `bun run bench`. */
export async function benchStoreAppend(): Promise<{ name: string; rows: Array<Record<string, unknown>> }> {
  const all = drafts();
  let sink = 0;
  const baseline = medianMs(() => {
    const kept: EventDraft[] = [];
    const callback = (draft: EventDraft) => {
      sink += draft.type.length;
    };
    for (const draft of all) {
      kept.push(draft);
      callback(draft);
    }
  });
  // The least a serializing pipeline must do: build the envelope and stringify it once.
  const serialized = medianMs(() => {
    const kept: unknown[] = [];
    const callback = (_event: unknown, json: string) => {
      sink += json.length;
    };
    const timestamp = new Date().toISOString();
    for (let i = 0; i < all.length; i++) {
      const draft = all[i]!;
      const event = { schema_version: "1", event_id: `${ID}#${i + 2}`, execution_id: ID, sequence: i + 2, timestamp, type: draft.type, data: draft.data };
      kept.push(event);
      callback(event, JSON.stringify(event));
    }
  });
  if (sink === 0) throw new Error("the baseline did nothing");
  const single = medianMs(storeRun(all, 1));
  const batched = medianMs(storeRun(all, 100));
  // Measured right after the memory store's, so that both see the same machine.
  const sqliteSingle = await sqliteRuns(all, 1);
  const sqliteBatched = await sqliteRuns(all, 100);
  const row = (pipeline: string, ms: number, memoryMs?: number) => ({
    pipeline,
    events: EVENTS,
    ms,
    events_per_s: Math.round(EVENTS / (ms / 1000)),
    "× baseline": baseline / ms,
    "× envelope+JSON baseline": serialized / ms,
    "× memory store (goal ≥ 0.5)": memoryMs === undefined ? "" : memoryMs / ms,
  });
  return {
    name: "store-append",
    rows: [
      row("baseline: array push + one callback", baseline),
      row("baseline: envelope + JSON.stringify + array push + one callback", serialized),
      row("memory store: append 1 event a call, one subscriber", single),
      row("memory store: append 100 events a call, one subscriber", batched),
      row("sqlite store: append 1 event a call, one subscriber, flushed to the file", sqliteSingle.ms, single),
      row("sqlite store: append 100 events a call, one subscriber, flushed to the file", sqliteBatched.ms, batched),
      { pipeline: "sqlite store: close after those appends (checkpoint of the log; not in the ratio)", ms: sqliteSingle.closeMs },
    ],
  };
}

if (import.meta.main) {
  const { markdownTable } = await import("./run.ts");
  const result = await benchStoreAppend();
  console.log(`## ${result.name}\n\n${markdownTable(result.rows)}`);
}
