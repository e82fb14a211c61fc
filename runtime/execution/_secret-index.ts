// Where a mask's secrets stand in a text when there are many of them (secret-mask.ts): the lines
// of a multi-line secret (a certificate bundle is thousands) and the forms of a hundred values.
// One search of the whole text per secret cost the server's main thread a second for one input
// of 20,000 lines, and as long again for each text the run printed; here each place of the text
// is looked up once, by its first two units.

/** Below this many secrets, one `indexOf` per secret is faster than the lookups: the common case. */
export const INDEXED_FROM = 48;

/** The secrets of a mask, by their first two UTF-16 units. */
export interface SecretIndex {
  /** Calls `found` with the start and end of the longest secret at each place of `text` where one starts, in order. */
  find(text: string, found: (start: number, end: number) => void, from?: number): void;
  /** How many units at the end of `text` are the start of a secret not finished there: the longest such tail, 0 if none. */
  unfinished(text: string): number;
}

const pairOf = (text: string, at: number) => (text.charCodeAt(at) << 16) | text.charCodeAt(at + 1);

/** Whether `text` from `at` to its end is how `secret` begins (and `secret` goes on past it). */
function begins(secret: string, text: string, at: number): boolean {
  const rest = text.length - at;
  if (secret.length <= rest) return false;
  for (let i = 0; i < rest; i++) if (secret.charCodeAt(i) !== text.charCodeAt(at + i)) return false;
  return true;
}

/** The index of `secrets` (each at least two units long), or null when there are too few to need one. */
export function indexSecrets(secrets: readonly string[]): SecretIndex | null {
  if (secrets.length < INDEXED_FROM) return null;
  const byPair = new Map<number, string[]>();
  const byFirst = new Map<number, string[]>();
  let longest = 0;
  // Longest first within each list: the first secret found at a place is its longest.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (secret.length < 2) continue;
    longest = Math.max(longest, secret.length);
    const pair = pairOf(secret, 0);
    const list = byPair.get(pair);
    if (list) list.push(secret);
    else byPair.set(pair, [secret]);
    const first = secret.charCodeAt(0);
    const starting = byFirst.get(first);
    if (starting) starting.push(secret);
    else byFirst.set(first, [secret]);
  }
  return {
    find(text, found, from = 0) {
      for (let at = Math.max(0, from); at < text.length - 1; at++) {
        const list = byPair.get(pairOf(text, at));
        if (list === undefined) continue;
        for (const secret of list) {
          if (text.startsWith(secret, at)) {
            found(at, at + secret.length);
            break;
          }
        }
      }
    },
    unfinished(text) {
      // From the earliest place a tail shorter than a secret can start: the first found is the longest.
      for (let at = Math.max(0, text.length - longest + 1); at < text.length; at++) {
        const list = at < text.length - 1 ? byPair.get(pairOf(text, at)) : byFirst.get(text.charCodeAt(at));
        if (list === undefined) continue;
        for (const secret of list) if (begins(secret, text, at)) return text.length - at;
      }
      return 0;
    },
  };
}
