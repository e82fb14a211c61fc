import { MinHeap } from "./_min-heap.ts";

/**
 * The order in which a store forgets finished executions once it holds more than
 * `executions_retained` (docs/limits.md): the oldest finished one whose outcome is known goes
 * first. One whose outcome is `unknown` and not yet reconciled is the evidence a person settles
 * it with (docs/reconciliation.md), so it is kept like an active one — unless the unsettled ones
 * alone are more than the bound, when the oldest of them goes: memory stays bounded whatever a
 * capability does.
 *
 * Items are whatever a store keys its executions by; both heaps order them by creation. An item
 * may be offered again (finished twice, say); a store skips what it already forgot.
 */
export class ForgetOrder<T> {
  private readonly known: MinHeap<T>;
  private readonly unknown: MinHeap<T>;
  /** The unsettled items now: an item popped from `unknown` that is no longer here was settled. */
  private readonly unsettled = new Set<T>();

  constructor(order: (item: T) => number) {
    this.known = new MinHeap(order);
    this.unknown = new MinHeap(order);
  }

  /** How many finished executions with an unknown outcome wait to be reconciled. */
  get unsettledCount(): number {
    return this.unsettled.size;
  }

  /** `item` finished; `outcomeUnknown`: nobody can tell whether its effect happened. */
  finished(item: T, outcomeUnknown: boolean): void {
    if (outcomeUnknown) {
      this.unsettled.add(item);
      this.unknown.push(item);
    } else this.known.push(item);
  }

  /** `item`'s unknown outcome was reconciled: it may now be forgotten like any other. */
  settled(item: T): void {
    if (this.unsettled.delete(item)) this.known.push(item);
  }

  isUnsettled(item: T): boolean {
    return this.unsettled.has(item);
  }

  /**
   * The next finished execution to forget, or undefined when none may go: the oldest with a known
   * outcome, else the oldest unsettled one while more than `bound` are unsettled. When that one
   * `waits` (a durable store's end not written yet), it stays next and nothing goes for now:
   * forgetting keeps its order, and the store asks again once it may go.
   */
  next(bound: number, waits: (item: T) => boolean = () => false): T | undefined {
    while (this.known.size > 0) {
      const item = this.known.peek()!;
      if (this.unsettled.has(item)) {
        this.known.pop();
        continue;
      }
      return waits(item) ? undefined : this.known.pop();
    }
    while (this.unsettled.size > bound && this.unknown.size > 0) {
      const item = this.unknown.peek()!;
      if (!this.unsettled.has(item)) {
        this.unknown.pop();
        continue;
      }
      if (waits(item)) return undefined;
      this.unknown.pop();
      this.unsettled.delete(item);
      return item;
    }
    return undefined;
  }
}
