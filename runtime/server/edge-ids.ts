import { randomBytes } from "node:crypto";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// W3C Trace Context level 1: version 00, lower-case hex, trace and parent ids not all zeros.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The request's `X-Request-Id` when it has a safe shape, else a fresh one. */
export function requestIdFrom(header: string | undefined): string {
  return header !== undefined && REQUEST_ID.test(header) ? header : `r-${randomBytes(10).toString("hex")}`;
}

/** The trace id of a valid W3C `traceparent` (version 00), else null. */
export function traceIdFrom(traceparent: string | undefined): string | null {
  const match = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim());
  if (!match) return null;
  const [, trace, parent] = match;
  return /^0+$/.test(trace!) || /^0+$/.test(parent!) ? null : trace!;
}

/** A fresh W3C trace id (32 lower hex, never all zeros in practice). */
export function newTraceId(): string {
  return randomBytes(16).toString("hex");
}
