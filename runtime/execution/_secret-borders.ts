// How a secret overlaps itself, for the search of a mask's few secrets (secret-mask.ts). A text
// that repeats a secret which repeats itself (`AAAA…`) holds an occurrence at nearly every place;
// searching again one place after each found one compared the whole secret every time, and a
// secret of 160,000 units in an output twice as long held the server's main thread 8 seconds.
// The runtime's own search is no help past a short secret either: it compares a long one as far
// as it agrees at each place, and a text that nearly holds it everywhere (`A`×29,999 then `B`,
// again and again, for a secret of 30,000 `A`) held the main thread 17 s.

/**
 * Secrets up to this long are found by the runtime's own search (native, and at worst this many
 * comparisons per unit of text); longer ones by their table, in one pass over the text.
 */
export const NATIVE_SEARCH_MAX = 64;

/** Per list of secrets (a mask's), the borders of each secret once they were needed. */
const cache = new WeakMap<readonly string[], Map<string, Int32Array>>();

/**
 * For each prefix of `secret`, the length of its longest proper prefix that is also its suffix
 * (Knuth–Morris–Pratt's table), kept with `list` for the next text.
 */
export function bordersOf(secret: string, list: readonly string[]): Int32Array {
  let known = cache.get(list);
  if (known === undefined) cache.set(list, (known = new Map()));
  let borders = known.get(secret);
  if (borders !== undefined) return borders;
  borders = new Int32Array(secret.length);
  for (let at = 1, border = 0; at < secret.length; at++) {
    const unit = secret.charCodeAt(at);
    while (border > 0 && secret.charCodeAt(border) !== unit) border = borders[border - 1]!;
    if (secret.charCodeAt(border) === unit) border++;
    borders[at] = border;
  }
  known.set(secret, borders);
  return borders;
}

/**
 * Calls `found` with the start of every occurrence of `secret` in `text`, overlapping ones
 * included, in order, in time that grows with the text: after an occurrence, the next one that
 * overlaps it can only start one period of the secret later, which is checked by comparing that
 * period alone, and otherwise no earlier than a period before its end.
 */
export function eachOccurrence(text: string, secret: string, list: readonly string[], found: (start: number) => void): void {
  const length = secret.length;
  if (length > NATIVE_SEARCH_MAX) return eachLongOccurrence(text, secret, list, found);
  let at = text.indexOf(secret);
  if (at === -1) return;
  // Only a secret found at all pays for its table.
  const period = length - bordersOf(secret, list)[length - 1]!;
  const again = secret.slice(length - period);
  while (at !== -1) {
    found(at);
    if (period < length && text.startsWith(again, at + length)) at += period;
    else at = text.indexOf(secret, at + (period < length ? Math.max(period, length - period) + 1 : length));
  }
}

/**
 * Every occurrence of a long secret, by Knuth–Morris–Pratt from the first place its beginning
 * stands (found natively: a text without it, the common case, costs one short search).
 */
function eachLongOccurrence(text: string, secret: string, list: readonly string[], found: (start: number) => void): void {
  const from = text.indexOf(secret.slice(0, NATIVE_SEARCH_MAX));
  if (from === -1 || text.length - from < secret.length) return;
  const borders = bordersOf(secret, list);
  const length = secret.length;
  let matched = 0;
  for (let at = from; at < text.length; at++) {
    const unit = text.charCodeAt(at);
    while (matched > 0 && secret.charCodeAt(matched) !== unit) matched = borders[matched - 1]!;
    if (secret.charCodeAt(matched) === unit) matched++;
    if (matched === length) {
      found(at + 1 - length);
      matched = borders[length - 1]!;
    }
  }
}

/** The longest tail of `text` that is how `secret` begins, shorter than the secret. */
export function unfinishedOf(text: string, secret: string, list: readonly string[]): number {
  let matched = 0;
  // A tail shorter than the secret starts no earlier than this.
  const from = Math.max(0, text.length - secret.length + 1);
  if (from >= text.length || text.indexOf(secret.charAt(0), from) === -1) return 0;
  const borders = bordersOf(secret, list);
  for (let at = from; at < text.length; at++) {
    const unit = text.charCodeAt(at);
    while (matched > 0 && secret.charCodeAt(matched) !== unit) matched = borders[matched - 1]!;
    if (secret.charCodeAt(matched) === unit) matched++;
  }
  return matched;
}
