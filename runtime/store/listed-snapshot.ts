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

/** Characters of JSON one listed execution may have, about; past it fewer log lines, steps and diagnostics are shown (LISTED_FEWER, then none). */
export const LISTED_ITEM_CHARS = 16 * 1024;
/** How many log lines, steps and diagnostics a listed execution over LISTED_ITEM_CHARS keeps. */
const LISTED_FEWER = 1;

/**
 * The snapshot as a listing shows it. Arrays are sliced, never changed in place; the snapshot
 * given may be the store's own copy. Costs a bounded amount per execution: values are measured
 * only up to their limit.
 */
export function listedSnapshot(snapshot: ExecutionSnapshot): ExecutionSnapshot {
  let listed = trimmed(snapshot, LISTED_LOG_LINES, LISTED_STEPS, LISTED_DIAGNOSTICS);
  if (!jsonWithin(snapshot.input, LISTED_VALUE_CHARS)) listed.input = withheld(snapshot);
  if ("output" in snapshot && !jsonWithin(snapshot.output, LISTED_VALUE_CHARS)) listed.output = withheld(snapshot);
  // Long step titles and messages, diagnostics of kilobytes: fewer of them, then none.
  for (const keep of [LISTED_FEWER, 0]) {
    if (jsonWithin(listed, LISTED_ITEM_CHARS)) break;
    listed = { ...trimmed(snapshot, keep, keep, keep), input: listed.input, ...("output" in listed ? { output: listed.output } : {}) };
  }
  return listed;
}

/** The snapshot with the last `logLines` log lines, the last `steps` steps and the first `diagnostics` diagnostics, the others counted as dropped. */
function trimmed(snapshot: ExecutionSnapshot, logLines: number, steps: number, diagnostics: number): ExecutionSnapshot {
  const listed: ExecutionSnapshot = { ...snapshot };
  if (snapshot.log.length > logLines) {
    listed.log = logLines === 0 ? [] : snapshot.log.slice(-logLines);
    listed.log_dropped = snapshot.log_dropped + (snapshot.log.length - logLines);
  }
  if (snapshot.steps.length > steps) {
    const dropped = snapshot.steps.slice(0, snapshot.steps.length - steps);
    listed.steps = steps === 0 ? [] : snapshot.steps.slice(-steps);
    listed.steps_dropped = snapshot.steps_dropped + dropped.length;
    const failed = dropped.filter((step) => step.state === "failed").length;
    if (snapshot.steps_dropped_failed !== undefined || failed > 0) listed.steps_dropped_failed = (snapshot.steps_dropped_failed ?? 0) + failed;
  }
  if (snapshot.diagnostics.length > diagnostics) {
    listed.diagnostics = snapshot.diagnostics.slice(0, diagnostics);
    listed.diagnostics_dropped = snapshot.diagnostics_dropped + (snapshot.diagnostics.length - diagnostics);
  }
  return listed;
}

function withheld(snapshot: ExecutionSnapshot): ListedWithheld {
  return { withheld: "listing", limit: LISTED_VALUE_CHARS, self: snapshot.links.self };
}

/** A character JSON writes escaped (`\u0000`, `\"`), or half of a pair it may. */
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * Whether `value`'s JSON has at most `limit` characters, about: strings by their JSON (escapes
 * counted), keys likewise, numbers and the rest by a few characters. Stops as soon as the count
 * passes the limit, so an 8 MiB output costs what its first `limit` characters do.
 */
export function jsonWithin(value: unknown, limit: number): boolean {
  let count = 0;
  const text = (s: string) => (s.length > limit ? limit + 1 : ESCAPED.test(s) ? JSON.stringify(s).length : s.length + 2);
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === "string") count += text(next);
    else if (next === null || typeof next !== "object") count += 8;
    else if (Array.isArray(next)) {
      count += 2 + next.length;
      if (count > limit) return false;
      for (const item of next) stack.push(item);
    } else {
      for (const key in next) {
        count += text(key) + 2;
        if (count > limit) return false;
        stack.push((next as Record<string, unknown>)[key]);
      }
    }
    if (count > limit) return false;
  }
  return true;
}
