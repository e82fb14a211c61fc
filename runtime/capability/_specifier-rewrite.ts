// Rewrites the specifiers of a module's imports in its text (capability-sources.ts): only string
// literals that stand where a specifier stands (after `from`, `import`, `import(` or `require(`,
// with blanks and comments between) are touched, so a string that merely holds an import's text
// keeps its value, and lines keep their numbers. What this does not rewrite, the caller finds by
// scanning the result, and refuses.

/** A comment or a string literal (a template literal without nesting). */
const COMMENT_OR_STRING = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\[\s\S]|[^"\\\n])*"|'(?:\\[\s\S]|[^'\\\n])*'|`(?:\\[\s\S]|[^`\\])*`/g;

/** Code that ends where a specifier starts; `.import` and `.require` are method calls, not imports. */
const BEFORE_SPECIFIER = /(?:^|[^.\w$])(?:from|import|import\s*\(|require\s*\()\s*$/;

/**
 * `text` with every specifier literal whose value `targets` maps replaced by its target, written
 * with the same quote. Comments and other strings are left as they are.
 */
export function rewriteSpecifiers(text: string, targets: Map<string, string>): string {
  let out = "";
  let copied = 0;
  // The code seen last, comments left out and strings as "": what a specifier must follow.
  let recent = "";
  let codeFrom = 0;
  for (const match of text.matchAll(COMMENT_OR_STRING)) {
    const token = match[0];
    const at = match.index!;
    recent = (recent + text.slice(codeFrom, at)).slice(-64);
    codeFrom = at + token.length;
    if (token.startsWith("/")) {
      recent += " ";
      continue;
    }
    const value = literalValue(token);
    const target = value === null ? undefined : targets.get(value);
    if (target !== undefined && BEFORE_SPECIFIER.test(recent)) {
      out += text.slice(copied, at) + quoted(token[0]!, target);
      copied = at + token.length;
    }
    recent += '""';
  }
  return out + text.slice(copied);
}

/** The value of a string literal token; null for a template literal with a substitution. */
function literalValue(token: string): string | null {
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
