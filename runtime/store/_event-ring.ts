import type { ExecutionEvent } from "../execution/protocol.ts";
import { eventBytes } from "../execution/event-bytes.ts";
import { RetainedBytes } from "./_retained-bytes.ts";

/**
 * The last events of one execution, addressed by sequence: at most `capacity` of them and at most
 * `budgetBytes` of their JSON (about; see eventBytes), the oldest dropped first. Sequences are
 * dense from 1, so event `s` lives at index `(s - 1) % capacity`: the array grows by `push` until
 * it holds `capacity` events, then each new event overwrites the oldest. No shifting, no copying,
 * and an execution that emits ten events holds ten slots, not `capacity`. Events dropped for
 * bytes leave their slot empty, so their memory goes at once.
 */
export class EventRing {
  private readonly slots: Array<ExecutionEvent | undefined> = [];
  private last = 0;
  private readonly retained: RetainedBytes;

  /** `first`: the sequence of the first event pushed (1, or later for a history that lost its oldest). */
  constructor(
    private readonly capacity: number,
    budgetBytes: number,
    first = 1,
  ) {
    this.retained = new RetainedBytes(budgetBytes, first);
    // Event `first` goes where its sequence says: the slots before it stay empty.
    this.slots.length = (first - 1) % capacity;
    this.last = first - 1;
  }

  /** Keeps the next event; its sequence must be the last one plus 1. */
  push(event: ExecutionEvent): void {
    if (this.slots.length < this.capacity) this.slots.push(event);
    else this.slots[(event.sequence - 1) % this.capacity] = event;
    this.last = event.sequence;
    const before = this.retained.first;
    const first = this.retained.add(eventBytes(event), this.last > this.capacity ? this.last - this.capacity + 1 : 1);
    // Slots below the count's bound were overwritten already; the ones the bytes dropped are emptied.
    for (let s = Math.max(before, this.last - this.capacity + 1); s < first; s++) this.slots[(s - 1) % this.capacity] = undefined;
  }

  /** About the bytes of the retained events' JSON (eventBytes), what events_retained_bytes bounds. */
  get bytes(): number {
    return this.retained.bytes;
  }

  /** The first retained sequence (1 until something was dropped). */
  get first(): number {
    return this.retained.first;
  }

  /** The sequence of the newest event, 0 when empty. */
  get lastSequence(): number {
    return this.last;
  }

  /** Every retained event, oldest first. */
  all(): ExecutionEvent[] {
    return this.slice(0, this.last);
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
