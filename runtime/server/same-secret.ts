import { createHash, timingSafeEqual } from "node:crypto";

/** Compares secrets in constant time (digests first, so different lengths leak nothing either). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
