/**
 * The candidates closest to a mistyped name, for a "did you mean" (an unknown command, an unknown
 * capability id). Distance is Damerau–Levenshtein (a swapped pair of letters counts once); a
 * candidate qualifies within a third of the name's length (at least 2), or when one name contains
 * the other (`greet` → `hello.greet`). Best first, at most `max`.
 */
export function didYouMean(name: string, candidates: Iterable<string>, max = 3): string[] {
  // Every name it is asked about comes from a client (an id in a request body may be megabytes
  // long): the distance costs its length times each candidate's, on the main thread.
  if (name.length > MAX_NAME_UNITS) return [];
  const wanted = name.toLowerCase();
  const scored: Array<{ candidate: string; score: number }> = [];
  for (const candidate of new Set(candidates)) {
    if (candidate === name) continue;
    const lower = candidate.toLowerCase();
    // The same name but for case (`Cancellable`) is the closest there is.
    const distance = lower === wanted ? 0 : editDistance(wanted, lower);
    const limit = Math.max(2, Math.floor(wanted.length / 3));
    const contains = wanted.length >= 3 && (lower.includes(wanted) || wanted.includes(lower));
    if (distance <= limit) scored.push({ candidate, score: distance });
    else if (contains) scored.push({ candidate, score: limit + 1 });
  }
  return scored
    .sort((a, b) => a.score - b.score || (a.candidate < b.candidate ? -1 : 1))
    .slice(0, max)
    .map((s) => s.candidate);
}

/** `Did you mean "a" or "b"?`, or "" when there is nothing close. */
export function didYouMeanText(name: string, candidates: Iterable<string>, quote: (s: string) => string = (s) => JSON.stringify(s)): string {
  const close = didYouMean(name, candidates);
  if (close.length === 0) return "";
  const listed = close.map(quote);
  return `Did you mean ${listed.length === 1 ? listed[0] : `${listed.slice(0, -1).join(", ")} or ${listed.at(-1)}`}?`;
}

/**
 * Names longer than this get no suggestion: nothing that long is close to a command or a
 * capability id, and the distance to each candidate costs the product of their lengths.
 */
export const MAX_NAME_UNITS = 256;

/**
 * Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps.
 * Three rows (the two before the one being filled) are all it needs.
 */
export function editDistance(a: string, b: string): number {
  const cols = b.length + 1;
  let before = new Uint32Array(cols);
  let previous = Uint32Array.from({ length: cols }, (_, j) => j);
  let row = new Uint32Array(cols);
  for (let i = 1; i <= a.length; i++) {
    row[0] = i;
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    [before, previous, row] = [previous, row, before];
  }
  return previous[b.length]!;
}
