import type { ExecutionEvent } from "../execution/protocol.ts";

/**
 * One row of the events table: consecutive events of one execution, each as its JSON without
 * the members every event of the execution repeats (see `write`), separated by commas (a JSON
 * array without its brackets), in UTF-8. `json` is a view into the pending buffer, valid until
 * the next change: written as it is, never copied.
 */
export interface EventChunk {
  first: number;
  last: number;
  json: Uint8Array;
}

const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
/** `{"schema_version":"1","event_id":"` + `#` + `","execution_id":"` + `",`, without the id (twice) and the sequence. */
const ENVELOPE_HEAD = 55;
const SEQUENCE_KEY = '"sequence":';
const EMPTY = Buffer.alloc(0);
/**
 * A new execution's first buffer: small enough for Buffer's shared pool (under 4 KiB), so that it
 * is a slice of memory already touched. At 16 KiB each execution's buffer was fresh memory, a
 * page fault per 4 KiB (measured: ~11 µs of the server's time per no-op execution over HTTP).
 */
const FIRST_BYTES = 2 * 1024;
/**
 * A buffer grown past this by a burst is let go after the flush instead of kept for the next.
 * Kept below it, a running execution's buffer is allocated once: fresh memory costs a page
 * fault per 4 KiB on first touch, which measured more than the write of the bytes to the file.
 */
const KEEP_BYTES = 8 << 20;

/**
 * The events of one execution appended since the last flush: the event objects, which reads are
 * served from until they are written, and their JSON as UTF-8 bytes, which the next flush writes.
 *
 * The JSON is made when the events are written, and handed to the fan-out with them once the
 * write committed, so an event is serialized once for the file and the live channel alike. Encoding it to UTF-8 right
 * away means a flush copies nothing (a chunk is a view of the bytes): joining thousands of
 * strings costs more than writing them to the file (measured), and `Buffer.write` is the
 * cheapest encoder Bun has for this.
 */
export class PendingEvents {
  /** Appended and not yet written, oldest first; their sequences are dense. */
  events: ExecutionEvent[] = [];
  /** `jsons[i]`: event i's JSON, made when it is written and handed to the subscribers after the commit. */
  private jsons: string[] = [];
  private bytes: Buffer = EMPTY;
  private used = 0;
  /** `ends[i]`: where event i's JSON ends in `bytes`; each one is preceded by a comma. */
  private readonly ends: number[] = [];

  /** The sequence of the oldest pending event; Infinity when there is none. */
  get first(): number {
    return this.events.length === 0 ? Infinity : this.events[0]!.sequence;
  }

  /** Takes a just-stored event. */
  add(event: ExecutionEvent): void {
    this.events.push(event);
  }

  /**
   * Appends the event's JSON without its head — `schema_version`, `event_id` and `execution_id`,
   * which readers rebuild from the row and the sequence — so the file keeps `{"sequence":…,
   * "timestamp":…,"type":…,"data":…}`: a progress event in about half the bytes, and bytes are
   * what the write costs. The head is found by its length; a JSON not laid out as expected is
   * kept whole, which reads back the same.
   */
  private write(event: ExecutionEvent, json: string): void {
    let digits = 1;
    for (let n = event.sequence; n >= 10; n = Math.floor(n / 10)) digits++;
    const head = ENVELOPE_HEAD + 2 * event.execution_id.length + digits;
    const body = json.startsWith(SEQUENCE_KEY, head) ? json.slice(head) : null;
    // A UTF-16 code unit is at most 3 UTF-8 bytes: with this much room, write never stops short.
    const need = this.used + 2 + json.length * 3;
    if (need > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.bytes.length * 2, FIRST_BYTES));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    this.bytes[this.used++] = COMMA;
    if (body === null) this.used += this.bytes.write(json, this.used, "utf8");
    else {
      this.bytes[this.used++] = OPEN_BRACE;
      this.used += this.bytes.write(body, this.used, "utf8");
    }
    this.ends.push(this.used);
    this.jsons.push(json);
  }

  /**
   * The pending events from sequence `from` on, as chunks of at most `maxEvents` events and
   * (unless one event alone is larger) `maxBytes` bytes. Serializes what was not serialized yet
   * (an earlier write that failed did some). Changes nothing else: the caller writes the chunks,
   * then takes the events.
   */
  chunks(from: number, maxEvents: number, maxBytes: number): EventChunk[] {
    const { events, ends } = this;
    for (let i = ends.length; i < events.length; i++) this.write(events[i]!, JSON.stringify(events[i]));
    const out: EventChunk[] = [];
    for (let i = Math.max(0, from - this.first); i < events.length; ) {
      const start = i === 0 ? 0 : ends[i - 1]!;
      let j = i;
      while (j + 1 < events.length && j + 1 - i < maxEvents && ends[j + 1]! - start <= maxBytes) j++;
      // The bytes of events i..j without the leading comma.
      out.push({ first: events[i]!.sequence, last: events[j]!.sequence, json: this.bytes.subarray(start + 1, ends[j]!) });
      i = j + 1;
    }
    return out;
  }

  /**
   * Lets go of the pending events before `sequence` (their JSON too): events retention already
   * dropped, which a store that cannot write (a full disk) would otherwise hold until it can,
   * a flood's worth of them (docs/durability.md).
   */
  dropBefore(sequence: number): void {
    const count = Math.min(this.events.length, sequence - this.first);
    if (!(count > 0)) return;
    const serialized = Math.min(count, this.ends.length);
    if (serialized > 0) {
      const cut = this.ends[serialized - 1]!;
      this.bytes.copy(this.bytes, 0, cut, this.used);
      this.used -= cut;
      this.ends.splice(0, serialized);
      for (let i = 0; i < this.ends.length; i++) this.ends[i]! -= cut;
      this.jsons.splice(0, serialized);
    }
    this.events.splice(0, count);
  }

  /**
   * Hands over every pending event with its JSON (they were written: the subscribers get them
   * now; or they are gone with their execution). The buffer is kept for the next events of a
   * running execution; a finished one lets it go.
   */
  take(keepBuffer: boolean): { events: ExecutionEvent[]; jsons: string[] } {
    const taken = { events: this.events, jsons: this.jsons };
    this.events = [];
    this.jsons = [];
    this.ends.length = 0;
    this.used = 0;
    if (!keepBuffer || this.bytes.length > KEEP_BYTES) this.bytes = EMPTY;
    return taken;
  }
}
