import type { EventDraft, ExecutionEvent } from "../execution/protocol.ts";
import { createdEvent, createStamper, numberEvents } from "./_numbering.ts";
import { copySnapshot, keep } from "./_kept-values.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { EXECUTION_STATES, isTerminal, type ExecutionState } from "../execution/state-machine.ts";
import type { Limits } from "../execution/limits.ts";
import type { EventsPage, ExecutionStore, ListFilter, ListPage, NewExecution, RunIdentity } from "./store.ts";
import { checkBatch, initialSnapshot } from "./_fold.ts";
import { EventRing } from "./_event-ring.ts";
import { SEAL_MAX_EVENTS, SealedExecution } from "./_sealed-execution.ts";
import { RecordShapes } from "./_sealed-records.ts";
import { TextSlabs } from "./_text-slabs.ts";
import { createFanOut } from "./_fan-out.ts";
import { MinHeap } from "./_min-heap.ts";
import { InvalidCursorError, decodeListCursor, encodeListCursor } from "./list-cursor.ts";

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The bounds in force (docs/limits.md). */
  limits: Limits;
  /** Stamps `created_at` and event timestamps; default the wall clock. */
  clock?: () => Date;
  /** Told about the first error each subscription's listener throws; default: one line on stderr. */
  onListenerError?: (error: unknown, event: ExecutionEvent) => void;
}

/**
 * One execution. While it may change, its snapshot and events are objects (`live`); once it has
 * finished they are sealed into text (`sealed`, see SealedExecution), which holds a quarter of the
 * memory. `state` and `capability` stay at hand for counts and list filters.
 */
interface Entry {
  id: string;
  capability: string;
  state: ExecutionState;
  /** Creation position, from 1: the list order and what a list cursor names. */
  order: number;
  forgotten: boolean;
  live: { snapshot: ExecutionSnapshot; events: EventRing } | null;
  sealed: SealedExecution | null;
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
 * longer histories than SEAL_MAX_EVENTS stay as they are). The one event a finished execution
 * may still take, `execution.reconciled`, unseals it for that append.
 *
 * Executions are forgotten only when one is created beyond `executions_retained`: the oldest
 * terminal ones go first, active ones never (so the count may exceed the bound while that many
 * are active). Finishing never forgets anything, so a result is not dropped the instant it exists.
 */
export function createMemoryStore(options: MemoryStoreOptions): ExecutionStore {
  const { limits } = options;
  const clock = options.clock ?? (() => new Date());
  const entries = new Map<string, Entry>();
  const runs = new Map<string, RunIdentity>();
  const counts = zeroCounts();
  // Creation order, for list pages: forgotten entries stay in place until they are half of it,
  // then one filter compacts it (no splice per forgotten execution).
  let byOrder: Entry[] = [];
  let forgottenInOrder = 0;
  // Terminal executions by creation order: the next one to forget is always on top.
  const terminal = new MinHeap<Entry>((entry) => entry.order);
  let nextOrder = 1;
  let closed = false;
  // The last timestamp and its ISO text: appends within one millisecond share the string
  // (toISOString is a measurable part of a one-event append on the hot path).
  const stamp = createStamper(clock);
  // What sealed executions share: their data shapes, named once, and the slabs of their text.
  const sealing = { shapes: new RecordShapes(), texts: new TextSlabs() };

  const fanOut = createFanOut({
    history: { events, ids: () => entries.keys() },
    onListenerError: options.onListenerError,
  });

  function open(): void {
    if (closed) throw new Error("The execution store is closed; create a new one to keep working.");
  }

  function entryOf(id: string, action: string): Entry {
    const entry = entries.get(id);
    if (entry === undefined) throw new Error(`Cannot ${action} execution ${id}: the store does not hold it (never created here, or forgotten after finishing; executions_retained is ${limits.executions_retained}).`);
    return entry;
  }

  /** Forgets the oldest terminal executions until within the bound (or none is terminal). */
  function evict(): void {
    while (entries.size > limits.executions_retained && terminal.size > 0) {
      const entry = terminal.pop()!;
      entry.forgotten = true;
      entries.delete(entry.id);
      entry.sealed?.release(sealing);
      entry.sealed = null;
      counts[entry.state]--;
      if (++forgottenInOrder > byOrder.length / 2) {
        byOrder = byOrder.filter((e) => !e.forgotten);
        forgottenInOrder = 0;
      }
    }
  }

  function create(execution: NewExecution): ExecutionSnapshot {
    open();
    if (entries.has(execution.id)) throw new Error(`Cannot create execution ${execution.id}: the store already holds an execution with this id.`);
    const created_at = stamp();
    const snapshot = initialSnapshot({ ...execution, input: keep(execution.input), actor: keep(execution.actor) }, created_at);
    const event = createdEvent(execution, snapshot);
    const live = { snapshot, events: new EventRing(limits.events_retained, limits.events_retained_bytes) };
    const entry: Entry = { id: execution.id, capability: execution.capability, state: "queued", order: nextOrder++, forgotten: false, live, sealed: null };
    live.events.push(event);
    entries.set(execution.id, entry);
    byOrder.push(entry);
    counts.queued++;
    evict();
    fanOut.publish([event]);
    return copySnapshot(snapshot);
  }

  function append(id: string, drafts: EventDraft[]): ExecutionEvent[] {
    open();
    const entry = entryOf(id, "append to");
    // A sealed execution is finished: only a reconciliation can follow, rare enough to unseal for.
    const live = entry.live ?? unseal(entry);
    const { snapshot, events } = live;
    const before = snapshot.state;
    // Everything that can throw (a refused move, a value JSON cannot hold) runs before anything
    // is applied: a refused call leaves no trace.
    checkBatch(snapshot, drafts);
    const stored = numberEvents(id, snapshot, drafts, stamp(), limits, (event) => events.push(event));
    snapshot.retained_from = events.first;
    snapshot.truncated = snapshot.retained_from > 1;
    if (snapshot.state !== before) {
      counts[before]--;
      counts[snapshot.state]++;
      entry.state = snapshot.state;
      if (isTerminal(snapshot.state)) terminal.push(entry);
    }
    // Set on every append, since a reconciliation may unseal a history it makes too long to seal again.
    const seal = isTerminal(snapshot.state) && events.lastSequence - events.first < SEAL_MAX_EVENTS;
    entry.sealed?.release(sealing);
    entry.sealed = seal ? SealedExecution.seal(snapshot, events.all(), sealing) : null;
    entry.live = seal ? null : live;
    fanOut.publish(stored);
    return stored;
  }

  /** The live form of a sealed execution: its snapshot and a ring holding its retained events. */
  function unseal(entry: Entry): { snapshot: ExecutionSnapshot; events: EventRing } {
    const sealed = entry.sealed!;
    const events = new EventRing(limits.events_retained, limits.events_retained_bytes, sealed.first);
    for (const event of sealed.events(entry.id, 0, sealed.last, sealing)) events.push(event);
    return { snapshot: sealed.snapshot(entry.id, limits, sealing), events };
  }

  /** A snapshot the caller may change: a copy of the live one, or one read from the sealed text. */
  function snapshotOf(entry: Entry): ExecutionSnapshot {
    return entry.live !== null ? copySnapshot(entry.live.snapshot) : entry.sealed!.snapshot(entry.id, limits, sealing);
  }

  function get(id: string): ExecutionSnapshot | null {
    open();
    const entry = entries.get(id);
    return entry === undefined ? null : snapshotOf(entry);
  }

  /** Index in byOrder of the first entry created at or after `order` (binary search). */
  function indexAtOrder(order: number): number {
    let lo = 0;
    let hi = byOrder.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byOrder[mid]!.order < order) lo = mid + 1;
      else hi = mid;
    }
    return lo;
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
    const start = filter.cursor === undefined ? byOrder.length - 1 : indexAtOrder(cursorOrder(filter.cursor)) - 1;
    const matches = (e: Entry) => !e.forgotten && (filter.state === undefined || e.state === filter.state) && (filter.capability === undefined || e.capability === filter.capability);
    const items: ExecutionSnapshot[] = [];
    let next_cursor: string | null = null;
    let last: Entry | null = null;
    for (let i = start; i >= 0; i--) {
      const entry = byOrder[i]!;
      if (!matches(entry)) continue;
      if (items.length === limit) {
        next_cursor = encodeListCursor(last!.order);
        break;
      }
      items.push(snapshotOf(entry));
      last = entry;
    }
    return { items, next_cursor, counts: { ...counts } };
  }

  function events(id: string, after = 0, limit = EVENTS_MAX): EventsPage | null {
    open();
    const entry = entries.get(id);
    if (entry === undefined) return null;
    const from = Math.max(0, Math.floor(after) || 0);
    const count = Math.min(EVENTS_MAX, Math.max(1, Math.floor(limit) || EVENTS_MAX));
    if (entry.live === null) {
      const sealed = entry.sealed!;
      return { events: sealed.events(id, from, count, sealing), retained_from: sealed.first, truncated: from + 1 < sealed.first, last_sequence: sealed.last };
    }
    const { snapshot, events: ring } = entry.live;
    return { events: ring.slice(from, count), retained_from: ring.first, truncated: from + 1 < ring.first, last_sequence: snapshot.last_sequence };
  }

  function release(id: string): void {
    open();
    const { state } = entryOf(id, "release");
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
    // Nothing to wait for: memory is all there is.
    durable: () => Promise.resolve(),
    close,
  };
}
