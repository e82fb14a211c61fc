import type { Database } from "bun:sqlite";
import type { ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { isTerminal } from "../execution/state-machine.ts";
import type { Limits } from "../execution/limits.ts";
import { foldEvent } from "./_fold.ts";
import { deepFreeze } from "./_kept-values.ts";
import { newEntry, type Entry } from "./_sqlite-entry.ts";
import type { ExecutionRow, StoreTables } from "./_sqlite-tables.ts";

/**
 * The entry of one row of the file, as open finds it. A finished execution is loaded without its
 * snapshot (read from the file when asked for); an unfinished one gets its snapshot with the events
 * written after it folded back in, so it is what memory held at the last write. A lowered
 * events_retained moves `retainedFrom` (the caller deletes the rows).
 */
export function loadEntry(row: ExecutionRow, tables: StoreTables, limits: Limits): Entry {
  const retainedFrom = Math.max(row.retained_from, row.last_sequence - limits.events_retained + 1);
  const fields = { id: row.id, order: row.ord, capability: row.capability, state: row.state, lastSequence: row.last_sequence, retainedFrom };
  if (isTerminal(row.state)) {
    const entry = newEntry({ ...fields, snapshot: null });
    entry.finishedAt = row.details_expired === 0 ? row.finished_at : null;
    entry.stored = { exists: true, state: row.state, lastSequence: row.last_sequence, snapshotSequence: row.last_sequence, retainedFrom: row.retained_from, headLast: row.head_last, headBytes: row.head_bytes };
    return entry;
  }
  const snapshot = tables.readSnapshot<ExecutionSnapshot>(row.ord);
  if (snapshot === null) throw new Error(`the row of execution ${row.id} has no snapshot`);
  const snapshotSequence = snapshot.last_sequence;
  const later: ExecutionEvent[] = [];
  tables.readEvents(row.ord, row.id, snapshotSequence + 1, row.last_sequence, later);
  for (const event of later) foldEvent(snapshot, event, limits);
  snapshot.last_sequence = row.last_sequence;
  snapshot.retained_from = retainedFrom;
  snapshot.truncated = retainedFrom > 1;
  // Kept frozen, as a new execution's are: reads share them instead of copying.
  deepFreeze(snapshot.input);
  deepFreeze(snapshot.actor);
  const entry = newEntry({ ...fields, state: snapshot.state, snapshot });
  entry.stored = { exists: true, state: row.state, lastSequence: row.last_sequence, snapshotSequence, retainedFrom: row.retained_from, headLast: row.head_last, headBytes: row.head_bytes };
  return entry;
}

/**
 * Deletes, in one transaction, the events of loaded entries that a lowered events_retained no
 * longer keeps, and those an unfinished one's row never committed: parts of a backlog written
 * after a storage fault (see Entry.partsLast) when a crash came before the row's own write.
 */
export function trimLowered(db: Database, tables: StoreTables, entries: readonly Entry[], unfinished: readonly Entry[] = []): void {
  db.transaction(() => {
    for (const entry of unfinished) tables.dropPartsBetween(entry.order, entry.stored.lastSequence, Number.MAX_SAFE_INTEGER);
    for (const entry of entries) {
      tables.dropEventsBelow(entry.order, entry.retainedFrom);
      tables.writeExecution({ ord: entry.order, id: entry.id, capability: entry.capability, state: entry.state, finished_at: null, last_sequence: entry.lastSequence, retained_from: entry.retainedFrom, snapshot: null, head: null, head_last: entry.stored.headLast }, false);
      entry.stored.retainedFrom = entry.retainedFrom;
    }
  })();
}
