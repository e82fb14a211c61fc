import { ErrorCode, type CallToolResult, type McpError } from "@modelcontextprotocol/sdk/types.js";
import { rpcError } from "./rpc-error.ts";
import { buildFailure, FailureError, newCorrelationId, type FailureDescriptor } from "../execution/failure.ts";
import type { EdgeInfo } from "../execution/plane.ts";
import { thrownDetail } from "../execution/thrown.ts";
import { withoutColour } from "../execution/text-colour.ts";

/** MCP's code for a resource that does not exist (2025-11-25 spec, resources: error handling). */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * The one projection of a failure onto a tool result (README.md): the descriptor itself as
 * structured content, `isError: true`, and a short text for clients that read text only.
 */
export function failureToolResult(failure: FailureDescriptor): CallToolResult {
  // A handler's message keeps its colour as stored; the text an agent reads has none of its escapes.
  // A message that says what to do already (the run-identity limit's) is not followed by it again.
  const advice = failure.message.includes(failure.suggestion) ? "" : ` ${failure.suggestion}`;
  const text = withoutColour(`${failure.error_code}: ${failure.message}${advice} (retryability ${failure.retryability}, outcome ${failure.outcome_certainty}, correlation id ${failure.correlation_id})`);
  return { isError: true, structuredContent: { ...failure }, content: [{ type: "text", text }] };
}

/**
 * The same failure where MCP has no result to carry it (reading a resource): a JSON-RPC error whose
 * code says not found / bad request / internal, with the descriptor as its data.
 */
export function failureRpcError(failure: FailureDescriptor, data: Record<string, unknown> = {}): McpError {
  const code = failure.error_code === "not_found" ? RESOURCE_NOT_FOUND : failure.error_code === "invalid_input" ? ErrorCode.InvalidParams : ErrorCode.InternalError;
  return rpcError(code, failure.message, { ...data, error: failure });
}

/**
 * The descriptor of anything a call threw: a FailureError's own, or `internal` with a correlation
 * id whose stack goes to this process's log, never to the client (docs/architecture.md).
 */
export function failureOf(error: unknown, edge: EdgeInfo, log: (line: string) => void, what: string): FailureDescriptor {
  if (error instanceof FailureError) return error.failure;
  const correlation_id = newCorrelationId();
  log(`[docket] ${correlation_id} MCP ${what}: ${thrownDetail(error)}`);
  return buildFailure({
    error_code: "internal",
    stage: "run",
    message: `docket failed while answering ${what}.`,
    correlation_id,
    request_id: edge.request_id,
    trace_id: edge.trace_id,
  });
}
