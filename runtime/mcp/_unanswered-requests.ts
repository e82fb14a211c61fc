import { isJSONRPCErrorResponse, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { cancelledRequest } from "./pending-requests.ts";

/**
 * The agent's requests a stdio transport read and has not answered yet, with the bytes of their
 * lines: what a held-back cancel may be for, and what bounds reading further (see
 * JsonLinesTransport). Each answer written settles one request of its id; a request that reuses
 * the id of one still waiting is answered (refused) on its own, and that refusal settles the
 * second, not the first: the first one's cancel was otherwise passed over (MCP checking tester,
 * session 50). A cancel settles every request of its id: a cancelled request is never answered.
 */
export class UnansweredRequests {
  /** The line lengths of the requests of each id, oldest first. */
  private readonly byId = new Map<RequestId, number[]>();
  private lineBytes = 0;
  private requests = 0;

  /** A message read from the agent, whose line was `bytes` long. */
  received(message: JSONRPCMessage, bytes: number): void {
    if (isJSONRPCRequest(message)) {
      const sizes = this.byId.get(message.id);
      if (sizes === undefined) this.byId.set(message.id, [bytes]);
      else sizes.push(bytes);
      this.requests++;
      this.lineBytes += bytes;
      return;
    }
    const cancelled = cancelledRequest(message);
    if (cancelled !== undefined) this.settle(cancelled, Number.POSITIVE_INFINITY);
  }

  /** A message written to the agent: an answer settles the newest request of its id (a refusal of a reused id answers that one). */
  answered(message: JSONRPCMessage): void {
    if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined) this.settle(message.id, 1);
  }

  /** Whether a request of id `id` waits for its answer. */
  has(id: RequestId): boolean {
    return this.byId.has(id);
  }

  /** Requests waiting for their answer. */
  get count(): number {
    return this.requests;
  }

  /** The bytes of their lines, together. */
  get bytes(): number {
    return this.lineBytes;
  }

  private settle(id: RequestId, how: number): void {
    const sizes = this.byId.get(id);
    if (sizes === undefined) return;
    for (let n = 0; n < how && sizes.length > 0; n++) {
      this.lineBytes -= sizes.pop()!;
      this.requests--;
    }
    if (sizes.length === 0) this.byId.delete(id);
  }
}
