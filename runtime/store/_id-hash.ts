/** Slots of a new table; it doubles when half full. */
const INITIAL_SLOTS = 1024;

/** FNV-1a over the string's UTF-16 code units: cheap, and spreads ids that differ in a few characters. */
function hashOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Execution ids → creation orders for the sealed executions of a memory store, in two typed
 * arrays and not in a Map: a Map keeps a string and an entry per id, small objects that live as
 * long as the execution among the garbage of running ones, and those pin far more resident
 * memory than their size (measured, about 0.8 KiB of heap blocks an execution). Here an id costs
 * a few slots of 8 bytes, and the id itself stays wherever the caller keeps it: `idOf` reads it
 * back to tell apart two ids of the same hash.
 *
 * Open addressing with linear probing; a removal shifts the run after it back (no tombstones),
 * and the full hash of each slot is kept, so growing never reads an id.
 */
export class IdHash {
  /** Order + 1 of each slot's execution; 0 is an empty slot. */
  private orders = new Uint32Array(INITIAL_SLOTS);
  private hashes = new Uint32Array(INITIAL_SLOTS);
  private used = 0;

  /** `idOf(order)`: the id of an execution this table holds. */
  constructor(private readonly idOf: (order: number) => string) {}

  /** How many ids it holds. */
  get size(): number {
    return this.used;
  }

  /** The order `id` was added with, or -1. */
  find(id: string): number {
    const h = hashOf(id);
    const mask = this.orders.length - 1;
    for (let s = h & mask; this.orders[s] !== 0; s = (s + 1) & mask) {
      if (this.hashes[s] === h && this.idOf(this.orders[s]! - 1) === id) return this.orders[s]! - 1;
    }
    return -1;
  }

  /** Adds an id the table does not hold. */
  add(id: string, order: number): void {
    if (2 * (this.used + 1) > this.orders.length) this.grow();
    this.place(hashOf(id), order + 1);
    this.used++;
  }

  /** Removes `id`, held with `order`. */
  remove(id: string, order: number): void {
    const h = hashOf(id);
    const mask = this.orders.length - 1;
    let s = h & mask;
    while (this.orders[s] !== order + 1) {
      if (this.orders[s] === 0) throw new Error(`Execution ${id} is not in the id table; this is a bug in the memory store.`);
      s = (s + 1) & mask;
    }
    // Backward shift: a later slot of the run moves into the hole unless its home lies in (hole, slot].
    for (let next = (s + 1) & mask; this.orders[next] !== 0; next = (next + 1) & mask) {
      const home = this.hashes[next]! & mask;
      const stays = s <= next ? s < home && home <= next : s < home || home <= next;
      if (stays) continue;
      this.orders[s] = this.orders[next]!;
      this.hashes[s] = this.hashes[next]!;
      s = next;
    }
    this.orders[s] = 0;
    this.used--;
  }

  private place(h: number, slot: number): void {
    const mask = this.orders.length - 1;
    let s = h & mask;
    while (this.orders[s] !== 0) s = (s + 1) & mask;
    this.orders[s] = slot;
    this.hashes[s] = h;
  }

  private grow(): void {
    const { orders, hashes } = this;
    this.orders = new Uint32Array(orders.length * 2);
    this.hashes = new Uint32Array(orders.length * 2);
    for (let s = 0; s < orders.length; s++) if (orders[s] !== 0) this.place(hashes[s]!, orders[s]!);
  }
}
