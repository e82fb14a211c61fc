import { sanitizeLine } from "./text-sanitize.ts";

/** The engine's own error codes (docs/protocol.md); handlers add theirs through CapabilityError. */
export const PLANE_ERROR_CODES = [
  "invalid_input",
  "not_found",
  "not_runnable",
  "run_id_conflict",
  "capacity",
  "cancelled",
  "deadline_exceeded",
  "memory_exceeded",
  "unavailable",
  "interrupted",
  "internal",
] as const;
export type PlaneErrorCode = (typeof PLANE_ERROR_CODES)[number];

export type FailureStage = "validate" | "admit" | "queue" | "run" | "report" | "complete";
export type Retryability = "never" | "safe" | "after_delay" | "manual_reconcile" | "requires_confirmation";
export type OutcomeCertainty = "not_applied" | "applied" | "unknown";

/** The closed failure descriptor every surface projects and none rebuilds (docs/protocol.md). */
export interface FailureDescriptor {
  error_code: string;
  stage: FailureStage;
  message: string;
  retryability: Retryability;
  outcome_certainty: OutcomeCertainty;
  correlation_id: string;
  request_id: string;
  trace_id: string;
  suggestion: string;
  context: Record<string, unknown>;
}

/** What the one builder needs; the rest has defaults that follow from the code. */
export interface FailureOptions {
  error_code: string;
  stage: FailureStage;
  message: string;
  request_id: string;
  trace_id: string;
  retryability?: Retryability;
  outcome_certainty?: OutcomeCertainty;
  suggestion?: string;
  context?: Record<string, unknown>;
  correlation_id?: string;
}

const DEFAULT_RETRYABILITY: Record<PlaneErrorCode, Retryability> = {
  invalid_input: "never",
  not_found: "never",
  not_runnable: "never",
  run_id_conflict: "never",
  capacity: "after_delay",
  cancelled: "safe",
  deadline_exceeded: "safe",
  // The same input would grow as far again: a retry needs a higher limit or a smaller task.
  memory_exceeded: "never",
  unavailable: "after_delay",
  interrupted: "safe",
  internal: "never",
};

const DEFAULT_SUGGESTION: Record<PlaneErrorCode, string> = {
  invalid_input: "Correct the input as the message says and send it again.",
  not_found: "Check the identifier; list what exists with capabilities.list or executions.list.",
  not_runnable: "Call this capability directly instead of starting it as an execution.",
  run_id_conflict: "Use a new run_id, or send the same input as the original execution.",
  capacity: "Wait for running executions to finish, then try again.",
  cancelled: "Start it again if the work is still wanted.",
  deadline_exceeded: "Give it more time (the start's deadline_ms, or the capability's timeout_ms, whichever the context's bound names) or make the work smaller.",
  memory_exceeded: "Make the handler hold less at once (stream or page through the data), or raise the limit: DOCKET_WORKER_MEMORY_MB or docket serve --worker-memory-mb.",
  unavailable: "Check that the process doing the work is still running.",
  interrupted: "The process stopped while this ran; start it again if the work is still wanted.",
  internal: "This is a bug in the capability or in docket; the correlation id finds the details in the server's log.",
};

/**
 * What a write whose effect may have happened needs first, whatever stopped it: settling, not a
 * bigger deadline (docs/reconciliation.md).
 */
export const RECONCILE_FIRST =
  "The work may have been done: check what it changed, then settle it with executions.reconcile (docket executions reconcile <id> --applied or --not-applied) before you start it again.";

/**
 * RECONCILE_FIRST for a direct call, which leaves no execution to settle: there is no id to give
 * `executions.reconcile` (API tester, session 43).
 */
export const CHECK_FIRST_DIRECT =
  "The work may have been done: check what it changed before you call it again. A direct call leaves no execution to settle; start it with executions.start to have one (an id, its events, and executions.reconcile).";

/**
 * The suggestion of a failure a handler raised (CapabilityError) without one of its own. The
 * plane's defaults speak of docket's own ids and processes (capabilities.list, running
 * executions, the process doing the work): true of docket's refusals, not of a handler's
 * `not_found` for a file or its `unavailable` for a remote, whose message is its own account.
 */
export function raisedSuggestion(code: string, retryability: Retryability | undefined): string {
  if (retryability === "manual_reconcile") return RECONCILE_FIRST;
  if (code === "invalid_input" || code === "cancelled") return DEFAULT_SUGGESTION[code];
  return "The message is the capability's own account of what went wrong; its documentation lists its error codes.";
}

function defaultSuggestion(plane: PlaneErrorCode | null, retryability: Retryability | undefined): string {
  if (retryability === "manual_reconcile") return RECONCILE_FIRST;
  return plane ? DEFAULT_SUGGESTION[plane] : "See the message; the capability's documentation lists its error codes.";
}

const MAX_CONTEXT_BYTES = 4096;

/** A fresh correlation id: what a user quotes to find the stack on the server's stderr. */
export function newCorrelationId(): string {
  return `c-${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
}

function isPlaneCode(code: string): code is PlaneErrorCode {
  return (PLANE_ERROR_CODES as readonly string[]).includes(code);
}

/** Keeps the context small: over the bound it becomes a note of its size, never a large blob. */
function boundContext(context: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!context) return {};
  const text = JSON.stringify(context) ?? "{}";
  if (text.length <= MAX_CONTEXT_BYTES) return JSON.parse(text);
  return { withheld: "too_large", bytes: text.length, limit: MAX_CONTEXT_BYTES };
}

/**
 * A code's retryability when none is given. What may have been applied is settled by a person
 * before anything runs again, whatever the code would say of a retry: a `deadline_exceeded` a
 * write's handler raised itself was "safe" with its outcome `unknown` (executions tester, session 45).
 */
export function defaultRetryability(code: string, certainty: OutcomeCertainty | undefined): Retryability {
  const byCode = isPlaneCode(code) ? DEFAULT_RETRYABILITY[code] : "never";
  return certainty === "unknown" && (byCode === "safe" || byCode === "after_delay") ? "manual_reconcile" : byCode;
}

/** Builds the descriptor: the one place where defaults for retryability and certainty are decided. */
export function buildFailure(options: FailureOptions): FailureDescriptor {
  const plane = isPlaneCode(options.error_code) ? options.error_code : null;
  const retryability = options.retryability ?? defaultRetryability(options.error_code, options.outcome_certainty);
  return {
    error_code: options.error_code,
    stage: options.stage,
    // A handler's CapabilityError carries its own texts: made safe to print, as its log lines are
    // (docs/security.md): no escape that clears a terminal or sets its title, no forged line.
    message: sanitizeLine(options.message),
    retryability,
    outcome_certainty: options.outcome_certainty ?? "not_applied",
    correlation_id: options.correlation_id ?? newCorrelationId(),
    request_id: options.request_id,
    trace_id: options.trace_id,
    suggestion: options.suggestion === undefined ? defaultSuggestion(plane, retryability) : sanitizeLine(options.suggestion),
    context: boundContext(options.context),
  };
}

/** An expected failure travelling as an exception between layers; surfaces project `.failure`. */
export class FailureError extends Error {
  constructor(readonly failure: FailureDescriptor) {
    super(failure.message);
    this.name = "FailureError";
  }
}

/** The descriptor for a run stopped by force (deadline, lost worker, lost server): docs/protocol.md. */
export function forcedStopCertainty(effect: "read" | "write"): Pick<FailureDescriptor, "retryability" | "outcome_certainty"> {
  return effect === "write"
    ? { retryability: "manual_reconcile", outcome_certainty: "unknown" }
    : { retryability: "safe", outcome_certainty: "not_applied" };
}
