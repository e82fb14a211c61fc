import { createHash } from "node:crypto";

/** JSON with object keys sorted at every depth, so equal values have equal text (run_id idempotency, cache keys). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

/**
 * A copy of `value` whose plain objects have their keys in order. A plain object is one JSON could
 * have made — Object.prototype or none — whatever its members are called: one with a member named
 * `constructor` is sorted too. The copies have no prototype, so that a member named `__proto__`
 * stays a member (assigned to an ordinary object it would replace the prototype and vanish from
 * the text: two inputs differing only under `__proto__` had one hash, and shared a cached output).
 */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const sorted = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

/** SHA-256 of the canonical JSON of `value`, hex. */
export function canonicalHash(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}
