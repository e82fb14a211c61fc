import type { Context } from "hono";
import type { AppEnv } from "./_app-env.ts";
import { buildFailure, FailureError, newCorrelationId, type FailureDescriptor, type FailureStage } from "../execution/failure.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import { thrownDetail } from "../execution/thrown.ts";

/**
 * The one projection of a failure onto an HTTP status (README.md).
 * - `not_runnable` → 400: the request names something that can never run as an execution; no
 *   change of server state will make it succeed, so it is a client error, not a conflict.
 * - `cancelled` → 409: the call was stopped by a cancel (the standard code closest to "the
 *   resource's state ended this"); 499 is an nginx convention many clients do not know.
 * - `interrupted` → 503: the process doing the work went away.
 * - `memory_exceeded` → 500: the handler failed on the server's side; no change of the request
 *   alone makes it succeed, and it is not the server's unavailability (503) either.
 * - `capability_changed` → 503: docket's own, not the capability's: its file was saved (or moved)
 *   between its load and this call, and the reload within a second serves it again — a 4xx would
 *   tell a client not to retry. It carries `Retry-After: 1`.
 * - any handler code raised through CapabilityError → 422: the request was understood and valid,
 *   and the capability refused it for a reason of its own.
 */
export function statusOf(failure: Pick<FailureDescriptor, "error_code">): number {
  switch (failure.error_code) {
    case "invalid_input":
    case "not_runnable":
      return 400;
    case "not_found":
      return 404;
    case "run_id_conflict":
    case "cancelled":
      return 409;
    case "capacity":
      return 429;
    case "internal":
    case "memory_exceeded":
      return 500;
    case "unavailable":
    case "interrupted":
    case "capability_changed":
      return 503;
    case "deadline_exceeded":
      return 504;
    default:
      return 422;
  }
}

/** The ids every response and descriptor of this request carries (set by the request-id guard). */
export interface RequestIds {
  request_id: string;
  trace_id: string;
}

/** Reads the request's ids; a fallback keeps error paths total even before the guard ran. */
export function requestIds(c: Context<AppEnv>): RequestIds {
  const ids = c.get("ids") as RequestIds | undefined;
  return ids ?? { request_id: "unknown", trace_id: "0".repeat(32) };
}

/** Answers `{ error: descriptor }` with its status; `capacity` carries `Retry-After`. */
export function failureResponse(c: Context<AppEnv>, failure: FailureDescriptor, status = statusOf(failure)): Response {
  return c.json({ error: failure }, status as 400, failureHeaders(failure, requestIds(c).request_id, status));
}

/** `failureResponse` without a Hono context (the direct route of capability-post.ts). */
export function failureAnswer(failure: FailureDescriptor, requestId: string, status = statusOf(failure)): Response {
  return new Response(JSON.stringify({ error: failure }), { status, headers: { "Content-Type": "application/json", ...failureHeaders(failure, requestId, status) } });
}

function failureHeaders(failure: FailureDescriptor, requestId: string, status: number): Record<string, string> {
  const headers: Record<string, string> = { "X-Request-Id": failure.request_id || requestId };
  // A refusal waiting cannot lift (retryability "never": the run_identities bound) names no time to come back.
  if ((status === 429 || status === 503) && failure.retryability !== "never") {
    const after = Number(failure.context.retry_after_s);
    headers["Retry-After"] = String(Number.isFinite(after) && after > 0 ? Math.ceil(after) : 1);
  }
  return headers;
}

/** What an edge refusal states; the status is chosen by the caller (401, 403, 405, 413, 415, 426…). */
export interface EdgeRefusal {
  status: number;
  error_code?: string;
  message: string;
  suggestion?: string;
  context?: Record<string, unknown>;
  stage?: FailureStage;
  headers?: Record<string, string>;
}

/**
 * A refusal made at the HTTP edge, before any capability runs. Edge refusals (bad host, foreign
 * origin, missing token, wrong method or media type) use `invalid_input` with a `context.reason`,
 * so the closed set of error codes stays closed; the status says which refusal it is.
 */
export function edgeFailure(c: Context<AppEnv>, refusal: EdgeRefusal): Response {
  const failure = buildFailure({
    error_code: refusal.error_code ?? "invalid_input",
    stage: refusal.stage ?? "validate",
    message: refusal.message,
    suggestion: refusal.suggestion,
    context: refusal.context,
    ...requestIds(c),
  });
  const response = failureResponse(c, failure, refusal.status);
  for (const [name, value] of Object.entries(refusal.headers ?? {})) response.headers.set(name, value);
  return response;
}

/** Hono's `onError`: expected failures are projected; anything else is a 500 whose stack goes to stderr only. */
export function errorHandler(log: (line: string) => void) {
  // c.req.path, not new URL(c.req.url): the handler of last resort must not throw itself.
  return (error: Error, c: Context<AppEnv>): Response => failureResponse(c, failureOfThrown(error, requestIds(c), () => `${c.req.method} ${safePath(c)}`, log));
}

/** The descriptor of what a request's handling threw; an unexpected error's detail goes to `log` only. */
export function failureOfThrown(error: unknown, ids: RequestIds, where: () => string, log: (line: string) => void): FailureDescriptor {
  if (error instanceof FailureError) return error.failure;
  if (CapabilityError.is(error)) {
    return buildFailure({ error_code: error.code, stage: "run", message: error.message, context: error.context, suggestion: error.suggestion, retryability: error.retryability, ...ids });
  }
  const correlation_id = newCorrelationId();
  log(`[docket] ${correlation_id} ${where()}: ${thrownDetail(error)}`);
  return buildFailure({ error_code: "internal", stage: "run", message: "The server failed while answering this request.", correlation_id, ...ids });
}

/** The request's path, or a placeholder when its URL cannot even be parsed. */
function safePath(c: Context<AppEnv>): string {
  try {
    return c.req.path;
  } catch {
    return "(unparsable URL)";
  }
}

/** Hono's `notFound`: a descriptor naming the path and where the routes are listed. */
export function notFoundHandler(c: Context<AppEnv>): Response {
  const path = safePath(c);
  return edgeFailure(c, {
    status: 404,
    error_code: "not_found",
    message: `Nothing is served at ${path}.`,
    suggestion: "The API is under /api/v1 (its OpenAPI document is /api/v1/openapi.json); the live channel is /events.",
    context: { path: path.slice(0, 256) },
  });
}
