import { isExecutionId } from "../execution/execution-id.ts";
import { didYouMean } from "../capability/did-you-mean.ts";
import { readWholeNumber } from "./query-input.ts";

/** The query parameters of `/events`: `token` is the access guard's (guards.ts). */
const PARAMETERS = ["execution", "after", "token"];

/** What a live-channel connection follows: the request target is the whole subscription (docs/protocol.md). */
export interface LiveTarget {
  executions: "all" | string[];
  /** Seeds every cursor; absent = live only for "all", full retained history for named executions. */
  after?: number;
}

/** The result of reading a target: the subscription, or why the request is refused. */
export type TargetResult = { ok: true; target: LiveTarget } | { ok: false; message: string; context: Record<string, unknown> };

/** More named executions than this on one connection is refused: the URL is the subscription, keep it small. */
export const MAX_NAMED_EXECUTIONS = 256;

/**
 * How many named executions one connection may follow under `frame_bytes`: its `stream.ready`
 * lists them in one frame, which must fit too (about 31 bytes an id, 200 for the rest). Only a
 * frame_bytes under ~8 KiB allows fewer than MAX_NAMED_EXECUTIONS.
 */
export function namedExecutionsWithin(frameBytes: number): number {
  return Math.max(1, Math.min(MAX_NAMED_EXECUTIONS, Math.floor((frameBytes - 200) / 32)));
}

/**
 * Reads `/events?execution=<id>&execution=<id>&after=<n>`: every `execution` must have the shape of
 * an execution id and `after` a non-negative whole number in decimal digits (readWholeNumber, the
 * same rule as the HTTP API's). Checked by shape before any look-up; an execution named twice is
 * followed once.
 */
export function parseLiveTarget(params: URLSearchParams): TargetResult {
  // A misspelt parameter (`executions=<id>`) would otherwise follow every execution without a word.
  for (const name of new Set(params.keys())) {
    if (PARAMETERS.includes(name)) continue;
    const close = didYouMean(name.slice(0, 64), PARAMETERS);
    return {
      ok: false,
      message: `/events takes no parameter ${JSON.stringify(name.slice(0, 64))}${close.length > 0 ? `; did you mean ${close.join(" or ")}?` : "."} It takes execution (repeated for several), after and token.`,
      context: { parameter: name.slice(0, 64) },
    };
  }
  const named = params.getAll("execution");
  for (const id of named) {
    if (!isExecutionId(id)) {
      return {
        ok: false,
        message: `execution must be an execution id (x-<yyyymmddThhmmssZ>-<8 hex>), got ${JSON.stringify(String(id).slice(0, 80))}.`,
        context: { parameter: "execution" },
      };
    }
  }
  const unique = [...new Set(named)];
  if (unique.length > MAX_NAMED_EXECUTIONS) {
    return { ok: false, message: `At most ${MAX_NAMED_EXECUTIONS} executions can be followed on one connection, got ${unique.length}.`, context: { parameter: "execution", limit: MAX_NAMED_EXECUTIONS } };
  }
  const afters = params.getAll("after");
  if (afters.length > 1) return { ok: false, message: "after may be given once: one cursor seeds every followed execution.", context: { parameter: "after" } };
  let after: number | undefined;
  if (afters.length === 1) {
    // The rule of the HTTP API's `after` too (executions.events), so both take the same texts.
    const read = readWholeNumber("after", afters[0]!);
    if (!read.ok) return { ok: false, message: read.refusal.message, context: read.refusal.context };
    after = read.value;
  }
  const target: LiveTarget = { executions: unique.length === 0 ? "all" : unique };
  if (after !== undefined) target.after = after;
  return { ok: true, target };
}
