import stripAnsi from "strip-ansi";

/**
 * A Select Graphic Rendition sequence: colour, bold, underline, reset (`ESC [ 1;31 m`). It only
 * paints the text after it; it cannot move a cursor, clear a screen or rewrite a line, which is
 * why it is the one escape the store keeps (the cockpit and a colour terminal show it, every other
 * surface strips it). See docs/protocol.md, "Events" (the sanitized fields), and docs/cockpit.md, "The execution page".
 */
const SGR = /\u001b\[[0-9;:]{0,64}m/g;
const HAS_ESCAPE = /[\u001b\u009b]/;
/** An escape cut off by a byte limit: `ESC`, `ESC [`, `ESC [ 3 1` at the very end. */
const DANGLING_ESCAPE = /\u001b(?:\[[0-9;:]*)?$/;

/**
 * `clean` applied to the text between colour sequences, which are kept as they are: every other
 * escape and control character goes, as `clean` removes them, but a log line keeps its colours.
 */
export function keepingColour(text: string, clean: (segment: string) => string): string {
  if (!HAS_ESCAPE.test(text)) return clean(text);
  let out = "";
  let last = 0;
  for (const match of text.matchAll(SGR)) {
    out += clean(text.slice(last, match.index)) + match[0];
    last = match.index + match[0].length;
  }
  return out + clean(text.slice(last));
}

/** Drops a colour sequence that a byte limit cut in half, so no partial escape is ever stored. */
export function withoutDanglingEscape(text: string): string {
  return text.endsWith("m") || !text.includes("\u001b") ? text : text.replace(DANGLING_ESCAPE, "");
}

/** The text without its colour sequences, for surfaces that show no colour (a pipe, NO_COLOR, JSON for people). */
export function withoutColour(text: string): string {
  return HAS_ESCAPE.test(text) ? stripAnsi(text) : text;
}
