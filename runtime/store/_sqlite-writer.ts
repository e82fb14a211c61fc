import type { Database } from "bun:sqlite";
import { isTerminal } from "../execution/state-machine.ts";
import type { ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { RunIdentity, StorageFault } from "./store.ts";
import { needsSnapshot, type Entry } from "./_sqlite-entry.ts";
import { UnwritableValueError } from "./_sqlite-unwritable.ts";
import { CHUNK_BYTES, CHUNK_EVENTS, HEAD_BYTES, type StoreTables } from "./_sqlite-tables.ts";
import type { EventChunk } from "./_sqlite-pending.ts";
import type { LogSync } from "./_sqlite-log-sync.ts";
import type { LogBound } from "./_sqlite-log-bound.ts";
import { systemClock, type Clock } from "../execution/clock.ts";

/** A write happens once this many events are pending, whatever the tick: it bounds memory and what a crash loses. */
export const FLUSH_EVENTS = 4096;
const RETRY_MS = 1000;
/** A retry that commits nothing waits twice as long as the last, up to this (see flushQuietly). */
const RETRY_MAX_MS = 4000;
/**
 * After a storage fault, the backlog is written in transactions of about this many bytes of
 * events (see drain): one transaction of everything a fault held back — each flooding
 * execution's whole retained window — needs that much free space for the log at once, and a
 * disk freed to less than that never took it, however often it was tried.
 */
export const DRAIN_BYTES = 1024 * 1024;
/** Writes pausing this long is when the log is checkpointed into the database. */
const QUIET_MS = 1000;
/**
 * A busy store writes at most once per this many milliseconds; any other change is written on the
 * next turn. Every commit writes whole 16 KiB pages for however few rows it changed: written every
 * turn, a store starting no-op executions over HTTP committed ~3,000 times a second with ~3
 * executions' changes each, 30 KB and ~6 write calls per execution; once a millisecond, ~530 times
 * with ~40 each, 10 KB and a third less of the main thread (bench/RESULTS.md, "Group commit").
 */
export const COMMIT_GAP_MS = 1;
/**
 * A store whose last write created this many executions or more is busy: that many starts were
 * waiting for their answers at once. One client starting one execution after another (or two)
 * creates one a write, since it waits for each answer: its writes never wait for the gap, which
 * nothing would come to share.
 */
export const BUSY_CREATIONS = 3;
/**
 * Forgotten executions' rows are deleted this many at a time by the writes of a busy store. One
 * at a time, each commit rewrote the old pages of four tables and indexes for one row (measured:
 * a quarter of the store's time per no-op execution once executions_retained is reached);
 * together, those pages are written once for the batch.
 */
export const FORGET_BATCH = 64;

/** What one commit made readable: its events in order, each with its JSON, for the subscribers. */
export interface Committed {
  events: ExecutionEvent[];
  jsons: string[];
}

/** Options of {@link createWriteBehind}. */
export interface WriteBehindOptions {
  db: Database;
  tables: StoreTables;
  /** See needsSnapshot. */
  snapshotEvery: number;
  /** A snapshot whose JSON is longer is not written: its execution is unwritable (see onUnwritable). */
  maxSnapshotChars: number;
  /** Told when a write nobody waits for fails (once per run of failures); it is retried. */
  onError: (error: unknown) => void;
  /** Called after every commit with what it made durable, before anyone waiting is told. */
  onCommit: (committed: Committed) => void;
  /**
   * Called for an execution whose changes the file refuses whatever the moment (a value too big
   * for it): its pending events are taken back already; the store ends it in a form it can write.
   */
  onUnwritable: (entry: Entry, error: unknown) => void;
  /** Told of every commit, to keep the log on disk off the main thread; stopped with the writer. */
  logSync?: LogSync;
  /** Measured about once a second while writes go on and at each pause; its log emptied before each retry of a failed write. */
  logBound?: Pick<LogBound, "measure" | "empty">;
  /** Time for COMMIT_GAP_MS (when a busy store's next write comes) and QUIET_MS; default the system clock. */
  cadence?: WriteCadence;
  /** Called after a write that committed everything pending, nothing refused (see _sqlite-starting.ts). */
  onWritten?: () => void;
  /** Why the file is no longer the one opened (_sqlite-file-identity.ts), or null: asked before every write, which then fails for the moment. */
  fileGone?: () => string | null;
  /** Told after each commit and checkpoint of the store's own, which may grow the file (_sqlite-file-identity.ts). */
  filesSettled?: () => void;
  /** Called after every write that failed for the moment, its fault set (the first one is also told to onError). */
  onFailed?: () => void;
  /**
   * The snapshot the file holds of an entry, its written events folded in (_sqlite-reads.ts
   * committedSnapshot): written again when a backlog's first part drops the events it was folded
   * from (see writeParts). Without it, nothing is written in parts.
   */
  committedSnapshot?: (entry: Entry) => ExecutionSnapshot;
}

/** What the writer needs of a clock (execution/clock.ts): tests move it by hand. */
export type WriteCadence = Pick<Clock, "monotonic" | "setTimeout">;

/** What the store changed and the file does not hold yet, and when it gets written. */
export interface WriteBehind {
  /** Notes that an entry changed (created, or `events` more appended); its write is scheduled. */
  changed(entry: Entry, events: number): void;
  /** Notes that a forgotten execution's rows go. */
  forget(entry: Entry): void;
  /** True while the deletion of a forgotten execution's rows is not committed. */
  forgetting(entry: Entry): boolean;
  /** Keeps the rows of an execution whose deletion is not committed after all. */
  unforget(entry: Entry): void;
  /** Notes a new run identity. */
  recordRun(identity: RunIdentity): void;
  /** A run identity recorded and not written yet. */
  pendingRun(run_id: string): RunIdentity | undefined;
  /** Drops a run identity not written yet (its execution was taken back); false when none was pending. */
  dropRun(run_id: string): boolean;
  /** After a call that stored events: writes at once when FLUSH_EVENTS are pending. */
  flushIfLarge(): void;
  /** Writes everything now, in one transaction; throws on failure, with everything still pending. */
  flush(): void;
  /** Writes everything now unless writes are failing (the retry does it); a failure is reported and retried, never thrown. */
  flushQuietly(): void;
  /** True when nothing waits to be written. */
  idle(): boolean;
  /** Resolves once everything changed before the call is committed (or ended as unwritable). */
  durable(): Promise<void>;
  /** The fault of the current run of failed writes, or null once a write succeeds. */
  fault(): StorageFault | null;
  /** Stops scheduling writes and fails whoever waits with `error` (the store writes its last ones with `flush`). */
  stop(error?: Error): void;
}

/**
 * The store's write-behind: everything changed in one tick is written in one transaction on the
 * next `setImmediate` — or, when busy (BUSY_CREATIONS) within COMMIT_GAP_MS of the last write, once
 * that gap is over, with whatever else changed meanwhile; at once past FLUSH_EVENTS — and only
 * then handed to `onCommit`: what readers and subscribers may see is what a crash cannot take
 * back (docs/durability.md).
 *
 * A write that fails for the moment (disk full, I/O error: see isTransient) leaves everything
 * pending (the transaction rolls back), is reported once and as `fault()`, and is retried every
 * RETRY_MS, the log emptied first (see emptyLog), until it succeeds; appends go on in memory
 * meanwhile. Any other failure is a value the file refuses whatever the moment: the batch is
 * written again one execution per transaction, and each execution that still fails goes to
 * `onUnwritable`, so that it never holds up anyone else's writes.
 *
 * Once writes pause for QUIET_MS, the log is checkpointed into the database (PASSIVE: it never
 * waits for a reader). A checkpoint syncs the disk twice; done inside a busy run's commits it
 * measured ~15 % of the store's time per appended event, done in a pause it costs a run nothing.
 * A store that never pauses checkpoints inside the commit that crosses wal_autocheckpoint (the
 * log's mark: 64 MiB, less on a small disk, see `logBound`); the log sync (`logSync`) has by then
 * written most of the log back, off the main thread.
 */
/** How often the store's files are looked at while nothing is written (see fileGone). */
export const FILE_LOOK_MS = 2000;

export function createWriteBehind(options: WriteBehindOptions): WriteBehind {
  const { db, tables, snapshotEvery } = options;
  const cadence = options.cadence ?? systemClock;
  let dirty: Entry[] = [];
  // Forgotten executions' positions, and their ids (an id may come back, under a new position).
  // The ids are kept as they come: a set made at every write of a busy store measured ~1 % of
  // the server's main thread.
  let forgotten = new Set<number>();
  let forgottenIds = new Set<string>();
  const runs = new Map<string, RunIdentity>();
  let pendingEvents = 0;
  let scheduled = false;
  let failing = false;
  let fault: StorageFault | null = null;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | null = null;
  let retryMs = RETRY_MS;
  /** Commits made so far: a retry that made none backs off (see flushQuietly). */
  let progress = 0;
  let checkpointTimer: ReturnType<typeof setTimeout> | null = null;
  let lastWrite = Number.NEGATIVE_INFINITY;
  /** Executions the last write created (see BUSY_CREATIONS). */
  let lastWriteCreations = 0;
  let waiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];

  function writeEntry(entry: Entry): void {
    // A dirty entry still has its live snapshot: it is dropped only after this write.
    const snapshot = entry.snapshot!;
    const json = needsSnapshot(entry, snapshotEvery) ? JSON.stringify(snapshot) : null;
    if (json !== null && json.length > options.maxSnapshotChars) throw new UnwritableValueError(entry.id, json.length, options.maxSnapshotChars);
    const head = headPiece(entry);
    const { headLast, headBytes } = entry.stored;
    entry.headWrite = head === null ? null : { last: head.last, bytes: headBytes + (headBytes > 0 ? 1 : 0) + head.json.length };
    tables.writeExecution(
      {
        ord: entry.order,
        id: entry.id,
        capability: entry.capability,
        state: entry.state,
        finished_at: snapshot.finished_at,
        last_sequence: entry.lastSequence,
        retained_from: entry.retainedFrom,
        snapshot: json,
        head: head?.json ?? null,
        head_last: head?.last ?? headLast,
      },
      !entry.stored.exists,
    );
    if (head === null) tables.writeChunks(entry.order, entry.pending.chunks(Math.max(entry.retainedFrom, entry.partsLast + 1), CHUNK_EVENTS, CHUNK_BYTES));
    if (entry.retainedFrom > entry.stored.retainedFrom) tables.dropEventsBelow(entry.order, entry.retainedFrom);
  }

  /**
   * The pending events as one piece for the row's head (see HEAD_BYTES), or null when they go to
   * the events rows: the head only ever holds an execution's first events, all of them kept, so it
   * grows while every event stored so far is in it and the whole fits.
   */
  function headPiece(entry: Entry): EventChunk | null {
    const { headLast, headBytes, lastSequence } = entry.stored;
    if (entry.retainedFrom !== 1 || headLast !== lastSequence || entry.pending.events.length === 0 || entry.partsLast > 0) return null;
    const room = HEAD_BYTES - headBytes - (headBytes > 0 ? 1 : 0);
    if (room <= 0) return null;
    const pieces = entry.pending.chunks(1, Number.MAX_SAFE_INTEGER, room);
    return pieces.length === 1 && pieces[0]!.json.length <= room ? pieces[0]! : null;
  }

  function writeRest(forgets: boolean): void {
    // Forgotten rows first: an id forgotten and created again in one tick is a new row.
    if (forgets) for (const order of forgotten.keys()) tables.forget(order);
    for (const identity of runs.values()) tables.writeRun(identity);
  }
  const writeOthers = db.transaction(() => writeRest(true));
  const writeAll = db.transaction((forgets: boolean) => {
    writeRest(forgets);
    for (const entry of dirty) if (!entry.forgotten) writeEntry(entry);
  });
  const writeOne = db.transaction(writeEntry);

  /** After an entry's write committed: the file holds it, its events go to the subscribers. */
  function committed(entry: Entry, out: Committed): void {
    entry.dirty = false;
    const done = isTerminal(entry.state);
    const taken = entry.pending.take(!done);
    if (entry.forgotten) return;
    for (let i = 0; i < taken.events.length; i++) {
      out.events.push(taken.events[i]!);
      out.jsons.push(taken.jsons[i]!);
    }
    entry.stored = {
      exists: true,
      state: entry.state,
      lastSequence: entry.lastSequence,
      snapshotSequence: needsSnapshot(entry, snapshotEvery) ? entry.lastSequence : entry.stored.snapshotSequence,
      retainedFrom: entry.retainedFrom,
      headLast: entry.headWrite?.last ?? entry.stored.headLast,
      headBytes: entry.headWrite?.bytes ?? entry.stored.headBytes,
    };
    entry.headWrite = null;
    entry.partsLast = 0;
    if (done && entry.snapshot !== null) entry.finishedAt = entry.snapshot.details_expired === true ? null : entry.snapshot.finished_at;
    // A finished execution's snapshot never changes again: the file's copy serves its reads.
    if (done) entry.snapshot = null;
  }

  /**
   * After a failure that is not of the moment: the same batch, one execution per transaction.
   * Throws a failure of the moment (what is not written yet stays pending).
   */
  function writeApart(out: Committed): void {
    writeOthers();
    forgotten = new Set();
    forgottenIds = new Set();
    runs.clear();
    const batch = dirty;
    const refused: Array<{ entry: Entry; error: unknown }> = [];
    for (let i = 0; i < batch.length; i++) {
      const entry = batch[i]!;
      try {
        if (!entry.forgotten) writeOne(entry);
        committed(entry, out);
      } catch (error) {
        if (isTransient(error)) {
          dirty = [...refused.map((r) => r.entry), ...batch.slice(i)];
          throw error;
        }
        refused.push({ entry, error });
      }
    }
    dirty = [];
    for (const { entry, error } of refused) {
      // Its events are numbered again from what is committed: parts past that would be read as theirs.
      if (entry.partsLast > 0) {
        try {
          db.transaction(() => tables.dropPartsBetween(entry.order, entry.stored.lastSequence, Number.MAX_SAFE_INTEGER))();
          entry.partsLast = 0;
        } catch {
          // Left for open to delete; the execution's next events may be refused with them.
        }
      }
      entry.dirty = false;
      entry.pending.take(false);
      options.onUnwritable(entry, error);
    }
  }

  /** The events an entry's next write has still to write, as chunks, and their bytes. */
  function backlog(entry: Entry): { chunks: EventChunk[]; bytes: number } {
    const chunks = entry.pending.chunks(Math.max(entry.retainedFrom, entry.partsLast + 1), CHUNK_EVENTS, CHUNK_BYTES);
    let bytes = 0;
    for (const chunk of chunks) bytes += chunk.json.length;
    return { chunks, bytes };
  }

  /**
   * True for an entry whose backlog may be written in parts and its row apart from the others':
   * its row exists and is unfinished, so nothing but its own events waits on it (a new row goes
   * with the forgotten rows, in the last transaction of a drain; see drain).
   */
  function drainable(entry: Entry): boolean {
    const state = entry.stored.state;
    return entry.dirty && !entry.forgotten && entry.stored.exists && state !== null && !isTerminal(state);
  }

  /**
   * A part of a backlog: chunks past the row's last_sequence, which nobody reads until the row's
   * own write commits them (reads stop at the row's last_sequence; open deletes them when a crash
   * came first). The first part of a drain first lets go of what the file holds past retention:
   * the row keeps the events from `trim.retainedFrom` on (`trim.snapshot`, when given, is its
   * committed snapshot, written again because the events it was folded from go), and parts an
   * earlier try wrote that retention has passed since go too. Deleted first, their pages are
   * what the part's events are written to.
   */
  const writePart = db.transaction((entry: Entry, chunks: readonly EventChunk[], trim: { retainedFrom: number; snapshot: string | null } | null) => {
    const { stored } = entry;
    if (trim !== null) {
      if (trim.retainedFrom > stored.retainedFrom) {
        tables.writeExecution(
          { ord: entry.order, id: entry.id, capability: entry.capability, state: stored.state!, finished_at: null, last_sequence: stored.lastSequence, retained_from: trim.retainedFrom, snapshot: trim.snapshot, head: null, head_last: stored.headLast },
          false,
        );
        tables.dropEventsBelow(entry.order, trim.retainedFrom);
      }
      if (entry.partsLast > 0) tables.dropPartsBetween(entry.order, stored.lastSequence, entry.retainedFrom);
    }
    tables.writeChunks(entry.order, chunks);
  });

  /**
   * Writes an entry's backlog in parts of at most DRAIN_BYTES (one larger event alone excepted),
   * oldest first, each its own transaction, until what is left fits one: the row's own write
   * (writeEntry) takes that, and commits all of it at once — readers and acknowledgements see
   * nothing of the parts before. The file never holds more of the execution than its retained
   * window and one part: the first part deletes what retention dropped meanwhile, all of the old
   * window but its last event when retention passed it whole. Throws as a write does; what
   * committed stays written (partsLast), and the next try goes on from there.
   */
  function writeParts(entry: Entry): void {
    const { chunks, bytes } = backlog(entry);
    if (bytes <= DRAIN_BYTES || options.committedSnapshot === undefined) return;
    const { lastSequence, snapshotSequence } = entry.stored;
    const retainedFrom = Math.max(entry.stored.retainedFrom, Math.min(entry.retainedFrom, lastSequence));
    let snapshot: string | null = null;
    // The events the written snapshot was folded from go: the file gets the snapshot they made.
    if (retainedFrom > entry.stored.retainedFrom && retainedFrom > snapshotSequence + 1) {
      const committed = options.committedSnapshot(entry);
      committed.retained_from = retainedFrom;
      committed.truncated = retainedFrom > 1;
      snapshot = JSON.stringify(committed);
    }
    let trim: { retainedFrom: number; snapshot: string | null } | null = { retainedFrom, snapshot };
    let left = bytes;
    for (let i = 0; left > DRAIN_BYTES && i < chunks.length; ) {
      let j = i;
      let size = chunks[i]!.json.length;
      while (j + 1 < chunks.length && size + chunks[j + 1]!.json.length <= DRAIN_BYTES) size += chunks[++j]!.json.length;
      writePart(entry, chunks.slice(i, j + 1), trim);
      if (trim !== null) {
        entry.stored.retainedFrom = retainedFrom;
        if (snapshot !== null) entry.stored.snapshotSequence = lastSequence;
        trim = null;
      }
      entry.partsLast = chunks[j]!.last;
      progress++;
      options.logSync?.wrote();
      left -= size;
      i = j + 1;
    }
  }

  const writeGroup = db.transaction((group: readonly Entry[]) => {
    for (const entry of group) writeEntry(entry);
  });

  /**
   * A write after a storage fault, while the backlog may be larger than the disk's free space:
   * each execution's events in parts (writeParts), then the rows of executions that existed
   * before, several to a transaction while their events total at most DRAIN_BYTES, each
   * commit handed to the subscribers. What is left — new rows, forgotten rows, run identities,
   * the last group — is the caller's last transaction (writeAll). Whoever waits for the write
   * waits for that last one: each commit acknowledges only what it holds.
   */
  function drain(out: Committed): void {
    for (const entry of dirty) if (drainable(entry)) writeParts(entry);
    let group: Entry[] = [];
    let size = 0;
    for (const entry of dirty) {
      if (!drainable(entry)) continue;
      const bytes = backlog(entry).bytes;
      if (group.length > 0 && size + bytes > DRAIN_BYTES) {
        writeGroup(group);
        for (const written of group) committed(written, out);
        dirty = dirty.filter((e) => e.dirty);
        progress++;
        options.logSync?.wrote();
        group = [];
        size = 0;
      }
      group.push(entry);
      size += bytes;
    }
  }

  /** After a write: arms the checkpoint for when writes pause. */
  function wrote(): void {
    lastWrite = cadence.monotonic();
    options.logSync?.wrote();
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
    // The log's mark follows the disk's free space (_sqlite-log-bound.ts): a statfs a second.
    options.logBound?.measure();
    const quiet = cadence.monotonic() - lastWrite;
    if (quiet < QUIET_MS) return armCheckpoint(QUIET_MS - quiet);
    // The rows forgotten since the last batch go now: a pause is when a write costs nobody.
    if (forgotten.size > 0 && !failing) {
      flushQuietly(false);
      return;
    }
    // A store that cannot write does not copy its log either: one cut by something else (see
    // _sqlite-file-identity.ts) would put pages of zeros into the database.
    if (fault !== null || options.fileGone?.()) return;
    try {
      db.run("PRAGMA wal_checkpoint(PASSIVE)");
      options.filesSettled?.();
    } catch {
      // Busy or failing: the next pause, SQLite's own backstop or close checkpoints instead.
    }
  }

  /**
   * Before a retry: the log copied into the file and its file emptied. A write the full disk
   * refused commits nothing, so nothing checkpoints either, and a log that took the disk keeps its
   * space however much is freed beside it; the next write would have to grow it again, and fail
   * again, while the copy needs only what the data itself lacks.
   */
  function emptyLog(): void {
    // Files that are not the store's any more are not copied in (a log cut under it would put
    // pages of zeros into the database): a clean stop copies a log that is whole.
    if (options.fileGone?.()) return;
    try {
      options.logBound?.empty();
      options.filesSettled?.();
      options.logBound?.measure();
    } catch {
      // Still no room for the copy: the write fails too, and its failure is the one reported.
    }
  }

  function schedule(): void {
    if (scheduled || failing || stopped) return;
    scheduled = true;
    const since = cadence.monotonic() - lastWrite;
    if (lastWriteCreations >= BUSY_CREATIONS && since < COMMIT_GAP_MS) cadence.setTimeout(flushBusy, COMMIT_GAP_MS - since);
    else setImmediate(flushBusy);
  }

  /** The scheduled write of a busy store: forgotten rows only once a batch is due. */
  function flushBusy(): void {
    flushQuietly(true);
  }

  function idle(): boolean {
    return dirty.length === 0 && forgotten.size === 0 && runs.size === 0;
  }

  /** True when only forgotten rows wait: nothing a reader or an acknowledgement depends on. */
  function settled(): boolean {
    return dirty.length === 0 && runs.size === 0;
  }

  /** True when this write must delete the forgotten rows: a batch is due, or a new row reuses a forgotten id. */
  function forgetsDue(): boolean {
    if (forgotten.size >= FORGET_BATCH) return true;
    if (forgotten.size === 0) return false;
    return dirty.some((entry) => !entry.stored.exists && forgottenIds.has(entry.id));
  }

  /**
   * Writes what is pending in one transaction. `batched` (the scheduled write) leaves forgotten
   * rows for a later one (FORGET_BATCH, the next pause, an explicit flush); every other write —
   * reads, close, expiry — takes them too, so that the file holds exactly what memory holds.
   */
  function flush(batched = false): void {
    const forgets = !batched || forgetsDue();
    if (forgets ? idle() : settled()) return;
    // Whoever waits now waits for this write: what they wait for is pending at this moment.
    const told = waiters;
    waiters = [];
    const out: Committed = { events: [], jsons: [] };
    let creations = 0;
    for (const entry of dirty) if (!entry.stored.exists) creations++;
    let whole = true;
    try {
      const gone = options.fileGone?.();
      if (gone) throw Object.assign(new Error(gone), { code: "SQLITE_CANTOPEN_UNLINKED" });
      try {
        if (failing) drain(out);
        writeAll(forgets);
        for (const entry of dirty) committed(entry, out);
        dirty = [];
        if (forgets) {
          forgotten = new Set();
          forgottenIds = new Set();
        }
        runs.clear();
      } catch (error) {
        if (isTransient(error)) throw error;
        whole = false;
        writeApart(out);
      }
    } catch (error) {
      waiters = [...told, ...waiters];
      if (out.events.length > 0) options.onCommit(out);
      // What SQLite did to the files before it failed (a log started over, cut to its limit) is
      // the store's own, not a cut made by something else.
      if ((error as { code?: unknown } | null)?.code !== "SQLITE_CANTOPEN_UNLINKED") options.filesSettled?.();
      throw error;
    }
    pendingEvents = 0;
    failing = false;
    fault = null;
    lastWriteCreations = creations;
    options.filesSettled?.();
    wrote();
    if (whole) options.onWritten?.();
    if (out.events.length > 0) options.onCommit(out);
    for (const waiter of told) waiter.resolve();
  }

  function flushQuietly(batched: boolean): void {
    if (batched) scheduled = false;
    if (stopped) return;
    const before = progress;
    try {
      flush(batched);
      retryMs = RETRY_MS;
    } catch (error) {
      // Said once: a fault the idle look already told (lookAtFiles) is not told again.
      if (!failing && fault?.reason !== (error instanceof Error ? error.message : String(error))) options.onError(error);
      // A try that committed nothing (the disk still full) waits longer each time, up to
      // RETRY_MAX_MS: each one writes up to a part into the log before it fails.
      retryMs = !failing || progress !== before ? RETRY_MS : Math.min(RETRY_MAX_MS, retryMs * 2);
      failing = true;
      fault ??= { reason: error instanceof Error ? error.message : String(error), since: new Date().toISOString() };
      retry ??= setTimeout(() => {
        retry = null;
        emptyLog();
        flushQuietly(false);
      }, retryMs);
      retry.unref?.();
      options.onFailed?.();
    }
  }

  // While nothing is written, the files are looked at all the same: a checkout cleaned under an
  // idle server (`rm -rf .docket`) showed /healthz green until the next write (durability tester,
  // session 49). Said as a fault only: the next write meets it itself and fails as any write does.
  const lookAtFiles = () => {
    if (stopped) return;
    if (fault === null && !failing && options.fileGone !== undefined) {
      const gone = options.fileGone();
      if (gone) {
        fault = { reason: gone, since: new Date().toISOString() };
        options.onError(Object.assign(new Error(gone), { code: "SQLITE_CANTOPEN_UNLINKED" }));
        options.onFailed?.();
      }
    }
    armFileLook();
  };
  const armFileLook = () => {
    if (stopped || options.fileGone === undefined) return;
    (cadence.setTimeout(lookAtFiles, FILE_LOOK_MS) as { unref?: () => void } | null)?.unref?.();
  };
  armFileLook();

  return {
    changed(entry, events) {
      if (!entry.dirty) {
        entry.dirty = true;
        dirty.push(entry);
      }
      pendingEvents += events;
      schedule();
    },
    forget(entry) {
      forgotten.add(entry.order);
      forgottenIds.add(entry.id);
      if (forgotten.size >= FORGET_BATCH) schedule();
    },
    forgetting: (entry) => forgotten.has(entry.order),
    unforget(entry) {
      forgotten.delete(entry.order);
    },
    recordRun(identity) {
      runs.set(identity.run_id, { ...identity });
      schedule();
    },
    pendingRun: (run_id) => runs.get(run_id),
    dropRun: (run_id) => runs.delete(run_id),
    flushIfLarge() {
      if (pendingEvents >= FLUSH_EVENTS && !failing) flushQuietly(true);
    },
    flush: () => flush(false),
    flushQuietly() {
      // Twice at most: an execution failed as unwritable makes one more change, its end.
      for (let i = 0; i < 2 && !failing && !idle(); i++) flushQuietly(false);
    },
    idle,
    durable() {
      // Forgotten rows still in the file take nothing back from anyone: no one waits for them.
      if (settled()) return Promise.resolve();
      if (stopped) return Promise.reject(new Error("The execution store is closed."));
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    // A copy: what a caller does to it (a test matcher, a surface cutting paths out) is not the fault.
    fault: () => (fault === null ? null : { ...fault }),
    stop(error) {
      stopped = true;
      options.logSync?.stop();
      if (retry !== null) clearTimeout(retry);
      if (checkpointTimer !== null) clearTimeout(checkpointTimer);
      if (error === undefined) return;
      const told = waiters;
      waiters = [];
      for (const waiter of told) waiter.reject(error);
    },
  };
}

/**
 * True for a failure of the moment, which a later try of the same write may not meet: the disk
 * full, an I/O error, the file busy or locked, memory short. Anything else (a value too big, a
 * broken constraint, a string JSON cannot make) fails again however often it is tried.
 */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return /^SQLITE_(FULL|IOERR|BUSY|LOCKED|NOMEM|CANTOPEN|PROTOCOL|READONLY)/.test(code);
}
