import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./_app-env.ts";
import { failureResponse } from "./errors.ts";
import { buildFailure, type FailureDescriptor } from "../execution/failure.ts";

/** Room for the message around an input: MCP's JSON-RPC envelope (runtime/mcp/http.ts). */
export const BODY_ENVELOPE_BYTES = 64 * 1024;

/**
 * A body whose Content-Length is at most this is read whole at once, charged its declared length,
 * and never refused for the budget: a start or a call is a few hundred bytes, and none of them
 * may be kept waiting by bodies other clients only announce. It holds no more than the connection
 * carrying it does; locking larger bodies out with such announcements takes budget / 4 KiB
 * connections (32,768 at the default).
 */
export const SMALL_BODY_BYTES = 4 * 1024;

/** The most any route reads of one request body: an input at `input_bytes` and its envelope. */
export function largestBody(inputBytes: number): number {
  return inputBytes + BODY_ENVELOPE_BYTES;
}

/** What a request is refused with: the budget is spent by bodies still being read. */
export interface BodiesBusy {
  busy: true;
  /** Bytes this request declared (or, sent chunked, had sent), bytes other bodies hold now, and the limit. */
  bytes: number;
  in_flight: number;
  limit: number;
}

/** A body read under the budget: its bytes, more than `limit` of them (nothing past limit + 1 read), or refused for the budget. */
export type ChargedRead = Uint8Array | "too_large" | BodiesBusy;

/**
 * The request bodies being read at once (docs/limits.md, `request_bytes_in_flight`). A runtime
 * holds what a client sends of a body only as it is read (Bun buffers a whole body for
 * `arrayBuffer()`; unread, the client waits): a few hundred clients each sending most of an 8 MiB
 * body and then a byte at a time held gigabytes. So the bytes a body really holds are charged, as
 * they come, and given back once it is read whole or given up. Announced bytes cost nothing: a
 * client declaring 7 MiB and sending nothing, or a chunked `{`, used to take their share of the
 * budget and lock every other body out.
 */
export interface RequestBodies {
  /** Charges `bytes` if they fit beside what other bodies hold (one body always goes): the function that gives them back (once or more), or `busy`. */
  claim(bytes: number): (() => void) | BodiesBusy;
  /** Charges a small body's declared bytes, never refused (SMALL_BODY_BYTES): the function that gives them back. */
  hold(bytes: number): () => void;
  /**
   * Reads `body` a chunk at a time, charging each as it comes: refused once a chunk would pass the
   * budget while other bodies hold bytes (what this one read is given back), and at once, before a
   * byte is read, when a `declared` length would. Gives back everything once read. Throws when
   * the client left before the end (the stream errors).
   */
  read(body: AsyncIterable<Uint8Array | string> | null, declared: number | null, limit: number): Promise<ChargedRead>;
}

export function requestBodies(limitBytes: number): RequestBodies {
  let inFlight = 0;
  const busy = (bytes: number, others: number): BodiesBusy => ({ busy: true, bytes, in_flight: others, limit: limitBytes });
  const giveBack = (bytes: number) => {
    let held = bytes;
    return () => {
      inFlight -= held;
      held = 0;
    };
  };
  return {
    claim(bytes) {
      // One body always goes, however large (input_bytes may be above the budget): the budget bounds how many are read at once.
      if (inFlight > 0 && inFlight + bytes > limitBytes) return busy(bytes, inFlight);
      inFlight += bytes;
      return giveBack(bytes);
    },
    hold(bytes) {
      inFlight += bytes;
      return giveBack(bytes);
    },
    async read(body, declared, limit) {
      if (declared !== null && inFlight > 0 && inFlight + Math.min(declared, limit + 1) > limitBytes) return busy(declared, inFlight);
      if (!body) return new Uint8Array(0);
      const chunks: Uint8Array[] = [];
      let held = 0;
      try {
        for await (const chunk of body) {
          const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
          const others = inFlight - held;
          if (others > 0 && inFlight + bytes.byteLength > limitBytes) return busy(declared ?? held + bytes.byteLength, others);
          inFlight += bytes.byteLength;
          held += bytes.byteLength;
          chunks.push(bytes);
          // Leaving the loop cancels the stream: nothing past the limit is read.
          if (held > limit) return "too_large";
        }
        // A runtime may end the stream of a body whose client left early rather than fail it.
        if (declared !== null && held < declared) throw new Error("The request body ended before its Content-Length.");
        return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      } finally {
        inFlight -= held;
      }
    },
  };
}

/**
 * Reads a request's body under the budget, at most `limit` bytes: a small body of a declared
 * length whole at once, charged its declared length and never refused (SMALL_BODY_BYTES), any
 * other as a stream, charged as it comes (RequestBodies.read). Throws when the client left before
 * the end. Shared by the app's routes (readRequestBody) and the direct route (capability-post.ts).
 */
export async function readCharged(request: Request, bodies: RequestBodies, declared: number | null, limit: number): Promise<ChargedRead> {
  if (declared !== null && declared <= SMALL_BODY_BYTES) {
    // With a declared length the runtime delivers exactly that many bytes: one read, no stream.
    const release = bodies.hold(declared);
    try {
      return new Uint8Array(await request.arrayBuffer());
    } finally {
      release();
    }
  }
  return bodies.read(request.body, declared, limit);
}

/** What reading a request's body gave: its bytes, or why there are none. */
export type BodyRead =
  | { ok: true; bytes: Uint8Array }
  | { ok: false; reason: "too_large" }
  /** The client closed the connection before the whole body came. */
  | { ok: false; reason: "incomplete" }
  /** Over request_bytes_in_flight: `response` is the 503 every route answers it with. */
  | { ok: false; reason: "busy"; response: Response };

/**
 * Reads the body of a request the app routes, at most `limit` bytes, under the budget the
 * app's guard put in its context (without one, a sub-app served alone, unbudgeted): a small body
 * of a declared length whole at once, any other as a stream, charged as it comes.
 */
export async function readRequestBody(c: Context<any>, limit: number): Promise<BodyRead> {
  const request = c.req.raw as Request;
  const bodies = c.get("bodies") as RequestBodies | undefined;
  const header = request.headers.get("content-length");
  const declared = header !== null && /^\d+$/.test(header) ? Number(header) : null;
  if (declared !== null && declared > limit) return { ok: false, reason: "too_large" };
  let read: ChargedRead;
  try {
    read = await readCharged(request, bodies ?? requestBodies(Number.MAX_SAFE_INTEGER), declared, limit);
  } catch {
    return { ok: false, reason: "incomplete" };
  }
  if (read === "too_large") return { ok: false, reason: "too_large" };
  if ("busy" in read) return { ok: false, reason: "busy", response: failureResponse(c, bodiesBusyFailure(read, c.get("ids"))) };
  return { ok: true, bytes: read };
}

/** Puts the budget of request bodies in every request's context, for readRequestBody. After the access guard: a refused request is never read. */
export function requestBodyBudget(bodies: RequestBodies): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("bodies", bodies);
    await next();
  };
}

/** What a request over the budget is told: 503, retry in a moment, nothing was done. */
export function bodiesBusyFailure(busy: BodiesBusy, ids: { request_id: string; trace_id: string }): FailureDescriptor {
  const mib = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
  return buildFailure({
    error_code: "unavailable",
    stage: "admit",
    message: `This request's body (${mib(busy.bytes)}) cannot be read now: other clients' request bodies hold ${mib(busy.in_flight)} of the server's memory, and request_bytes_in_flight is ${mib(busy.limit)}.`,
    suggestion: "Retry in a moment; nothing of this request was done. An operator can raise --request-bytes-in-flight.",
    retryability: "safe",
    context: { reason: "requests_in_flight", bytes: busy.bytes, in_flight: busy.in_flight, limit: busy.limit, retry_after_s: 1 },
    ...ids,
  });
}
