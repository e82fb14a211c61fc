import { ErrorCode, isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type JSONRPCRequest, type RequestId } from "@modelcontextprotocol/sdk/types.js";

/**
 * The agent's requests that have no answer yet, seen from the messages passing by. When stdin
 * ends, `docket mcp` answers these before it exits (a client may half-close after its last
 * request); a request the agent cancelled gets no answer, so it is no longer waited for.
 */
export class PendingRequests {
  private readonly ids = new Set<RequestId>();
  /**
   * Requests the agent cancelled in flight, newest last: their work may still be ending (a
   * handler told to stop, a start being undone) and no answer says when, so their ids stay taken.
   * MCP forbids reusing an id in a session; a request that did was run, its cancel applied to it
   * instead of the cancelled one, and the cancelled one's answer given as its own (MCP tester).
   */
  private readonly retired = new Set<RequestId>();
  private waiters: Array<() => void> = [];

  /**
   * A message from the agent; false when the server is not to see it: a cancel of a request not
   * in flight (not yet sent, or answered already), which MCP says to ignore. The SDK acts on a
   * notification a turn after a request read with it, so a cancel sent just before its request
   * (or one whose answer is on its way) would otherwise cancel a request that came after it.
   */
  received(message: JSONRPCMessage): boolean {
    if (isJSONRPCRequest(message)) this.ids.add(message.id);
    else if (isJSONRPCNotification(message) && message.method === "notifications/cancelled") {
      const id = cancelledRequest(message);
      if (id === undefined || !this.ids.has(id)) return false;
      this.settle(id);
      this.retire(id);
    }
    return true;
  }

  /**
   * Whether `message` is a request whose id a request still waiting already has: JSON-RPC ids
   * name one request each, and its answer could not say which of the two it answers. Such a
   * request is answered {@link reusedIdAnswer} and not run; the one waiting is left as it is.
   */
  reused(message: JSONRPCMessage): message is JSONRPCRequest {
    return isJSONRPCRequest(message) && (this.ids.has(message.id) || this.retired.has(message.id));
  }

  /** Whether `id` names a request the agent cancelled in this session (see `retired`). */
  cancelled(id: RequestId): boolean {
    return this.retired.has(id);
  }

  /** A message to the agent, once written. */
  answered(message: JSONRPCMessage): void {
    if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined) this.settle(message.id);
  }

  /** A request refused before it ran (its transport answered it itself): no answer of the server's will come. */
  forget(id: RequestId): void {
    this.settle(id);
  }

  /** Whether the request `id` still waits for its answer. */
  has(id: RequestId): boolean {
    return this.ids.has(id);
  }

  /** The ids still waiting for their answer. */
  waiting(): RequestId[] {
    return [...this.ids];
  }

  /** Requests still waiting for their answer. */
  get count(): number {
    return this.ids.size;
  }

  /** Resolves once every request seen so far has its answer (at once when there is none). */
  settled(): Promise<void> {
    if (this.ids.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private retire(id: RequestId): void {
    this.retired.add(id);
    // Bounded: the oldest cancelled work has ended long before this many cancels later.
    if (this.retired.size > RETIRED_IDS) this.retired.delete(this.retired.values().next().value!);
  }

  private settle(id: RequestId): void {
    if (!this.ids.delete(id) || this.ids.size > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** How many cancelled requests' ids stay taken (see PendingRequests `retired`). */
const RETIRED_IDS = 10_000;

/** The request a `notifications/cancelled` cancels, or undefined for any other message. */
export function cancelledRequest(message: JSONRPCMessage): RequestId | undefined {
  if (!isJSONRPCNotification(message) || message.method !== "notifications/cancelled") return undefined;
  return (message.params as { requestId?: RequestId } | undefined)?.requestId;
}

/** The answer to a request that reused the id of one still waiting (see PendingRequests.reused): nothing of it ran. */
export function reusedIdAnswer(request: JSONRPCRequest, pending: PendingRequests): JSONRPCMessage {
  const used = pending.cancelled(request.id) ? "a request of this session that was cancelled (its work may still be ending, and MCP never reuses an id in a session)" : "a request of this session that has no answer yet";
  const message = `The request id ${JSON.stringify(request.id)} is already used by ${used}, so this ${request.method} request was not run: give each request an id of its own, and send it again with a new id.`;
  return { jsonrpc: "2.0", id: request.id, error: { code: ErrorCode.InvalidRequest, message } };
}
