import type { EventDraft, ExecutionEvent } from "./protocol.ts";

// How big an event's JSON is, without serializing it: what the stores' retention budgets
// (docs/limits.md) and the live channel's queues (docs/protocol.md, "Backpressure") count.

/** What an event costs beyond its texts: the envelope (ids, sequence, timestamp, type) and the payload's keys. */
const EVENT_OVERHEAD = 160;

// Printable ASCII but for the two characters JSON escapes: a unit of such a text is a byte of JSON.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * The bytes a text takes in an event's JSON, in UTF-8, escapes included: its length for plain
 * ASCII (the common case, one native scan), else measured from its JSON — a character a handler
 * chose can take up to six bytes there (a control character or a lone surrogate is `\uXXXX`), and
 * a count of units would let such texts hold several times what a budget says.
 */
function textBytes(text: string | undefined): number {
  if (text === undefined) return 0;
  return PLAIN.test(text) ? text.length : Buffer.byteLength(JSON.stringify(text)) - 2;
}

// The last event measured by serializing it, and its size: storing an event and handing it to the
// live channel measure the same object one after the other (the store's retention, then the
// channel's queue bound), and an `execution.created` or `.completed` is serialized once, not twice.
// Events are never changed once stored, so the object is its size's key.
let lastSerialized: ExecutionEvent | null = null;
let lastSerializedBytes = 0;

/**
 * About how many bytes an event's JSON holds: its texts (see textBytes) plus a fixed overhead.
 * The frequent events (progress, log, step, stream, diagnostic) are measured from their texts
 * alone, which is cheap; the rare ones that carry values (input, output, failure) are serialized.
 */
export function eventBytes(event: ExecutionEvent): number {
  const e = event as ExecutionEvent & EventDraft;
  switch (e.type) {
    case "execution.progress":
      return EVENT_OVERHEAD + textBytes(e.data.message);
    case "execution.log":
      return EVENT_OVERHEAD + textBytes(e.data.message);
    case "execution.step":
      return EVENT_OVERHEAD + textBytes(e.data.id) + textBytes(e.data.title);
    case "execution.step_done":
      return EVENT_OVERHEAD + textBytes(e.data.id) + textBytes(e.data.message);
    case "execution.stream":
      return EVENT_OVERHEAD + textBytes(e.data.name) + textBytes(e.data.chunk);
    case "execution.diagnostic":
      return EVENT_OVERHEAD + textBytes(e.data.message) + textBytes(e.data.code) + textBytes(e.data.file);
    case "execution.started":
      return EVENT_OVERHEAD;
    default:
      if (event !== lastSerialized) {
        lastSerializedBytes = EVENT_OVERHEAD + Buffer.byteLength(JSON.stringify(e.data) ?? "");
        lastSerialized = event;
      }
      return lastSerializedBytes;
  }
}
