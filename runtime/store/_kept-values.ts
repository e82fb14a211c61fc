import type { ExecutionSnapshot } from "../execution/snapshot.ts";

// Shared by both stores: values kept for good are frozen JSON copies shared by every read, and a
// read gets a snapshot it may change.

/**
 * Freezes every object in a value, and leaves its arrays as they are (their items' objects frozen).
 * JavaScriptCore freezes an array by moving its items to a slower storage: about 0.3 µs per array
 * and 0.1–0.7 µs per item, 2.5 × the memory, and 3–8 × slower to read or serialize from then on.
 * Freezing an input of a million numbers held the main thread 0.7 s, and every later read of it
 * paid again. An object freezes in ~20 ns and reads as fast frozen. So what the store hands out
 * is read-only where it is an object, and by convention where it is an array: no reader of
 * docket's changes what it read (docs/architecture.md, "Kept values").
 */
export function deepFreeze<T>(value: T): T {
  freezeObjects(value);
  return value;
}

function freezeObjects(value: unknown): void {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item !== null && typeof item === "object") freezeObjects(item);
    }
    return;
  }
  // Frozen already: a value shared with an earlier freeze (a kept copy frozen again when sealed).
  if (Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const key in value) {
    const item: unknown = (value as Record<string, unknown>)[key];
    if (item !== null && typeof item === "object") freezeObjects(item);
  }
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
