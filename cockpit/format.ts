import type { Actor } from "../runtime/execution/protocol.ts";
import { withoutColour } from "../runtime/execution/text-colour.ts";

/** An ISO timestamp as the cockpit shows it: `2026-09-08 01:02:03 UTC` (the server does not know the reader's zone). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  return `${iso.replace("T", " ").slice(0, 19)} UTC`;
}

/** A duration a person reads at a glance: `250 ms`, `1.25 s`, `3 min 4 s`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Milliseconds between two ISO timestamps, or null while the second is missing. */
export function between(from: string | null, to: string | null): number | null {
  if (!from || !to) return null;
  return Date.parse(to) - Date.parse(from);
}

/**
 * What the steps table and the timeline say of the steps the snapshot let go (steps_retained),
 * and of the failed ones among them when that is known; format.js says it in the same words.
 */
export function stepsDroppedText(dropped: number, failed: number | null): string {
  const which = failed === null ? "" : failed === 0 ? ", none of them failed" : `, ${failed} of them failed`;
  return `${dropped} earlier step(s) not kept${which}.`;
}

/** What the streams panel says of the streams it does not show (history-extras.ts, STREAMS_SHOWN); format.js says it in the same words. */
export function streamsDroppedText(dropped: number): string {
  return `${dropped} more stream(s) not shown: only those written to last are. docket executions events has every chunk.`;
}

// The bidirectional embeddings, overrides and isolates, which make a text read in another order
// than it is written ("report\u202efdp.exe" reads "reportexe.pdf"). Handler text (log lines,
// steps, diagnostics, a failure's message) loses them before it is stored; what else a handler
// gives (an output, a failure's context, an artifact's name) keeps them, and loses them where the
// cockpit shows it (docs/cockpit.md). format.js does the same for what the scripts show.
// In JSON text, where JSON.stringify writes them raw: DEL and the C1 controls (U+009B opens an
// escape sequence of its own on a terminal) and the bidi controls, each then written as its escape.
const RAW_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// What else no text shows: C0 controls but \t and \n, DEL, C1 controls, and the bidi controls.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * A string a handler gave, as the cockpit shows it as text: without escape sequences (the colour a
 * handler's step title or failure message keeps is painted in the log alone; elsewhere its `ESC [31m`
 * would show as a box and "[31m"), control characters or bidirectional controls.
 */
export function shownText(text: string): string {
  return withoutColour(text).replace(HIDDEN, "");
}

/**
 * How much of a step's title, and of a step's or a diagnostic's message, a page shows (the API has
 * them whole): 1,100 steps at their bounds drew a 44 MB page and held the server 4–13 s, 600
 * diagnostics 12 MB (cockpit checking tester, session 48). assets/format.js cuts the same.
 */
export const SHOWN_TITLE_CHARS = 200;
export const SHOWN_MESSAGE_CHARS = 500;

/** `text` as shown text, cut at `max` characters with an ellipsis (never inside a surrogate pair). */
export function shownCut(text: string, max: number): string {
  const shown = shownText(text);
  if (shown.length <= max) return shown;
  const end = /[\ud800-\udbff]/.test(shown[max - 2] ?? "") ? max - 2 : max - 1;
  return `${shown.slice(0, end)}…`;
}

/** Whether formatJson shows `value` whole (its indented JSON within the page's bound). */
export function jsonShownWhole(value: unknown): boolean {
  const text = JSON.stringify(value === undefined ? null : value, null, 2) ?? "null";
  // Each character formatJson writes as its escape (`\u202e`) takes six (checking tester).
  return text.length + (text.match(RAW_IN_JSON)?.length ?? 0) * 5 <= MAX_SHOWN_JSON;
}

/**
 * A value as JSON text, indented (`indent` 0: on one line); `undefined` (nothing returned) reads as `null`. A bidirectional
 * control is written as its escape (`\u202e`): it can only stand inside a string, where the
 * escape is the same value, so the text is still the exact JSON and reads in the order it is written.
 */
export function formatJson(value: unknown, indent = 2, whole = WHOLE_FROM_API, max = MAX_SHOWN_JSON): string {
  const text = (JSON.stringify(value === undefined ? null : value, null, indent) ?? "null").replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const most = Math.min(max, MAX_SHOWN_JSON);
  if (text.length <= most) return text;
  // A page is no place for megabytes: the API serves the whole value.
  return `${text.slice(0, most)}\n… ${(text.length - most).toLocaleString("en-US")} more characters not shown; ${whole}.`;
}

/** Where a value cut on a page is whole, by default: an execution's page links the API's answers. */
export const WHOLE_FROM_API = "read the whole value from the API (the links on this page)";

/** How much of one JSON value a page shows. */
const MAX_SHOWN_JSON = 256 * 1024;

/** Who started an execution, in words. */
export function actorLabel(actor: Actor): string {
  switch (actor.kind) {
    case "cockpit":
      return "cockpit";
    case "http":
      return "HTTP API";
    case "mcp":
      return actor.client ? `MCP (${actor.client})` : "MCP";
    case "cli":
      return `docket run (pid ${actor.pid})`;
  }
}

/** A progress counter in words: `3 of 10 — step 3 done`, `17 so far` when the total is unknown. */
export function progressText(progress: { current: number; total: number | null; message: string | null } | null): string {
  if (!progress) return "No progress reported yet.";
  const percent = progress.total ? ` (${Math.floor((100 * progress.current) / progress.total)}%)` : "";
  const count = progress.total === null ? `${progress.current} so far (total unknown)` : `${progress.current} of ${progress.total}${percent}`;
  return progress.message ? `${count} — ${shownText(progress.message)}` : count;
}

/** The time of day of an ISO timestamp, to the millisecond (`01:02:03.456`), for log lines. */
export function timeOfDay(iso: string): string {
  return iso.slice(11, 23);
}

/** A size a person reads at a glance: `812 B`, `4.2 KiB`, `16.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** How long ago an instant was, in words: `just now`, `42 s ago`, `5 min ago`, `3 h ago`, `2 days ago` (or `in …`). */
export function relativeTime(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return "—";
  const future = ms < 0;
  const s = Math.abs(ms) / 1000;
  const words = s < 5 ? null : s < 60 ? `${Math.floor(s)} s` : s < 3600 ? `${Math.floor(s / 60)} min` : s < 86_400 ? `${Math.floor(s / 3600)} h` : `${Math.floor(s / 86_400)} day${s < 172_800 ? "" : "s"}`;
  if (words === null) return "just now";
  return future ? `in ${words}` : `${words} ago`;
}

/** A file as the reader knows it: relative to the checkout when inside it (`capabilities/x.ts`), else as it is. */
export function checkoutPath(file: string, root: string): string {
  const prefix = root.endsWith("/") ? root : `${root}/`;
  // A file's name may hold what no text shows (an escape sequence typed into it): shown without it.
  return shownText(file.startsWith(prefix) ? file.slice(prefix.length) : file);
}
