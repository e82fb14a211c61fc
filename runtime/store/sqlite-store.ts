// The durable store's adapter: with its private `_sqlite-*` helpers, the only module that loads
// bun:sqlite (openStoreFile requires it on first use). boot.ts imports it lazily, so `docket run`
// and the Node adapter never do.
import { createdEvent, createStamper, numberEvents } from "./_numbering.ts";
import type { EventDraft, ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { EXECUTION_STATES, isTerminal, type ExecutionState } from "../execution/state-machine.ts";
import type { Limits } from "../execution/limits.ts";
import { StoreDamagedError, storeDamagedRemedy, type AppendOptions, type EventsPage, type ExecutionStore, type ForgotUnsettled, type Forgotten, type HeadsPage, type ListFilter, type ListPage, type NewExecution, type RunIdentity, type StorageFault } from "./store.ts";
import { checkBatch, initialSnapshot } from "./_fold.ts";
import { createFanOut } from "./_fan-out.ts";
import { ForgetOrder } from "./_forget-order.ts";
import { outcomeUnknown } from "../execution/retention.ts";
import { InvalidCursorError, decodeListCursor } from "./list-cursor.ts";
import { newEntry, type Entry } from "./_sqlite-entry.ts";
import { loadEntry, trimLowered } from "./_sqlite-load.ts";
import { asFileError, openStoreFile, startExpiry } from "./_sqlite-open.ts";
import { damageOf } from "./_sqlite-schema.ts";
import type { WriteCadence } from "./_sqlite-writer.ts";
import { committedSnapshot, currentSnapshot, eventsPage, headsPage, listItems, listLimit, liveSnapshot, readerSnapshot, type ReadSource } from "./_sqlite-reads.ts";
import { slimmed, unwritableCompletion } from "./_sqlite-unwritable.ts";
import { recoverUnfinished, type RecoveredExecution } from "./_sqlite-recovery.ts";
import { openStartingJournal, type StartingJournal, type WriteLine } from "./_sqlite-starting.ts";
import { expireFinished } from "./_sqlite-expiry.ts";
import { copySnapshot, keep } from "./_kept-values.ts";
import { eventBytes } from "../execution/event-bytes.ts";
import { RetainedBytes } from "./_retained-bytes.ts";

export { StoreFileError } from "./_sqlite-schema.ts";
export type { RecoveredExecution } from "./_sqlite-recovery.ts";

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /** The database file, created when missing (`<root>/.docket/state.db` for `docket serve`). */
  path: string;
  /** The bounds in force (docs/limits.md). */
  limits: Limits;
  /** Stamps `created_at` and event timestamps, and decides when details expire; default the wall clock. */
  clock?: () => Date;
  /** Told about the first error each subscription's listener throws; default: one line on stderr. */
  onListenerError?: (error: unknown, event: ExecutionEvent) => void;
  /** Told when an unsettled unknown outcome is forgotten (store.ts). */
  onForgotUnsettled?: ForgotUnsettled;
  /** Told of each execution forgotten past the retention bounds, once the file no longer holds it (store.ts, Forgotten). */
  onForgotten?: Forgotten;
  /** Told when writing to the file fails (the write is retried); default: one line on stderr. */
  onPersistError?: (error: unknown) => void;
  /** Told when an execution's changes could not be written at all and it was failed instead; default: one line on stderr. */
  onUnwritable?: (id: string, error: unknown) => void;
  /**
   * A snapshot whose JSON is longer is not written, and its execution fails as unwritable (see
   * docs/durability.md); default 256 Mi characters, well below what SQLite and a string can hold.
   */
  maxSnapshotChars?: number;
  /**
   * Hands events to subscribers as soon as they are stored instead of once committed: the store
   * as it was before docs/durability.md, kept only so that bench/ can measure the difference.
   */
  publishBeforeCommit?: boolean;
  /** Time for when a busy store writes and a quiet one checkpoints (_sqlite-writer.ts); default the system clock. */
  cadence?: WriteCadence;
  /** How the start journal writes its lines (_sqlite-starting.ts); default `writeSync` — tests give one that fails. */
  journalWrite?: WriteLine;
  /** How often expired details are looked for after the check on open; default an hour. */
  expiryIntervalMs?: number;
  /** Whether an execution's artifact folder still holds files (they keep its details); default: never. */
  artifactsHeld?: (id: string) => boolean;
}

/** The durable execution store: an ExecutionStore, plus what only a file-backed one has. */
export interface SqliteExecutionStore extends ExecutionStore {
  readonly path: string;
  /** The executions open found unfinished and ended (docs/architecture.md), oldest first. */
  readonly recovered: readonly RecoveredExecution[];
  /** Writes everything pending now; otherwise it is written once per tick, and by close. */
  flush(): void;
  /** Drops the details of executions finished more than `details_retention_ms` ago; answers how many. */
  expireDetails(): number;
  /** Bytes the file's data takes: its pages in use (pages freed by expiry or forgetting are reused, so they do not count). */
  storedBytes(): number;
}

function zeroCounts(): Record<ExecutionState, number> {
  return Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<ExecutionState, number>;
}

/**
 * The SQLite execution store (docs/architecture.md): bounded as docs/limits.md says, like the memory store, and durable.
 *
 * Memory holds the hot state — every execution's position, state and counters, the live snapshot
 * of each unfinished one, and the events appended since the last write — so that appends and
 * reads stay synchronous and subscribe-then-replay has no gap. The file is the durable copy,
 * written behind (see createWriteBehind): what one tick appended is written in one transaction.
 * Reads never wait for a write: an event is read from memory until it is written, and from the
 * file afterwards. `list` writes what is pending first, then lets the file's indexes answer.
 *
 * On open, executions the file holds unfinished are ended (see recoverUnfinished), and details
 * older than `details_retention_ms` expire; expiry runs again every `expiryIntervalMs`.
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteExecutionStore {
  const { limits, path } = options;
  const clock = options.clock ?? (() => new Date());
  const reportPersistError =
    options.onPersistError ?? ((error: unknown) => console.error(`docket: could not write the execution store ${path} (${error instanceof Error ? error.message : String(error)}); retrying`));
  const reportUnwritable =
    options.onUnwritable ?? ((id: string, error: unknown) => console.error(`docket: execution ${id} could not be written to ${path} (${error instanceof Error ? error.message : String(error)}); it was failed instead, and the other executions go on`));
  const early = options.publishBeforeCommit === true;
  // Handlers handed to a worker before their start is committed: read once, by the recovery below.
  let starting: StartingJournal | null = null;
  let noteFault: StorageFault | null = null;
  // Set by the first read that found the file damaged (readingFile): it stays until a restart.
  let damaged: StorageFault | null = null;
  const faultListeners = new Set<() => void>();
  const { db, tables, writer, logCut, fileGone, filesSettled } = openStoreFile({
    path,
    limits,
    onPersistError: reportPersistError,
    maxSnapshotChars: options.maxSnapshotChars ?? 256 * 1024 * 1024,
    cadence: options.cadence,
    // Subscribers hear of events once a crash can no longer take them back.
    onCommit: (committed) => {
      if (!early) fanOut.publish(committed.events, committed.jsons);
    },
    onUnwritable: (entry, error) => failUnwritable(entry, error),
    onWritten: () => {
      starting?.settled();
      sweep();
      // The ends a creation's forgetting waited for are written: it goes on (see evict).
      if (evictWaiting) {
        evictWaiting = false;
        evict();
      }
    },
    onFailed: () => {
      for (const listener of [...faultListeners]) listener();
    },
    // A backlog written in parts after a fault rewrites this when it drops what it was folded from.
    committedSnapshot: (entry) => committedSnapshot(source, entry),
  });
  const entries = new Map<string, Entry>();
  const source: ReadSource = { path, tables, entries, limits };
  const counts = zeroCounts();
  // Terminal executions, in the order they are forgotten past executions_retained.
  const finished = new ForgetOrder<Entry>((entry) => entry.rank);
  // Executions held against executions_retained: `entries` less the forgotten ones it still holds.
  let held = 0;
  // Forgotten executions whose rows the file may still hold, in the order they were forgotten:
  // they stay in `entries`, readable, until their deletion is committed (see evict).
  const forgetting: Entry[] = [];
  // An eviction stopped at an execution whose end was not written yet: the next write resumes it.
  let evictWaiting = false;
  let nextOrder = 1;
  let runCount = 0;
  let expiryTimer: ReturnType<typeof setInterval> | null = null;
  let closed = false;
  const stamp = createStamper(clock);
  const recovered: RecoveredExecution[] = [];
  // The sizes of the retained events of each unfinished execution, against events_retained_bytes;
  // a finished one takes no more events and lets go of its sizes.
  const retainedBytes = new Map<string, RetainedBytes>();

  // A subscription replays what is committed (without writing first), then hears each commit.
  const fanOut = createFanOut({
    history: {
      events: (id, after, limit) => {
        sweep();
        return eventsPage(source, { id, after, limit });
      },
      ids: () => {
        sweep();
        return entries.keys();
      },
    },
    onListenerError: options.onListenerError,
  });

  function open(): void {
    if (closed) throw new Error("The execution store is closed; create a new one to keep working.");
  }

  /**
   * Lets go of the forgotten executions whose deletion is committed. The writer deletes every
   * forgotten row it was told of in one write, so those are the first ones forgotten.
   */
  function sweep(): void {
    while (forgetting.length > 0 && !writer.forgetting(forgetting[0]!)) {
      const entry = forgetting.shift()!;
      // Its id may have been created again meanwhile: that one stays, and so do its artifacts.
      if (entries.get(entry.id) === entry) {
        entries.delete(entry.id);
        options.onForgotten?.(entry.id);
      }
    }
  }

  /** The execution held under `id`, a forgotten one included until its deletion is committed. */
  function lookup(id: string): Entry | undefined {
    sweep();
    return entries.get(id);
  }

  function entryOf(id: string, action: string): Entry {
    const entry = lookup(id);
    if (entry === undefined) throw new Error(`Cannot ${action} execution ${id}: the store does not hold it (never created here, or forgotten after finishing; executions_retained is ${limits.executions_retained}).`);
    return entry;
  }

  /** `unsettled`: a finished execution whose outcome is unknown and not reconciled (as loaded). */
  function register(entry: Entry, unsettled = false): Entry {
    entries.set(entry.id, entry);
    held++;
    counts[entry.state]++;
    if (isTerminal(entry.state)) finished.finished(entry, unsettled);
    return entry;
  }

  /**
   * A forgotten execution whose deletion is not committed is held again (a withdrawn creation
   * forgot it, or a reconciliation reached it): it was never gone for anyone.
   */
  function unforget(entry: Entry, snapshot: ExecutionSnapshot): void {
    forgetting.splice(forgetting.indexOf(entry), 1);
    writer.unforget(entry);
    entry.forgotten = false;
    held++;
    counts[entry.state]++;
    finished.finished(entry, outcomeUnknown(snapshot));
  }

  /**
   * Forgets finished executions, oldest first, until within the bound or none may go (ForgetOrder).
   * One whose end is not written yet waits for the write (evict runs again after each): forgotten
   * before, it was gone for its readers while the file still held it running, and a crash then
   * brought it back ended as interrupted, its end lost (docs/durability.md). Memory stays bounded:
   * the wait is one write long, and while writes fail nothing new is admitted to add to it.
   *
   * A forgotten execution stays readable, to readers and to the engine alike, until the deletion
   * of its row is committed (see sweep): told it is gone while the file still held it (a 404, a
   * cancel's not_found, a run_id retry without its state), a client saw it come back after a
   * crash. `exempt` ones are not forgotten now (those a restart just ended: see open).
   */
  function evict(exempt?: ReadonlySet<Entry>): void {
    while (held > limits.executions_retained) {
      const unsettledBefore = finished.unsettledCount;
      const entry = finished.next(limits.executions_retained, (e) => exempt?.has(e) === true || endPending(e));
      if (entry === undefined) return;
      // Failed as unwritable, an entry may be in the heap twice (see failUnwritable).
      if (entry.forgotten || !isTerminal(entry.state)) continue;
      if (finished.unsettledCount < unsettledBefore) options.onForgotUnsettled?.({ id: entry.id, capability: entry.capability });
      entry.forgotten = true;
      held--;
      counts[entry.state]--;
      forgetting.push(entry);
      writer.forget(entry);
    }
  }

  /** True for a finished execution whose end (or reconciliation) the file does not hold yet: eviction waits for the write. */
  function endPending(entry: Entry): boolean {
    const pending = entry.dirty && !entry.forgotten && isTerminal(entry.state);
    if (pending) evictWaiting = true;
    return pending;
  }

  function create(execution: NewExecution): ExecutionSnapshot {
    open();
    const existing = lookup(execution.id);
    if (existing !== undefined && !existing.forgotten) throw new Error(`Cannot create execution ${execution.id}: the store already holds an execution with this id.`);
    // A forgotten one of that id whose row is not deleted yet: the new one takes the id (and goes
    // last in `entries`, which keeps creation order); the writer deletes the old row first.
    if (existing !== undefined) entries.delete(execution.id);
    const created_at = execution.created_at ?? stamp();
    const snapshot = initialSnapshot({ ...execution, input: keep(execution.input), actor: keep(execution.actor) }, created_at);
    const event = createdEvent(execution, snapshot);
    const entry = register(newEntry({ id: execution.id, order: nextOrder++, capability: execution.capability, state: "queued", snapshot, lastSequence: 1, retainedFrom: 1 }));
    entry.pending.add(event);
    const sizes = new RetainedBytes(limits.events_retained_bytes);
    sizes.add(eventBytes(event), 1);
    retainedBytes.set(entry.id, sizes);
    writer.changed(entry, 1);
    evict();
    if (early) fanOut.publish([event]);
    writer.flushIfLarge();
    return copySnapshot(snapshot);
  }

  function append(id: string, drafts: EventDraft[], options?: AppendOptions): ExecutionEvent[] {
    open();
    const entry = entryOf(id, "append to");
    // A finished execution has no live snapshot; checkBatch refuses any event for it all the same.
    const snapshot = entry.snapshot ?? currentSnapshot(source, entry);
    const before = entry.state;
    // Everything that can throw (a refused move, a value JSON cannot hold) runs before anything
    // is applied: a refused call leaves no trace.
    checkBatch(snapshot, drafts);
    if (drafts.length === 0) return [];
    // Forgotten, its deletion not committed: a reconciliation keeps it (see unforget).
    if (entry.forgotten) unforget(entry, snapshot);
    const wasUnsettled = finished.isUnsettled(entry);
    // Only a reconciliation reaches a finished execution: its snapshot is live again until written.
    if (entry.snapshot === null) entry.snapshot = snapshot;
    let sizes = retainedBytes.get(id);
    if (sizes === undefined) retainedBytes.set(id, (sizes = new RetainedBytes(limits.events_retained_bytes, entry.retainedFrom, entry.lastSequence + 1)));
    let retainedFrom = entry.retainedFrom;
    const stored = numberEvents(id, snapshot, drafts, options?.timestamps ?? stamp(), limits, (event) => {
      entry.pending.add(event);
      retainedFrom = sizes.add(eventBytes(event), event.sequence - limits.events_retained + 1);
    });
    entry.lastSequence = snapshot.last_sequence;
    entry.retainedFrom = Math.max(entry.retainedFrom, retainedFrom);
    // While the file takes nothing, what retention dropped is let go now, not when it can be
    // written: a flood during a full disk held every event of it (1.3 M events, 1.7 GB). Otherwise
    // it is written and handed to the subscribers first, so that a live follower misses nothing.
    if (writer.fault() !== null) entry.pending.dropBefore(entry.retainedFrom);
    snapshot.retained_from = entry.retainedFrom;
    snapshot.truncated = entry.retainedFrom > 1;
    if (snapshot.state !== before) {
      counts[before]--;
      counts[snapshot.state]++;
      entry.state = snapshot.state;
      if (isTerminal(snapshot.state)) finished.finished(entry, outcomeUnknown(snapshot));
    } else if (wasUnsettled && !outcomeUnknown(snapshot)) finished.settled(entry);
    // A finished execution takes few events more (a reconciliation): its sizes are let go after each.
    if (isTerminal(entry.state)) retainedBytes.delete(id);
    writer.changed(entry, stored.length);
    if (early) fanOut.publish(stored);
    writer.flushIfLarge();
    return stored;
  }

  /**
   * An execution whose changes the file refuses whatever the moment (see createWriteBehind): what
   * was not written is taken back — nobody saw it, readers and subscribers see only what is
   * committed — and the execution ends `failed` (`internal`, stage `complete`) from its committed
   * state. One never written at all starts again from its `execution.created`.
   */
  function failUnwritable(entry: Entry, error: unknown): void {
    reportUnwritable(entry.id, error);
    const live = entry.snapshot ?? currentSnapshot(source, entry);
    const committed = entry.stored.exists ? committedSnapshot(source, entry) : initialSnapshot(live, live.created_at);
    // Failed once and refused again: it stays as committed (running, for the next start to
    // recover as interrupted) rather than be tried forever.
    const gaveUp = entry.unwritable;
    entry.unwritable = true;
    const snapshot = gaveUp ? committed : slimmed(committed);
    counts[entry.state]--;
    entry.state = snapshot.state;
    counts[entry.state]++;
    entry.snapshot = snapshot;
    entry.lastSequence = snapshot.last_sequence;
    entry.retainedFrom = entry.stored.exists ? entry.stored.retainedFrom : 1;
    if (gaveUp) return;
    if (!entry.stored.exists) {
      entry.pending.add(createdEvent(live, snapshot));
      writer.changed(entry, 1);
    }
    if (isTerminal(entry.state)) return;
    try {
      append(entry.id, unwritableCompletion(snapshot, error));
    } catch (again) {
      reportPersistError(again);
    }
  }

  /** See ExecutionStore.withdraw: a creation the file never took, taken back whole. */
  function withdraw(id: string): boolean {
    open();
    const entry = lookup(id);
    if (entry === undefined || entry.forgotten || entry.stored.exists || isTerminal(entry.state) || early) return false;
    // Still in the writer's batch: a forgotten entry is skipped by every write (see _sqlite-writer.ts).
    entry.forgotten = true;
    entries.delete(id);
    held--;
    counts[entry.state]--;
    retainedBytes.delete(id);
    const run_id = entry.snapshot?.run_id ?? null;
    if (run_id !== null && writer.pendingRun(run_id)?.execution_id === id && writer.dropRun(run_id)) runCount--;
    // What its creation forgot and the file still holds is held again, newest first: a creation
    // taken back forgets nothing.
    for (let i = forgetting.length - 1; i >= 0 && held < limits.executions_retained; i--) {
      const forgotten = forgetting[i]!;
      if (!writer.forgetting(forgotten)) break;
      if (entries.get(forgotten.id) === forgotten) unforget(forgotten, currentSnapshot(source, forgotten));
    }
    return true;
  }

  function get(id: string): ExecutionSnapshot | null {
    open();
    // A read is served what is committed: pending changes are written first, when the file takes
    // them — forgotten rows too, before an execution is answered as gone.
    writer.flushQuietly();
    const entry = lookup(id);
    return entry === undefined ? null : readingFile(() => readerSnapshot(source, entry));
  }

  function current(id: string): ExecutionSnapshot | null {
    open();
    const entry = lookup(id);
    return entry === undefined ? null : liveSnapshot(source, entry);
  }

  /** The creation position a cursor names; a position never given out is as bad as garbage. */
  function cursorOrder(cursor: string): number {
    const order = decodeListCursor(cursor);
    if (order >= nextOrder) throw new InvalidCursorError(cursor);
    return order;
  }

  function list(filter: ListFilter = {}): ListPage {
    open();
    const limit = listLimit(filter.limit);
    const before = filter.cursor === undefined ? nextOrder : cursorOrder(filter.cursor);
    // The file's indexes answer, and readers see what is committed: pending changes go first.
    writer.flushQuietly();
    sweep();
    return readingFile(() => {
      const { items, next_cursor } = listItems(source, { before, state: filter.state, capability: filter.capability, limit });
      return { items, next_cursor, counts: writer.idle() ? { ...counts } : { ...zeroCounts(), ...tables.countStates() } };
    });
  }

  function heads(cursor: string | undefined, limit: number): HeadsPage {
    open();
    const before = cursor === undefined ? nextOrder : cursorOrder(cursor);
    writer.flushQuietly();
    sweep();
    return readingFile(() => headsPage(source, before, limit));
  }

  function events(id: string, after?: number, limit?: number): EventsPage | null {
    open();
    writer.flushQuietly();
    sweep();
    return readingFile(() => eventsPage(source, { id, after, limit }));
  }

  /**
   * A read of the file; a file found damaged there (SQLITE_CORRUPT, SQLITE_NOTADB, an I/O error)
   * becomes the store's fault — health red, nothing new admitted — and a StoreDamagedError that
   * says so, not an error a client would read as a bug.
   */
  function readingFile<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      const why = damageOf(error);
      if (why === null) throw error;
      const damage = new StoreDamagedError(path, why);
      damaged ??= { reason: `${damage.message} ${storeDamagedRemedy(path)}`, since: clock().toISOString(), damaged: { path } };
      throw damage;
    }
  }

  function release(id: string): void {
    open();
    const entry = entryOf(id, "release");
    // Artifacts are the caller's; details go by expiry. The check keeps the contract of both stores.
    if (!isTerminal(entry.state)) throw new Error(`Cannot release execution ${id}: it is ${entry.state}; release is allowed once it has finished.`);
  }

  function findRun(run_id: string): RunIdentity | null {
    open();
    const identity = writer.pendingRun(run_id);
    return identity !== undefined ? { ...identity } : readingFile(() => tables.readRun(run_id));
  }

  function recordRun(identity: RunIdentity): boolean {
    open();
    // An identity never changes once recorded: the first one stands.
    if (findRun(identity.run_id) !== null) return true;
    if (runCount >= limits.run_identities) return false;
    runCount++;
    writer.recordRun(identity);
    return true;
  }

  function expireDetails(): number {
    open();
    writer.flush();
    // A store that cannot write expires nothing either: its own transaction would write into a
    // log cut under it, which a stop then copied into the file (checking tester, session 49).
    if (writer.fault() !== null || fileGone() !== null) return 0;
    sweep();
    const cutoff = new Date(clock().getTime() - limits.details_retention_ms).toISOString();
    const expired = expireFinished(db, tables, entries, cutoff, options.artifactsHeld ?? (() => false));
    filesSettled();
    return expired;
  }

  /**
   * A start noted (see _sqlite-starting.ts). A note refused is a fault like a failed write (a disk
   * too full for one line, which SQLite may not feel yet): reported once, refusing admissions and
   * in health until a note is taken again.
   */
  function noteStart(id: string): boolean {
    if (starting!.note(id)) {
      noteFault = null;
      return true;
    }
    if (noteFault === null) {
      // Not damage: the store's file is whole, and starts go on by themselves once a line can be
      // written (a disk with room again, a link put in its place removed). Marked damaged, a start
      // was told to move state.db aside, losing its history (checking tester, session 45).
      noteFault = { reason: `cannot note a start in ${path}-starting (the disk may be full, or the file was removed and cannot be made again); starts wait until it can`, since: clock().toISOString() };
      reportPersistError(new Error(noteFault.reason));
    }
    return false;
  }

  /** The fault of refused notes, until one can be written again (tried here: nobody may be left to note). */
  function noteFaultNow(): StorageFault | null {
    if (noteFault !== null && starting!.writable()) noteFault = null;
    return noteFault;
  }

  function close(): void {
    if (closed) return;
    closed = true;
    if (expiryTimer !== null) clearInterval(expiryTimer);
    let failure: unknown = null;
    try {
      writer.flush();
    } catch (error) {
      failure = error;
    }
    writer.stop(new Error(`The execution store ${path} closed before it could write this.`));
    fanOut.close();
    starting?.close();
    // A log cut in place by something else is not copied into the file (its missing frames would
    // be pages of zeros): the connection is left open, and the process's end lets the file go as
    // its last checkpoint left it; a restart reads no such log (_sqlite-file-identity.ts).
    if (!logCut()) {
      try {
        // Finalizes the statements and closes at once; the last connection checkpoints the log.
        db.close(true);
      } catch {
        db.close(false);
      }
    }
    // What it could not write was never acknowledged to anyone (an answer waits for its write): said so, not only that it is lost.
    if (failure !== null) throw new Error(`The execution store ${path} could not write its last changes before closing (${failure instanceof Error ? failure.message : String(failure)}); what was appended since its last write — never acknowledged to any client — is lost.`);
  }

  try {
    starting = openStartingJournal(path, options.journalWrite);
    const lowered: Entry[] = [];
    const unfinished: Entry[] = [];
    for (const row of tables.rows()) {
      const entry = register(loadEntry(row, tables, limits), row.unsettled === 1);
      if (entry.snapshot === null && entry.retainedFrom > entry.stored.retainedFrom) lowered.push(entry);
      if (!isTerminal(entry.state)) unfinished.push(entry);
      nextOrder = row.ord + 1;
    }
    runCount = tables.runCount();
    trimLowered(db, tables, lowered, unfinished);
    // What a restart ends, it ends now: forgotten after every execution that had finished before,
    // and never in this open, before anyone could read how it ended (docs/durability.md).
    unfinished.forEach((entry, i) => (entry.rank = nextOrder - 1 + (i + 1) / (unfinished.length + 1)));
    const begun = starting.left((id) => entries.get(id)?.state === "queued");
    recovered.push(...recoverUnfinished({ append, events }, entries.values(), begun));
    // A lowered executions_retained applies at once, but to what the restart ended.
    evict(new Set(recovered.map((r) => entries.get(r.id)!)));
    writer.flush();
    sweep();
    // What it noted is recovered and committed: the notes of the next run start afresh.
    starting.empty();
    expireDetails();
  } catch (error) {
    closed = true;
    writer.stop(new Error(`The execution store ${path} could not be opened.`));
    fanOut.close();
    starting?.close();
    // Its statements finalized too: else the connection, and its lock on the file, outlive the failure.
    try {
      db.close(true);
    } catch {
      db.close(false);
    }
    throw asFileError(path, error);
  }
  expiryTimer = startExpiry(expireDetails, { everyMs: options.expiryIntervalMs, limits, onError: reportPersistError });

  return {
    path,
    recovered,
    create,
    append,
    get,
    current,
    list,
    heads,
    events,
    subscribe: (subscribeOptions, listener) => {
      open();
      // The replay is what is committed: pending changes are written first, when the file takes them.
      // A live subscription replays nothing, and gets pending changes as they commit.
      if (!subscribeOptions.live) writer.flushQuietly();
      return fanOut.subscribe(subscribeOptions, listener);
    },
    release,
    findRun,
    recordRun,
    flush: () => {
      open();
      writer.flush();
    },
    expireDetails,
    storedBytes: () => {
      open();
      const pragma = (name: string) => (db.query(`PRAGMA ${name}`).get() as Record<string, number>)[name]!;
      return (pragma("page_count") - pragma("freelist_count")) * pragma("page_size");
    },
    storageFault: () => writer.fault() ?? damaged ?? noteFaultNow(),
    onStorageFault: (listener) => {
      faultListeners.add(listener);
      return () => faultListeners.delete(listener);
    },
    withdraw,
    durable: () => {
      open();
      return writer.durable();
    },
    // Written with its run identity (the engine records it first, in the same tick): see _sqlite-writer.ts.
    creationCommitted: (id) => lookup(id)?.stored.exists === true,
    starting: noteStart,
    close,
  };
}
