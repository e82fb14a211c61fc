// What a listing shows of each execution (`executions.list`, the cockpit's lists): its snapshot
// with the parts that grow with what it did kept small, so that a page costs about the same
// whatever its executions logged or returned (docs/protocol.md, "Listing"). A client that wants
// the whole reads the execution (`executions.get`).
import type { ExecutionSnapshot } from "../execution/snapshot.ts";

/** Log lines a listed execution keeps: the last ones, `log_dropped` counting the rest. */
export const LISTED_LOG_LINES = 3;
/** Steps a listed execution keeps: the most recent, `steps_dropped` counting the rest. */
export const LISTED_STEPS = 10;
/** Diagnostics a listed execution keeps: the first ones, `diagnostics_dropped` counting the rest. */
export const LISTED_DIAGNOSTICS = 10;
/** Characters of JSON an input or output may have in a listing; a larger one is withheld there. */
export const LISTED_VALUE_CHARS = 4096;

/** What a listing shows in place of an input or output larger than LISTED_VALUE_CHARS. */
export type ListedWithheld = { withheld: "listing"; limit: number; self: string };

/**
 * The snapshot as a listing shows it. Arrays are sliced, never changed in place; the snapshot
 * given may be the store's own copy. Costs a bounded amount per execution: values are measured
 * only up to the limit.
 */
export function listedSnapshot(snapshot: ExecutionSnapshot): ExecutionSnapshot {
  const { log, steps, diagnostics } = snapshot;
  const listed: ExecutionSnapshot = { ...snapshot };
  if (log.length > LISTED_LOG_LINES) {
    listed.log = log.slice(-LISTED_LOG_LINES);
    listed.log_dropped = snapshot.log_dropped + (log.length - LISTED_LOG_LINES);
  }
  if (steps.length > LISTED_STEPS) {
    const dropped = steps.slice(0, steps.length - LISTED_STEPS);
    listed.steps = steps.slice(-LISTED_STEPS);
    listed.steps_dropped = snapshot.steps_dropped + dropped.length;
    if (snapshot.steps_dropped_failed !== undefined || dropped.some((step) => step.state === "failed")) {
      listed.steps_dropped_failed = (snapshot.steps_dropped_failed ?? 0) + dropped.filter((step) => step.state === "failed").length;
    }
  }
  if (diagnostics.length > LISTED_DIAGNOSTICS) {
    listed.diagnostics = diagnostics.slice(0, LISTED_DIAGNOSTICS);
    listed.diagnostics_dropped = snapshot.diagnostics_dropped + (diagnostics.length - LISTED_DIAGNOSTICS);
  }
  if (!jsonWithin(snapshot.input, LISTED_VALUE_CHARS)) listed.input = withheld(snapshot);
  if ("output" in snapshot && !jsonWithin(snapshot.output, LISTED_VALUE_CHARS)) listed.output = withheld(snapshot);
  return listed;
}

function withheld(snapshot: ExecutionSnapshot): ListedWithheld {
  return { withheld: "listing", limit: LISTED_VALUE_CHARS, self: snapshot.links.self };
}

/**
 * Whether `value`'s JSON has at most `limit` characters, about: strings and keys counted by their
 * length, numbers and the rest by a few characters. Stops as soon as the count passes the limit,
 * so an 8 MiB output costs what its first `limit` characters do.
 */
export function jsonWithin(value: unknown, limit: number): boolean {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === "string") count += next.length + 2;
    else if (next === null || typeof next !== "object") count += 8;
    else if (Array.isArray(next)) {
      count += 2 + next.length;
      if (count > limit) return false;
      for (const item of next) stack.push(item);
    } else {
      for (const key in next) {
        count += key.length + 4;
        if (count > limit) return false;
        stack.push((next as Record<string, unknown>)[key]);
      }
    }
    if (count > limit) return false;
  }
  return true;
}
