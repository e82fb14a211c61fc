/** Where a text stops being JSON: 1-based line and column (in UTF-16 code units, as editors count). */
export interface JsonPosition {
  line: number;
  column: number;
}

/** Deeper than this, the position is not looked for (the scan recurses once per level). */
const MAX_DEPTH = 2000;

/**
 * The position of the first character at which `text` stops being one JSON value (RFC 8259), or
 * null when it is JSON (or nested too deep to tell). A parse error can then say where the problem
 * is without quoting the text, which may hold a secret: JavaScriptCore's JSON.parse says neither
 * where nor, always, without quoting ("Unexpected identifier "hunter2"").
 */
export function jsonErrorPosition(text: string): JsonPosition | null {
  let i = 0;
  let tooDeep = false;

  const space = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const digits = (): boolean => {
    const from = i;
    while (i < text.length && text[i]! >= "0" && text[i]! <= "9") i++;
    return i > from;
  };
  const string = (): boolean => {
    if (text[i] !== '"') return false;
    i++;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return (i += 2), false;
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else return (i += 1), false;
      } else i++;
    }
    return false;
  };
  const number = (): boolean => {
    if (text[i] === "-") i++;
    if (text[i] === "0") i++;
    else if (!digits()) return false;
    if (text[i] === ".") {
      i++;
      if (!digits()) return false;
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      if (!digits()) return false;
    }
    return true;
  };
  const literal = (word: string): boolean => {
    for (let k = 0; k < word.length; k++, i++) if (text[i] !== word[k]) return false;
    return true;
  };
  const value = (depth: number): boolean => {
    if (depth > MAX_DEPTH) return (tooDeep = true), false;
    space();
    const c = text[i];
    if (c === "{") {
      i++;
      space();
      if (text[i] === "}") return i++, true;
      for (;;) {
        space();
        if (!string()) return false;
        space();
        if (text[i] !== ":") return false;
        i++;
        if (!value(depth + 1)) return false;
        space();
        if (text[i] === "}") return i++, true;
        if (text[i] !== ",") return false;
        i++;
      }
    }
    if (c === "[") {
      i++;
      space();
      if (text[i] === "]") return i++, true;
      for (;;) {
        if (!value(depth + 1)) return false;
        space();
        if (text[i] === "]") return i++, true;
        if (text[i] !== ",") return false;
        i++;
      }
    }
    if (c === '"') return string();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return number();
    if (c === "t") return literal("true");
    if (c === "f") return literal("false");
    if (c === "n") return literal("null");
    return false;
  };

  if (value(0)) {
    space();
    if (i === text.length) return null;
  }
  if (tooDeep) return null;
  const at = Math.min(i, text.length);
  const before = text.slice(0, at);
  const line = before.split("\n").length;
  return { line, column: at - before.lastIndexOf("\n") };
}

/**
 * What the parser quotes in single quotes that is its grammar, not the text: the one structural
 * character it expected ("Expected '}'", "Expected ':' before value") or the quote it refuses
 * ("Single quotes (') are not allowed in JSON"). Kept: the reason reads as nothing without it.
 */
const GRAMMAR = /('[{}[\]:,]'|\('\))/;

/**
 * The JSON parser's reason, without a character of the text: JavaScriptCore quotes the token it
 * stumbled on, V8 the text ("Unexpected identifier "hunter2"", ""\u12"}" is not a valid unicode escape",
 * "Invalid escape character q"), and the text may hold a secret. Only the grammar it names
 * (GRAMMAR) stays quoted.
 */
export function jsonParseReason(error: unknown): string {
  const message = String((error as Error)?.message ?? error).replace(/^JSON Parse error:\s*/, "");
  if (/is not a valid unicode escape/.test(message)) return "an invalid \\u escape";
  if (/^Invalid escape character/.test(message)) return "an invalid escape character";
  // V8 (Node) quotes the text itself, inner quotes and all: `Unexpected token 'h', "{"pin":h…" is
  // not valid JSON`; it goes whole, from its first quote to its last.
  const unquoted = message.replace(/,?\s*".*"(?= is not valid JSON)/s, "");
  // split() with a capturing group puts the grammar at the odd indices, between what may quote the text.
  const parts = unquoted.split(GRAMMAR);
  const stripped = parts
    .map((part, at) => (at % 2 === 1 ? part : part.replace(/\s*"[^"]*"?/g, "").replace(/\s*'[^']*'?/g, "")))
    .join("")
    .replace(/\s+/g, " ")
    .trim();
  // What is left must still read as words, not punctuation the quotes held.
  return /[a-z]{3}/i.test(stripped) ? stripped : "malformed JSON";
}

/**
 * True when `text` is only JSON's own whitespace (space, tab, LF, CR), or empty: a body or line
 * with nothing in it. Not `text.trim()`, which also takes U+00A0, U+3000 or U+2028 away, so a body
 * of one no-break space ran a write with its defaults where JSON.parse refuses it (serve tester,
 * session 48).
 */
export function isBlankJson(text: string): boolean {
  return /^[ \t\n\r]*$/.test(text);
}
