/**
 * The candidates closest to a mistyped name, for a "did you mean" (an unknown command, an unknown
 * capability id). Distance is Damerau–Levenshtein (a swapped pair of letters counts once); a
 * candidate qualifies within a third of the name's length (at least 2), or when one name contains
 * the other (`greet` → `hello.greet`). Best first, at most `max`.
 */
export function didYouMean(name: string, candidates: Iterable<string>, max = 3): string[] {
  const wanted = name.toLowerCase();
  const scored: Array<{ candidate: string; score: number }> = [];
  for (const candidate of new Set(candidates)) {
    const lower = candidate.toLowerCase();
    if (lower === wanted) continue;
    const distance = editDistance(wanted, lower);
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

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
