import type { Database } from "bun:sqlite";
import { isTerminal } from "../execution/state-machine.ts";
import type { RunIdentity, StorageFault } from "./store.ts";
import { needsSnapshot, type Entry } from "./_sqlite-entry.ts";
import { CHUNK_BYTES, CHUNK_EVENTS, type StoreTables } from "./_sqlite-tables.ts";

/** A write happens once this many events are pending, whatever the tick: it bounds memory and what a crash loses. */
export const FLUSH_EVENTS = 4096;
const RETRY_MS = 1000;
/** Writes pausing this long is when the log is checkpointed into the database. */
const QUIET_MS = 1000;

/** Options of {@link createWriteBehind}. */
export interface WriteBehindOptions {
  db: Database;
  tables: StoreTables;
  /** See needsSnapshot. */
  snapshotEvery: number;
  /** Told when a write nobody waits for fails (once per run of failures); it is retried. */
  onError: (error: unknown) => void;
}

/** What the store changed and the file does not hold yet, and when it gets written. */
export interface WriteBehind {
  /** Notes that an entry changed (created, or `events` more appended); its write is scheduled. */
  changed(entry: Entry, events: number): void;
  /** Notes that a forgotten execution's rows go. */
  forget(id: string): void;
  /** Notes a new run identity. */
  recordRun(identity: RunIdentity): void;
  /** A run identity recorded and not written yet. */
  pendingRun(run_id: string): RunIdentity | undefined;
  /** After a call that stored events: writes at once when FLUSH_EVENTS are pending. */
  flushIfLarge(): void;
  /** Writes everything now, in one transaction; throws on failure, with everything still pending. */
  flush(): void;
  /** Writes everything now; a failure is reported and retried instead of thrown. */
  flushQuietly(): void;
  /** The fault of the current run of failed writes, or null once a write succeeds. */
  fault(): StorageFault | null;
  /** Stops scheduling writes (the store writes its last ones with `flush`). */
  stop(): void;
}

/**
 * The store's write-behind: everything changed in one tick is written in one transaction on the
 * next `setImmediate` (or at once past FLUSH_EVENTS). A failed write leaves everything pending
 * (the transaction rolls back), is reported once, and is retried every RETRY_MS; appends go on
 * meanwhile and reads are served from memory.
 *
 * Once writes pause for QUIET_MS, the log is checkpointed into the database (PASSIVE: it never
 * waits for a reader). A checkpoint syncs the disk twice; done inside a busy run's commits it
 * measured ~15 % of the store's time per appended event, done in a pause it costs a run nothing.
 */
export function createWriteBehind(options: WriteBehindOptions): WriteBehind {
  const { db, tables, snapshotEvery } = options;
  let dirty: Entry[] = [];
  let forgotten: string[] = [];
  const runs = new Map<string, RunIdentity>();
  let pendingEvents = 0;
  let scheduled = false;
  let failing = false;
  let fault: StorageFault | null = null;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | null = null;
  let checkpointTimer: ReturnType<typeof setTimeout> | null = null;
  let lastWrite = 0;

  const writeAll = db.transaction(() => {
    // Forgotten rows first: an id forgotten and created again in one tick is a new row.
    for (const id of forgotten) tables.forget(id);
    for (const identity of runs.values()) tables.writeRun(identity);
    for (const entry of dirty) {
      if (entry.forgotten) continue;
      // A dirty entry still has its live snapshot: it is dropped only after this write.
      const snapshot = entry.snapshot!;
      tables.writeExecution(
        {
          ord: entry.order,
          id: entry.id,
          capability: entry.capability,
          state: entry.state,
          finished_at: snapshot.finished_at,
          last_sequence: entry.lastSequence,
          retained_from: entry.retainedFrom,
          snapshot: needsSnapshot(entry, snapshotEvery) ? JSON.stringify(snapshot) : null,
        },
        !entry.stored.exists,
      );
      tables.writeChunks(entry.id, entry.pending.chunks(entry.retainedFrom, CHUNK_EVENTS, CHUNK_BYTES));
      if (entry.retainedFrom > entry.stored.retainedFrom) tables.dropEventsBelow(entry.id, entry.retainedFrom);
    }
  });

  /** After a write: arms the checkpoint for when writes pause. */
  function wrote(): void {
    lastWrite = performance.now();
    if (checkpointTimer === null && !stopped) armCheckpoint(QUIET_MS);
  }

  function armCheckpoint(ms: number): void {
    checkpointTimer = setTimeout(checkpointWhenQuiet, ms);
    // Housekeeping: it never keeps a process alive (close checkpoints anyway).
    checkpointTimer.unref?.();
  }

  function checkpointWhenQuiet(): void {
    checkpointTimer = null;
    if (stopped) return;
    const quiet = performance.now() - lastWrite;
    if (quiet < QUIET_MS) return armCheckpoint(QUIET_MS - quiet);
    try {
      db.run("PRAGMA wal_checkpoint(PASSIVE)");
    } catch {
      // Busy or failing: the next pause, SQLite's own backstop or close checkpoints instead.
    }
  }

  function schedule(): void {
    if (scheduled || failing || stopped) return;
    scheduled = true;
    setImmediate(flushQuietly);
  }

  function flush(): void {
    if (dirty.length === 0 && forgotten.length === 0 && runs.size === 0) return;
    writeAll();
    for (const entry of dirty) {
      entry.dirty = false;
      const done = isTerminal(entry.state);
      entry.pending.clear(!done);
      if (entry.forgotten) continue;
      entry.stored = {
        exists: true,
        state: entry.state,
        snapshotSequence: needsSnapshot(entry, snapshotEvery) ? entry.lastSequence : entry.stored.snapshotSequence,
        retainedFrom: entry.retainedFrom,
      };
      // A finished execution's snapshot never changes again: the file's copy serves its reads.
      if (done) entry.snapshot = null;
    }
    dirty = [];
    forgotten = [];
    runs.clear();
    pendingEvents = 0;
    wrote();
  }

  function flushQuietly(): void {
    scheduled = false;
    if (stopped) return;
    try {
      flush();
      failing = false;
      fault = null;
    } catch (error) {
      if (!failing) options.onError(error);
      failing = true;
      fault ??= { reason: error instanceof Error ? error.message : String(error), since: new Date().toISOString() };
      retry ??= setTimeout(() => {
        retry = null;
        flushQuietly();
      }, RETRY_MS);
      retry.unref?.();
    }
  }

  return {
    changed(entry, events) {
      if (!entry.dirty) {
        entry.dirty = true;
        dirty.push(entry);
      }
      pendingEvents += events;
      schedule();
    },
    forget(id) {
      forgotten.push(id);
      schedule();
    },
    recordRun(identity) {
      runs.set(identity.run_id, { ...identity });
      schedule();
    },
    pendingRun: (run_id) => runs.get(run_id),
    flushIfLarge() {
      if (pendingEvents >= FLUSH_EVENTS && !failing) flushQuietly();
    },
    flush,
    flushQuietly,
    fault: () => fault,
    stop() {
      stopped = true;
      if (retry !== null) clearTimeout(retry);
      if (checkpointTimer !== null) clearTimeout(checkpointTimer);
    },
  };
}
