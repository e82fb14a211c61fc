// Rewrites the specifiers of a module's imports in its text (capability-sources.ts): only string
// literals that stand where a specifier stands (after `from`, `import`, `import(` or `require(`,
// with blanks and comments between) are touched, so a string that merely holds an import's text
// keeps its value, and lines keep their numbers. What this does not rewrite, the caller finds by
// scanning the result, and refuses.

/** Code that ends where a specifier starts; `.import(` and `.require(` are method calls, not imports. */
const BEFORE_SPECIFIER = /(?:^|[^.\w$\s]|[^.\s]\s+)(?:from|import|import\s*\(|require\s*\()\s*$/;
/** Where a template literal can be a specifier: only as the argument of `import(` or `require(`. */
const BEFORE_TEMPLATE = /(?:^|[^.\w$\s]|[^.\s]\s+)(?:import|require)\s*\(\s*$/;
/** After these (or at the start), a `/` begins a regular expression, not a division. */
const BEFORE_REGEX = /(?:^|[(,=:[!&|?{};+\-*%<>~^]|\b(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await))\s*$/;
/** An import with attributes (`with { type: "text" }`, `import(x, { with: … })`): data, not code. */
const ATTRIBUTES = /^\s*(?:(?:with|assert)\s*\{|,\s*\{\s*(?:with|assert)\s*:)/;
/** The type its attributes name, when that is all they say: `with { type: "text" }`, `{ with: { type: "json" } }`. */
const ATTRIBUTE_TYPE = /^\s*(?:(?:with|assert)\s*\{|,\s*\{\s*(?:with|assert)\s*:\s*\{)\s*(?:type|"type"|'type')\s*:\s*(["'])(\w+)\1\s*,?\s*\}/;

/**
 * How an import uses its specifier: as code (`import`, `export … from`, `import()`), by
 * `require()`, or with attributes of a type (`type:text`, `type:json`; `type:?` for attributes
 * docket does not read).
 */
export type ImportUse = "import" | "require" | `type:${string}`;

/** The result of a rewrite: the text, and the specifiers of imports with attributes it left alone. */
export interface Rewritten {
  text: string;
  withAttributes: Set<string>;
}

/**
 * `text` with every specifier literal for which `targetOf` gives a target (by its value and how
 * its import uses it) replaced by that target, written with the same quote. An import with
 * attributes it gives none for is left as written. Comments, regular expressions and other
 * strings are left as they are.
 */
export function rewriteSpecifiers(text: string, targetOf: (specifier: string, use: ImportUse) => string | undefined): Rewritten {
  let out = "";
  let copied = 0;
  const withAttributes = new Set<string>();
  for (const { start, end, quote, value, use } of specifierLiterals(text)) {
    const target = targetOf(value, use);
    if (target !== undefined) {
      out += text.slice(copied, start) + quoted(quote, target);
      copied = end;
    } else if (use.startsWith("type:")) withAttributes.add(value);
  }
  return { text: out + text.slice(copied), withAttributes };
}

/** Every way `text` uses each specifier it imports (as this reading of the text finds them). */
export function specifierUses(text: string): Map<string, Set<ImportUse>> {
  const uses = new Map<string, Set<ImportUse>>();
  for (const { value, use } of specifierLiterals(text)) {
    const seen = uses.get(value) ?? new Set<ImportUse>();
    uses.set(value, seen.add(use));
  }
  return uses;
}

/** The string literals of `text` that stand where a specifier stands, with their values and uses. */
function* specifierLiterals(text: string): Generator<{ start: number; end: number; quote: string; value: string; use: ImportUse }> {
  for (const { kind, start, end, quote, before } of lexemes(text)) {
    if (kind !== "literal") continue;
    const value = literalValue(text.slice(start, end));
    if (value === null || !(quote === "`" ? BEFORE_TEMPLATE : BEFORE_SPECIFIER).test(before)) continue;
    const after = text.slice(end, end + 96);
    const use: ImportUse = ATTRIBUTES.test(after) ? `type:${ATTRIBUTE_TYPE.exec(after)?.[2] ?? "?"}` : /require\s*\(\s*$/.test(before) ? "require" : "import";
    yield { start, end, quote, value, use };
  }
}

/** A comment, regular expression or string (or template) literal of a module's text. */
interface Lexeme {
  kind: "comment" | "regex" | "literal";
  start: number;
  end: number;
  /** The literal's quote (", ' or `); empty for the others. */
  quote: string;
  /** The code seen last before it, comments left out and literals as `""`: what a specifier must follow. */
  before: string;
}

/** The comments, regular expressions and literals of `text`, in order (the one reading of the text both passes share). */
function* lexemes(text: string): Generator<Lexeme> {
  let recent = "";
  let i = 0;
  while (i < text.length) {
    const next = nextSpecial(text, i);
    if (next === -1) return;
    recent = (recent + text.slice(i, next)).slice(-64);
    i = next;
    const c = text[i]!;
    if (c === "/") {
      const after = text[i + 1];
      if (after === "/" || after === "*") {
        const end = after === "/" ? lineEnd(text, i) : blockEnd(text, i);
        yield { kind: "comment", start: i, end, quote: "", before: recent };
        recent += " ";
        i = end;
        continue;
      }
      if (BEFORE_REGEX.test(recent)) {
        const end = regexEnd(text, i);
        yield { kind: "regex", start: i, end, quote: "", before: recent };
        recent += "/r/";
        i = end;
        continue;
      }
      recent += "/";
      i++;
      continue;
    }
    const end = stringEnd(text, i, c);
    yield { kind: "literal", start: i, end, quote: c, before: recent };
    recent += '""';
    i = end;
  }
}

/**
 * `text` with the same length and lines, its comments blanked and the inside of its strings,
 * templates (substitutions included) and regular expressions written as `_`: the code alone,
 * where a bracket or a keyword is one.
 */
export function skeleton(text: string): string {
  let out = "";
  let copied = 0;
  for (const { kind, start, end } of lexemes(text)) {
    // A comment goes blank; a literal or a regular expression keeps its delimiters.
    const [from, to, fill] = kind === "comment" ? [start, end, " "] : [start + 1, Math.max(start + 1, end - 1), "_"];
    out += text.slice(copied, from) + text.slice(from, to).replace(/[^\n]/g, fill);
    copied = to;
  }
  return out + text.slice(copied);
}

/** The next quote or slash from `from`, or -1. */
function nextSpecial(text: string, from: number): number {
  for (let j = from; j < text.length; j++) {
    const c = text[j];
    if (c === '"' || c === "'" || c === "`" || c === "/") return j;
  }
  return -1;
}

function lineEnd(text: string, from: number): number {
  const end = text.indexOf("\n", from);
  return end === -1 ? text.length : end;
}

function blockEnd(text: string, from: number): number {
  const end = text.indexOf("*/", from + 2);
  return end === -1 ? text.length : end + 2;
}

/**
 * The end of a string or template literal starting at `from`. A template's substitutions are
 * read as code (strings, templates, regular expressions and braces in them), so that a backtick
 * inside one (`${s.replace(/`/g, "'")}`, `${"`"}`) does not end the template.
 */
function stringEnd(text: string, from: number, quote: string): number {
  for (let j = from + 1; j < text.length; j++) {
    const c = text[j];
    if (c === "\\") j++;
    else if (c === quote) return j + 1;
    else if (c === "\n" && quote !== "`") return j;
    else if (quote === "`" && c === "$" && text[j + 1] === "{") j = substitutionEnd(text, j + 2) - 1;
  }
  return text.length;
}

/** After a template's `${` at `from`: the index just past its closing `}`. */
function substitutionEnd(text: string, from: number): number {
  let depth = 0;
  // The code seen last in the substitution: what tells a regular expression from a division.
  let recent = "(";
  for (let j = from; j < text.length; j++) {
    const c = text[j]!;
    if (c === "'" || c === '"' || c === "`") {
      j = stringEnd(text, j, c) - 1;
      recent = '""';
    } else if (c === "/" && (text[j + 1] === "/" || text[j + 1] === "*")) {
      j = (text[j + 1] === "/" ? lineEnd(text, j) : blockEnd(text, j)) - 1;
    } else if (c === "/" && BEFORE_REGEX.test(recent)) {
      j = regexEnd(text, j) - 1;
      recent = "/r/";
    } else if (c === "{") {
      depth++;
      recent = "{";
    } else if (c === "}") {
      if (depth === 0) return j + 1;
      depth--;
      recent = "}";
    } else if (!/\s/.test(c)) recent = (recent + c).slice(-16);
  }
  return text.length;
}

/** The end of a regular expression literal starting at `from`, its flags included. */
function regexEnd(text: string, from: number): number {
  let inClass = false;
  for (let j = from + 1; j < text.length; j++) {
    const c = text[j];
    if (c === "\\") j++;
    else if (c === "\n") return j;
    else if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    else if (c === "/" && !inClass) {
      let k = j + 1;
      while (k < text.length && /[a-z]/i.test(text[k]!)) k++;
      return k;
    }
  }
  return text.length;
}

/** The value of a string literal token; null for a template literal with a substitution, or one unterminated. */
function literalValue(token: string): string | null {
  if (token.length < 2 || token[token.length - 1] !== token[0]) return null;
  const body = token.slice(1, -1);
  if (token[0] === "`" && body.includes("${")) return null;
  return body.replace(/\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\r\n|[\s\S])/g, (_, escape: string) => {
    if (escape.startsWith("u{")) return String.fromCodePoint(parseInt(escape.slice(2, -1), 16));
    if (escape.length > 1 && (escape[0] === "u" || escape[0] === "x")) return String.fromCharCode(parseInt(escape.slice(1), 16));
    return ESCAPES[escape] ?? (escape === "\n" || escape === "\r\n" || escape === "\r" ? "" : escape);
  });
}

const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", v: "\v", "0": "\0" };

/** `value` as a literal with `quote` (", ' or `). */
function quoted(quote: string, value: string): string {
  const escaped = value.replace(/\\/g, "\\\\").replace(new RegExp(quote, "g"), `\\${quote}`);
  return quote + (quote === "`" ? escaped.replace(/\$\{/g, "\\${") : escaped) + quote;
}

/** Blanks and comments, as they may stand between `from` (or `import(`) and a specifier. */
const GAP = String.raw`(?:\s|\/\*[\s\S]*?\*\/|\/\/[^\n]*\n)*`;

/**
 * The second pass, for the specifiers the first did not reach (code this reading of the text
 * gets wrong: JSX text, templates nested in templates): every literal of one of `only` that
 * follows `from`, `import`, `import(` or `require(` is replaced, wherever it stands. A string
 * that merely holds such an import's text would change too; the caller scans the result again.
 */
export function rewriteByPattern(text: string, targets: Map<string, string>, only: Iterable<string>): string {
  let out = text;
  for (const specifier of only) {
    const target = targets.get(specifier);
    if (target === undefined) continue;
    const pattern = new RegExp(`(^|[^.\\w$])((?:from|import|require)${GAP}\\(?${GAP})(["'\`])${escapeRegExp(specifier)}\\3`, "g");
    out = out.replace(pattern, (_, before: string, keyword: string, quote: string) => before + keyword + quoted(quote, target));
  }
  return out;
}

/** True when every import of `specifier` in `text` has attributes (`with { type: "text" }`): data, not code. */
export function importedAsDataOnly(text: string, specifier: string): boolean {
  const quoted = new RegExp(`(["'\`])${escapeRegExp(specifier)}\\1(\\s*(?:with|assert)\\s*\\{)?`, "g");
  let seen = false;
  for (const match of text.matchAll(quoted)) {
    if (!match[2]) return false;
    seen = true;
  }
  return seen;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
