import { CapabilityError } from "./capability-error.ts";

// Globs over `/`-separated relative paths (docs/handler-api.md): `*` and `?` stay inside a
// segment, `**` as a whole segment spans any number of them (none included), `[a-z]` / `[!a]`
// are classes, `{a,b}` alternatives, `\` escapes. Dot files are matched like any other.
//
// A glob is compiled to a small automaton (Thompson's construction) and a path is read through it
// once, every state it may be in at a time: its cost is at most the glob's length times the
// path's, whatever its stars and braces, and one reading also says which folders above a path
// match. A backtracking RegExp of thirty `*a` spent a minute on one 200-character name, and
// expanding `{…}` into separate patterns multiplied the cost by the alternatives (foundation
// testers, session 50); both held the only worker of every direct call.

/** The longest glob taken, in characters: past it a glob is refused (`invalid_input`), naming it. */
export const MAX_GLOB_CHARS = 512;
/**
 * The most characters the globs of one matcher may hold together: each path is read through each,
 * so this bounds the cost per path (16 globs of 1,024 took 0.65 s a path of 4,000 characters:
 * second checking tester, session 50).
 */
export const MAX_GLOBS_CHARS = 2048;

const SLASH = 0x2f;

/** Which characters a step takes: one that tests a code unit. */
type Test = (code: number) => boolean;

const notSlash: Test = (code) => code !== SLASH;
const anyChar: Test = () => true;

/** A glob's structure: a character, a run of characters (none included), a sequence, alternatives, an optional part. */
type Node = { kind: "char"; test: Test } | { kind: "run"; test: Test } | { kind: "seq"; items: Node[] } | { kind: "alt"; options: Node[] } | { kind: "opt"; item: Node };

/** One state of the automaton: takes a character to `out`, or splits to two states without one, or accepts. */
type State = { kind: "char"; test: Test; out: number } | { kind: "split"; out: number; other: number } | { kind: "match" };

/** A compiled glob: the automaton's states and its start. */
interface Automaton {
  states: State[];
  start: number;
}

/**
 * Compiles one glob to a test of a whole relative path (`a/b.ts`). A glob longer than
 * {@link MAX_GLOB_CHARS}, and a class with a range out of order (`[z-a]`), are refused as
 * `invalid_input`, naming the glob.
 */
export function compileGlob(pattern: string): (relativePath: string) => boolean {
  const automaton = compile(pattern);
  return (relativePath) => run(automaton, relativePath, false);
}

/**
 * A matcher for a list of globs, with .gitignore habits: a pattern without `/` matches a name at
 * any depth, and a path matches when it or any folder above it matches (`dist` covers
 * `dist/a.js`). A leading `./` or `/` anchors at the base and is dropped; a trailing `/` too.
 * Globs holding more than {@link MAX_GLOBS_CHARS} characters together are refused as `invalid_input`.
 */
export function globMatcher(patterns: readonly string[]): (relativePath: string) => boolean {
  const total = patterns.reduce((sum, pattern) => sum + pattern.length, 0);
  if (total > MAX_GLOBS_CHARS) {
    throw new CapabilityError("invalid_input", `The ${patterns.length} globs hold ${total} characters together, more than ${MAX_GLOBS_CHARS}: each path is read through each of them. Use fewer or shorter globs (a {a,b} alternative, or a * for what varies).`, {
      context: { globs: patterns.length, characters: total, limit: MAX_GLOBS_CHARS },
    });
  }
  const compiled = patterns.map((raw) => {
    const pattern = raw.replace(/^\.?\//, "").replace(/\/+$/, "");
    const byName = !raw.replace(/\/+$/, "").includes("/");
    return { automaton: compile(pattern, raw), byName };
  });
  return (relativePath) => {
    for (const { automaton, byName } of compiled) {
      if (byName) {
        // Each name alone: a name at any depth.
        let start = 0;
        for (let end = relativePath.indexOf("/"); ; end = relativePath.indexOf("/", start)) {
          const stop = end === -1 ? relativePath.length : end;
          if (run(automaton, relativePath.slice(start, stop), false)) return true;
          if (end === -1) break;
          start = end + 1;
        }
      } else if (run(automaton, relativePath, true)) return true;
    }
    return false;
  };
}

/**
 * Reads `text` through the automaton, keeping every state it may be in. With `prefixes`, true as
 * soon as the path up to a `/` (a folder above it) matches, as well as the whole.
 */
function run(automaton: Automaton, text: string, prefixes: boolean): boolean {
  const { states } = automaton;
  const seen = new Int32Array(states.length).fill(-1);
  let current: number[] = [];
  let next: number[] = [];
  let generation = 0;
  /** Adds `state` and what it splits to, once per character read. */
  const add = (list: number[], first: number) => {
    const pending = [first];
    while (pending.length > 0) {
      const at = pending.pop()!;
      if (seen[at] === generation) continue;
      seen[at] = generation;
      const state = states[at]!;
      if (state.kind === "split") pending.push(state.other, state.out);
      else list.push(at);
    }
  };
  const accepts = (list: number[]) => list.some((at) => states[at]!.kind === "match");
  add(current, automaton.start);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // The folder up to here, as gitignore reads a pattern: it and everything below it.
    if (prefixes && code === SLASH && i > 0 && accepts(current)) return true;
    generation++;
    next.length = 0;
    for (const at of current) {
      const state = states[at]!;
      if (state.kind === "char" && state.test(code)) add(next, state.out);
    }
    if (next.length === 0) return false;
    [current, next] = [next, current];
  }
  return accepts(current);
}

/** The automaton of one glob (Thompson's construction from its structure). */
function compile(pattern: string, given = pattern): Automaton {
  if (pattern.length > MAX_GLOB_CHARS) {
    throw new CapabilityError("invalid_input", `The glob ${JSON.stringify(given.slice(0, 80))}… is ${given.length} characters long, more than ${MAX_GLOB_CHARS}; use a shorter one (a * for what varies).`, {
      context: { pattern: given.slice(0, 200), limit: MAX_GLOB_CHARS },
    });
  }
  const states: State[] = [];
  const add = (state: State) => states.push(state) - 1;
  const match = add({ kind: "match" });
  /** The start of `node`, whose end leads to `then`. */
  const build = (node: Node, then: number): number => {
    switch (node.kind) {
      case "char":
        return add({ kind: "char", test: node.test, out: then });
      case "run": {
        // A split that takes one more character and comes back, or goes on.
        const split = add({ kind: "split", out: -1, other: then });
        const take = add({ kind: "char", test: node.test, out: split });
        (states[split] as { out: number }).out = take;
        return split;
      }
      case "seq": {
        let start = then;
        for (let i = node.items.length - 1; i >= 0; i--) start = build(node.items[i]!, start);
        return start;
      }
      case "alt": {
        let start = build(node.options[node.options.length - 1]!, then);
        for (let i = node.options.length - 2; i >= 0; i--) start = add({ kind: "split", out: build(node.options[i]!, then), other: start });
        return start;
      }
      case "opt":
        return add({ kind: "split", out: build(node.item, then), other: then });
    }
  };
  return { states, start: build(parse(pattern, given), match) };
}

/** A piece of a glob read in order: a node, or a brace's opening, separator or closing. */
type Piece = Node | "{" | "," | "}";

/**
 * The structure of a glob. Segments are read first (`**` is a segment of its own), then braces,
 * which may hold `/`: an unclosed `{` takes every brace of the glob literally, as written.
 */
function parse(pattern: string, given: string): Node {
  const pieces = piecesOf(pattern, given, true);
  let depth = 0;
  for (const piece of pieces) {
    if (piece === "{") depth++;
    else if (piece === "}" && depth > 0) depth--;
  }
  return group(depth > 0 ? piecesOf(pattern, given, false) : pieces);
}

/**
 * The pieces of a glob, segment by segment: the separators between them, `**` as the runs it
 * stands for, and within a segment escapes, stars, `?`, classes and (when `braces`) the braces'
 * marks; `,` and `}` are marks only inside a brace.
 */
function piecesOf(pattern: string, given: string, braces: boolean): Piece[] {
  const pieces: Piece[] = [];
  const literal = (code: number): Node => ({ kind: "char", test: (c) => c === code });
  // `**/**` means no more than `**`.
  const segments = pattern.split("/").filter((segment, i, all) => !(segment === "**" && all[i - 1] === "**"));
  let open = 0;
  for (let s = 0; s < segments.length; s++) {
    const segment = segments[s]!;
    const last = s === segments.length - 1;
    if (segment === "**") {
      // `a/**/b` also matches `a/b`, and a trailing `a/**` everything below `a` (and `a`).
      const any: Node = { kind: "run", test: anyChar };
      const slash = literal(SLASH);
      if (last) pieces.push(s === 0 ? any : { kind: "opt", item: { kind: "seq", items: [slash, any] } });
      else if (s === 0) pieces.push({ kind: "opt", item: { kind: "seq", items: [any, slash] } });
      else pieces.push({ kind: "opt", item: { kind: "seq", items: [slash, any] } }, slash);
      continue;
    }
    if (s > 0 && segments[s - 1] !== "**") pieces.push(literal(SLASH));
    for (let i = 0; i < segment.length; i++) {
      const c = segment[i]!;
      if (c === "\\" && i + 1 < segment.length) pieces.push(literal(segment.charCodeAt(++i)));
      else if (c === "*") {
        while (segment[i + 1] === "*") i++;
        pieces.push({ kind: "run", test: notSlash });
      } else if (c === "?") pieces.push({ kind: "char", test: notSlash });
      else if (c === "[" && segment.indexOf("]", i + 2) !== -1) {
        const close = segment.indexOf("]", i + 2);
        pieces.push(classOf(segment.slice(i + 1, close), given));
        i = close;
      } else if (braces && c === "{") {
        open++;
        pieces.push("{");
      } else if (braces && open > 0 && (c === "," || c === "}")) {
        if (c === "}") open--;
        pieces.push(c);
      } else pieces.push(literal(segment.charCodeAt(i)));
    }
  }
  return pieces;
}

/** Pieces whose braces are balanced as one node: each `{…}` its alternatives. */
function group(pieces: Piece[]): Node {
  const stack: Array<{ options: Node[]; items: Node[] }> = [{ options: [], items: [] }];
  for (const piece of pieces) {
    const top = stack[stack.length - 1]!;
    if (piece === "{") stack.push({ options: [], items: [] });
    else if (piece === ",") {
      top.options.push({ kind: "seq", items: top.items });
      top.items = [];
    } else if (piece === "}") {
      stack.pop();
      top.options.push({ kind: "seq", items: top.items });
      stack[stack.length - 1]!.items.push({ kind: "alt", options: top.options });
    } else top.items.push(piece);
  }
  return { kind: "seq", items: stack[0]!.items };
}

/** A class's body (`a-z`, `!abc`, `^0-9`) as a step: its characters and ranges, taken as they are (no escapes inside); negated, never `/`. */
function classOf(body: string, given: string): Node {
  const negated = body.startsWith("!") || body.startsWith("^");
  const chars = negated ? body.slice(1) : body;
  const ranges: Array<[number, number]> = [];
  for (let j = 0; j < chars.length; ) {
    if (j + 2 < chars.length && chars[j + 1] === "-") {
      const [low, high] = [chars.charCodeAt(j), chars.charCodeAt(j + 2)];
      if (low > high) {
        throw new CapabilityError("invalid_input", `The glob ${JSON.stringify(given.slice(0, 200))} has the class range ${chars.slice(j, j + 3)}, whose ends are out of order; write it ${chars[j + 2]}-${chars[j]}.`, { context: { pattern: given.slice(0, 200) } });
      }
      ranges.push([low, high]);
      j += 3;
    } else {
      ranges.push([chars.charCodeAt(j), chars.charCodeAt(j)]);
      j++;
    }
  }
  const within = (code: number) => ranges.some(([low, high]) => code >= low && code <= high);
  return { kind: "char", test: negated ? (code) => code !== SLASH && !within(code) : within };
}
