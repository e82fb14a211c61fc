import type { Database } from "bun:sqlite";
import { SCHEMA_VERSION, type ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionState } from "../execution/state-machine.ts";
import type { RunIdentity } from "./store.ts";
import type { EventChunk } from "./_sqlite-pending.ts";

/**
 * The most events one chunk row holds: a read of a few events parses at most this many. Reads
 * rely on it to bound their scan, so files written with a larger value need a schema migration.
 */
export const CHUNK_EVENTS = 256;
/** The most bytes one chunk row holds, unless a single event is larger. */
export const CHUNK_BYTES = 64 * 1024;
/**
 * An execution's first events are kept in its own row (`head`) while they total at most this many
 * bytes, and the events rows hold only those after. Every table a commit writes to costs it at least
 * a page of 16 KiB, whatever it writes there, and a short execution's events are a few hundred bytes:
 * in its row, a no-op's commits write half the pages (measured: 4.4 → 2.2 pages per commit), and
 * the log, the checkpoints and the disk take half as much. Small enough that a row stays within its page.
 */
export const HEAD_BYTES = 2 * 1024;

/** The indexed columns of one execution row, as loaded on open. */
export interface ExecutionRow {
  ord: number;
  id: string;
  capability: string;
  state: ExecutionState;
  finished_at: string | null;
  last_sequence: number;
  retained_from: number;
  details_expired: number;
  /** 1 when it finished with an `unknown` outcome nobody reconciled yet (retention.ts outcomeUnknown). */
  unsettled: number;
  /** The last event `head` holds (0: none); the events rows hold only later ones. */
  head_last: number;
  /** The bytes of `head` (0 when it holds none, or they were dropped). */
  head_bytes: number;
}

/** What one execution row is written from. */
export interface ExecutionWrite {
  ord: number;
  id: string;
  capability: string;
  state: ExecutionState;
  finished_at: string | null;
  last_sequence: number;
  retained_from: number;
  /** The snapshot as JSON; null keeps the one in the file (only the counters move). */
  snapshot: string | null;
  /** Events to append to the row's `head` (a chunk's JSON), or null: none go there. */
  head: Uint8Array | null;
  /** The last event the row's `head` holds once written. */
  head_last: number;
}


/**
 * The store's statements over the three tables, prepared once. Every method is one statement;
 * transactions are the caller's (a flush writes everything of a tick in one).
 */
/**
 * Whether a row finished with an `unknown` outcome nobody reconciled (retention.ts outcomeUnknown),
 * read from its snapshot once, when the store opens. The text search first spares the JSON parse
 * of every other row's snapshot.
 */
const UNSETTLED = `(instr(snapshot, '"outcome_certainty":"unknown"') > 0 AND json_extract(snapshot, '$.failure.outcome_certainty') = 'unknown' AND json_extract(snapshot, '$.reconciliation') IS NULL)`;

export function prepareTables(db: Database) {
  // `head`: the piece of JSON a write appends to the execution's first events (see HEAD_BYTES), or null.
  const insertExecution = db.prepare<void, [number, string, string, string, string | null, number, number, string, Uint8Array | null, number]>(
    "INSERT INTO executions (ord, id, capability, state, finished_at, last_sequence, retained_from, snapshot, head, head_last) VALUES (?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?)",
  );
  const APPEND_HEAD = "head = CASE WHEN ?1 IS NULL THEN head WHEN head IS NULL THEN CAST(?1 AS TEXT) ELSE head || ',' || CAST(?1 AS TEXT) END, head_last = ?2";
  const updateExecution = db.prepare<void, [Uint8Array | null, number, string, string | null, number, number, string, number]>(
    `UPDATE executions SET ${APPEND_HEAD}, state = ?3, finished_at = ?4, last_sequence = ?5, retained_from = ?6, snapshot = ?7 WHERE ord = ?8`,
  );
  const updateCounters = db.prepare<void, [Uint8Array | null, number, number, number, number]>(`UPDATE executions SET ${APPEND_HEAD}, last_sequence = ?3, retained_from = ?4 WHERE ord = ?5`);
  const insertChunk = db.prepare<void, [number, number, number, Uint8Array]>("INSERT INTO events (execution_ord, sequence, first_sequence, json) VALUES (?, ?, ?, CAST(? AS TEXT))");
  // A chunk ends at most CHUNK_EVENTS - 1 after it starts: the bound keeps the scan to the chunks wanted.
  const selectChunks = db.prepare<{ json: string }, [number, number, number, number]>(
    "SELECT json FROM events WHERE execution_ord = ? AND sequence >= ? AND sequence < ? AND first_sequence <= ? ORDER BY sequence",
  );
  const selectHead = db.prepare<{ head: string }, [number, number]>("SELECT head FROM executions WHERE ord = ? AND head_last >= ? AND head IS NOT NULL");
  const deleteChunksBelow = db.prepare<void, [number, number]>("DELETE FROM events WHERE execution_ord = ? AND sequence < ?");
  const dropHeadBelow = db.prepare<void, [number, number]>("UPDATE executions SET head = NULL WHERE ord = ? AND head_last < ? AND head IS NOT NULL");
  const deleteEvents = db.prepare<void, [number]>("DELETE FROM events WHERE execution_ord = ?");
  const deleteChunksBetween = db.prepare<void, [number, number, number]>("DELETE FROM events WHERE execution_ord = ? AND sequence > ? AND sequence < ?");
  const deleteExecution = db.prepare<void, [number]>("DELETE FROM executions WHERE ord = ?");
  const selectSnapshot = db.prepare<{ snapshot: string }, [number]>("SELECT snapshot FROM executions WHERE ord = ?");
  const selectRows = db.prepare<ExecutionRow, []>(
    `SELECT ord, id, capability, state, finished_at, last_sequence, retained_from, details_expired, ${UNSETTLED} AS unsettled, head_last, coalesce(length(CAST(head AS BLOB)), 0) AS head_bytes FROM executions ORDER BY ord`,
  );
  const expireExecution = db.prepare<void, [string, number, number]>("UPDATE executions SET snapshot = ?, retained_from = ?, details_expired = 1, head = NULL WHERE ord = ?");
  const insertRun = db.prepare<void, [string, string, string, string]>("INSERT OR IGNORE INTO run_identities (run_id, execution_id, capability, input_hash) VALUES (?, ?, ?, ?)");
  const selectRun = db.prepare<RunIdentity, [string]>("SELECT run_id, execution_id, capability, input_hash FROM run_identities WHERE run_id = ?");
  const countRuns = db.prepare<{ n: number }, []>("SELECT count(*) AS n FROM run_identities");
  const countByState = db.prepare<{ state: ExecutionState; n: number }, []>("SELECT state, count(*) AS n FROM executions GROUP BY state");
  const listBefore = db.prepare<{ ord: number; id: string }, [number, number]>("SELECT ord, id FROM executions WHERE ord < ? ORDER BY ord DESC LIMIT ?");

  return {
    /** Writes an execution's row: inserted when new, else updated (with or without its snapshot). */
    writeExecution(row: ExecutionWrite, isNew: boolean): void {
      if (isNew) insertExecution.run(row.ord, row.id, row.capability, row.state, row.finished_at, row.last_sequence, row.retained_from, row.snapshot!, row.head, row.head_last);
      else if (row.snapshot !== null) updateExecution.run(row.head, row.head_last, row.state, row.finished_at, row.last_sequence, row.retained_from, row.snapshot, row.ord);
      else updateCounters.run(row.head, row.head_last, row.last_sequence, row.retained_from, row.ord);
    },
    /** Writes chunks of the events of the execution at `ord`. */
    writeChunks(ord: number, chunks: readonly EventChunk[]): void {
      for (const chunk of chunks) insertChunk.run(ord, chunk.last, chunk.first, chunk.json);
    },
    /** Appends the stored events `first..last` of the execution `id` at `ord` to `out`, in order, each rebuilt whole. */
    readEvents(ord: number, id: string, first: number, last: number, out: ExecutionEvent[]): void {
      // The row's head first: it holds events 1..head_last, the chunks only later ones.
      const head = selectHead.get(ord, first);
      const rows = head === null ? selectChunks.iterate(ord, first, last + CHUNK_EVENTS, last) : [head.head, ...selectChunks.iterate(ord, first, last + CHUNK_EVENTS, last)];
      for (const row of rows) {
        const json = typeof row === "string" ? row : row.json;
        for (const e of JSON.parse(`[${json}]`) as ExecutionEvent[]) {
          if (e.sequence < first || e.sequence > last) continue;
          // The members the file leaves out (see PendingEvents), in the envelope's own order.
          out.push({ schema_version: SCHEMA_VERSION, event_id: `${id}#${e.sequence}`, execution_id: id, sequence: e.sequence, timestamp: e.timestamp, type: e.type, data: e.data } as ExecutionEvent);
        }
      }
    },
    /** Deletes the chunks, and the row's head, that hold only events below `retainedFrom`. */
    dropEventsBelow(ord: number, retainedFrom: number): void {
      deleteChunksBelow.run(ord, retainedFrom);
      dropHeadBelow.run(ord, retainedFrom);
    },
    /**
     * Deletes the chunks ending after `after` and before `before`: events written in parts past the
     * row's `last_sequence` (see Entry.partsLast) that are no longer wanted.
     */
    dropPartsBetween(ord: number, after: number, before: number): void {
      deleteChunksBetween.run(ord, after, before);
    },
    /** Deletes the execution at `ord` and its events. */
    forget(ord: number): void {
      deleteEvents.run(ord);
      deleteExecution.run(ord);
    },
    /** The snapshot of the execution at `ord` as written, parsed; null when the file does not hold it. */
    readSnapshot<T>(ord: number): T | null {
      const row = selectSnapshot.get(ord);
      return row === null ? null : (JSON.parse(row.snapshot) as T);
    },
    /** Every execution's indexed columns, oldest first. */
    rows(): ExecutionRow[] {
      return selectRows.all();
    },
    /** Replaces the snapshot of the execution at `ord` with its expired form and deletes its events (its head too). */
    expire(ord: number, snapshot: string, retainedFrom: number): void {
      deleteEvents.run(ord);
      expireExecution.run(snapshot, retainedFrom, ord);
    },
    /** Records a run identity; the first one for a run_id stands. */
    writeRun(identity: RunIdentity): void {
      insertRun.run(identity.run_id, identity.execution_id, identity.capability, identity.input_hash);
    },
    /** The run identity of a run_id, as a fresh object; null when none is written. */
    readRun(run_id: string): RunIdentity | null {
      return selectRun.get(run_id);
    },
    /** How many executions the file holds in each state (states it holds none in are left out). */
    countStates(): Partial<Record<ExecutionState, number>> {
      return Object.fromEntries(countByState.all().map((row) => [row.state, row.n]));
    },
    /** How many run identities the file holds. */
    runCount(): number {
      return countRuns.get()!.n;
    },
    /** The positions and ids of the `limit` executions created last before `before`, newest first. */
    list(before: number, limit: number): Array<{ ord: number; id: string }> {
      return listBefore.all(before, limit);
    },
  };
}

/** The store's statements (see {@link prepareTables}). */
export type StoreTables = ReturnType<typeof prepareTables>;
