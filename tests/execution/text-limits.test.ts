import { describe, expect, test } from "bun:test";
import { CUT_MARK, cutText, cutToBytes } from "../../runtime/execution/text-limits.ts";

const bytes = (text: string) => new TextEncoder().encode(text).length;

describe("cutting a text to its byte limit", () => {
  test("a text that fits comes back as it is", () => {
    expect(cutToBytes("héllo", 6)).toBe("héllo");
    expect(cutText("héllo", 6)).toEqual({ text: "héllo", cut: false });
  });

  test("never splits a code point", () => {
    // "é" precomposed is 2 bytes: 3 bytes hold "a" and nothing of the next "é".
    expect(cutToBytes("aéé", 4)).toBe("aé");
    expect(cutToBytes("a😀b", 4)).toBe("a");
  });

  test("keeps a combining accent with its letter: the letter goes too when the accent does not fit", () => {
    const decomposed = "cafe\u0301 au lait"; // "café", the accent a combining mark of its own
    // 5 bytes reach "cafe" but not its accent (2 more bytes): the cut falls before the "e".
    expect(cutToBytes(decomposed, 5)).toBe("caf");
    expect(cutToBytes(decomposed, 6)).toBe("cafe\u0301");
    const cut = cutText(decomposed, 8);
    expect(cut.cut).toBe(true);
    expect(cut.text).toBe(`caf${CUT_MARK}`);
    expect(bytes(cut.text)).toBeLessThanOrEqual(8);
  });

  test("keeps an emoji sequence joined by ZWJ, and a flag, whole or drops it", () => {
    const family = "👨\u200D👩\u200D👧"; // 18 bytes, one grapheme
    expect(cutToBytes(`x${family}y`, 10)).toBe("x");
    expect(cutToBytes(`x${family}y`, 19)).toBe(`x${family}`);
    const flag = "🇫🇷"; // two regional indicators, 8 bytes
    expect(cutToBytes(`a${flag}`, 6)).toBe("a");
  });

  test("a cluster longer than the window it looks at is still cut within the limit", () => {
    const zalgo = `z${"\u0301".repeat(500)}`;
    const cut = cutToBytes(zalgo, 100);
    expect(bytes(cut)).toBeLessThanOrEqual(100);
    // Cut inside the cluster rather than to nothing: the text that fits is kept.
    expect(bytes(cut)).toBeGreaterThan(90);
  });

  test("a cut within a colour sequence drops the sequence's start", () => {
    const coloured = "ok \u001b[31mred";
    expect(cutToBytes(coloured, 6)).toBe("ok ");
  });
});
