import { UriTemplate } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
import type { ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import { buildFailure } from "../execution/failure.ts";
import type { EdgeInfo, ExecutionPlane } from "../execution/plane.ts";
import { failureOf, failureRpcError } from "./failure-result.ts";

const JSON_TYPE = "application/json";

/** The fixed resources (README.md), each read through the plane capability that answers it over HTTP too. */
const FIXED: Array<Resource & { capability: string }> = [
  {
    uri: "docket://executions",
    name: "executions",
    title: "Executions",
    description: "The newest executions of this plane (the first page of docket_executions), with counts per state.",
    mimeType: JSON_TYPE,
    capability: "executions.list",
  },
  {
    uri: "docket://executions/protocol",
    name: "executions-protocol",
    title: "The event protocol",
    description: "The whole event contract: the JSON Schema of every event, states and moves, error codes, and the limits in force.",
    mimeType: JSON_TYPE,
    capability: "executions.protocol",
  },
];

/** One execution's snapshot by id. */
export const EXECUTION_TEMPLATE: ResourceTemplate = {
  uriTemplate: "docket://executions/{id}",
  name: "execution",
  title: "One execution",
  description: "The snapshot of one execution (as docket_execution answers): state, steps, progress, diagnostics, log tail, output or failure.",
  mimeType: JSON_TYPE,
};

/** What resources/list answers. */
export function listResources(): Resource[] {
  return FIXED.map(({ capability: _capability, ...resource }) => resource);
}

/**
 * Reads a resource: a fixed one, or an execution by the template. A failure (a malformed or
 * unknown id, a URI nothing answers) is a JSON-RPC error carrying the descriptor (see failureRpcError).
 */
export async function readResource(plane: ExecutionPlane, uri: string, edge: EdgeInfo, log: (line: string) => void): Promise<ReadResourceResult> {
  const fixed = FIXED.find((r) => r.uri === uri);
  const id = fixed ? null : new UriTemplate(EXECUTION_TEMPLATE.uriTemplate).match(uri)?.id;
  try {
    if (fixed) return contents(uri, await plane.call(fixed.capability, {}, edge));
    if (typeof id === "string") return contents(uri, await plane.call("executions.get", { id }, edge));
  } catch (error) {
    throw failureRpcError(failureOf(error, edge, log, `resources/read ${uri}`), { uri });
  }
  const failure = buildFailure({
    error_code: "not_found",
    stage: "validate",
    message: `No resource ${JSON.stringify(uri.slice(0, 200))}: this server has docket://executions, docket://executions/protocol and docket://executions/{id}.`,
    context: { uri: uri.slice(0, 200) },
    request_id: edge.request_id,
    trace_id: edge.trace_id,
  });
  throw failureRpcError(failure, { uri });
}

function contents(uri: string, value: unknown): ReadResourceResult {
  return { contents: [{ uri, mimeType: JSON_TYPE, text: JSON.stringify(value) }] };
}
