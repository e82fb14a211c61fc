import { listedSnapshot } from "./listed-snapshot.ts";
import type { EventDraft, ExecutionEvent } from "../execution/protocol.ts";
import { createdEvent, createStamper, numberEvents } from "./_numbering.ts";
import { copySnapshot, keep } from "./_kept-values.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { EXECUTION_STATES, isTerminal, type ExecutionState } from "../execution/state-machine.ts";
import { outcomeUnknown } from "../execution/retention.ts";
import type { Limits } from "../execution/limits.ts";
import { headsLimit, type AppendOptions, type EventsPage, type ExecutionHead, type ExecutionStore, type ForgotUnsettled, type Forgotten, type HeadsPage, type ListFilter, type ListPage, type NewExecution, type RunIdentity } from "./store.ts";
import { checkBatch, initialSnapshot } from "./_fold.ts";
import { EventRing } from "./_event-ring.ts";
import { SEAL_MAX_EVENTS, SealedExecution } from "./_sealed-execution.ts";
import { ExecutionRows } from "./_execution-rows.ts";
import { IdHash } from "./_id-hash.ts";
import { RecordShapes } from "./_sealed-records.ts";
import { TextSlabs } from "./_text-slabs.ts";
import { createFanOut } from "./_fan-out.ts";
import { ForgetOrder } from "./_forget-order.ts";
import { InvalidCursorError, decodeListCursor, encodeListCursor } from "./list-cursor.ts";

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The bounds in force (docs/limits.md). */
  limits: Limits;
  /** Stamps `created_at` and event timestamps; default the wall clock. */
  clock?: () => Date;
  /** Told about the first error each subscription's listener throws; default: one line on stderr. */
  onListenerError?: (error: unknown, event: ExecutionEvent) => void;
  /** Told when an unsettled unknown outcome is forgotten (store.ts). */
  onForgotUnsettled?: ForgotUnsettled;
  /** Told of each execution forgotten past the retention bounds (store.ts, Forgotten). */
  onForgotten?: Forgotten;
}

/**
 * An execution held as objects: one that may still change, or a finished one whose history is
 * too long to seal. A sealed one is no object at all, only its row (ExecutionRows).
 */
interface Entry {
  id: string;
  /** Creation position, from 1: the list order, what a list cursor names, the row's key. */
  order: number;
  snapshot: ExecutionSnapshot;
  events: EventRing;
}

const LIST_DEFAULT = 50;
const LIST_MAX = 500;
const EVENTS_MAX = 1000;

function zeroCounts(): Record<ExecutionState, number> {
  return Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<ExecutionState, number>;
}

/**
 * The in-memory execution store (docs/architecture.md): bounded as docs/limits.md says, history ends with the process.
 *
 * Input, output, failure and actors are kept as frozen copies. The payloads of the frequent
 * events (progress, log, step, stream, diagnostic) are kept as given, not copied: the store
 * takes ownership of a draft it is handed. Events handed to listeners and returned by
 * `append`/`events` are the stored objects (for a sealed execution, `events` reads fresh ones
 * from its text): read them, never change them. Snapshots from `create`, `get` and `list` are
 * copies.
 *
 * A finished execution is sealed as it finishes (the append that completes it): its events and
 * snapshot become compact text, read back as the same events and snapshot (SealedExecution;
 * longer histories than SEAL_MAX_EVENTS stay as they are), and the execution is no object any
 * more: a row of typed columns (ExecutionRows) and a slot in a table of ids (IdHash). The one
 * event a finished execution may still take, `execution.reconciled`, unseals it for that append.
 *
 * Executions are forgotten only when one is created beyond `executions_retained`, or while the
 * events of all of them together are over `executions_retained_bytes` (each execution's counted as
 * EventRing.bytes counts them): the oldest terminal ones go first, active ones never, unreconciled
 * `unknown` outcomes only past the count bound themselves (ForgetOrder; so the count and the bytes
 * may exceed their bounds while that much is active). Finishing never forgets anything, so a
 * result is not dropped the instant it exists.
 */
export function createMemoryStore(options: MemoryStoreOptions): ExecutionStore {
  const { limits } = options;
  const clock = options.clock ?? (() => new Date());
  const runs = new Map<string, RunIdentity>();
  const counts = zeroCounts();
  // What sealed executions share: their data shapes, named once, and the slabs of their text.
  const sealing = { shapes: new RecordShapes(), texts: new TextSlabs() };
  // Every execution held, a row each in creation order (list pages, filters, sealed ones' texts);
  // the ones held as objects also by id and by order, the sealed ones by id in a table of orders.
  const rows = new ExecutionRows();
  const live = new Map<string, Entry>();
  const liveByOrder = new Map<number, Entry>();
  const sealedIds = new IdHash((order) => sealing.texts.get(rows.idRef(rows.rowOf(order))));
  // Terminal executions' orders, in the order they are forgotten past executions_retained.
  const finished = new ForgetOrder<number>((order) => order);
  let nextOrder = 1;
  // The retained bytes of every execution held, the sum of the rows' `bytes`; and of those whose
  // unknown outcome is not reconciled yet (ForgetOrder's unsettled ones).
  let heldBytes = 0;
  let unsettledBytes = 0;
  let closed = false;
  // The last timestamp and its ISO text: appends within one millisecond share the string
  // (toISOString is a measurable part of a one-event append on the hot path).
  const stamp = createStamper(clock);

  const fanOut = createFanOut({
    history: { events, ids: heldIds },
    onListenerError: options.onListenerError,
  });

  function open(): void {
    if (closed) throw new Error("The execution store is closed; create a new one to keep working.");
  }

  function notHeld(id: string, action: string): Error {
    return new Error(`Cannot ${action} execution ${id}: the store does not hold it (never created here, or forgotten after finishing; executions_retained is ${limits.executions_retained}).`);
  }

  /** The row of a sealed execution, or -1. */
  function sealedRow(id: string): number {
    const order = sealedIds.find(id);
    return order < 0 ? -1 : rows.rowOf(order);
  }

  /** The ids held, in creation order. */
  function* heldIds(): Iterable<string> {
    for (let row = 0; row < rows.length; row++) {
      if (rows.state(row) === undefined) continue;
      yield rows.isSealed(row) ? sealing.texts.get(rows.idRef(row)) : liveByOrder.get(rows.order(row))!.id;
    }
  }

  /** Gives up what a sealed row holds: its texts and its place in the id table. */
  function dropSealed(row: number, id: string): void {
    rows.sealed(row).release(sealing);
    sealedIds.remove(id, rows.order(row));
    sealing.texts.release(rows.idRef(row));
    rows.unseal(row);
  }

  /** Forgets finished executions, oldest first, until within the bounds or none may go (ForgetOrder). */
  function evict(): void {
    while (live.size + sealedIds.size > limits.executions_retained || heldBytes > limits.executions_retained_bytes) {
      const unsettledBefore = finished.unsettledCount;
      let order = finished.next(limits.executions_retained);
      // Unreconciled unknown outcomes are the evidence a person settles with: kept like active
      // ones, unless they alone are more than a bound — past the count, or holding more bytes.
      if (order === undefined && unsettledBytes > limits.executions_retained_bytes) order = finished.next(0);
      if (order === undefined) return;
      const wasUnsettled = finished.unsettledCount < unsettledBefore;
      const row = rows.rowOf(order);
      // Forgotten already (an execution that became terminal twice is on the heap twice).
      if (row < 0) continue;
      const entry = liveByOrder.get(order);
      const id = entry?.id ?? sealing.texts.get(rows.idRef(row));
      if (wasUnsettled) options.onForgotUnsettled?.({ id, capability: rows.capability(row) });
      if (entry === undefined) dropSealed(row, id);
      else {
        live.delete(entry.id);
        liveByOrder.delete(order);
      }
      counts[rows.state(row)!]--;
      heldBytes -= rows.bytes(row);
      if (wasUnsettled) unsettledBytes -= rows.bytes(row);
      rows.forget(row);
      options.onForgotten?.(id);
    }
  }

  function create(execution: NewExecution): ExecutionSnapshot {
    open();
    if (live.has(execution.id) || sealedIds.find(execution.id) >= 0) throw new Error(`Cannot create execution ${execution.id}: the store already holds an execution with this id.`);
    const created_at = execution.created_at ?? stamp();
    const snapshot = initialSnapshot({ ...execution, input: keep(execution.input), actor: keep(execution.actor) }, created_at);
    const event = createdEvent(execution, snapshot);
    const entry: Entry = { id: execution.id, order: nextOrder++, snapshot, events: new EventRing(limits.events_retained, limits.events_retained_bytes) };
    entry.events.push(event);
    live.set(entry.id, entry);
    liveByOrder.set(entry.order, entry);
    rows.add(entry.order, "queued", execution.capability);
    rows.setBytes(rows.length - 1, entry.events.bytes);
    heldBytes += entry.events.bytes;
    counts.queued++;
    evict();
    fanOut.publish([event]);
    return copySnapshot(snapshot);
  }

  function append(id: string, drafts: EventDraft[], options?: AppendOptions): ExecutionEvent[] {
    open();
    const held = live.get(id);
    // A sealed execution is finished: only a reconciliation can follow, rare enough to unseal for.
    const entry = held ?? unseal(id);
    const { snapshot, events } = entry;
    const before = snapshot.state;
    const wasUnsettled = finished.isUnsettled(entry.order);
    // Everything that can throw (a refused move, a value JSON cannot hold) runs before anything
    // is applied: a refused call leaves no trace.
    checkBatch(snapshot, drafts);
    const stored = numberEvents(id, snapshot, drafts, options?.timestamps ?? stamp(), limits, (event) => events.push(event));
    snapshot.retained_from = events.first;
    snapshot.truncated = snapshot.retained_from > 1;
    const row = rows.rowOf(entry.order);
    const bytesBefore = rows.bytes(row);
    heldBytes += events.bytes - bytesBefore;
    rows.setBytes(row, events.bytes);
    // Unsealed for this append: the texts go, the execution is kept anew below.
    if (held === undefined) dropSealed(row, id);
    if (snapshot.state !== before) {
      counts[before]--;
      counts[snapshot.state]++;
      rows.setState(row, snapshot.state);
      if (isTerminal(snapshot.state)) finished.finished(entry.order, outcomeUnknown(snapshot));
    } else if (wasUnsettled && !outcomeUnknown(snapshot)) finished.settled(entry.order);
    if (wasUnsettled) unsettledBytes -= bytesBefore;
    if (finished.isUnsettled(entry.order)) unsettledBytes += events.bytes;
    // Decided on every append, since a reconciliation may unseal a history it makes too long to seal again.
    if (isTerminal(snapshot.state) && events.lastSequence - events.first < SEAL_MAX_EVENTS) {
      rows.seal(row, SealedExecution.seal(snapshot, events.all(), sealing), sealing.texts.put(id));
      sealedIds.add(id, entry.order);
      live.delete(id);
      liveByOrder.delete(entry.order);
    } else if (held === undefined) {
      live.set(id, entry);
      liveByOrder.set(entry.order, entry);
    }
    fanOut.publish(stored);
    return stored;
  }

  /**
   * The object form of a sealed execution: its snapshot and a ring holding its retained events.
   * The row stays sealed until the caller keeps the entry (nothing changes if the append is refused).
   */
  function unseal(id: string): Entry {
    const row = sealedRow(id);
    if (row < 0) throw notHeld(id, "append to");
    const sealed = rows.sealed(row);
    const events = new EventRing(limits.events_retained, limits.events_retained_bytes, sealed.first);
    for (const event of sealed.events(id, 0, sealed.last, sealing)) events.push(event);
    return { id, order: rows.order(row), snapshot: sealed.snapshot(id, limits, sealing), events };
  }

  /** A snapshot the caller may change: a copy of the live one, or one read from the sealed text. */
  function snapshotAt(row: number, id?: string): ExecutionSnapshot {
    const entry = rows.isSealed(row) ? undefined : liveByOrder.get(rows.order(row))!;
    return entry !== undefined ? copySnapshot(entry.snapshot) : rows.sealed(row).snapshot(id ?? sealing.texts.get(rows.idRef(row)), limits, sealing);
  }

  function get(id: string): ExecutionSnapshot | null {
    open();
    const entry = live.get(id);
    if (entry !== undefined) return copySnapshot(entry.snapshot);
    const row = sealedRow(id);
    return row < 0 ? null : snapshotAt(row, id);
  }

  /** The creation position a cursor names; a position never given out is as bad as garbage. */
  function cursorOrder(cursor: string): number {
    const order = decodeListCursor(cursor);
    if (order >= nextOrder) throw new InvalidCursorError(cursor);
    return order;
  }

  function list(filter: ListFilter = {}): ListPage {
    open();
    const limit = Math.min(LIST_MAX, Math.max(1, Math.floor(filter.limit ?? LIST_DEFAULT) || LIST_DEFAULT));
    const start = filter.cursor === undefined ? rows.length - 1 : rows.indexAtOrder(cursorOrder(filter.cursor)) - 1;
    const matches = (row: number) => {
      const state = rows.state(row);
      return state !== undefined && (filter.state === undefined || state === filter.state) && (filter.capability === undefined || rows.hasCapability(row, filter.capability));
    };
    const items: ExecutionSnapshot[] = [];
    let next_cursor: string | null = null;
    let lastOrder = 0;
    for (let row = start; row >= 0; row--) {
      if (!matches(row)) continue;
      if (items.length === limit) {
        next_cursor = encodeListCursor(lastOrder);
        break;
      }
      items.push(listedSnapshot(snapshotAt(row)));
      lastOrder = rows.order(row);
    }
    return { items, next_cursor, counts: { ...counts } };
  }

  function heads(cursor: string | undefined, limit: number): HeadsPage {
    open();
    const count = headsLimit(limit);
    const start = cursor === undefined ? rows.length - 1 : rows.indexAtOrder(cursorOrder(cursor)) - 1;
    const items: ExecutionHead[] = [];
    let next_cursor: string | null = null;
    let lastOrder = 0;
    for (let row = start; row >= 0; row--) {
      const state = rows.state(row);
      if (state === undefined) continue;
      if (items.length === count) {
        next_cursor = encodeListCursor(lastOrder);
        break;
      }
      if (rows.isSealed(row)) items.push({ id: sealing.texts.get(rows.idRef(row)), state, last_sequence: rows.last(row), retained_from: rows.first(row) });
      else {
        const { id, snapshot, events: ring } = liveByOrder.get(rows.order(row))!;
        items.push({ id, state, last_sequence: snapshot.last_sequence, retained_from: ring.first });
      }
      lastOrder = rows.order(row);
    }
    return { items, next_cursor };
  }

  function events(id: string, after = 0, limit = EVENTS_MAX): EventsPage | null {
    open();
    const entry = live.get(id);
    const row = entry === undefined ? sealedRow(id) : -1;
    if (entry === undefined && row < 0) return null;
    const from = Math.max(0, Math.floor(after) || 0);
    const count = Math.min(EVENTS_MAX, Math.max(1, Math.floor(limit) || EVENTS_MAX));
    if (entry === undefined) {
      const sealed = rows.sealed(row);
      return { events: sealed.events(id, from, count, sealing), retained_from: sealed.first, truncated: from + 1 < sealed.first, last_sequence: sealed.last };
    }
    const { snapshot, events: ring } = entry;
    return { events: ring.slice(from, count), retained_from: ring.first, truncated: from + 1 < ring.first, last_sequence: snapshot.last_sequence };
  }

  function release(id: string): void {
    open();
    const entry = live.get(id);
    const row = entry === undefined ? sealedRow(id) : -1;
    if (entry === undefined && row < 0) throw notHeld(id, "release");
    const state = entry?.snapshot.state ?? rows.state(row)!;
    // Nothing of a memory execution is released: artifacts are the caller's, and details end
    // with the process. The check keeps the contract the same as a durable store's.
    if (!isTerminal(state)) throw new Error(`Cannot release execution ${id}: it is ${state}; release is allowed once it has finished.`);
  }

  function findRun(run_id: string): RunIdentity | null {
    open();
    const identity = runs.get(run_id);
    return identity === undefined ? null : { ...identity };
  }

  function recordRun(identity: RunIdentity): boolean {
    open();
    // An identity never changes once recorded: the first one stands.
    if (runs.has(identity.run_id)) return true;
    if (runs.size >= limits.run_identities) return false;
    runs.set(identity.run_id, { ...identity });
    return true;
  }

  function close(): void {
    if (closed) return;
    closed = true;
    fanOut.close();
  }

  return {
    create,
    append,
    get,
    current: get,
    list,
    heads,
    events,
    subscribe: (subscribeOptions, listener) => {
      open();
      return fanOut.subscribe(subscribeOptions, listener);
    },
    release,
    findRun,
    recordRun,
    // Memory cannot fail to write: nothing is ever waiting for a disk.
    storageFault: () => null,
    retainedBytes: () => heldBytes,
    onStorageFault: () => () => undefined,
    // Every creation is committed the moment it is made: there is nothing to take back.
    withdraw: () => false,
    // Nothing to wait for: memory is all there is.
    durable: () => Promise.resolve(),
    creationCommitted: (id) => live.has(id),
    // Nothing outlives the process to tell apart.
    starting: () => true,
    close,
  };
}
