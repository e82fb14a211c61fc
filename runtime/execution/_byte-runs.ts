// A secret's bytes written as numbers: docs/security.md, "Bytes".

/** The fewest bytes of a secret masked where a printed run of bytes stops short of the rest (`… 9 more bytes`). */
const MIN_CUT_BYTES = 8;
/** A run of more numbers than this is not searched: no console prints one (a Buffer shows 50 bytes, an array 100 items). */
const MAX_RUN_ITEMS = 100_000;

/** Runs of four or more bytes as the console and JSON write them: decimal numbers between commas, or hex pairs between spaces. */
const DECIMAL_RUN = /\b\d{1,3}(?:[ \t]*,\s*\d{1,3}){3,}\b/g;
const HEX_RUN = /\b[0-9a-fA-F]{2}(?: [0-9a-fA-F]{2}){3,}\b/g;
const DECIMAL_ITEM = /\d{1,3}/g;
const HEX_ITEM = /[0-9a-fA-F]{2}/g;

/**
 * `text` with every run of written bytes that holds a secret's UTF-8 bytes — whole, or its first
 * MIN_CUT_BYTES or more where the run ends — replaced by `[redacted]` from its first byte to its
 * last: `<Buffer 62 6f 64 79 [redacted]>`, a typed array's numbers laid over several padded lines
 * (`  83, 117, 112,\n  51, …`), `JSON.stringify(buffer)`'s `[83,117,…]`. A text mask finds a
 * secret as text only; the console prints bytes as numbers wherever it meets them — inside a
 * Promise, behind a Proxy, returned by a custom inspect (checking testers, session 46).
 */
export function maskByteRuns(text: string, secrets: readonly Uint8Array[]): string {
  if (secrets.length === 0) return text;
  const spans: Array<[number, number]> = [];
  for (const [run, item, base] of [
    [DECIMAL_RUN, DECIMAL_ITEM, 10],
    [HEX_RUN, HEX_ITEM, 16],
  ] as const) {
    run.lastIndex = 0;
    for (let match = run.exec(text); match !== null; match = run.exec(text)) {
      const items: Array<{ value: number; from: number; to: number }> = [];
      item.lastIndex = 0;
      for (let found = item.exec(match[0]); found !== null && items.length <= MAX_RUN_ITEMS; found = item.exec(match[0])) {
        items.push({ value: Number.parseInt(found[0], base), from: match.index + found.index, to: match.index + found.index + found[0].length });
      }
      if (items.length > MAX_RUN_ITEMS) continue;
      for (const secret of secrets) for (const [first, last] of occurrences(items, secret)) spans.push([items[first]!.from, items[last]!.to]);
    }
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0]);
  // Overlapping or touching spans are one.
  const merged: Array<[number, number]> = [];
  for (const [from, to] of spans) {
    const last = merged.at(-1);
    if (last !== undefined && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  let out = "";
  let at = 0;
  for (const [from, to] of merged) {
    out += `${text.slice(at, from)}[redacted]`;
    at = to;
  }
  return out + text.slice(at);
}

/** Where `secret` stands whole in `items`, and where its first MIN_CUT_BYTES or more end them, as [first, last] item indexes. */
function occurrences(items: Array<{ value: number }>, secret: Uint8Array): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  const n = items.length;
  for (let start = 0; start < n; start++) {
    if (items[start]!.value !== secret[0]) continue;
    let k = 1;
    while (k < secret.length && start + k < n && items[start + k]!.value === secret[k]) k++;
    if (k === secret.length) found.push([start, start + k - 1]);
    else if (start + k === n && k >= MIN_CUT_BYTES) found.push([start, n - 1]);
  }
  return found;
}

/** Each secret's UTF-8 bytes, for maskByteRuns: those of four bytes or more (a shorter run is any number list). */
export function secretBytes(secrets: Iterable<string>): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const secret of secrets) {
    const bytes = new TextEncoder().encode(secret);
    if (bytes.length >= 4) out.push(bytes);
  }
  return out;
}
