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

/** Values smaller than this are never withheld in the fallback pass: they cannot be what made the frame large. */
const SMALL_VALUE_BYTES = 1024;

/**
 * About how many bytes an event's frame holds, before it is made: the event's size estimate plus
 * the execution id its envelope holds twice (within a fifth of the frame's UTF-8 bytes for the
 * events handlers emit, tests/server/live-frame.test.ts).
 */
export function estimatedFrameBytes(event: ExecutionEvent): number {
  return eventBytes(event) + 2 * event.execution_id.length + 20;
}

/**
 * The frame for an event: its shared JSON when it fits in `limit` bytes, else the event
 * re-serialized with `data.output` / `data.input` replaced by a `withheld` marker pointing at the
 * snapshot. If that is still too large, every other large field of `data` is withheld too.
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
  for (const [key, value] of Object.entries(data)) {
    if (byteLength(JSON.stringify(value) ?? "") > SMALL_VALUE_BYTES) data[key] = withheld(value);
  }
  frame = JSON.stringify({ ...event, data });
  return frame;
}
