/**
 * Characters JSON writes as they are but a terminal would act on: the C1 controls (U+0080–U+009F,
 * an 8-bit CSI among them) and the bidirectional embeddings, overrides and isolates, which make a
 * line read in another order than it is written.
 */
const ACTED_ON = /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * A value as JSON (indented by `indent`) for a person at a terminal: each character a terminal would act on is
 * written as its escape (`\u202e`). Inside a JSON string the escape is the same value, so the text
 * is still the exact JSON; JSON.stringify escapes the C0 controls (ESC included) itself.
 */
export function jsonText(value: unknown, indent = 2): string {
  return (JSON.stringify(value, null, indent) ?? "null").replace(ACTED_ON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
