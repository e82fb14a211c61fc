// A secret's bytes written as numbers: docs/security.md, "Bytes".

/** The fewest bytes of a secret masked where a printed run of bytes stops short of the rest (`… 9 more bytes`). */
const MIN_CUT_BYTES = 8;
/**
 * Byte comparisons one masking may cost past the look-ups themselves (a secret's first bytes met
 * again and again in a long run): past it, every run still to search is redacted whole rather
 * than searched. Five secrets of 20,000 `a` against a string of 99,000 `97,` held the server's
 * thread 11 s when each place was compared in full (checking tester, session 46). One budget
 * serves a whole output value, not each of its arrays.
 */
export const COMPARE_BUDGET = 4_000_000;

/** What one masking may still spend (COMPARE_BUDGET to start with). */
export interface CompareBudget {
  left: number;
}

/** Runs of four or more bytes as the console and JSON write them: decimal numbers between commas, or hex pairs between spaces. */
const DECIMAL_RUN = /\b\d{1,3}(?:[ \t]*,\s*\d{1,3}){3,}\b/g;
const HEX_RUN = /\b[0-9a-fA-F]{2}(?: [0-9a-fA-F]{2}){3,}\b/g;
const DECIMAL_ITEM = /\d{1,3}/g;
const HEX_ITEM = /[0-9a-fA-F]{2}/g;
/** What a coloured inspect puts around each number (`\x1b[33m115\x1b[39m`): read past, as the text mask reads past it. */
const COLOUR = /\x1b\[[0-9;]*m/g;

/** The secrets' UTF-8 bytes (one character per byte), found by their first two bytes. */
export interface SecretBytes {
  byPair: Map<number, string[]>;
}

/**
 * `text` with every run of written bytes that holds a secret's UTF-8 bytes — whole, or its first
 * MIN_CUT_BYTES or more where the run ends — replaced by `[redacted]` from its first byte to its
 * last: `<Buffer 62 6f 64 79 [redacted]>`, a typed array's numbers laid over several padded lines
 * (`  83, 117, 112,\n  51, …`), coloured or not, `JSON.stringify(buffer)`'s `[83,117,…]`. A text
 * mask finds a secret as text only; the console prints bytes as numbers wherever it meets them —
 * inside a Promise, behind a Proxy, returned by a custom inspect (checking testers, session 46).
 * Each place of a run costs one look-up of its two bytes; only a secret starting with them is
 * compared on, at the cost of `budget`.
 */
export function maskByteRuns(text: string, secrets: SecretBytes | null, budget: CompareBudget = { left: COMPARE_BUDGET }): string {
  if (secrets === null) return text;
  // Colour escapes read past: positions in `plain` map back to `text` through `origin`.
  const coloured = text.includes("\x1b[");
  const plain = coloured ? text.replace(COLOUR, "") : text;
  const origin = coloured ? originOf(text) : null;
  const at = (index: number) => (origin === null ? index : origin[index]!);
  const spans: Array<[number, number]> = [];
  for (const [run, item, base] of [
    [DECIMAL_RUN, DECIMAL_ITEM, 10],
    [HEX_RUN, HEX_ITEM, 16],
  ] as const) {
    run.lastIndex = 0;
    for (let match = run.exec(plain); match !== null; match = run.exec(plain)) {
      const starts: number[] = [];
      const ends: number[] = [];
      let bytes = "";
      item.lastIndex = 0;
      for (let found = item.exec(match[0]); found !== null; found = item.exec(match[0])) {
        const value = Number.parseInt(found[0], base);
        bytes += value <= 255 ? String.fromCharCode(value) : "\uffff";
        starts.push(match.index + found.index);
        ends.push(match.index + found.index + found[0].length);
      }
      const within = budget.left > 0 ? secretSpans(bytes, secrets, budget) : null;
      // Past the budget: the run is hidden whole, never shown unsearched.
      for (const [first, last] of within ?? [[0, bytes.length - 1] as [number, number]]) spans.push([at(starts[first]!), at(ends[last]! - 1) + 1]);
    }
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0]);
  // Overlapping or touching spans are one.
  const merged: Array<[number, number]> = [];
  for (const [start, stop] of spans) {
    const last = merged.at(-1);
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], stop);
    else merged.push([start, stop]);
  }
  let out = "";
  let from = 0;
  for (const [start, stop] of merged) {
    out += `${text.slice(from, start)}[redacted]`;
    from = stop;
  }
  return out + text.slice(from);
}

/**
 * Whether whole numbers (an output's array: a Buffer returned, `Array.from(buffer)`) hold a
 * secret's bytes, as a run written of them would; true too once `budget` is spent, never shown
 * unsearched.
 */
export function numbersHoldSecret(values: readonly number[], secrets: SecretBytes | null, budget: CompareBudget): boolean {
  if (secrets === null || values.length < 4) return false;
  let bytes = "";
  for (const value of values) bytes += value >= 0 && value <= 255 ? String.fromCharCode(value) : "\uffff";
  const found = budget.left > 0 ? secretSpans(bytes, secrets, budget) : null;
  return found === null || found.length > 0;
}

/**
 * Where secrets stand in a run's bytes (one character each), as [first, last] byte indexes: whole,
 * or cut by the run's end after MIN_CUT_BYTES or more; null once `budget` is spent.
 */
function secretSpans(bytes: string, secrets: SecretBytes, budget: CompareBudget): Array<[number, number]> | null {
  const found: Array<[number, number]> = [];
  const n = bytes.length;
  for (let start = 0; start + 1 < n; start++) {
    const candidates = secrets.byPair.get(bytes.charCodeAt(start) * 65536 + bytes.charCodeAt(start + 1));
    if (candidates === undefined) continue;
    for (const secret of candidates) {
      let k = 2;
      while (k < secret.length && start + k < n && bytes.charCodeAt(start + k) === secret.charCodeAt(k)) k++;
      budget.left -= k;
      if (budget.left <= 0) return null;
      if (k === secret.length || (start + k === n && k >= MIN_CUT_BYTES)) found.push([start, start + k - 1]);
    }
  }
  return found;
}

/** For a text with colour escapes, the index in it of each character left once they are removed. */
function originOf(text: string): Int32Array {
  const origin = new Int32Array(text.length + 1);
  let j = 0;
  let i = 0;
  COLOUR.lastIndex = 0;
  for (let escape = COLOUR.exec(text); escape !== null; escape = COLOUR.exec(text)) {
    for (; i < escape.index; i++) origin[j++] = i;
    i = escape.index + escape[0].length;
  }
  for (; i < text.length; i++) origin[j++] = i;
  return origin;
}

/** The secrets' UTF-8 bytes, for maskByteRuns: those of four bytes or more (a shorter run is any number list); null when none is. */
export function secretBytes(secrets: Iterable<string>): SecretBytes | null {
  const byPair = new Map<number, string[]>();
  for (const secret of secrets) {
    const encoded = new TextEncoder().encode(secret);
    if (encoded.length < 4) continue;
    let bytes = "";
    for (const byte of encoded) bytes += String.fromCharCode(byte);
    const pair = bytes.charCodeAt(0) * 65536 + bytes.charCodeAt(1);
    const list = byPair.get(pair);
    if (list === undefined) byPair.set(pair, [bytes]);
    else if (!list.includes(bytes)) list.push(bytes);
  }
  return byPair.size === 0 ? null : { byPair };
}
