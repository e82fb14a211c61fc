import { describe, expect, test } from "bun:test";
import { createSecretMask, unfinishedSecretLength } from "../../runtime/execution/secret-mask.ts";
import { INDEXED_FROM, indexSecrets, type SecretIndex } from "../../runtime/execution/_secret-index.ts";
import { eachOccurrence, NATIVE_SEARCH_MAX, unfinishedOf } from "../../runtime/execution/_secret-borders.ts";

// A seeded generator: the same secrets and texts every run.
function generator(seed: number) {
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const word = (min: number, max: number, letters = "ab") => Array.from({ length: min + Math.floor(next() * (max - min + 1)) }, () => pick([...letters])).join("");
  return { next, pick, word };
}

/** Which units of `text` some secret covers, one `indexOf` per place: the slow truth. */
function covered(text: string, secrets: readonly string[]): boolean[] {
  const marks = new Array<boolean>(text.length).fill(false);
  for (const secret of secrets) for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) marks.fill(true, at, at + secret.length);
  return marks;
}

function coveredBy(index: SecretIndex, text: string): boolean[] {
  const marks = new Array<boolean>(text.length).fill(false);
  index.find(text, (start, end) => marks.fill(true, start, end));
  return marks;
}

function naiveTail(text: string, secrets: readonly string[]): number {
  let longest = 0;
  for (const secret of secrets) for (let at = Math.max(0, text.length - secret.length + 1); at < text.length; at++) if (secret.startsWith(text.slice(at))) longest = Math.max(longest, text.length - at);
  return longest;
}

/**
 * Secrets that share long beginnings, repeat themselves (`abab…`), and hold one another, and
 * texts made of them, pieces of them and noise over the same two letters: what makes a search
 * compare far at every place.
 */
function hostileCase(seed: number, count: number) {
  const { next, pick, word } = generator(seed);
  const stems = Array.from({ length: 3 }, () => word(6, 30));
  const secrets = new Set<string>();
  while (secrets.size < count) {
    const kind = next();
    if (kind < 0.4) secrets.add(pick(stems) + word(1, 6));
    else if (kind < 0.7) secrets.add(word(1, 3).repeat(2 + Math.floor(next() * 12)));
    else secrets.add(word(4, 14));
  }
  const list = [...secrets].sort((a, b) => b.length - a.length);
  const texts = Array.from({ length: 150 }, () =>
    Array.from({ length: 1 + Math.floor(next() * 8) }, () => {
      const secret = pick(list);
      const roll = next();
      return roll < 0.4 ? secret : roll < 0.6 ? secret.repeat(2 + Math.floor(next() * 3)) : roll < 0.8 ? secret.slice(0, Math.floor(next() * secret.length)) : word(1, 10);
    }).join(""),
  );
  return { secrets: list, texts };
}

describe("finding many secrets in a text", () => {
  test("the automaton and the lookup by first units each cover exactly what one search per secret covers, and find the same unfinished tails, on secrets that share beginnings and repeat themselves", () => {
    for (const seed of [3, 11, 29]) {
      const { secrets, texts } = hostileCase(seed, INDEXED_FROM + 30);
      const automaton = indexSecrets(secrets, { patience: 0 })!;
      const pairs = indexSecrets(secrets, { patience: Infinity })!;
      expect(automaton).not.toBeNull();
      for (const text of texts) {
        const truth = covered(text, secrets);
        expect(coveredBy(automaton, text)).toEqual(truth);
        expect(coveredBy(pairs, text)).toEqual(truth);
        expect(automaton.unfinished(text)).toBe(naiveTail(text, secrets));
        expect(pairs.unfinished(text)).toBe(naiveTail(text, secrets));
      }
    }
  });

  test("a node with thousands of children (3,000 lines each starting with another CJK character) is searched like any other", () => {
    const lines: string[] = [];
    for (let unit = 0x4e00; unit < 0x4e00 + 3000; unit++) lines.push(`A${String.fromCharCode(unit)}qq${unit % 7}`);
    const secrets = [...lines, ...Array.from({ length: 3 }, (_, i) => "B".repeat(50) + i)];
    const index = indexSecrets(secrets, { patience: 0 })!;
    const { next } = generator(17);
    for (let i = 0; i < 200; i++) {
      const text = Array.from({ length: 8 }, () => (next() < 0.5 ? lines[Math.floor(next() * lines.length)]! : `A\uFF21${String.fromCharCode(0x4e00 + Math.floor(next() * 4000))}q`)).join("");
      expect(coveredBy(index, text)).toEqual(covered(text, secrets));
      expect(index.unfinished(text)).toBe(naiveTail(text, secrets));
    }
    // The CJK line of an unfinished tail: its first two units are a node of 3,000 children.
    expect(index.unfinished("x A\u4e05q")).toBe(3);
  });

  test("the automaton searches from a given place on: what starts before it is not found", () => {
    const secrets = Array.from({ length: INDEXED_FROM }, (_, i) => `secret-${String(i).padStart(3, "0")}`);
    const index = indexSecrets(secrets)!;
    const text = "xx secret-001 yy secret-002";
    const found: Array<[number, number]> = [];
    index.find(text, (start, end) => found.push([start, end]), 4);
    expect(found).toEqual([[17, 27]]);
    expect(index.unfinished("tail secret-0")).toBe("secret-0".length);
    expect(index.unfinished("tail secret-047")).toBe(0);
  });

  test("one secret's occurrences, overlapping ones included, and its unfinished tail, as the slow truth finds them, short or past NATIVE_SEARCH_MAX", () => {
    const { next, word } = generator(5);
    let long = 0;
    for (let i = 0; i < 600; i++) {
      const kind = next();
      const secret = kind < 0.35 ? word(1, 3).repeat(1 + Math.floor(next() * 6)) : kind < 0.7 ? word(2, 12) : word(1, 3).repeat(30 + Math.floor(next() * 40)) + word(0, 4);
      if (secret.length > NATIVE_SEARCH_MAX) long++;
      const text = Array.from({ length: 1 + Math.floor(next() * 6) }, () => (next() < 0.5 ? secret.repeat(1 + Math.floor(next() * 3)) : word(0, 6))).join("");
      const starts: number[] = [];
      eachOccurrence(text, secret, [secret], (at) => starts.push(at));
      const truth: number[] = [];
      for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) truth.push(at);
      expect(starts).toEqual(truth);
      expect(unfinishedOf(text, secret, [secret])).toBe(naiveTail(text, [secret]));
    }
    expect(long).toBeGreaterThan(100);
  });

  test("masking takes time in proportion to the text, whatever the secrets share: cases that took tens of seconds each", () => {
    // Before: 20,000 lines all starting alike, 20 s; a hundred values sharing 39,000 units, 19 s
    // for five of them; a secret of 160,000 repeated units in a text twice as long, 8 s.
    const lines = Array.from({ length: 20_000 }, (_, i) => `AAAAAAAA${i.toString(36).padStart(8, "x")}${"Z".repeat(20)}`);
    const bundle = lines.join("\n");
    expect(createSecretMask([bundle]).text(`ca=${bundle};`)).toBe("ca=[redacted];");
    const prefix = "A".repeat(39_000);
    const values = Array.from({ length: 100 }, (_, i) => prefix + String(i).padStart(1000, "q"));
    const many = createSecretMask(values);
    expect(many.text(`${values.slice(0, 5).join(" ")} end`)).toBe(`${Array(5).fill("[redacted]").join(" ")} end`);
    expect(unfinishedSecretLength(`x ${prefix}`, many.secrets, many.index)).toBe(prefix.length);
    // Before: an output of 10,000 short strings against 180,000 lines starting alike, 15 s: a
    // text shorter than every candidate never used up the lookup's patience.
    const digits = "abcdefghijklmnopqrstuvwxyz0123456789";
    const short = Array.from({ length: 180_000 }, (_, i) => `AA${Array.from({ length: 6 }, (_, k) => digits[Math.floor(i / 36 ** k) % 36]).join("")}`);
    expect(createSecretMask([short.join("\n")]).value(Array(10_000).fill("AAAAAAA"))).toEqual(Array(10_000).fill("AAAAAAA"));
    const repeated = "A".repeat(160_000);
    const one = createSecretMask([repeated]);
    expect(one.text(`<${repeated}${repeated}A>`)).toBe("<[redacted]>");
    expect(unfinishedSecretLength(`${"A".repeat(159_999)}`, one.secrets)).toBe(159_999);
    expect(unfinishedSecretLength(`${"A".repeat(159_998)}B`, one.secrets)).toBe(0);
  });
});
