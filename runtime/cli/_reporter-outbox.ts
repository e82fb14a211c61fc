import type { ExecutionEvent } from "../execution/protocol.ts";
import type { EventsPage } from "../store/store.ts";

/** Event JSON (UTF-16 units) a run keeps for a server that has not taken it yet: far more than any report. */
export const OUTBOX_UNITS = 64 * 1024 * 1024;

/**
 * The events a run has not reported yet, kept apart from its store (docs/protocol.md, "Runs that
 * report"). The run's store keeps only its newest `events_retained`; a handler that logs faster
 * than reports travel would otherwise have its history dropped there before the server took it,
 * and the server, no longer hearing it, would end a run that succeeded as failed with an unknown
 * outcome. The outbox holds every event after the server's `through`, up to {@link OUTBOX_UNITS};
 * past that, the oldest it could not keep make it answer `truncated`, as a store would.
 */
export class ReporterOutbox {
  private events: ExecutionEvent[] = [];
  private sizes: number[] = [];
  private head = 0;
  private units = 0;
  /** The first sequence the outbox no longer holds because it was full (0: none lost). */
  private lostFrom = 0;
  private lastSequence = 0;

  constructor(private readonly bound = OUTBOX_UNITS) {}

  /** An event of the run, in order, with the length of the JSON the store made of it. */
  add(event: ExecutionEvent, size: number): void {
    if (event.sequence <= this.lastSequence) return;
    this.lastSequence = event.sequence;
    if (this.lostFrom !== 0) return;
    if (this.units + size > this.bound && this.head < this.events.length) {
      this.lostFrom = event.sequence;
      return;
    }
    this.events.push(event);
    this.sizes.push(size);
    this.units += size;
  }

  /** The server holds everything up to `through`: those are let go. */
  acknowledged(through: number): void {
    while (this.head < this.events.length && this.events[this.head]!.sequence <= through) {
      this.units -= this.sizes[this.head]!;
      this.head++;
    }
    // Compact now and then, so the arrays do not keep what was let go.
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * The events after `after`, as a store's page: `truncated` once some of them could not be kept;
   * null for events the server had already taken and the outbox let go (a server that restarted
   * without them asks again: the run's store may still hold them).
   */
  page(after: number, limit: number): EventsPage | null {
    const first = this.events[this.head]?.sequence ?? this.lastSequence + 1;
    if (this.lostFrom !== 0) return { events: [], retained_from: this.lastSequence + 1, truncated: true, last_sequence: this.lastSequence };
    if (after + 1 < first) return null;
    const start = this.head + (after + 1 - first);
    return { events: this.events.slice(start, start + limit), retained_from: first, truncated: false, last_sequence: this.lastSequence };
  }
}
