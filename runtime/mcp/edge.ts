import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { EdgeInfo } from "../execution/plane.ts";
import { newTraceId, requestIdFrom, traceIdFrom } from "../server/edge-ids.ts";
import { oneLinePlain } from "../execution/text-sanitize.ts";

/** What an MCP request tells the edge about itself. */
export interface McpRequestFacts {
  requestId: RequestId;
  _meta?: Record<string, unknown>;
}

// clientInfo.name is whatever the client says; bounded, and without escape sequences, control
// characters or bidirectional overrides (one line), before it reaches the store, the cockpit and the logs.
const CLIENT_NAME_LIMIT = 128;

/**
 * The edge of one MCP request (docs/protocol.md): actor `{kind:"mcp", client}` from the client's
 * `clientInfo.name`, the request id from the JSON-RPC id (a fresh one when it has no safe shape),
 * the trace id from a W3C `traceparent` in `_meta` when given, else a fresh one.
 */
export function mcpEdge(clientName: string | undefined, request: McpRequestFacts): EdgeInfo {
  const client = clientName === undefined ? undefined : oneLinePlain(clientName).trim().slice(0, CLIENT_NAME_LIMIT);
  const traceparent = request._meta?.traceparent;
  return {
    actor: client ? { kind: "mcp", client } : { kind: "mcp" },
    request_id: requestIdFrom(String(request.requestId)),
    trace_id: traceIdFrom(typeof traceparent === "string" ? traceparent : undefined) ?? newTraceId(),
  };
}
