import type { ExecutionSnapshot } from "../execution/snapshot.ts";

// Shared by both stores: values kept for good are frozen JSON copies shared by every read, and a
// read gets a snapshot it may change.

/** Freezes a value and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return value;
}

/**
 * The store's own read-only copy of a value it keeps (input, output, failure, actor), taken once
 * through JSON: it reads back the same from memory as from the file. Throws for a value JSON
 * cannot hold, which the caller does before applying anything.
 */
export function keep<T>(value: T): T {
  return value === undefined ? value : deepFreeze(JSON.parse(JSON.stringify(value)) as T);
}

/** A copy of a live snapshot a caller may change without touching the store; frozen members are shared. */
export function copySnapshot(s: ExecutionSnapshot): ExecutionSnapshot {
  return {
    ...s,
    steps: s.steps.map((step) => ({ ...step })),
    progress: s.progress && { ...s.progress },
    diagnostics: s.diagnostics.map((d) => ({ ...d })),
    log: s.log.map((line) => ({ ...line })),
    links: { ...s.links },
  };
}
