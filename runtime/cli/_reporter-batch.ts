import type { ExecutionEvent } from "../execution/protocol.ts";
import { REPORT_MAX_EVENTS } from "../execution/report-protocol.ts";
import type { ExecutionStore } from "../store/store.ts";

/** What stands in, in a report, for a value too large for a live-channel frame: the value stays with the run. */
export interface WithheldByRun {
  withheld: "too_large";
  bytes: number;
  limit: number;
  /** The `docket run` process that holds (and prints) the value. */
  pid: number;
}

/** The next events to report, or the sequence from which the run's own history was already dropped. */
export type Batch = { ok: true; events: ExecutionEvent[]; full: boolean } | { ok: false; retained_from: number };

/** Options of {@link nextBatch}. */
export interface BatchOptions {
  /** A larger event travels with its input/output withheld (docs/protocol.md, "Too large" and the reports of docket run). */
  frameBytes: number;
  pid: number;
  /** Default REPORT_MAX_EVENTS. */
  maxEvents?: number;
  /** Default 1 MiB: well under a server's input limit, and one report stays a short request. */
  maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;
const byteLength = (text: string) => Buffer.byteLength(text, "utf8");

/**
 * The events of `id` after `through`, bounded in count and bytes (at least one, whatever its
 * size), each fit for a frame. `full` says more are waiting, so the run sends again at once.
 */
export function nextBatch(store: Pick<ExecutionStore, "events">, id: string, through: number, options: BatchOptions): Batch {
  const maxEvents = options.maxEvents ?? REPORT_MAX_EVENTS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const page = store.events(id, through, maxEvents);
  if (!page) return { ok: true, events: [], full: false };
  // Events the server never took are gone from this process too: no later report can mend that.
  if (page.truncated) return { ok: false, retained_from: page.retained_from };
  const events: ExecutionEvent[] = [];
  let bytes = 0;
  for (const event of page.events) {
    const fitted = fitForFrame(event, options.frameBytes, options.pid);
    if (events.length > 0 && bytes + fitted.bytes > maxBytes) return { ok: true, events, full: true };
    events.push(fitted.event);
    bytes += fitted.bytes;
  }
  const last = events.at(-1)?.sequence ?? through;
  return { ok: true, events, full: last < page.last_sequence };
}

/** A value as a report carries it: itself, or withheld when its JSON is over `limit` bytes. */
export function withheldIfLarge(value: unknown, limit: number, pid: number): unknown {
  const bytes = byteLength(JSON.stringify(value) ?? "");
  return bytes > limit ? withheld(bytes, limit, pid) : value;
}

function withheld(bytes: number, limit: number, pid: number): WithheldByRun {
  return { withheld: "too_large", bytes, limit, pid };
}

/**
 * The event itself when its JSON fits in `limit` bytes; else with `data.input` / `data.output`
 * withheld, and if that is still too large, its long strings cut (a step title or a failure
 * message that large is a bug to show, not a reason to stop reporting).
 */
function fitForFrame(event: ExecutionEvent, limit: number, pid: number): { event: ExecutionEvent; bytes: number } {
  const json = JSON.stringify(event);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most events are proven small without counting.
  if (json.length * 3 <= limit || byteLength(json) <= limit) return { event, bytes: json.length };
  const data: Record<string, unknown> = { ...(event.data as Record<string, unknown>) };
  for (const key of ["input", "output"]) if (key in data) data[key] = withheld(byteLength(JSON.stringify(data[key]) ?? ""), limit, pid);
  const cut = Math.max(64, Math.floor(limit / 8));
  const shorten = (text: string) => (text.length > cut ? `${text.slice(0, cut)}… (cut from ${byteLength(text)} bytes)` : text);
  let fitted = { ...event, data } as ExecutionEvent;
  if (byteLength(JSON.stringify(fitted)) > limit) {
    for (const [key, value] of Object.entries(data)) if (typeof value === "string") data[key] = shorten(value);
    const failure = data.failure as { message?: unknown } | undefined;
    if (failure && typeof failure.message === "string") data.failure = { ...failure, message: shorten(failure.message) };
    fitted = { ...event, data } as ExecutionEvent;
  }
  const text = JSON.stringify(fitted);
  return { event: fitted, bytes: text.length };
}
