import type { ExecutionEvent } from "../execution/protocol.ts";
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

/**
 * The frame for an event: its shared JSON when it fits in `limit` bytes, else the event
 * re-serialized with `data.output` / `data.input` replaced by a `withheld` marker pointing at the
 * snapshot. If that is still too large, the other large values of `data` are withheld too,
 * largest first, until it fits; and if many small values still make it too large, `data` as a whole.
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
    data[key] = withheld(data[key]);
    frame = JSON.stringify({ ...event, data });
    if (byteLength(frame) <= limit) return frame;
  }
  // The envelope and a marker fit in frame_bytes' smallest value (1 KiB).
  return JSON.stringify({ ...event, data: withheld(event.data) });
}
