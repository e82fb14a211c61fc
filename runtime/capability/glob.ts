import { CapabilityError } from "./capability-error.ts";

// Globs over `/`-separated relative paths (docs/capabilities.md, files.digest): `*` and `?` stay
// inside a segment, `**` as a whole segment spans any number of them (none included), `[a-z]` /
// `[!a]` are classes, `{a,b}` alternatives, `\` escapes. Dot files are matched like any other.
//
// Matched without backtracking into the past: a pattern is a list of segments, a segment a list of
// tokens, and a star (of characters, or `**` of segments) is matched by the classic wildcard walk
// that only ever returns to the last star. Its cost is at most the product of the two lengths,
// where a RegExp of thirty `*a` spent a minute on one 200-character name and held the only worker
// of every direct call (foundation tester, session 50).

/** How many patterns the `{…}` alternatives of one glob may expand to: they multiply. */
export const MAX_GLOB_ALTERNATIVES = 1024;

/** One token of a segment: a character (or class) matched by `test`, or a star. */
type Token = { star: true } | { star: false; test: (code: number) => boolean };

/** One segment of a pattern: `**`, or its tokens. */
type Segment = { globstar: true } | { globstar: false; tokens: Token[] };

/** A compiled glob: whether a path (its segments, the first `end`) matches. */
type Compiled = (parts: readonly string[], end: number) => boolean;

/**
 * Compiles one glob to a test of a whole relative path (`a/b.ts`). A class with a range out of
 * order (`[z-a]`) and a glob whose `{…}` expand to more than {@link MAX_GLOB_ALTERNATIVES}
 * patterns are refused as `invalid_input`, naming the pattern.
 */
export function compileGlob(pattern: string): (relativePath: string) => boolean {
  const compiled = compileParts(pattern);
  return (relativePath) => {
    const parts = relativePath.split("/");
    return compiled(parts, parts.length);
  };
}

/**
 * A matcher for a list of globs, with .gitignore habits: a pattern without `/` matches a name at
 * any depth, and a path matches when it or any folder above it matches (`dist` covers
 * `dist/a.js`). A leading `./` or `/` anchors at the base and is dropped; a trailing `/` too.
 */
export function globMatcher(patterns: readonly string[]): (relativePath: string) => boolean {
  const compiled = patterns.map((raw) => {
    const pattern = raw.replace(/^\.?\//, "").replace(/\/+$/, "");
    const byName = !raw.replace(/\/+$/, "").includes("/");
    return { test: compileParts(pattern), byName };
  });
  return (relativePath) => {
    const parts = relativePath.split("/");
    for (let end = 1; end <= parts.length; end++) {
      const name = [parts[end - 1]!];
      if (compiled.some((c) => (c.byName ? c.test(name, 1) : c.test(parts, end)))) return true;
    }
    return false;
  };
}

/** The test of one glob over path segments: any of its `{…}` expansions matching. */
function compileParts(pattern: string): Compiled {
  const alternatives = expandBraces(pattern).map((expanded) => {
    // `**/**` means no more than `**`.
    const segments = expanded.split("/").filter((segment, i, all) => !(segment === "**" && all[i - 1] === "**"));
    return segments.map((segment): Segment => (segment === "**" ? { globstar: true } : { globstar: false, tokens: tokensOf(segment, pattern) }));
  });
  return (parts, end) => alternatives.some((segments) => matchSegments(segments, parts, end));
}

/**
 * The wildcard walk: `items` of a pattern against `count` items of a text, where a star item
 * takes any run of them (none included) and any other takes exactly one, as `one` says. On a
 * mismatch it goes back only to the last star, one item further: never to an earlier star.
 */
function wildcardWalk(patternLength: number, isStar: (p: number) => boolean, count: number, one: (p: number, t: number) => boolean): boolean {
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = 0;
  while (t < count) {
    if (p < patternLength && isStar(p)) {
      starP = p++;
      starT = t;
    } else if (p < patternLength && one(p, t)) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else return false;
  }
  while (p < patternLength && isStar(p)) p++;
  return p === patternLength;
}

/** Whether `segments` match the first `end` segments of a path: `**` any run of them, another exactly one. */
function matchSegments(segments: readonly Segment[], parts: readonly string[], end: number): boolean {
  return wildcardWalk(
    segments.length,
    (p) => segments[p]!.globstar,
    end,
    (p, t) => matchTokens((segments[p] as { tokens: Token[] }).tokens, parts[t]!),
  );
}

/** Whether one segment's tokens match one name: `*` any run of characters, another exactly one. */
function matchTokens(tokens: readonly Token[], name: string): boolean {
  return wildcardWalk(
    tokens.length,
    (p) => tokens[p]!.star,
    name.length,
    (p, t) => (tokens[p] as { test: (code: number) => boolean }).test(name.charCodeAt(t)),
  );
}

/** The tokens of one segment (no `/` in it): characters, `?`, classes, stars (a run of `*` is one), escapes. */
function tokensOf(segment: string, pattern: string): Token[] {
  const tokens: Token[] = [];
  const literal = (code: number): Token => ({ star: false, test: (c) => c === code });
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === "\\" && i + 1 < segment.length) tokens.push(literal(segment.charCodeAt(++i)));
    else if (c === "*") {
      while (segment[i + 1] === "*") i++;
      tokens.push({ star: true });
    } else if (c === "?") tokens.push({ star: false, test: () => true });
    else if (c === "[" && segment.indexOf("]", i + 2) !== -1) {
      const close = segment.indexOf("]", i + 2);
      tokens.push(classToken(segment.slice(i + 1, close), pattern));
      i = close;
    } else tokens.push(literal(segment.charCodeAt(i)));
  }
  return tokens;
}

/** A class's body (`a-z`, `!abc`, `^0-9`) as a token: its characters and ranges, taken as they are (no escapes inside). */
function classToken(body: string, pattern: string): Token {
  const negated = body.startsWith("!") || body.startsWith("^");
  const chars = negated ? body.slice(1) : body;
  const ranges: Array<[number, number]> = [];
  for (let j = 0; j < chars.length; ) {
    if (j + 2 < chars.length && chars[j + 1] === "-") {
      const [low, high] = [chars.charCodeAt(j), chars.charCodeAt(j + 2)];
      if (low > high) throw new CapabilityError("invalid_input", `The glob ${JSON.stringify(pattern.slice(0, 200))} has the class range ${chars.slice(j, j + 3)}, whose ends are out of order; write it ${chars[j + 2]}-${chars[j]}.`, { context: { pattern: pattern.slice(0, 200) } });
      ranges.push([low, high]);
      j += 3;
    } else {
      ranges.push([chars.charCodeAt(j), chars.charCodeAt(j)]);
      j++;
    }
  }
  const within = (code: number) => ranges.some(([low, high]) => code >= low && code <= high);
  return { star: false, test: negated ? (code) => !within(code) : within };
}

/** A piece of a pattern: text as written, or `{…}` alternatives, each a list of pieces. */
type Piece = string | Piece[][];

/**
 * Every pattern the `{a,b}` of `pattern` stand for, nested ones too; the text between them as
 * written. An escaped `\{` and a `{` inside a class are text; so is every `{` of a pattern with
 * one left unclosed, which is then one pattern.
 */
function expandBraces(pattern: string): string[] {
  let i = 0;
  let unclosed = false;
  /** Reads pieces up to the end, or (inside braces) to the `,` or `}` that ends an alternative. */
  const read = (inside: boolean): Piece[] => {
    const pieces: Piece[] = [];
    let text = "";
    while (i < pattern.length) {
      const c = pattern[i]!;
      if (inside && (c === "," || c === "}")) break;
      if (c === "\\" && i + 1 < pattern.length) {
        text += pattern.slice(i, i + 2);
        i += 2;
      } else if (c === "[" && classEnd(pattern, i) !== -1) {
        const end = classEnd(pattern, i);
        text += pattern.slice(i, end + 1);
        i = end + 1;
      } else if (c === "{") {
        i++;
        const alternatives: Piece[][] = [read(true)];
        while (pattern[i] === ",") {
          i++;
          alternatives.push(read(true));
        }
        if (pattern[i] !== "}") {
          unclosed = true;
          return pieces;
        }
        i++;
        if (text !== "") pieces.push(text);
        text = "";
        pieces.push(alternatives);
      } else {
        text += c;
        i++;
      }
    }
    if (text !== "") pieces.push(text);
    return pieces;
  };
  const pieces = read(false);
  // An unclosed `{` takes every brace of the pattern literally, rather than making it invalid
  // (a segment's tokens are never braces: only this expansion reads them).
  if (unclosed) return [pattern];
  const expand = (list: Piece[]): string[] => {
    let out = [""];
    for (const piece of list) {
      const options = typeof piece === "string" ? [piece] : piece.flatMap(expand);
      if (out.length * options.length > MAX_GLOB_ALTERNATIVES) {
        throw new CapabilityError("invalid_input", `The glob ${JSON.stringify(pattern.slice(0, 200))} stands for more than ${MAX_GLOB_ALTERNATIVES} patterns (its {…} alternatives multiply); split it into several globs, or use * or ? for the parts that vary.`, {
          context: { pattern: pattern.slice(0, 200), limit: MAX_GLOB_ALTERNATIVES },
        });
      }
      out = out.flatMap((before) => options.map((option) => before + option));
    }
    return out;
  };
  return expand(pieces);
}

/** Where the class opening at `at` closes (the `]` after at least one character, within the segment), or -1. */
function classEnd(pattern: string, at: number): number {
  const close = pattern.indexOf("]", at + 2);
  return close === -1 || pattern.slice(at, close).includes("/") ? -1 : close;
}
