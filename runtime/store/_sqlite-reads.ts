import { jsonWithin, listedSnapshot } from "./listed-snapshot.ts";
import type { ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionState } from "../execution/state-machine.ts";
import { headsLimit, type EventsPage, type ExecutionHead, type HeadsPage, type ListPage } from "./store.ts";
import { copySnapshot } from "./_kept-values.ts";
import { encodeListCursor } from "./list-cursor.ts";
import type { Entry } from "./_sqlite-entry.ts";
import type { Limits } from "../execution/limits.ts";
import { foldEvent } from "./_fold.ts";
import { StoreFileError } from "./_sqlite-schema.ts";
import type { StoreTables } from "./_sqlite-tables.ts";

const LIST_DEFAULT = 50;
const LIST_MAX = 500;
const EVENTS_MAX = 1000;

/**
 * Where the sqlite store's reads look: memory's entries first, and the file for what memory no
 * longer holds (a finished execution's snapshot, events written since they were appended).
 * A reader is served what is committed only (docs/durability.md): while an entry has changes not
 * written yet, its snapshot and events come from the file, up to its committed watermark.
 */
export interface ReadSource {
  /** The file, for the error when a row vanished under the store. */
  path: string;
  tables: StoreTables;
  entries: ReadonlyMap<string, Entry>;
  limits: Limits;
}

/** True when the entry has changes the file does not hold yet, which no reader may see. */
function ahead(entry: Entry): boolean {
  return entry.pending.events.length > 0;
}

/** The snapshot as it is now: the live one, or the file's for a finished execution. */
export function currentSnapshot(source: ReadSource, entry: Entry): ExecutionSnapshot {
  if (entry.snapshot !== null) return entry.snapshot;
  const snapshot = source.tables.readSnapshot<ExecutionSnapshot>(entry.order);
  if (snapshot === null) throw new StoreFileError(source.path, `the row of execution ${entry.id} disappeared while the store was open (another program changed the file)`);
  // Retention may have been lowered since it was written.
  snapshot.retained_from = entry.retainedFrom;
  snapshot.truncated = entry.retainedFrom > 1;
  return snapshot;
}

/** A copy of the snapshot as it is now, committed or not: for the engine's own decisions. */
export function liveSnapshot(source: ReadSource, entry: Entry): ExecutionSnapshot {
  return entry.snapshot !== null ? copySnapshot(entry.snapshot) : currentSnapshot(source, entry);
}

/**
 * The snapshot a reader may see: as committed (the live one when nothing is pending, else the
 * file's with the written events after it folded in); null when nothing of it is committed yet.
 */
export function readerSnapshot(source: ReadSource, entry: Entry): ExecutionSnapshot | null {
  if (!entry.stored.exists) return null;
  return ahead(entry) ? committedSnapshot(source, entry) : liveSnapshot(source, entry);
}

/** What the file holds of an entry's snapshot: its written snapshot, with the written events after it folded in. */
export function committedSnapshot(source: ReadSource, entry: Entry): ExecutionSnapshot {
  const snapshot = source.tables.readSnapshot<ExecutionSnapshot>(entry.order);
  if (snapshot === null) throw new StoreFileError(source.path, `the row of execution ${entry.id} disappeared while the store was open (another program changed the file)`);
  const { lastSequence, retainedFrom } = entry.stored;
  if (snapshot.last_sequence < lastSequence) {
    const later: ExecutionEvent[] = [];
    source.tables.readEvents(entry.order, entry.id, snapshot.last_sequence + 1, lastSequence, later);
    for (const event of later) foldEvent(snapshot, event, source.limits);
  }
  snapshot.last_sequence = lastSequence;
  snapshot.retained_from = retainedFrom;
  snapshot.truncated = retainedFrom > 1;
  return snapshot;
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
 * A list page without its counts: the file's rows by position when unfiltered, memory's entries
 * (as committed) when filtered; memory's entries give the snapshots. The caller writes what is
 * pending first, so that the file holds what memory holds.
 */
export function listItems(source: ReadSource, query: ListItemsQuery): Pick<ListPage, "items" | "next_cursor"> {
  const { limit } = query;
  const filtered = query.state !== undefined || query.capability !== undefined;
  const rows = filtered ? matchingRows(source.entries, query, limit + 1) : source.tables.list(query.before, limit + 1);
  const items: ExecutionSnapshot[] = [];
  for (const row of rows.slice(0, limit)) {
    const entry = source.entries.get(row.id);
    // A forgotten row the file still holds may share its id with a newer execution: not that one.
    const listed = entry === undefined || entry.order !== row.ord ? null : listedOf(source, entry);
    if (listed !== null) items.push(listed);
  }
  return { items, next_cursor: rows.length > limit ? encodeListCursor(rows[limit - 1]!.ord) : null };
}

/** Listing views of finished executions, kept while what the file holds of them stays the same. */
const listedKept = new WeakMap<Entry, { key: string; listed: ExecutionSnapshot }>();

/**
 * An execution as a listing shows it. A finished one's is kept, when it is small (LISTED_KEPT_CHARS):
 * its snapshot is read from the file and parsed whole — megabytes for one that logged much — and
 * a listing (the cockpit's, refreshed every few seconds) asks for the same ones again and again.
 */
function listedOf(source: ReadSource, entry: Entry): ExecutionSnapshot | null {
  const finished = entry.snapshot === null && !ahead(entry);
  const key = `${entry.stored.lastSequence}:${entry.stored.retainedFrom}:${entry.finishedAt}:${entry.stored.state}`;
  const kept = finished ? listedKept.get(entry) : undefined;
  if (kept?.key === key) return copySnapshot(kept.listed);
  const snapshot = readerSnapshot(source, entry);
  if (snapshot === null) return null;
  const listed = listedSnapshot(snapshot);
  if (finished && jsonWithin(listed, LISTED_KEPT_CHARS)) listedKept.set(entry, { key, listed: copySnapshot(listed) });
  return listed;
}

/** The most a kept listing view may hold (about, in characters of JSON): 1,000 retained executions keep at most about 32 MiB. */
const LISTED_KEPT_CHARS = 32 * 1024;

/**
 * The last `count` committed executions before `query.before` of the state and capability asked
 * for, newest first. The file has no index on either (see the schema): memory holds both for
 * every retained execution, in creation order, and a walk of it costs what the memory store's
 * filtered list costs, where a scan of the file would read every row's snapshot with it.
 */
function matchingRows(entries: ReadonlyMap<string, Entry>, query: ListItemsQuery, count: number): Array<{ ord: number; id: string }> {
  // The entries are in creation order (loaded by it, created in it): the last matches are kept in a ring.
  const ring: Entry[] = [];
  let seen = 0;
  for (const entry of entries.values()) {
    if (entry.order >= query.before) break;
    // A reader sees what is committed: the state the file holds, of rows the file holds.
    if (!entry.stored.exists) continue;
    if (query.state !== undefined && entry.stored.state !== query.state) continue;
    if (query.capability !== undefined && entry.capability !== query.capability) continue;
    ring[seen % count] = entry;
    seen++;
  }
  const rows: Array<{ ord: number; id: string }> = [];
  for (let i = seen - 1; i >= Math.max(0, seen - count); i--) {
    const entry = ring[i % count]!;
    rows.push({ ord: entry.order, id: entry.id });
  }
  return rows;
}

/**
 * What a reader may see of where an entry's history stands: as committed (the file's watermark
 * while changes are pending); null when nothing of it is committed yet.
 */
function headOf(entry: Entry): ExecutionHead | null {
  if (!entry.stored.exists) return null;
  const pending = ahead(entry);
  return {
    id: entry.id,
    state: pending ? (entry.stored.state ?? entry.state) : entry.state,
    last_sequence: pending ? entry.stored.lastSequence : entry.lastSequence,
    retained_from: pending ? entry.stored.retainedFrom : entry.retainedFrom,
  };
}

/**
 * A page of heads (ExecutionStore.heads): the file's rows by position, read from memory's
 * entries. The caller writes what is pending first, so that the file holds what memory holds.
 */
export function headsPage(source: ReadSource, before: number, limit: number): HeadsPage {
  const count = headsLimit(limit);
  const rows = source.tables.list(before, count + 1);
  const items: ExecutionHead[] = [];
  for (const row of rows.slice(0, count)) {
    const entry = source.entries.get(row.id);
    // A forgotten row the file still holds may share its id with a newer execution: not that one.
    const head = entry === undefined || entry.order !== row.ord ? null : headOf(entry);
    if (head !== null) items.push(head);
  }
  return { items, next_cursor: rows.length > count ? encodeListCursor(rows[count - 1]!.ord) : null };
}

/** Which events of which execution an events page holds (ExecutionStore.events). */
export interface EventsQuery {
  id: string;
  after?: number;
  limit?: number;
}

/**
 * An events page, up to the committed watermark: every event in it comes from the file. Null when
 * the store does not hold the execution, or nothing of it is committed yet.
 */
export function eventsPage(source: ReadSource, query: EventsQuery): EventsPage | null {
  const { id, after = 0, limit = EVENTS_MAX } = query;
  const entry = source.entries.get(id);
  const head = entry === undefined ? null : headOf(entry);
  if (entry === undefined || head === null) return null;
  const { last_sequence: top, retained_from: kept } = head;
  const from = Math.max(0, Math.floor(after) || 0);
  const count = Math.min(EVENTS_MAX, Math.max(1, Math.floor(limit) || EVENTS_MAX));
  const first = Math.max(from + 1, kept);
  const last = Math.min(top, first + count - 1);
  const out: ExecutionEvent[] = [];
  if (first <= last) source.tables.readEvents(entry.order, id, first, last, out);
  return { events: out, retained_from: kept, truncated: from + 1 < kept, last_sequence: top };
}
