import { buildFailure, type FailureDescriptor } from "../execution/failure.ts";

const PREFIX = "o:";

/**
 * Thrown by `store.list` for a cursor it did not make. The store does not know the request, so
 * the edge turns it into the failure descriptor with {@link InvalidCursorError.toFailure}
 * (`invalid_input`, stage `validate`: HTTP 400).
 */
export class InvalidCursorError extends Error {
  constructor(readonly cursor: string) {
    super(`The list cursor ${JSON.stringify(cursor.length > 64 ? `${cursor.slice(0, 64)}…` : cursor)} is not one this server gave out; start again without a cursor.`);
    this.name = "InvalidCursorError";
  }

  /** The descriptor for the edge that knows the request. */
  toFailure(edge: { request_id: string; trace_id: string }): FailureDescriptor {
    return buildFailure({ error_code: "invalid_input", stage: "validate", message: this.message, request_id: edge.request_id, trace_id: edge.trace_id, context: { field: "cursor" } });
  }
}

/** The opaque cursor for "after the execution created at position `order`" (base64url). */
export function encodeListCursor(order: number): string {
  return btoa(PREFIX + order).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The creation position a cursor names; throws InvalidCursorError for anything else. */
export function decodeListCursor(cursor: string): number {
  let text: string;
  try {
    text = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? atob(cursor.replace(/-/g, "+").replace(/_/g, "/")) : "";
  } catch {
    text = "";
  }
  const order = text.startsWith(PREFIX) && /^\d{1,15}$/.test(text.slice(PREFIX.length)) ? Number(text.slice(PREFIX.length)) : NaN;
  if (!Number.isSafeInteger(order) || order < 1) throw new InvalidCursorError(cursor);
  return order;
}
