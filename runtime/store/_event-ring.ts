import type { ExecutionEvent } from "../execution/protocol.ts";

/**
 * The last `capacity` events of one execution, addressed by sequence. Sequences are dense from 1,
 * so event `s` lives at index `(s - 1) % capacity`: the array grows by `push` until it holds
 * `capacity` events, then each new event overwrites the oldest. No shifting, no copying, and an
 * execution that emits ten events holds ten slots, not `capacity`.
 */
export class EventRing {
  private readonly slots: ExecutionEvent[] = [];
  private last = 0;

  constructor(private readonly capacity: number) {}

  /** Keeps the next event; its sequence must be the last one plus 1. */
  push(event: ExecutionEvent): void {
    if (this.slots.length < this.capacity) this.slots.push(event);
    else this.slots[(event.sequence - 1) % this.capacity] = event;
    this.last = event.sequence;
  }

  /** The first retained sequence (1 until something was dropped). */
  get first(): number {
    return this.last > this.capacity ? this.last - this.capacity + 1 : 1;
  }

  /** The sequence of the newest event, 0 when empty. */
  get lastSequence(): number {
    return this.last;
  }

  /** Retained events with a sequence above `after`, at most `limit` of them, oldest first. */
  slice(after: number, limit: number): ExecutionEvent[] {
    const from = Math.max(after + 1, this.first);
    const to = Math.min(this.last, from + limit - 1);
    const out: ExecutionEvent[] = [];
    for (let s = from; s <= to; s++) out.push(this.slots[(s - 1) % this.capacity]!);
    return out;
  }
}
