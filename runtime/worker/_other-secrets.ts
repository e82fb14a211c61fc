import { REDACTED } from "../execution/redaction.ts";

/**
 * The secrets of other tasks on a worker, as a task's texts are masked with them (docs/containment.md,
 * "Globals a handler sets"): where one appears whole and as written — no escaped or encoded form,
 * no tail a logger cut, no run of byte values, no number, nothing held back as a secret's start.
 * Each of those told a caller that some other caller's secret began with, or was, what it wrote
 * (checking testers, session 49): a whole secret of 12 characters or more tells nothing a caller
 * did not already have.
 */
export interface OtherSecrets {
  text(text: string): string;
  value<T>(value: T): T;
}

/** How deep, and over how many values, `value` goes (a CapabilityError's context, plain JSON by then). */
const MAX_DEPTH = 64;
const MAX_VALUES = 100_000;

export function otherSecrets(secrets: readonly string[]): OtherSecrets {
  const list = [...new Set(secrets)].sort((a, b) => b.length - a.length);
  const text = (input: string): string => {
    let out = input;
    for (const secret of list) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  };
  const value = <T>(input: T): T => {
    let left = MAX_VALUES;
    const walk = (v: unknown, depth: number): unknown => {
      if (--left < 0 || depth > MAX_DEPTH) return v;
      if (typeof v === "string") return text(v);
      if (Array.isArray(v)) return v.map((each) => walk(each, depth + 1));
      if (v !== null && typeof v === "object") {
        const out: Record<string, unknown> = {};
        for (const [key, each] of Object.entries(v)) out[text(key)] = walk(each, depth + 1);
        return out;
      }
      return v;
    };
    return walk(input, 0) as T;
  };
  return { text, value };
}
