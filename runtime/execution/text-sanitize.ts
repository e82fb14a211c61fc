import stripAnsi from "strip-ansi";
import type { EventDraft } from "./protocol.ts";
import { keepingColour, withoutColour } from "./text-colour.ts";

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

/**
 * Multi-line text (stream chunks, diagnostic messages) made safe to print: ANSI escapes other than
 * colour (SGR) and control characters removed, `\n` and `\t` kept; `\r\n` and a lone `\r` become `\n`, so that a
 * progress bar's carriage returns read as lines instead of text glued together.
 */
export function sanitizeText(text: string): string {
  if (!HAS_CONTROL.test(text)) return text;
  return keepingColour(text, (segment) => stripAnsi(segment).replace(LINE_BREAK, "\n").replace(CONTROL, ""));
}

/**
 * One log line made safe to print: ANSI escapes other than colour (SGR) and control characters
 * removed, `\t` kept,
 * trailing line breaks dropped (`log("done\n")` is one line) and inner ones shown as
 * {@link LINE_BREAK_MARK}, so a line can never forge another line in a terminal or a CI log.
 */
export function sanitizeLine(text: string): string {
  if (!HAS_CONTROL_OR_NEWLINE.test(text)) return text;
  return keepingColour(text.replace(TRAILING_BREAKS, ""), (segment) => stripAnsi(segment).replace(LINE_BREAK, LINE_BREAK_MARK).replace(CONTROL, ""));
}

/**
 * The draft as the store keeps it before its texts are cut (see boundDraftTexts): log messages,
 * step ids and titles, step and progress messages and stream names sanitized as one line;
 * diagnostic messages sanitized as text, their `code` and `file` as one line; stream chunks
 * sanitized as text. Other drafts, and drafts with nothing to change, come back as the same
 * object. A handler's worker applies the same rules before it masks secrets (worker/_worker-context.ts),
 * so a control character inside a secret cannot hide it from the mask; here they change nothing more.
 */
export function sanitizeDraft(draft: EventDraft): EventDraft {
  switch (draft.type) {
    case "execution.step": {
      const id = sanitizeLine(draft.data.id);
      const title = sanitizeLine(draft.data.title);
      return id === draft.data.id && title === draft.data.title ? draft : { type: draft.type, data: { ...draft.data, id, title } };
    }
    case "execution.step_done": {
      const id = sanitizeLine(draft.data.id);
      const message = draft.data.message === undefined ? undefined : sanitizeLine(draft.data.message);
      if (id === draft.data.id && message === draft.data.message) return draft;
      return { type: draft.type, data: { ...draft.data, id, ...(message === undefined ? {} : { message }) } };
    }
    case "execution.progress": {
      if (draft.data.message === undefined) return draft;
      const message = sanitizeLine(draft.data.message);
      return message === draft.data.message ? draft : { type: draft.type, data: { ...draft.data, message } };
    }
    case "execution.log": {
      const message = sanitizeLine(draft.data.message);
      return message === draft.data.message ? draft : { type: draft.type, data: { ...draft.data, message } };
    }
    case "execution.diagnostic": {
      const { message, code, file } = draft.data;
      const clean = sanitizeText(message);
      const cleanCode = code === undefined ? code : sanitizeLine(code);
      const cleanFile = file === undefined ? file : sanitizeLine(file);
      if (clean === message && cleanCode === code && cleanFile === file) return draft;
      const data = { ...draft.data, message: clean };
      if (cleanCode !== undefined) data.code = cleanCode;
      if (cleanFile !== undefined) data.file = cleanFile;
      return { type: draft.type, data };
    }
    case "execution.stream": {
      const name = sanitizeLine(draft.data.name);
      const chunk = sanitizeText(draft.data.chunk);
      return name === draft.data.name && chunk === draft.data.chunk ? draft : { type: draft.type, data: { ...draft.data, name, chunk } };
    }
    case "execution.reconciled": {
      // A person's note: printed by the CLI and the cockpit, so as safe as a diagnostic, and plain
      // (colour is a handler's output's, not a person's).
      if (draft.data.note === undefined) return draft;
      const note = withoutColour(sanitizeText(draft.data.note));
      return note === draft.data.note ? draft : { type: draft.type, data: { ...draft.data, note } };
    }
    default:
      return draft;
  }
}
