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

/**
 * Where an event's values may give way to fit a frame, by type: `opaque`, values the protocol
 * types as any JSON (`unknown`), which a `withheld` marker may stand for and still validate;
 * `texts`, strings that may be cut (a log line, a title, a failure's message) — never an identity
 * (a step's id, a stream's name, a run_id), which a client matches events by. A path is the key
 * under `data`, or `failure.<key>` inside it.
 */
const GIVES_WAY: Record<string, { opaque: string[]; texts: string[] }> = {
  "execution.created": { opaque: ["input"], texts: [] },
  "execution.step": { opaque: [], texts: ["title"] },
  "execution.step_done": { opaque: [], texts: ["message"] },
  "execution.progress": { opaque: [], texts: ["message"] },
  "execution.log": { opaque: [], texts: ["message"] },
  "execution.stream": { opaque: [], texts: ["chunk"] },
  "execution.diagnostic": { opaque: [], texts: ["message", "code", "file"] },
  "execution.completed": { opaque: ["output", "failure.context"], texts: ["failure.message", "failure.suggestion"] },
  "execution.reconciled": { opaque: ["evidence"], texts: ["note"] },
};

/** What a cut text ends with, as the store's own cuts do. */
const CUT_MARK = "…";

/**
 * The frame for an event: its shared JSON when it fits in `limit` bytes, else the event
 * re-serialized so that it fits and keeps the shape the protocol's `event_schema` gives it (API
 * tester, session 43: a marker object where the schema wants a string failed it). First the
 * values typed as any JSON (an output, an input, a failure's context, evidence) are replaced by a
 * `withheld` marker pointing at the snapshot, the largest first; then the texts are cut,
 * each to a fair share of what is left (a short one kept whole), ending in "…" — a handler
 * event marked `truncated: true`. Identities are never cut. Only when they alone make the frame
 * too large (a `frame_bytes` near its 1 KiB minimum with ids near `step_title_bytes`) does a
 * marker stand for the whole `data`.
 */
export function boundFrame(event: ExecutionEvent, json: string, limit: number): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most frames are proven small without counting.
  if (json.length * 3 <= limit || byteLength(json) <= limit) return json;
  const self = executionLinks(event.execution_id).self;
  const withheld = (value: unknown): WithheldValue => ({ withheld: "too_large", bytes: byteLength(JSON.stringify(value) ?? ""), limit, self });
  const data: Record<string, unknown> = { ...(event.data as Record<string, unknown>) };
  if (isRecord(data.failure)) data.failure = { ...data.failure };
  const frameOf = () => JSON.stringify({ ...event, data });
  const gives = GIVES_WAY[event.type] ?? { opaque: [], texts: [] };
  // Large opaque values first, the largest first, until the frame fits.
  const opaque = gives.opaque
    .map((path) => ({ path, bytes: byteLength(JSON.stringify(read(data, path)) ?? "") }))
    .filter(({ path, bytes }) => read(data, path) !== undefined && bytes > MARKER_BYTES)
    .sort((a, b) => b.bytes - a.bytes);
  for (const { path } of opaque) {
    write(data, path, withheld(read(data, path)));
    const frame = frameOf();
    if (byteLength(frame) <= limit) return frame;
  }
  const texts = gives.texts.filter((path) => typeof read(data, path) === "string");
  if (texts.length > 0) {
    if (HANDLER_EVENT_TYPES.includes(event.type as never)) data.truncated = true;
    const whole = texts.map((path) => read(data, path) as string);
    for (const path of texts) write(data, path, "");
    // What the texts may take together: the frame without them, and a cut mark each, left out.
    let budget = limit - byteLength(frameOf()) - texts.length * byteLength(CUT_MARK);
    // Each text a fair share of it, the shortest first: one shorter than its share is kept whole
    // and leaves the rest to the others.
    const order = texts.map((path, i) => ({ path, text: whole[i]!, bytes: byteLength(JSON.stringify(whole[i]!)) - 2 })).sort((a, b) => a.bytes - b.bytes);
    order.forEach(({ path, text, bytes }, i) => {
      const share = Math.max(0, Math.floor(budget / (order.length - i)));
      const kept = bytes <= share ? text : `${cutToBytes(text, share)}${CUT_MARK}`;
      write(data, path, kept);
      budget -= byteLength(JSON.stringify(kept)) - 2;
    });
    const frame = frameOf();
    if (byteLength(frame) <= limit) return frame;
  }
  // The identities alone are more than a frame: the marker stands for the whole `data`.
  return JSON.stringify({ ...event, data: withheld(event.data) });
}

/**
 * The longest start of `text` whose JSON (without its quotes) takes at most `bytes` bytes, at a
 * whole character: never half of a surrogate pair.
 */
function cutToBytes(text: string, bytes: number): string {
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (byteLength(JSON.stringify(text.slice(0, mid))) - 2 <= bytes) low = mid;
    else high = mid - 1;
  }
  const cut = text.slice(0, low);
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value at `path` in `data`: a key, or `failure.<key>`. */
function read(data: Record<string, unknown>, path: string): unknown {
  const [head, key] = path.split(".") as [string, string | undefined];
  if (key === undefined) return data[head];
  const inner = data[head];
  return isRecord(inner) ? inner[key] : undefined;
}

function write(data: Record<string, unknown>, path: string, value: unknown): void {
  const [head, key] = path.split(".") as [string, string | undefined];
  if (key === undefined) data[head] = value;
  else if (isRecord(data[head])) (data[head] as Record<string, unknown>)[key] = value;
}
