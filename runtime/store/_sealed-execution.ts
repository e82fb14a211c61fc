import { SCHEMA_VERSION, type EventType, type ExecutionEvent } from "../execution/protocol.ts";
import { executionLinks, type ExecutionSnapshot } from "../execution/snapshot.ts";
import type { FoldLimits } from "./_fold.ts";
import { foldEvent, initialSnapshot } from "./_fold.ts";
import { deepFreeze } from "./_kept-values.ts";
import type { RecordShapes, SealedRecord } from "./_sealed-records.ts";
import type { TextSlabs } from "./_text-slabs.ts";

/**
 * Longer histories are not sealed: sealing costs about 0.5 µs an event, all at once on the append
 * that finishes the execution, and a longer pause would hold up every client of the process.
 */
export const SEAL_MAX_EVENTS = 4096;

/** Events per chunk of text: a page read parses the chunks it covers, not the whole history. */
const CHUNK_EVENTS = 256;

/**
 * Up to this many events, a sealed snapshot is rebuilt from its events on each read instead of
 * being kept: it repeats them (input, output, steps, log tail, progress), and folding this many
 * costs tens of microseconds. Longer histories keep their snapshot, so a read never folds more.
 */
const REBUILD_MAX_EVENTS = 100;

/** The snapshot's fields that no event holds, in this order: the head of the first chunk. */
type Origin = [repository: string, request_id: string, trace_id: string, cancellable: boolean, effect: "read" | "write"];

/** What a store shares among its sealed executions: the shapes of their records, the slabs of their text. */
export interface SealedStorage {
  shapes: RecordShapes;
  texts: TextSlabs;
}

/** Freezes what the store kept as frozen copies in an event's data (see `keep`). */
function freezeKept(type: EventType, data: ExecutionEvent["data"]): void {
  if (type === "execution.created") {
    const created = data as ExecutionEvent<"execution.created">["data"];
    deepFreeze(created.input);
    deepFreeze(created.actor);
  } else if (type === "execution.completed" || type === "execution.cancel_requested" || type === "execution.reconciled") deepFreeze(data);
}

/**
 * A finished execution of the memory store, kept as text in shared slabs (TextSlabs): its
 * retained events as JSON chunks of records (see RecordShapes: no envelope, since the execution
 * id, event ids and schema version are derived; no member names; timestamps as milliseconds
 * after the event before) and, for a long or truncated history, its snapshot. A retained
 * execution of 20 events holds about 1.4 KiB this way, against 6.6 KiB as objects
 * (docs/limits.md, "Memory per retained execution").
 *
 * Reads answer exactly what the live form answered: events carry the same envelope, timestamps
 * and data, with the same members frozen; a snapshot is a fresh copy, its kept values frozen.
 */
export class SealedExecution {
  /** A handle on texts sealed before (see `seal`, which makes the first). */
  constructor(
    /** First retained sequence. */
    readonly first: number,
    /** Last sequence. */
    readonly last: number,
    /** The timestamp of the first retained event, in milliseconds. */
    readonly baseMs: number,
    /**
     * Refs (TextSlabs) to JSON arrays of records, CHUNK_EVENTS each, the first one beginning with
     * the Origin; a history of one chunk keeps its ref alone (an array is two more objects to keep).
     */
    readonly chunks: number | readonly number[],
    /** Ref to the snapshot's JSON (its links left out) when the events cannot rebuild it; else -1. */
    readonly snapshotText: number,
  ) {}

  /** Seals a finished execution's snapshot and retained events (oldest first, at least one). */
  static seal(snapshot: ExecutionSnapshot, events: readonly ExecutionEvent[], { shapes, texts }: SealedStorage): SealedExecution {
    const first = events[0]!.sequence;
    const baseMs = Date.parse(events[0]!.timestamp);
    const origin: Origin = [snapshot.repository, snapshot.request_id, snapshot.trace_id, snapshot.cancellable, snapshot.effect];
    // Events of one batch share their timestamp string: parse each string once.
    let lastText = "";
    let lastMs = 0;
    const chunks: number[] = [];
    for (let at = 0; at < events.length; at += CHUNK_EVENTS) {
      const records: unknown[] = at === 0 ? [origin] : [];
      let previousMs = baseMs;
      for (let i = at; i < Math.min(events.length, at + CHUNK_EVENTS); i++) {
        const event = events[i]!;
        if (event.timestamp !== lastText) {
          lastText = event.timestamp;
          lastMs = Date.parse(lastText);
        }
        records.push(shapes.encode(event.type, event.data, lastMs - previousMs));
        previousMs = lastMs;
      }
      chunks.push(texts.put(JSON.stringify(records)));
    }
    const rebuildable = first === 1 && events.length <= REBUILD_MAX_EVENTS;
    // `links` is derived from the id; 0 keeps its place among the keys.
    return new SealedExecution(first, snapshot.last_sequence, baseMs, chunks.length === 1 ? chunks[0]! : chunks, rebuildable ? -1 : texts.put(JSON.stringify({ ...snapshot, links: 0 })));
  }

  /** Retained events with a sequence above `after`, at most `limit` of them, oldest first. */
  events(id: string, after: number, limit: number, storage: SealedStorage): ExecutionEvent[] {
    const from = Math.max(after + 1, this.first);
    const to = Math.min(this.last, from + limit - 1);
    const out: ExecutionEvent[] = [];
    for (let c = Math.floor((from - this.first) / CHUNK_EVENTS); from + out.length <= to && c < this.chunkCount; c++) this.decodeChunk(id, c, JSON.parse(storage.texts.get(this.chunk(c))), from, to, storage.shapes, out);
    return out;
  }

  /** Gives up its texts: the store forgot the execution, or sealed it anew. */
  release({ texts }: SealedStorage): void {
    for (let c = 0; c < this.chunkCount; c++) texts.release(this.chunk(c));
    if (this.snapshotText >= 0) texts.release(this.snapshotText);
  }

  private get chunkCount(): number {
    return typeof this.chunks === "number" ? 1 : this.chunks.length;
  }

  /** The ref of chunk `c`. */
  private chunk(c: number): number {
    return typeof this.chunks === "number" ? this.chunks : this.chunks[c]!;
  }

  /** Appends the events `from..to` of chunk `c` (its parsed records) to `out`. */
  private decodeChunk(id: string, c: number, records: unknown[], from: number, to: number, shapes: RecordShapes, out: ExecutionEvent[]): void {
    const head = c === 0 ? 1 : 0;
    const chunkFirst = this.first + c * CHUNK_EVENTS;
    let ms = this.baseMs;
    let iso = "";
    let isoMs = Number.NaN;
    for (let i = 0; head + i < records.length && chunkFirst + i <= to; i++) {
      const record = records[head + i] as SealedRecord;
      // Offsets add up from the chunk's start, so every record before `from` is read too.
      ms += record[1];
      const sequence = chunkFirst + i;
      if (sequence < from) continue;
      if (ms !== isoMs) {
        isoMs = ms;
        iso = new Date(ms).toISOString();
      }
      const { type, data } = shapes.decode(record);
      freezeKept(type, data);
      out.push({ schema_version: SCHEMA_VERSION, event_id: `${id}#${sequence}`, execution_id: id, sequence, timestamp: iso, type, data } as ExecutionEvent);
    }
  }

  /** A fresh snapshot, as it was when sealed; `limits` are the store's, which folded it first. */
  snapshot(id: string, limits: FoldLimits, storage: SealedStorage): ExecutionSnapshot {
    if (this.snapshotText >= 0) {
      const snapshot = JSON.parse(storage.texts.get(this.snapshotText)) as ExecutionSnapshot;
      snapshot.links = executionLinks(id);
      deepFreeze(snapshot.input);
      deepFreeze(snapshot.actor);
      deepFreeze(snapshot.output);
      deepFreeze(snapshot.failure);
      if (snapshot.cancel_requested !== undefined) deepFreeze(snapshot.cancel_requested.actor);
      if (snapshot.reconciliation !== undefined) {
        deepFreeze(snapshot.reconciliation.actor);
        deepFreeze(snapshot.reconciliation.evidence);
      }
      return snapshot;
    }
    // A rebuildable history is one chunk from sequence 1, its Origin first.
    const records = JSON.parse(storage.texts.get(this.chunk(0))) as unknown[];
    const [repository, request_id, trace_id, cancellable, effect] = records[0] as Origin;
    const events: ExecutionEvent[] = [];
    this.decodeChunk(id, 0, records, 1, this.last, storage.shapes, events);
    const [created, ...later] = events;
    const data = (created as ExecutionEvent<"execution.created">).data;
    const snapshot = initialSnapshot({ id, ...data, repository, request_id, trace_id, cancellable, effect }, created!.timestamp);
    for (const event of later) foldEvent(snapshot, event, limits);
    return snapshot;
  }
}
