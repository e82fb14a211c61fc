import { HANDLER_EVENT_TYPES, type ExecutionEvent } from "../execution/protocol.ts";
import { eventBytes } from "../execution/event-bytes.ts";
import { executionLinks } from "../execution/snapshot.ts";

/** What stands in for a value too large for one live-channel frame (docs/protocol.md). */
export interface WithheldValue {
  withheld: "too_large";
  bytes: number;
  limit: number;
  self: string;
}

const byteLength = (text: string): number => Buffer.byteLength(text, "utf8");

/**
 * About how many bytes an event's frame holds, before it is made: the event's size estimate plus
 * the execution id its envelope holds twice (within a fifth of the frame's UTF-8 bytes for the
 * events handlers emit, tests/server/live-frame.test.ts).
 */
export function estimatedFrameBytes(event: ExecutionEvent): number {
  return eventBytes(event) + 2 * event.execution_id.length + 20;
}

/** A value whose JSON is at most this many bytes is never withheld: its marker would be about as large. */
const MARKER_BYTES = 256;

/** The events whose texts are cut to fit a frame, marked `truncated` as their payloads allow, rather than withheld. */
const CUT_TYPES: ReadonlySet<string> = new Set(HANDLER_EVENT_TYPES);

/**
 * The frame for an event: its shared JSON when it fits in `limit` bytes, else the event
 * re-serialized with `data.output` / `data.input` replaced by a `withheld` marker pointing at the
 * snapshot. If that is still too large, the other large values of `data` go too, largest first,
 * until it fits: a handler event's text (a log line, a stream chunk, a step title) is cut to fit
 * and the event marked `truncated: true`, as its payload schema allows — a marker object in place
 * of a string made a frame the protocol's own schema refused (API tester, session 43); another
 * value is withheld. If many small values still make it too large, `data` as a whole is withheld.
 */
export function boundFrame(event: ExecutionEvent, json: string, limit: number): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most frames are proven small without counting.
  if (json.length * 3 <= limit || byteLength(json) <= limit) return json;
  const self = executionLinks(event.execution_id).self;
  const withheld = (value: unknown): WithheldValue => ({ withheld: "too_large", bytes: byteLength(JSON.stringify(value) ?? ""), limit, self });
  const data: Record<string, unknown> = { ...(event.data as Record<string, unknown>) };
  for (const key of ["output", "input"]) if (key in data) data[key] = withheld(data[key]);
  let frame = JSON.stringify({ ...event, data });
  if (byteLength(frame) <= limit) return frame;
  const large = Object.entries(data)
    .map(([key, value]) => ({ key, bytes: byteLength(JSON.stringify(value) ?? "") }))
    .filter(({ bytes }) => bytes > MARKER_BYTES)
    .sort((a, b) => b.bytes - a.bytes);
  for (const { key } of large) {
    if (typeof data[key] === "string" && CUT_TYPES.has(event.type)) {
      frame = cutToFit(event, data, key, frame, limit);
    } else {
      data[key] = withheld(data[key]);
      frame = JSON.stringify({ ...event, data });
    }
    if (byteLength(frame) <= limit) return frame;
  }
  // The envelope and a marker fit in frame_bytes' smallest value (1 KiB).
  return JSON.stringify({ ...event, data: withheld(event.data) });
}

/**
 * Cuts the text `data[key]` until the event's frame fits in `limit` bytes (or the text is empty),
 * at a whole character, and marks the event `truncated`; answers the frame as it then is.
 */
function cutToFit(event: ExecutionEvent, data: Record<string, unknown>, key: string, frame: string, limit: number): string {
  let text = data[key] as string;
  data.truncated = true;
  for (let over = byteLength(frame) - limit; text.length > 0; over = byteLength(frame) - limit) {
    // The frame's `truncated: true` is counted in the first cut (a few bytes more than measured).
    const jsonBytes = byteLength(JSON.stringify(text));
    const keep = Math.max(0, Math.floor((text.length * (jsonBytes - over - 32)) / jsonBytes));
    text = text.slice(0, keep);
    // Never half of a pair: a lone surrogate is no character of the text.
    if (/[\ud800-\udbff]$/.test(text)) text = text.slice(0, -1);
    data[key] = text;
    frame = JSON.stringify({ ...event, data });
    if (byteLength(frame) <= limit) break;
  }
  return frame;
}
