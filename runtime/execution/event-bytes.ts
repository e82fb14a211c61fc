import type { EventDraft, ExecutionEvent } from "./protocol.ts";

// How big an event's JSON is, without serializing it: what the stores' retention budgets
// (docs/limits.md) and the live channel's queues (docs/protocol.md, "Backpressure") count.

/** What an event costs beyond its texts: the envelope (ids, sequence, timestamp, type) and the payload's keys. */
const EVENT_OVERHEAD = 160;

/** A text's UTF-8 bytes: measured when long (where the budget matters), its length when short (cheap). */
function textBytes(text: string | undefined): number {
  if (text === undefined) return 0;
  return text.length < 256 ? text.length : Buffer.byteLength(text);
}

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
      return EVENT_OVERHEAD + (JSON.stringify(e.data)?.length ?? 0);
  }
}
