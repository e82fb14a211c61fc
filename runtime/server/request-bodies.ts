import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./_app-env.ts";
import { failureResponse } from "./errors.ts";
import { buildFailure, type FailureDescriptor } from "../execution/failure.ts";

/** Room for the message around an input: MCP's JSON-RPC envelope (runtime/mcp/http.ts). */
export const BODY_ENVELOPE_BYTES = 64 * 1024;

/** The most any route reads of one request body: an input at `input_bytes` and its envelope. */
export function largestBody(inputBytes: number): number {
  return inputBytes + BODY_ENVELOPE_BYTES;
}

/** What a request is refused with: the budget is spent by bodies still being read. */
export interface BodiesBusy {
  busy: true;
  /** Bytes this request declared, bytes of bodies being read now, and the limit. */
  bytes: number;
  in_flight: number;
  limit: number;
}

/**
 * The request bodies being read at once (docs/limits.md, `request_bytes_in_flight`). The runtime
 * holds what a client has sent of a body until the handler has it whole: a few hundred clients
 * each sending most of an 8 MiB body and then a byte at a time held gigabytes. A body is charged
 * what its Content-Length declares (or, sent chunked, the most a route reads) before a byte of it
 * is read, and given back once it is read or its request ends; one that would pass the budget is
 * refused at once, the caller says 503.
 */
export interface RequestBodies {
  /** Charges `bytes`: the function that gives them back (call it once or more), or `busy`. */
  claim(bytes: number): (() => void) | BodiesBusy;
}

export function requestBodies(limitBytes: number): RequestBodies {
  let inFlight = 0;
  return {
    claim(bytes) {
      // One body always goes, however large (input_bytes may be above the budget): the budget bounds how many are read at once.
      if (inFlight > 0 && inFlight + bytes > limitBytes) return { busy: true, bytes, in_flight: inFlight, limit: limitBytes };
      inFlight += bytes;
      let held = bytes;
      return () => {
        inFlight -= held;
        held = 0;
      };
    },
  };
}

/**
 * What a request's body is charged, from its headers: its declared length, no more than the most
 * a route reads (`ceiling`); a chunked body (no length) the ceiling; none, 0.
 */
export function declaredBodyBytes(headers: Headers, ceiling: number): number {
  const declared = headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared.trim())) return Math.min(Number(declared), ceiling);
  return headers.has("transfer-encoding") ? ceiling : 0;
}

/**
 * The app's guard of the budget, after the access guard (a refused request is never read): a
 * request declaring a body is charged before its handler runs, refused 503 when over, and gives
 * its share back when its handler has read the body (`bodyRead`) or, at the latest, answered.
 */
export function requestBodyBudget(bodies: RequestBodies, ceiling: () => number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const bytes = declaredBodyBytes(c.req.raw.headers, ceiling());
    if (bytes === 0) return next();
    const release = bodies.claim(bytes);
    if (typeof release !== "function") return failureResponse(c, bodiesBusyFailure(release, c.get("ids")));
    c.set("bodyRead", release);
    try {
      await next();
    } finally {
      release();
    }
  };
}

/** Gives a request's share of the budget back once its handler has read the body (a no-op when it held none). */
export function bodyRead(c: Context<any>): void {
  (c.get("bodyRead") as (() => void) | undefined)?.();
}

/** What a request over the budget is told: 503, retry in a moment, nothing was read. */
export function bodiesBusyFailure(busy: BodiesBusy, ids: { request_id: string; trace_id: string }): FailureDescriptor {
  const mib = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
  return buildFailure({
    error_code: "unavailable",
    stage: "admit",
    message: `This request's body (${mib(busy.bytes)}) cannot be read now: the server is already reading ${mib(busy.in_flight)} of request bodies from other clients, and request_bytes_in_flight is ${mib(busy.limit)}.`,
    suggestion: "Retry in a moment; nothing of this request was read or done. An operator can raise --request-bytes-in-flight.",
    retryability: "safe",
    context: { reason: "requests_in_flight", bytes: busy.bytes, in_flight: busy.in_flight, limit: busy.limit, retry_after_s: 1 },
    ...ids,
  });
}
