import { describe, expect, test } from "bun:test";
import { sanitizeDraft, sanitizeLine, sanitizeText, unfinishedEscapeLength } from "../../runtime/execution/text-sanitize.ts";
import { createSecretMask } from "../../runtime/execution/secret-mask.ts";

/** The bidirectional embeddings, overrides and isolates: LRE RLE PDF LRO RLO, LRI RLI FSI PDI. */
const BIDI_CONTROLS = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"];

describe("making handler text safe to print", () => {
  test("sanitizeLine and sanitizeText remove every bidirectional embedding, override and isolate, so no line reads in another order than it is written", () => {
    for (const control of BIDI_CONTROLS) {
      expect(sanitizeLine(`access ${control}nimda${control} granted`)).toBe("access nimda granted");
      expect(sanitizeText(`a\n${control}b\n`)).toBe("a\nb\n");
    }
    // "Trojan Source": shown as "edirrevo-LTR" with the override kept.
    expect(sanitizeLine("\u202eRTL-override")).toBe("RTL-override");
    // Beside colour, which stays.
    expect(sanitizeLine("\u001b[31m\u2067red\u2069\u001b[0m")).toBe("\u001b[31mred\u001b[0m");
  });

  test("the bidirectional marks (LRM, RLM, ALM) stay: right-to-left text needs them and they reorder nothing past their neighbours", () => {
    const marked = "שלום\u200f (3) \u200ehello\u061c";
    expect(sanitizeLine(marked)).toBe(marked);
    expect(sanitizeText(marked)).toBe(marked);
  });

  test("every text of a log, step, progress, diagnostic and stream event loses its overrides", () => {
    const rlo = "\u202e";
    const texts = (draft: Parameters<typeof sanitizeDraft>[0]) => JSON.stringify(sanitizeDraft(draft));
    expect(texts({ type: "execution.log", data: { level: "info", message: `x${rlo}y` } })).not.toContain(rlo);
    expect(texts({ type: "execution.step", data: { id: `s${rlo}`, title: `t${rlo}` } })).not.toContain(rlo);
    expect(texts({ type: "execution.step_done", data: { id: "s", ok: false, message: `m${rlo}` } })).not.toContain(rlo);
    expect(texts({ type: "execution.progress", data: { current: 1, message: `p${rlo}` } })).not.toContain(rlo);
    expect(texts({ type: "execution.diagnostic", data: { severity: "error", message: `d${rlo}`, code: `c${rlo}`, file: `f${rlo}` } })).not.toContain(rlo);
    expect(texts({ type: "execution.stream", data: { name: "stdout", chunk: `c${rlo}\n` } })).not.toContain(rlo);
  });

  test("a single shift (SS2, SS3, 7- or 8-bit) goes with the character it shifts, and one at a text's end waits for it", () => {
    for (const shift of ["\u001bOA", "\u001bNA", "\u008fA", "\u008eA"]) {
      expect(sanitizeLine(`Qz7kW${shift}p3m`)).toBe("Qz7kWp3m");
      expect(sanitizeText(`Qz7kW${shift}p3m\n`)).toBe("Qz7kWp3m\n");
    }
    expect(sanitizeLine("\u001bO\u001b[31mred")).toBe("\u001b[31mred");
    for (const end of ["\u001bO", "\u001bN", "\u008f", "\u008e"]) expect(unfinishedEscapeLength(`abc${end}`)).toBe(end.length);
  });

  test("a secret with an override inside is masked as it reads once the override is removed", () => {
    const mask = createSecretMask(["hunter\u202e2secret"]);
    expect(mask.text(sanitizeLine("pw: hunter\u202e2secret"))).toBe("pw: [redacted]");
  });
});
