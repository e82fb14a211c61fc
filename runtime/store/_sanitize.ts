import stripAnsi from "strip-ansi";
import type { EventDraft } from "../execution/protocol.ts";

// C0 controls except \t and \n, DEL, and the C1 controls (U+0080–U+009F, which hold the 8-bit
// CSI U+009B). Every ANSI escape starts with ESC (U+001B) or a C1 introducer, so a string that
// matches neither test below holds no escape either: the common case costs one regex test.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const HAS_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const HAS_CONTROL_OR_NEWLINE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
const LINE_BREAK = /\r\n|\r|\n/g;
const TRAILING_BREAKS = /(?:\r\n|\r|\n)+$/;

/** What a line break inside one log line becomes: a log line stays one line on every surface. */
export const LINE_BREAK_MARK = " ⏎ ";

/** Marks a diagnostic message that was cut (diagnostics have no `truncated` flag). */
const CUT_MARK = "…";
const CUT_MARK_BYTES = 3;

const encoder = new TextEncoder();

/**
 * Multi-line text (stream chunks, diagnostic messages) made safe to print: ANSI escapes and
 * control characters removed, `\n` and `\t` kept; `\r\n` and a lone `\r` become `\n`, so that a
 * progress bar's carriage returns read as lines instead of text glued together.
 */
export function sanitizeText(text: string): string {
  if (!HAS_CONTROL.test(text)) return text;
  return stripAnsi(text).replace(LINE_BREAK, "\n").replace(CONTROL, "");
}

/**
 * One log line made safe to print: ANSI escapes and control characters removed, `\t` kept,
 * trailing line breaks dropped (`log("done\n")` is one line) and inner ones shown as
 * {@link LINE_BREAK_MARK}, so a line can never forge another line in a terminal or a CI log.
 */
export function sanitizeLine(text: string): string {
  if (!HAS_CONTROL_OR_NEWLINE.test(text)) return text;
  return stripAnsi(text).replace(TRAILING_BREAKS, "").replace(LINE_BREAK, LINE_BREAK_MARK).replace(CONTROL, "");
}

/** The longest prefix of `text` that is at most `maxBytes` UTF-8 bytes; never splits a code point. */
export function cutToBytes(text: string, maxBytes: number): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair is 4 for 2 units).
  if (text.length * 3 <= maxBytes) return text;
  // encodeInto stops before the first code point that does not fit, and says how far it read.
  const { read } = encoder.encodeInto(text, new Uint8Array(maxBytes));
  return read === text.length ? text : text.slice(0, read);
}

/**
 * The draft as the store keeps it: log messages sanitized as one line and cut at `logLineBytes`
 * (marked `truncated: true`); diagnostic messages sanitized as text and cut at the same bound
 * (ending in "…"), their `code` and `file` as one line; stream chunks sanitized as text.
 * Other drafts, and drafts with nothing to change, come back as the same object.
 */
export function sanitizeDraft(draft: EventDraft, logLineBytes: number): EventDraft {
  switch (draft.type) {
    case "execution.log": {
      const clean = sanitizeLine(draft.data.message);
      const message = cutToBytes(clean, logLineBytes);
      if (message === draft.data.message) return draft;
      const truncated = message.length < clean.length || draft.data.truncated === true;
      return { type: draft.type, data: { ...draft.data, message, ...(truncated ? { truncated: true } : {}) } };
    }
    case "execution.diagnostic": {
      const { message, code, file } = draft.data;
      const clean = sanitizeText(message);
      let cut = cutToBytes(clean, logLineBytes);
      if (cut.length < clean.length) cut = cutToBytes(clean, logLineBytes - CUT_MARK_BYTES) + CUT_MARK;
      const cleanCode = code === undefined ? code : sanitizeLine(code);
      const cleanFile = file === undefined ? file : sanitizeLine(file);
      if (cut === message && cleanCode === code && cleanFile === file) return draft;
      const data = { ...draft.data, message: cut };
      if (cleanCode !== undefined) data.code = cleanCode;
      if (cleanFile !== undefined) data.file = cleanFile;
      return { type: draft.type, data };
    }
    case "execution.stream": {
      const chunk = sanitizeText(draft.data.chunk);
      return chunk === draft.data.chunk ? draft : { type: draft.type, data: { ...draft.data, chunk } };
    }
    case "execution.reconciled": {
      // A person's note: printed by the CLI and the cockpit, so as safe and bounded as a log line.
      if (draft.data.note === undefined) return draft;
      const note = cutToBytes(sanitizeText(draft.data.note), logLineBytes);
      return note === draft.data.note ? draft : { type: draft.type, data: { ...draft.data, note } };
    }
    default:
      return draft;
  }
}
