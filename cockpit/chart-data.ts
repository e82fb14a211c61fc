import type { ExecutionSnapshot } from "../runtime/execution/snapshot.ts";
import type { ExecutionState } from "../runtime/execution/state-machine.ts";
import type { ExecutionStore } from "../runtime/store/store.ts";

/** One execution as a point of a capability's history: when, how long, how it ended. */
export interface HistoryPoint {
  id: string;
  created_at: string;
  state: ExecutionState;
  duration_ms: number | null;
}

/** Executions a capability page's chart shows, newest last. */
export const HISTORY_POINTS = 60;

/** The latest executions of one capability, oldest first (the chart reads left to right). */
export function capabilityHistory(store: ExecutionStore, capability: string): HistoryPoint[] {
  const page = store.list({ capability, limit: HISTORY_POINTS });
  return page.items.map(pointOf).reverse();
}

function pointOf(x: ExecutionSnapshot): HistoryPoint {
  return { id: x.id, created_at: x.created_at, state: x.state, duration_ms: x.duration_ms };
}

/** What a history says at a glance: counts by outcome and the median and 90th-percentile durations. */
export function historySummary(points: HistoryPoint[]): { counts: Partial<Record<ExecutionState, number>>; medianMs: number | null; p90Ms: number | null } {
  const counts: Partial<Record<ExecutionState, number>> = {};
  for (const p of points) counts[p.state] = (counts[p.state] ?? 0) + 1;
  const durations = points.map((p) => p.duration_ms).filter((d): d is number => d !== null).sort((a, b) => a - b);
  const at = (q: number) => (durations.length ? durations[Math.min(durations.length - 1, Math.floor(q * durations.length))]! : null);
  return { counts, medianMs: at(0.5), p90Ms: at(0.9) };
}

/** The states an overview bar is stacked from, bottom first; `active` is queued, running and cancelling. */
export const BUCKET_STATES = ["succeeded", "failed", "cancelled", "active"] as const;
export type BucketState = (typeof BUCKET_STATES)[number];

/** Executions created in one time slice, by how they stand now. */
export interface Bucket {
  from: number;
  to: number;
  counts: Record<BucketState, number>;
}

/** Options of {@link stateBuckets}. */
export interface BucketOptions {
  now: number;
  /** How far back, in ms (default 6 hours). */
  spanMs?: number;
  /** How many slices (default 12). */
  buckets?: number;
  /** Executions read at most (default 2,000): a busy server's chart reads the newest. */
  maxRead?: number;
}

const bucketOf = (state: ExecutionState): BucketState => (state === "succeeded" || state === "failed" || state === "cancelled" ? state : "active");

/** Executions per state over the last hours, in equal slices, oldest first, read newest-first from the store. */
export function stateBuckets(store: ExecutionStore, options: BucketOptions): { buckets: Bucket[]; read: number; more: boolean } {
  const spanMs = options.spanMs ?? 6 * 3600_000;
  const count = options.buckets ?? 12;
  const maxRead = options.maxRead ?? 2000;
  const width = spanMs / count;
  const start = options.now - spanMs;
  const buckets: Bucket[] = Array.from({ length: count }, (_, i) => ({
    from: start + i * width,
    to: start + (i + 1) * width,
    counts: { succeeded: 0, failed: 0, cancelled: 0, active: 0 },
  }));
  let cursor: string | undefined;
  let read = 0;
  for (;;) {
    const page = store.list({ limit: 500, cursor });
    let older = false;
    for (const x of page.items) {
      const t = Date.parse(x.created_at);
      if (t < start) {
        older = true;
        break;
      }
      read += 1;
      const index = Math.min(count - 1, Math.floor((t - start) / width));
      buckets[index]!.counts[bucketOf(x.state)] += 1;
    }
    if (older || page.next_cursor === null || read >= maxRead) return { buckets, read, more: !older && page.next_cursor !== null };
    cursor = page.next_cursor;
  }
}
