import { randomBytes } from "node:crypto";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// W3C Trace Context level 1: lower-case hex, trace and parent ids not all zeros. Version 00 is
// exactly this; a later version (01–fe) is read by the same first fields, and may go on after a
// "-", as the recommendation asks of a receiver; ff is never valid.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/s;

/** The request's `X-Request-Id` when it has a safe shape, else a fresh one. */
export function requestIdFrom(header: string | undefined): string {
  return header !== undefined && REQUEST_ID.test(header) ? header : `r-${randomBytes(10).toString("hex")}`;
}

/** The trace id of a valid W3C `traceparent` (version 00, or a later one's first fields), else null. */
export function traceIdFrom(traceparent: string | undefined): string | null {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim());
  if (!match) return null;
  const [, version, trace, parent, more] = match;
  if (version === "ff" || (version === "00" && more !== undefined)) return null;
  return /^0+$/.test(trace!) || /^0+$/.test(parent!) ? null : trace!;
}

/** A fresh W3C trace id (32 lower hex, never all zeros in practice). */
export function newTraceId(): string {
  return randomBytes(16).toString("hex");
}

/** Ids for the requests of one server: the same shapes as `requestIdFrom` and `newTraceId`. */
export interface EdgeIdSource {
  requestId(header: string | undefined): string;
  traceId(traceparent: string | undefined): string;
}

/** Random bytes drawn per refill of an id source: 1 KiB lasts ~39 requests that bring no ids. */
const POOL_BYTES = 1024;

/**
 * An id source that draws its random bytes from a pool refilled in one call, instead of a
 * `randomBytes` call (and a Buffer) per id: two of those were ~2 % of the server's time per
 * request on the HTTP start path. Each byte is used once, so ids stay as unpredictable as before.
 */
export function edgeIdSource(): EdgeIdSource {
  const pool = Buffer.allocUnsafe(POOL_BYTES);
  let at = POOL_BYTES;
  const hex = (bytes: number) => {
    if (at + bytes > POOL_BYTES) (crypto.getRandomValues(pool), (at = 0));
    const text = pool.toString("hex", at, at + bytes);
    at += bytes;
    return text;
  };
  return {
    requestId: (header) => (header !== undefined && REQUEST_ID.test(header) ? header : `r-${hex(10)}`),
    traceId: (traceparent) => traceIdFrom(traceparent) ?? hex(16),
  };
}
