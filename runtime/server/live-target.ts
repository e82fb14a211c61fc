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
  /**
   * Named executions' own cursors, when `after` was given once per execution and they differ
   * (the same cursor for all is `after`): what each one's history is sent after.
   */
  cursors?: Record<string, number>;
}

/** The cursor of the named execution `id`: its own, else the one `after` (0 without one). */
export function cursorOf(target: LiveTarget, id: string): number {
  return target.cursors?.[id] ?? target.after ?? 0;
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
 * same rule as the HTTP API's). `after` is given once (it seeds every cursor) or, with named
 * executions, once per `execution`: the i-th `after` is the i-th execution's cursor, so that a
 * client that has each up to a different sequence reconnects with neither a gap nor a repeat.
 * Checked by shape before any look-up; an execution named twice is followed once, and must then
 * have the same cursor both times.
 */
export function parseLiveTarget(params: URLSearchParams): TargetResult {
  // A misspelt parameter (`executions=<id>`) would otherwise follow every execution without a word.
  for (const name of new Set(params.keys())) {
    if (PARAMETERS.includes(name)) continue;
    const close = didYouMean(name.slice(0, 64), PARAMETERS);
    return {
      ok: false,
      message: `/events takes no parameter ${JSON.stringify(name.slice(0, 64))}${close.length > 0 ? `; did you mean ${close.join(" or ")}?` : "."} It takes execution (repeated for several), after (once, or once per execution) and token.`,
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
  if (afters.length > 1 && afters.length !== named.length) {
    const message =
      named.length === 0
        ? `after may be given once without execution: it is the cursor of every execution, got ${afters.length}.`
        : `after is given once (it seeds every cursor) or once per execution, the i-th after the i-th execution's cursor: got ${named.length} execution and ${afters.length} after.`;
    return { ok: false, message, context: { parameter: "after", executions: named.length, afters: afters.length } };
  }
  const values: number[] = [];
  for (const raw of afters) {
    // The rule of the HTTP API's `after` too (executions.events), so both take the same texts.
    const read = readWholeNumber("after", raw);
    if (!read.ok) return { ok: false, message: read.refusal.message, context: read.refusal.context };
    values.push(read.value);
  }
  const target: LiveTarget = { executions: unique.length === 0 ? "all" : unique };
  if (values.length === 1) target.after = values[0]!;
  else if (values.length > 1) {
    const cursors: Record<string, number> = {};
    for (const [i, id] of named.entries()) {
      const before = cursors[id];
      if (before !== undefined && before !== values[i]) {
        return {
          ok: false,
          message: `execution ${id} is named twice with different cursors (after=${before} and after=${values[i]}): name it once, with the last sequence you have of it.`,
          context: { parameter: "after", execution: id },
        };
      }
      cursors[id] = values[i]!;
    }
    // One cursor for all is the one-after form: only differing cursors are kept apart.
    const distinct = new Set(values);
    if (distinct.size === 1) target.after = values[0]!;
    else target.cursors = cursors;
  }
  return { ok: true, target };
}
