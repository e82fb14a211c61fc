/**
 * A binary min-heap by a numeric key. The memory store keeps its terminal executions in one,
 * keyed by creation order, so that "forget the oldest terminal one" costs O(log n) however many
 * active executions were created before it.
 */
export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly key: (item: T) => number) {}

  /** How many items it holds. */
  get size(): number {
    return this.items.length;
  }

  /** Adds an item. */
  push(item: T): void {
    const items = this.items;
    let i = items.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.key(items[parent]!) <= this.key(item)) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  /** The item with the smallest key, left in place; undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Removes and returns the item with the smallest key; undefined when empty. */
  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && this.key(items[right]!) < this.key(items[left]!) ? right : left;
      if (this.key(items[child]!) >= this.key(last)) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
