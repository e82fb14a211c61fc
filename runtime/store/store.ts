import type { Actor, EventDraft, ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionState } from "../execution/state-machine.ts";

/** What the engine (or a report) knows when it creates an execution; becomes `execution.created`. */
export interface NewExecution {
  id: string;
  capability: string;
  /** Already redacted: the store never sees a secret. */
  input: unknown;
  actor: Actor;
  repository: string;
  run_id: string | null;
  session_key: string | null;
  request_id: string;
  trace_id: string;
  cancellable: boolean;
  effect: "read" | "write";
  /** The version of the code that runs it (docs/authoring.md, "Versions"); null when unknown. */
  capability_version?: string | null;
  /**
   * When it was created, as `toISOString` writes it: a reported run's own time (report-ledger.ts),
   * which may be well before its first report reached the server. Absent: now.
   */
  created_at?: string;
}

/** How `append` stamps what it stores. */
export interface AppendOptions {
  /**
   * One timestamp per draft, as `toISOString` writes them: the times a reported run gave its own
   * events (report-ledger.ts). Absent: now, for every draft.
   */
  timestamps?: readonly string[];
}

/** A run identity, kept after the details are gone (docs/protocol.md and docs/architecture.md). */
export interface RunIdentity {
  run_id: string;
  execution_id: string;
  capability: string;
  input_hash: string;
}

export interface ListFilter {
  state?: ExecutionState;
  capability?: string;
  /** At most this many; default 50, at most 500. */
  limit?: number;
  /** Opaque, from a previous page's `next_cursor`. */
  cursor?: string;
}

export type ListPage = {
  /** Newest first, each as a listing shows it (listed-snapshot.ts): its log, steps, diagnostics, input and output kept small. */
  items: ExecutionSnapshot[];
  next_cursor: string | null;
  /** How many executions the store holds in each state (all of them, not just this page). */
  counts: Record<ExecutionState, number>;
}

/** What following an execution's history takes of it (`heads`): no snapshot is built for it. */
export interface ExecutionHead {
  id: string;
  state: ExecutionState;
  last_sequence: number;
  /** First retained sequence; events before it were dropped. */
  retained_from: number;
}

export type HeadsPage = {
  items: ExecutionHead[];
  /** Opaque, like `list`'s (the two take each other's). */
  next_cursor: string | null;
};

/** The most `heads` answers at once. */
export const HEADS_MAX = 1000;

/** A heads page's size: `limit` within 1..HEADS_MAX (1 when not a number), as both stores take it. */
export function headsLimit(limit: number): number {
  return Math.min(HEADS_MAX, Math.max(1, Math.floor(limit) || 1));
}

export type EventsPage = {
  events: ExecutionEvent[];
  /** First retained sequence; events before it were dropped. */
  retained_from: number;
  /** True when events after the cursor were already dropped. */
  truncated: boolean;
  last_sequence: number;
}

/** Who a subscription follows: every execution, or some, each from a cursor. */
export interface SubscribeOptions {
  executions: "all" | string[];
  /** Replay events with a sequence above this (per execution); absent = live only for "all", full history for named ones. */
  after?: number;
  /**
   * Only what is handed to subscribers from now on: no replay, and nothing pending is written
   * first. For a subscriber that already has everything up to this instant — a live connection
   * moving between a shared topic and a subscription of its own — so that what the store hands out
   * while it subscribes (a write its subscribe would otherwise make, the rest of a batch being
   * delivered) reaches it exactly once.
   */
  live?: boolean;
}

export interface Subscription {
  /** Events replayed before live delivery began. */
  replayed: number;
  /** True when a named execution's requested history was already dropped. */
  truncated: boolean;
  /** Named executions that do not exist. */
  missing: string[];
  unsubscribe(): void;
}

/**
 * Thrown by a read of a store whose file turned out damaged (a page SQLite cannot read: the disk,
 * or something else writing into it). The store admits nothing new from then on (its
 * storageFault says so); the message names the file, what SQLite said, and what to do.
 */
export class StoreDamagedError extends Error {
  constructor(readonly path: string, readonly why: string) {
    super(`The execution store ${path} is damaged: SQLite cannot read part of it (${why}), so what it holds there cannot be answered, and it admits nothing new.`);
    this.name = "StoreDamagedError";
  }
}

/** What to do about a damaged store file (StoreDamagedError). */
export function storeDamagedRemedy(path: string): string {
  return `Stop docket serve, then put back a copy of ${path} if there is one, or move it aside (with ${path}-wal and ${path}-shm) to start a new store — sqlite3's .recover may save what is still readable. Restarting alone keeps the damage.`;
}

/**
 * Told when a finished execution whose outcome is unknown, and never settled, is forgotten: the
 * unsettled ones alone outnumbered `executions_retained` (docs/reconciliation.md). Nobody can
 * reconcile it any more, so the server's log says so.
 */
export type ForgotUnsettled = (forgotten: { id: string; capability: string }) => void;

/**
 * Told of each finished execution the store forgot past `executions_retained`: what is kept
 * beside the store for it (its artifacts under `.docket/artifacts/<id>/`) goes with it, since
 * nothing can reach it any more (cockpit tester, session 43).
 */
export type Forgotten = (id: string) => void;

/** Why the store cannot write what it holds right now (disk full, I/O error, a file damaged or removed), and since when. */
export interface StorageFault {
  /** The error's own words, for the server's log and health.report; never a client's answer. */
  reason: string;
  /** ISO timestamp of the first failed write of this run of failures. */
  since: string;
  /** Set when the file was found damaged (StoreDamagedError): waiting never ends it, a person must. */
  damaged?: { path: string };
}

/**
 * Receives each event once, with its JSON when the store made it already (sqlite does, for its
 * file; then every subscriber gets the same string), else undefined: a listener that needs the
 * JSON serializes the event itself, and one that does not costs no serialization.
 */
export type EventListener = (event: ExecutionEvent, json: string | undefined) => void;

/**
 * The execution store (docs/architecture.md): the only holder of execution state. Synchronous, so that
 * subscribe-then-replay has no gap. Lifecycle events (`execution.started`,
 * `execution.cancel_requested`, `execution.completed`) move the state; a move `mayMoveTo` refuses
 * throws IllegalTransitionError and nothing of that call is applied.
 *
 * Durability (docs/durability.md): readers (`get`, `list`, `events`) and subscribers see only what
 * is committed — what a crash cannot take back. `current` is the engine's own view, changes not
 * committed yet included; an answer that acknowledges a change is sent after `durable()`.
 */
export interface ExecutionStore {
  /** Creates the execution in `queued` and appends `execution.created` (sequence 1). */
  create(execution: NewExecution): ExecutionSnapshot;
  /** Numbers, stamps (now, or `options.timestamps`), bounds and applies events; returns them as stored. */
  append(id: string, drafts: EventDraft[], options?: AppendOptions): ExecutionEvent[];
  /** The snapshot as committed; null when the store does not hold it (or nothing of it is committed yet). */
  get(id: string): ExecutionSnapshot | null;
  /** The snapshot as it is now, committed or not: for the engine's decisions, never shown before `durable()`. */
  current(id: string): ExecutionSnapshot | null;
  list(filter?: ListFilter): ListPage;
  /**
   * The executions held, newest first and paged as `list` pages them (same cursors), as committed,
   * with only what following their history takes: a planner of a replay of every execution reads
   * these instead of snapshots, which would be built, copied or read from the file one by one.
   * At most `limit` (1..HEADS_MAX) a page.
   */
  heads(cursor: string | undefined, limit: number): HeadsPage;
  events(id: string, after?: number, limit?: number): EventsPage | null;
  subscribe(options: SubscribeOptions, listener: EventListener): Subscription;
  /** Deletes what can be released of a terminal execution (artifacts are the caller's); identity stays. */
  release(id: string): void;
  findRun(run_id: string): RunIdentity | null;
  /** Records a run identity; false when the identity limit is reached. */
  recordRun(identity: RunIdentity): boolean;
  /** The current write fault, or null while every accepted change can be written (always null in memory). */
  storageFault(): StorageFault | null;
  /**
   * About the bytes of the events held, all executions together, against executions_retained_bytes:
   * a store that holds them in memory answers; one that keeps them on disk (bounded by the storage
   * budget instead) has no such method.
   */
  retainedBytes?(): number;
  /**
   * Calls `listener` after each write that fails for the moment (a full disk: see storageFault),
   * once that fault is set; never in memory. Answers the call that stops listening.
   */
  onStorageFault(listener: () => void): () => void;
  /**
   * Takes back an execution nothing of which is committed yet — a write fault kept its creation
   * out of the file — as though it had never been created: nobody was shown it, and its run
   * identity goes with it. False, and nothing changes, once anything of it is committed, once it
   * has finished, or for an id the store does not hold (always false in memory).
   */
  withdraw(id: string): boolean;
  /**
   * Resolves once every change made before the call is committed (at once in memory); waits out a
   * storage fault; rejects when the store closes first.
   */
  durable(): Promise<void>;
  /**
   * True once the execution's creation, and the run identity recorded before it, are committed
   * (at once in memory): the engine runs its handler no sooner, and no later than it must — a
   * queued execution created several writes ago starts without waiting for the next one.
   */
  creationCommitted(id: string): boolean;
  /**
   * Notes, where a crash must be able to tell (a durable store's file), that `id`'s handler begins
   * now, before its `execution.started` is committed: the next open then ends it as interrupted,
   * never as an execution that did not start. False when that could not be noted: the caller
   * holds the handler and asks again later. True at once in memory.
   */
  starting(id: string): boolean;
  close(): void;
}
