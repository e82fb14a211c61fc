// Where a mask's secrets stand in a text when there are many of them (secret-mask.ts): the lines
// of a multi-line secret (a certificate bundle is thousands) and the forms of a hundred values.
// One search of the whole text per secret cost the server's main thread a second for one input
// of 20,000 lines, and as long again for each text the run printed.
//
// Each place of a text is looked up by its first two units, and the secrets starting that way
// compared there: quick, and nothing to build, while few secrets start alike. When they do
// (20,000 lines that all begin `AAAAAAAA`, a hundred values sharing a 39,000-unit prefix) every
// place compares them all, as far as they agree: tens of seconds for one text. So the comparing
// is counted, and once a text costs more than PATIENCE units compared per unit of text, an
// automaton over the secrets (_secret-automaton.ts), which reads each unit of a text once, is
// built and searches that text and every later one.
import { secretAutomaton } from "./_secret-automaton.ts";

/** Below this many secrets, one `indexOf` per secret is faster than the lookups: the common case. */
export const INDEXED_FROM = 48;

/**
 * The most UTF-16 units of secrets, in all their forms, of an input whose mask is indexed: its
 * automaton takes 19 bytes a unit, about 75 MiB and half a second of the main thread to build at
 * most. An input whose mask would hold more is refused (secret-mask.ts, admissionMask;
 * docs/security.md), and a worker's mask of its recent tasks keeps no more. A 0.6 MB certificate
 * bundle of 10,000 lines, with its forms, is 2.6 million. At 8 million, eight such runs at once
 * held the server 28 s and took 1.4 GiB (checking tester).
 */
export const AUTOMATON_MAX_UNITS = 4_000_000;

/** Units compared per unit of text (and per 1,024 more) before the automaton is built. */
export const PATIENCE = 16;

/** Where the secrets of a mask stand in a text. */
export interface SecretIndex {
  /**
   * Calls `found` with the start and end of secrets of `text` from `from` on: every place a secret
   * stands is inside one of them, which may overlap and come in any order.
   */
  find(text: string, found: (start: number, end: number) => void, from?: number): void;
  /** How many units at the end of `text` are the start of a secret not finished there: the longest such tail, 0 if none. */
  unfinished(text: string): number;
}

/** What a search by first units reports when it gave up: it compared more than it was allowed. */
const GAVE_UP = -1;

/**
 * The index of `secrets` (each at least two units long), or null when there are too few to need
 * one. `patience`: units compared per unit of text before the automaton takes over (0: at the first;
 * Infinity: never).
 */
export function indexSecrets(secrets: readonly string[], options: { patience?: number } = {}): SecretIndex | null {
  if (secrets.length < INDEXED_FROM) return null;
  const { patience = PATIENCE } = options;
  const pairs = pairIndex(secrets);
  let automaton: SecretIndex | null = null;
  const allowed = (text: string) => patience * (text.length + 1024);
  return {
    find(text, found, from = 0) {
      if (automaton === null) {
        const places: number[] = [];
        if (pairs.find(text, (start, end) => places.push(start, end), from, allowed(text)) !== GAVE_UP) {
          for (let i = 0; i < places.length; i += 2) found(places[i]!, places[i + 1]!);
          return;
        }
        automaton = secretAutomaton(secrets);
      }
      automaton.find(text, found, from);
    },
    unfinished(text) {
      if (automaton === null) {
        const tail = pairs.unfinished(text, allowed(text));
        if (tail !== GAVE_UP) return tail;
        automaton = secretAutomaton(secrets);
      }
      return automaton.unfinished(text);
    },
  };
}

/** The UTF-16 units of `secrets` in all. */
export function unitsOf(secrets: readonly string[]): number {
  let units = 0;
  for (const secret of secrets) units += secret.length;
  return units;
}

const pairOf = (text: string, at: number) => (text.charCodeAt(at) << 16) | text.charCodeAt(at + 1);

/** The first place in `list` (longest first) of a secret no longer than `units`; its length when none is. */
function fitting(list: readonly string[], units: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (list[middle]!.length > units) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The secrets by their first two units: a candidate list per place of a text, each compared there. */
function pairIndex(secrets: readonly string[]) {
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
    /** Calls `found` at each place a secret starts, with its longest; GAVE_UP past `allowed` units compared. */
    find(text: string, found: (start: number, end: number) => void, from = 0, allowed: number): number {
      let compared = 0;
      for (let at = Math.max(0, from); at < text.length - 1; at++) {
        const list = byPair.get(pairOf(text, at));
        if (list === undefined) continue;
        // Those longer than the rest of the text are passed over at once: a short text (an output
        // of many short strings) met every candidate at each place, uncounted.
        for (let i = fitting(list, text.length - at); i < list.length; i++) {
          const secret = list[i]!;
          // Its first two units are the pair's.
          const length = secret.length;
          let same = 2;
          while (same < length && secret.charCodeAt(same) === text.charCodeAt(at + same)) same++;
          // One for the candidate, one for each unit past the pair.
          compared += same - 1;
          if (same === length) {
            found(at, at + length);
            break;
          }
          if (compared > allowed) return GAVE_UP;
        }
      }
      return 0;
    },
    /** The longest tail of `text` that starts a secret not finished there; GAVE_UP past `allowed` units compared. */
    unfinished(text: string, allowed: number): number {
      let compared = 0;
      // From the earliest place a tail shorter than a secret can start: the first found is the longest.
      for (let at = Math.max(0, text.length - longest + 1); at < text.length; at++) {
        const list = at < text.length - 1 ? byPair.get(pairOf(text, at)) : byFirst.get(text.charCodeAt(at));
        if (list === undefined) continue;
        const rest = text.length - at;
        // Only a secret longer than the rest can start there without finishing.
        for (let i = 0, longer = fitting(list, rest); i < longer; i++) {
          const secret = list[i]!;
          let same = 0;
          while (same < rest && secret.charCodeAt(same) === text.charCodeAt(at + same)) same++;
          compared += same + 1;
          if (same === rest) return rest;
          if (compared > allowed) return GAVE_UP;
        }
      }
      return 0;
    },
  };
}
