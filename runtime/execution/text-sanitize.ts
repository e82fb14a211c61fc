import stripAnsi from "strip-ansi";
import type { EventDraft } from "./protocol.ts";
import { keepingColour, withoutColour } from "./text-colour.ts";

// C0 controls except \t and \n, DEL, the C1 controls (U+0080–U+009F, which hold the 8-bit CSI
// U+009B), and the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069): invisible, they make a line read in another order than it is written ("Trojan
// Source"). The marks U+200E, U+200F and U+061C stay: they reorder nothing past the text around
// them, and right-to-left text needs them. Every ANSI escape starts with ESC (U+001B) or a C1
// introducer, so a string that matches neither test below holds no escape either: the common
// case costs one regex test.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const HAS_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const HAS_CONTROL_OR_NEWLINE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const LINE_BREAK = /\r\n|\r|\n/g;
/**
 * A single shift (SS2, SS3; `ESC N`, `ESC O` or 8-bit) with the one character it shifts: a
 * terminal draws that character from another set, so it goes with the shift. stripAnsi removes
 * `ESC O` alone, and `ESC O A` (an arrow key's code) would leave its `A` in the text, between the
 * halves of what it split.
 */
export const SINGLE_SHIFT = /(?:\u001b[NO]|[\u008e\u008f])[^\u0000-\u001f\u007f-\u009f]?/g;
/** Removes every escape sequence (single shifts with their character) from a text with no colour in it. */
const withoutEscapes = (segment: string) => stripAnsi(segment.replace(SINGLE_SHIFT, ""));
const TRAILING_BREAKS = /(?:\r\n|\r|\n)+$/;

/**
 * The longest unfinished escape sequence a stream holds back for its next write. Colour sequences
 * are far shorter (text-colour.ts keeps at most 64 units); a longer one, a window title or a link
 * written in pieces, is let go as it is and sanitized as any other text (docs/security.md).
 */
export const MAX_HELD_ESCAPE_UNITS = 256;
/**
 * An escape sequence that runs to the end of a text without being finished, by ansi-regex's
 * grammar (what stripAnsi removes), matched from its introducer: a CSI with no final byte yet
 * (`ESC [ 3`, `ESC [ 38;2;255;`), a string (OSC, DCS, SOS, PM, APC) with no terminator yet, `ESC`
 * alone or with intermediates only (`ESC (`).
 */
const UNFINISHED_ESCAPE =
  /^(?:(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*|(?:\u001b[\]PX^_k]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u0018\u001a\u001b\u0080-\u009f]*|\u001b[\u0020-\u002f]*|[\u008e\u008f]|\u001bN|\u001bO)$/;
/** A string whose terminator `ESC \` the end of a text cuts after its `ESC`. */
const STRING_BEFORE_ESC = /^(?:\u001b[\]PX^_k]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u0018\u001a\u001b\u0080-\u009f]*\u001b$/;
const HAS_INTRODUCER = /[\u001b\u008e\u008f\u0090\u0098\u009b\u009d\u009e\u009f]/;
const ESC = 0x1b;

/**
 * How many units at the end of a stream's text are an escape sequence its next write may finish:
 * made safe alone, a write's `ESC [ 3` before the next one's `1m` would lose its `ESC` and show
 * `[31m` as text. 0 when the text ends with no such sequence. Only the last
 * MAX_HELD_ESCAPE_UNITS are looked at, from the end back to the last introducer, so a write
 * costs no more than its own length: no sequence's payload holds an introducer, so the last one
 * starts it (or, when the text ends with `ESC`, maybe the one before, a string that `ESC` ends).
 */
export function unfinishedEscapeLength(text: string): number {
  const floor = Math.max(0, text.length - MAX_HELD_ESCAPE_UNITS);
  // Most writes hold no escape at all: one regex test says so faster than a loop can.
  if (!HAS_INTRODUCER.test(floor === 0 ? text : text.slice(floor))) return 0;
  const last = lastIntroducer(text, text.length - 1, floor);
  if (last === -1) return 0;
  if (last === text.length - 1 && text.charCodeAt(last) === ESC) {
    const string = lastIntroducer(text, last - 1, floor);
    return string !== -1 && STRING_BEFORE_ESC.test(text.slice(string)) ? text.length - string : 1;
  }
  return UNFINISHED_ESCAPE.test(text.slice(last)) ? text.length - last : 0;
}

/** The index of the last ESC or C1 introducer at or before `from` and at or after `floor`; -1 if none. */
function lastIntroducer(text: string, from: number, floor: number): number {
  for (let i = from; i >= floor; i--) {
    const code = text.charCodeAt(i);
    if (code === ESC || (code >= 0x8e && code <= 0x9f && INTRODUCERS.has(code))) return i;
  }
  return -1;
}
const INTRODUCERS: ReadonlySet<number> = new Set([0x8e, 0x8f, 0x90, 0x98, 0x9b, 0x9d, 0x9e, 0x9f]);

/** True when `text` holds the introducer of an escape sequence (ESC or a C1 one): made safe, it may lose what follows that too. */
export function holdsEscape(text: string): boolean {
  return HAS_INTRODUCER.test(text);
}

/** What a line break inside one log line becomes: a log line stays one line on every surface. */
export const LINE_BREAK_MARK = " ⏎ ";

/**
 * Multi-line text (stream chunks, diagnostic messages) made safe to print: ANSI escapes other than
 * colour (SGR), control characters and bidirectional overrides removed, `\n` and `\t` kept; `\r\n` and a lone `\r` become `\n`, so that a
 * progress bar's carriage returns read as lines instead of text glued together.
 */
export function sanitizeText(text: string): string {
  if (!HAS_CONTROL.test(text)) return text;
  return keepingColour(text, (segment) => withoutEscapes(segment).replace(LINE_BREAK, "\n").replace(CONTROL, ""));
}

/**
 * A text as every surface shows it where no colour belongs (a capability's title, a file's name in
 * a load error): without escape sequences (colour included), controls or bidi overrides; lines
 * and tabs kept.
 */
export function plainText(text: string): string {
  return withoutColour(sanitizeText(text));
}

/**
 * A client's own short text (a session key, an MCP client's name) as one line of plain text: no
 * escape, control or bidi override, and its tabs and line breaks (U+2028 and U+2029 too) as spaces.
 */
export function oneLinePlain(text: string): string {
  return plainText(text).replace(/[\t\n\u2028\u2029]+/g, " ");
}

/**
 * One log line made safe to print: ANSI escapes other than colour (SGR), control characters and
 * bidirectional overrides removed, `\t` kept,
 * trailing line breaks dropped (`log("done\n")` is one line) and inner ones shown as
 * {@link LINE_BREAK_MARK}, so a line can never forge another line in a terminal or a CI log.
 */
export function sanitizeLine(text: string): string {
  if (!HAS_CONTROL_OR_NEWLINE.test(text)) return text;
  return keepingColour(text.replace(TRAILING_BREAKS, ""), (segment) => withoutEscapes(segment).replace(LINE_BREAK, LINE_BREAK_MARK).replace(CONTROL, ""));
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

/** What JSON.stringify leaves as it is and a line's sanitizing removes (CONTROL without the C0 range), and the line separators. */
const UNQUOTED_CONTROL = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` quoted as JSON with every character a message's sanitizing would remove written as an
 * escape (`"quick.echo\u007f"`): a message that names what was sent never names another thing —
 * a loaded id — instead (hostile tester, session 39).
 */
export function quotedText(text: string): string {
  return JSON.stringify(text).replace(UNQUOTED_CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
