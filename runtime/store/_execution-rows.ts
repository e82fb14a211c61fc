import { EXECUTION_STATES, type ExecutionState } from "../execution/state-machine.ts";
import { SealedExecution } from "./_sealed-execution.ts";

/** Rows of a new table; the columns double when full. */
const INITIAL_ROWS = 1024;
/** The state byte of a forgotten row. */
const FORGOTTEN = 255;
/** The chunk column of a row whose execution is not sealed: the store holds it as objects. */
const LIVE = -1;
/** The chunk column of a sealed history of several chunks, whose refs `multiChunk` holds. */
const MULTI = -2;

const STATE_INDEX = new Map<ExecutionState, number>(EXECUTION_STATES.map((state, i) => [state, i]));

/**
 * Every execution a memory store holds, one row each in creation order, in typed columns: its
 * order, state and capability (what list pages filter on), and for a sealed one what
 * SealedExecution needs to read it back (refs into the store's TextSlabs, including its id's).
 * A sealed execution is then no JavaScript object at all: objects that live as long as it does,
 * scattered among the garbage of running executions, keep whole heap blocks resident (measured,
 * some 0.8 KiB of blocks for 0.3 KiB of objects an execution). A forgotten row stays in place,
 * marked, until they are half of the table; then one pass compacts it. So a row's index changes:
 * hold an execution's order, and find its row again (`rowOf`).
 */
export class ExecutionRows {
  private count = 0;
  private forgotten = 0;
  private orders = new Float64Array(INITIAL_ROWS);
  private states = new Uint8Array(INITIAL_ROWS);
  private capabilities = new Uint32Array(INITIAL_ROWS);
  private ids = new Float64Array(INITIAL_ROWS);
  private chunks = new Float64Array(INITIAL_ROWS);
  private snapshots = new Float64Array(INITIAL_ROWS);
  private firsts = new Float64Array(INITIAL_ROWS);
  private lasts = new Float64Array(INITIAL_ROWS);
  private bases = new Float64Array(INITIAL_ROWS);
  /** What each execution's retained events count for against executions_retained_bytes. */
  private byteCounts = new Float64Array(INITIAL_ROWS);
  /** Chunk refs of the sealed histories of several chunks (over 256 events: rare), by order. */
  private readonly multiChunk = new Map<number, readonly number[]>();
  /** Capability names, each once: a row holds its index. */
  private readonly capabilityNames: string[] = [];
  private readonly capabilityIndex = new Map<string, number>();

  /** Rows in the table, forgotten ones included. */
  get length(): number {
    return this.count;
  }

  /** Adds the row of a new execution, not sealed; its order is above every row's. */
  add(order: number, state: ExecutionState, capability: string): void {
    if (this.count === this.orders.length) this.resize(this.count * 2);
    const row = this.count++;
    let index = this.capabilityIndex.get(capability);
    if (index === undefined) {
      index = this.capabilityNames.push(capability) - 1;
      this.capabilityIndex.set(capability, index);
    }
    this.orders[row] = order;
    this.states[row] = STATE_INDEX.get(state)!;
    this.capabilities[row] = index;
    this.chunks[row] = LIVE;
    this.byteCounts[row] = 0;
  }

  /** The bytes the row's execution counts for (see setBytes). */
  bytes(row: number): number {
    return this.byteCounts[row]!;
  }

  /** Sets what the row's execution counts for: its retained events' bytes (EventRing.bytes). */
  setBytes(row: number, bytes: number): void {
    this.byteCounts[row] = bytes;
  }

  /** The index of the first row of an order at or after `order` (binary search). */
  indexAtOrder(order: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.orders[mid]! < order) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The row of the execution created `order`th, or -1 when it was forgotten. */
  rowOf(order: number): number {
    const row = this.indexAtOrder(order);
    return row < this.count && this.orders[row] === order && this.states[row] !== FORGOTTEN ? row : -1;
  }

  order(row: number): number {
    return this.orders[row]!;
  }

  /** The row's state; undefined when forgotten. */
  state(row: number): ExecutionState | undefined {
    return EXECUTION_STATES[this.states[row]!];
  }

  setState(row: number, state: ExecutionState): void {
    this.states[row] = STATE_INDEX.get(state)!;
  }

  capability(row: number): string {
    return this.capabilityNames[this.capabilities[row]!]!;
  }

  /** Whether the row's capability is `capability` (false for a name no row has). */
  hasCapability(row: number, capability: string): boolean {
    return this.capabilities[row] === this.capabilityIndex.get(capability);
  }

  isSealed(row: number): boolean {
    return this.chunks[row] !== LIVE;
  }

  /** The ref of a sealed row's id in the store's TextSlabs. */
  idRef(row: number): number {
    return this.ids[row]!;
  }

  /** Keeps a sealed execution in its row: `idRef` is its id's text. */
  seal(row: number, sealed: SealedExecution, idRef: number): void {
    const { chunks } = sealed;
    if (typeof chunks !== "number") this.multiChunk.set(this.orders[row]!, chunks);
    this.chunks[row] = typeof chunks === "number" ? chunks : MULTI;
    this.ids[row] = idRef;
    this.snapshots[row] = sealed.snapshotText;
    this.firsts[row] = sealed.first;
    this.lasts[row] = sealed.last;
    this.bases[row] = sealed.baseMs;
  }

  /** A sealed row's first retained sequence. */
  first(row: number): number {
    return this.firsts[row]!;
  }

  /** A sealed row's last sequence. */
  last(row: number): number {
    return this.lasts[row]!;
  }

  /** The sealed execution of a row (a fresh handle on its texts). */
  sealed(row: number): SealedExecution {
    const chunk = this.chunks[row]!;
    return new SealedExecution(this.firsts[row]!, this.lasts[row]!, this.bases[row]!, chunk === MULTI ? this.multiChunk.get(this.orders[row]!)! : chunk, this.snapshots[row]!);
  }

  /** The row's execution is held as objects again (its texts are the caller's to release). */
  unseal(row: number): void {
    if (this.chunks[row] === MULTI) this.multiChunk.delete(this.orders[row]!);
    this.chunks[row] = LIVE;
  }

  /** Marks a row forgotten (unsealed first); compacts the table once half of it is. */
  forget(row: number): void {
    this.unseal(row);
    this.states[row] = FORGOTTEN;
    if (++this.forgotten > this.count / 2) this.compact();
  }

  private compact(): void {
    const columns: Array<Float64Array | Uint32Array | Uint8Array> = [this.orders, this.states, this.capabilities, this.ids, this.chunks, this.snapshots, this.firsts, this.lasts, this.bases, this.byteCounts];
    let to = 0;
    for (let from = 0; from < this.count; from++) {
      if (this.states[from] === FORGOTTEN) continue;
      if (to !== from) for (const column of columns) column[to] = column[from]!;
      to++;
    }
    this.count = to;
    this.forgotten = 0;
    if (this.orders.length > INITIAL_ROWS && this.count < this.orders.length / 4) this.resize(Math.max(INITIAL_ROWS, this.orders.length / 2));
  }

  private resize(rows: number): void {
    const resized = <T extends Float64Array | Uint32Array | Uint8Array>(column: T): T => {
      const next = new (column.constructor as new (n: number) => T)(rows);
      next.set(column.subarray(0, Math.min(this.count, rows)));
      return next;
    };
    this.orders = resized(this.orders);
    this.states = resized(this.states);
    this.capabilities = resized(this.capabilities);
    this.ids = resized(this.ids);
    this.chunks = resized(this.chunks);
    this.snapshots = resized(this.snapshots);
    this.firsts = resized(this.firsts);
    this.lasts = resized(this.lasts);
    this.bases = resized(this.bases);
    this.byteCounts = resized(this.byteCounts);
  }
}
