import type { ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionState } from "../execution/state-machine.ts";
import type { EventsPage, ListPage } from "./store.ts";
import { copySnapshot } from "./_kept-values.ts";
import { encodeListCursor } from "./list-cursor.ts";
import type { Entry } from "./_sqlite-entry.ts";
import { StoreFileError } from "./_sqlite-schema.ts";
import type { StoreTables } from "./_sqlite-tables.ts";

const LIST_DEFAULT = 50;
const LIST_MAX = 500;
const EVENTS_MAX = 1000;

/**
 * Where the sqlite store's reads look: memory's entries first, and the file for what memory no
 * longer holds (a finished execution's snapshot, events written since they were appended).
 */
export interface ReadSource {
  /** The file, for the error when a row vanished under the store. */
  path: string;
  tables: StoreTables;
  entries: ReadonlyMap<string, Entry>;
}

/** The snapshot as it is now: the live one, or the file's for a finished execution. */
export function currentSnapshot(source: ReadSource, entry: Entry): ExecutionSnapshot {
  if (entry.snapshot !== null) return entry.snapshot;
  const snapshot = source.tables.readSnapshot<ExecutionSnapshot>(entry.id);
  if (snapshot === null) throw new StoreFileError(source.path, `the row of execution ${entry.id} disappeared while the store was open (another program changed the file)`);
  // Retention may have been lowered since it was written.
  snapshot.retained_from = entry.retainedFrom;
  snapshot.truncated = entry.retainedFrom > 1;
  return snapshot;
}

/** A copy for a reader: of the live snapshot, or a fresh parse of the file's. */
export function readerSnapshot(source: ReadSource, entry: Entry): ExecutionSnapshot {
  return entry.snapshot !== null ? copySnapshot(entry.snapshot) : currentSnapshot(source, entry);
}

/** A list page's size: `limit` within 1..LIST_MAX, LIST_DEFAULT when not a number. */
export function listLimit(limit: number | undefined): number {
  return Math.min(LIST_MAX, Math.max(1, Math.floor(limit ?? LIST_DEFAULT) || LIST_DEFAULT));
}

/** Which executions a list page holds; `limit` is already within bounds (see listLimit). */
export interface ListItemsQuery {
  /** Only executions created before this position. */
  before: number;
  state?: ExecutionState;
  capability?: string;
  limit: number;
}

/**
 * A list page without its counts: the file's indexes choose the rows, memory's entries give the
 * snapshots. The caller writes what is pending first, so that the file holds what memory holds.
 */
export function listItems(source: ReadSource, query: ListItemsQuery): Pick<ListPage, "items" | "next_cursor"> {
  const { limit } = query;
  const rows = source.tables.list({ before: query.before, state: query.state, capability: query.capability, limit: limit + 1 });
  const items: ExecutionSnapshot[] = [];
  for (const row of rows.slice(0, limit)) {
    const entry = source.entries.get(row.id);
    if (entry !== undefined) items.push(readerSnapshot(source, entry));
  }
  return { items, next_cursor: rows.length > limit ? encodeListCursor(rows[limit - 1]!.ord) : null };
}

/** Which events of which execution an events page holds (ExecutionStore.events). */
export interface EventsQuery {
  id: string;
  after?: number;
  limit?: number;
}

/** An events page; null when the store does not hold the execution. */
export function eventsPage(source: ReadSource, query: EventsQuery): EventsPage | null {
  const { id, after = 0, limit = EVENTS_MAX } = query;
  const entry = source.entries.get(id);
  if (entry === undefined) return null;
  const from = Math.max(0, Math.floor(after) || 0);
  const count = Math.min(EVENTS_MAX, Math.max(1, Math.floor(limit) || EVENTS_MAX));
  const first = Math.max(from + 1, entry.retainedFrom);
  const last = Math.min(entry.lastSequence, first + count - 1);
  const out: ExecutionEvent[] = [];
  if (first <= last) {
    // Written events come from the file, the rest from memory: together they are dense.
    const pending = entry.pending;
    const pendingFirst = pending.first;
    if (first < pendingFirst) source.tables.readEvents(id, first, Math.min(last, pendingFirst - 1), out);
    for (let s = Math.max(first, pendingFirst); s <= last; s++) out.push(pending.events[s - pendingFirst]!);
  }
  return { events: out, retained_from: entry.retainedFrom, truncated: from + 1 < entry.retainedFrom, last_sequence: entry.lastSequence };
}
