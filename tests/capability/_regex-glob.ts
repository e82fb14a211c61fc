// The RegExp compilation of globs that runtime/capability/glob.ts replaced (it backtracked without
// bound): kept here only to check that the new matcher matches what it matched.
/**
 * Compiles one glob to a RegExp over `/`-separated relative paths: `*` and `?` stay inside a
 * segment, `**` as a whole segment spans any number of them (none included), `[a-z]` / `[!a]`
 * are classes, `{a,b}` alternatives, `\` escapes. Dot files are matched like any other.
 */
export function regexGlob(pattern: string): RegExp {
  let out = "";
  let braces = 0;
  // `**/**` means no more than `**`; collapsing keeps the separators below simple.
  const segments = pattern.split("/").filter((segment, i, all) => !(segment === "**" && all[i - 1] === "**"));
  for (let s = 0; s < segments.length; s++) {
    const segment = segments[s]!;
    const last = s === segments.length - 1;
    if (segment === "**") {
      // `a/**/b` also matches `a/b`, and a trailing `a/**` matches everything below `a`.
      out += last ? (s === 0 ? ".*" : "(?:/.*)?") : s === 0 ? "(?:.*/)?" : "(?:/.*)?/";
      continue;
    }
    if (s > 0 && segments[s - 1] !== "**") out += "/";
    for (let i = 0; i < segment.length; i++) {
      const c = segment[i]!;
      if (c === "\\" && i + 1 < segment.length) out += escape(segment[++i]!);
      else if (c === "*") {
        while (segment[i + 1] === "*") i++;
        out += "[^/]*";
      } else if (c === "?") out += "[^/]";
      else if (c === "[") {
        const close = segment.indexOf("]", i + 2);
        if (close === -1) out += "\\[";
        else {
          let body = segment.slice(i + 1, close);
          const negated = body.startsWith("!") || body.startsWith("^");
          if (negated) body = body.slice(1);
          out += `[${negated ? "^/" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
          i = close;
        }
      } else if (c === "{") {
        braces++;
        out += "(?:";
      } else if (c === "}" && braces > 0) {
        braces--;
        out += ")";
      } else if (c === "," && braces > 0) out += "|";
      else out += escape(c);
    }
  }
  // An unclosed `{` is taken literally rather than making the whole pattern invalid.
  if (braces > 0) return regexGlob(pattern.replace(/\{/g, "\\{"));
  return new RegExp(`^${out}$`);
}


function escape(c: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c;
}
