import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { isTerminal, type ExecutionState } from "../execution/state-machine.ts";
import { PendingEvents } from "./_sqlite-pending.ts";

/** What the sqlite store keeps in memory of one execution; the file holds the rest. */
export interface Entry {
  id: string;
  /** Creation position, from 1: the list order and what a list cursor names. */
  order: number;
  /**
   * Its place in the order finished executions are forgotten in: its creation position, but for
   * one a restart ended, which comes after every execution that had finished before (see open in
   * sqlite-store.ts).
   */
  rank: number;
  capability: string;
  state: ExecutionState;
  /** The live snapshot; null for a terminal execution once written (read back from the file). */
  snapshot: ExecutionSnapshot | null;
  lastSequence: number;
  retainedFrom: number;
  /** Events appended since the last write. */
  pending: PendingEvents;
  /** Waiting for the next write. */
  dirty: boolean;
  /**
   * Dropped beyond executions_retained (its row goes with a later write), or taken back by
   * withdraw. A forgotten execution stays readable until the deletion of its row is committed.
   */
  forgotten: boolean;
  /** Its changes were refused by the file once already and it was failed (see failUnwritable). */
  unwritable: boolean;
  /**
   * When it finished, as the file holds it, while its details are kept: what expiry looks at
   * (null while unfinished, and once its details expired).
   */
  finishedAt: string | null;
  /**
   * What the file holds of it — whether the row exists, its state, its last event (the committed
   * watermark readers are served up to), its snapshot's last sequence, its first kept event.
   */
  stored: { exists: boolean; state: ExecutionState | null; lastSequence: number; snapshotSequence: number; retainedFrom: number; headLast: number; headBytes: number };
  /** What the write in progress appends to the row's head (see HEAD_BYTES): made `stored` once it commits. */
  headWrite: { last: number; bytes: number } | null;
  /**
   * The last event the events rows hold past the row's `last_sequence`, 0 when none: a backlog
   * written in parts after a storage fault (see _sqlite-writer.ts, writeParts). Nobody sees them
   * until the row's write commits them; open deletes them when a crash came first.
   */
  partsLast: number;
}

/** An entry not (yet) in the file. */
export function newEntry(fields: Pick<Entry, "id" | "order" | "capability" | "state" | "snapshot" | "lastSequence" | "retainedFrom">): Entry {
  return { ...fields, rank: fields.order, pending: new PendingEvents(), dirty: false, forgotten: false, unwritable: false, finishedAt: null, stored: { exists: false, state: null, lastSequence: 0, snapshotSequence: 0, retainedFrom: 1, headLast: 0, headBytes: 0 }, headWrite: null, partsLast: 0 };
}

/**
 * True when the next write rewrites the snapshot too: a new row, a moved state, or `snapshotEvery`
 * events since the last one. Between those only the counters move, and open folds the events
 * after the written snapshot back in (a running execution's snapshot with a 1,000-line log tail
 * is too large to rewrite every tick).
 */
export function needsSnapshot(entry: Entry, snapshotEvery: number): boolean {
  // A finished execution's reads come from its written snapshot alone, so anything that changes
  // it after completion (its one `execution.reconciled`) rewrites it whole.
  if (isTerminal(entry.state) && entry.lastSequence !== entry.stored.snapshotSequence) return true;
  // Events after the written snapshot that this write drops (events_retained_bytes can drop them
  // before snapshotEvery comes): open would have nothing to fold them back in from.
  if (entry.retainedFrom > entry.stored.snapshotSequence + 1) return true;
  return !entry.stored.exists || entry.state !== entry.stored.state || entry.lastSequence - entry.stored.snapshotSequence >= snapshotEvery;
}
