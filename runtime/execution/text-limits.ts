import type { EventDraft } from "./protocol.ts";
import type { FailureDescriptor } from "./failure.ts";
import type { Limits } from "./limits.ts";
import { withoutDanglingEscape } from "./text-colour.ts";

/** Ends every text (but a log line) that was cut at its byte limit; a log line says so by `truncated` alone. */
export const CUT_MARK = "…";
const CUT_MARK_BYTES = 3;

/** The limits {@link boundDraftTexts} applies, one per kind of text (docs/limits.md). */
export type TextLimits = Pick<
  Limits,
  "log_line_bytes" | "step_title_bytes" | "step_message_bytes" | "progress_message_bytes" | "diagnostic_message_bytes" | "failure_message_bytes" | "stream_chunk_bytes"
>;

/** Only the text limits of `limits`: what a worker needs to cut texts as the store would. */
export function textLimitsOf(limits: TextLimits): TextLimits {
  const { log_line_bytes, step_title_bytes, step_message_bytes, progress_message_bytes, diagnostic_message_bytes, failure_message_bytes, stream_chunk_bytes } = limits;
  return { log_line_bytes, step_title_bytes, step_message_bytes, progress_message_bytes, diagnostic_message_bytes, failure_message_bytes, stream_chunk_bytes };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Made on the first cut: texts that fit never pay for it.
let graphemes: Intl.Segmenter | undefined;

/**
 * Where a cut at UTF-16 offset `at` of `text` should fall so that it does not split a grapheme
 * (a letter and its combining accents, an emoji sequence joined by ZWJ, a flag): the last
 * grapheme boundary at or before `at`. Only a window around the cut is segmented; a cluster
 * longer than the window (text built to be one), or one that alone does not fit, is cut inside.
 */
function graphemeBoundary(text: string, at: number): number {
  if (at >= text.length || at === 0) return at;
  const from = Math.max(0, at - 64);
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  let boundary = from;
  for (const { index } of graphemes.segment(text.slice(from, Math.min(text.length, at + 64)))) {
    if (from + index > at) break;
    boundary = from + index;
  }
  // No boundary inside the window: one cluster longer than it, or too long to fit at all. Cutting
  // inside it keeps the text that fits rather than none.
  return boundary > from ? boundary : at;
}

/**
 * The longest prefix of `text` that is at most `maxBytes` UTF-8 bytes; never splits a code point,
 * nor a grapheme (an accent stays with its letter).
 * A prefix that is shorter than the text is a fresh string: a slice could keep a huge original
 * (a 1 MB step title) alive for as long as the short text is kept.
 */
export function cutToBytes(text: string, maxBytes: number): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair is 4 for 2 units).
  if (text.length * 3 <= maxBytes) return text;
  const bytes = new Uint8Array(Math.max(0, maxBytes));
  // encodeInto stops before the first code point that does not fit, and says how far it read.
  const { read, written } = encoder.encodeInto(text, bytes);
  if (read === text.length) return text;
  const end = graphemeBoundary(text, read);
  const kept = end === read ? written : encoder.encodeInto(text.slice(0, end), bytes).written;
  // A colour sequence cut in half would leave a stray escape: it goes with the rest that did not fit.
  return withoutDanglingEscape(decoder.decode(bytes.subarray(0, kept)));
}

/**
 * `text` within `maxBytes` UTF-8 bytes, and whether it was cut: as it is when it fits, else its
 * longest prefix that fits together with {@link CUT_MARK}, marked so.
 */
export function cutText(text: string, maxBytes: number): { text: string; cut: boolean } {
  const whole = cutToBytes(text, maxBytes);
  if (whole.length === text.length) return { text, cut: false };
  return { text: cutToBytes(text, maxBytes - CUT_MARK_BYTES) + CUT_MARK, cut: true };
}

/**
 * The draft with every text it carries within its own byte limit — the one place texts are cut.
 * A cut text ends in {@link CUT_MARK} and its payload says `truncated: true`; a log line is cut
 * without the mark (its `truncated` tells), as it always was. Ids and names (a step's id, a
 * stream's name, a diagnostic's code and file) are cut at `step_title_bytes` like a title.
 * A draft with nothing to cut comes back as the same object.
 *
 * Call it on text that is final but for its length: after sanitizing and after masking secrets —
 * a secret cut in half before masking would no longer match its value, and half of it would leak.
 */
export function boundDraftTexts(draft: EventDraft, limits: TextLimits): EventDraft {
  switch (draft.type) {
    case "execution.log": {
      const message = cutToBytes(draft.data.message, limits.log_line_bytes);
      if (message.length === draft.data.message.length) return draft;
      return { type: draft.type, data: { ...draft.data, message, truncated: true } };
    }
    case "execution.step": {
      const id = cutText(draft.data.id, limits.step_title_bytes);
      const title = cutText(draft.data.title, limits.step_title_bytes);
      if (!id.cut && !title.cut) return draft;
      return { type: draft.type, data: { ...draft.data, id: id.text, title: title.text, truncated: true } };
    }
    case "execution.step_done": {
      const id = cutText(draft.data.id, limits.step_title_bytes);
      const message = draft.data.message === undefined ? null : cutText(draft.data.message, limits.step_message_bytes);
      if (!id.cut && !message?.cut) return draft;
      return { type: draft.type, data: { ...draft.data, id: id.text, ...(message ? { message: message.text } : {}), truncated: true } };
    }
    case "execution.progress": {
      if (draft.data.message === undefined) return draft;
      const message = cutText(draft.data.message, limits.progress_message_bytes);
      return message.cut ? { type: draft.type, data: { ...draft.data, message: message.text, truncated: true } } : draft;
    }
    case "execution.stream": {
      const name = cutText(draft.data.name, limits.step_title_bytes);
      const chunk = cutText(draft.data.chunk, limits.stream_chunk_bytes);
      if (!name.cut && !chunk.cut) return draft;
      return { type: draft.type, data: { ...draft.data, name: name.text, chunk: chunk.text, truncated: true } };
    }
    case "execution.diagnostic": {
      const { code, file } = draft.data;
      const message = cutText(draft.data.message, limits.diagnostic_message_bytes);
      const cutCode = code === undefined ? null : cutText(code, limits.step_title_bytes);
      const cutFile = file === undefined ? null : cutText(file, limits.step_title_bytes);
      if (!message.cut && !cutCode?.cut && !cutFile?.cut) return draft;
      const data = { ...draft.data, message: message.text, truncated: true };
      if (cutCode) data.code = cutCode.text;
      if (cutFile) data.file = cutFile.text;
      return { type: draft.type, data };
    }
    case "execution.completed": {
      const failure = draft.data.failure;
      if (failure === undefined) return draft;
      const bounded = boundFailureTexts(failure, limits.failure_message_bytes);
      return bounded === failure ? draft : { type: draft.type, data: { ...draft.data, failure: bounded } };
    }
    case "execution.reconciled": {
      // A reconciliation's note is bounded like a diagnostic's message: a sentence or a paragraph.
      if (draft.data.note === undefined) return draft;
      const note = cutText(draft.data.note, limits.diagnostic_message_bytes);
      return note.cut ? { type: draft.type, data: { ...draft.data, note: note.text } } : draft;
    }
    default:
      return draft;
  }
}

/**
 * A failure with its message and suggestion each within `maxBytes` (`failure_message_bytes`), cut
 * ones ending in {@link CUT_MARK}; the same object when both fit. Executions' failures are cut
 * where their event is stored; a call's failure where it leaves the plane, since its message may
 * quote what the caller sent (an unknown id of megabytes).
 */
export function boundFailureTexts<F extends Pick<FailureDescriptor, "message" | "suggestion">>(failure: F, maxBytes: number): F {
  const message = cutText(failure.message, maxBytes);
  const suggestion = cutText(failure.suggestion, maxBytes);
  if (!message.cut && !suggestion.cut) return failure;
  return { ...failure, message: message.text, suggestion: suggestion.text };
}
