import { FailureError, type FailureDescriptor } from "../execution/failure.ts";
import type { EdgeInfo, ExecutionPlane } from "../execution/plane.ts";
import { delegatedPlane } from "./_delegated-plane.ts";

/**
 * The plane `docket mcp` serves while the checkout's server holds the checkout and does not
 * answer (stopped, frozen, too busy): not "no server", so nothing that could run twice runs
 * beside it (README.md, "MCP reference"). The tools are listed from the capability files as
 * usual; a direct call of a read capability runs here, since it changes nothing and carries no
 * run_id. Everything else is refused with `refusal`'s failure, nothing having run: a start, with
 * a run_id (the server may hold it already) or without one (a write the server would not know
 * of); a direct write; and the plane tools and resources, which are about the server's executions.
 */
export function standbyPlane(plane: ExecutionPlane, refusal: (what: string, edge: EdgeInfo) => FailureDescriptor): ExecutionPlane {
  const refuse = (what: string, edge: EdgeInfo): never => {
    throw new FailureError(refusal(what, edge));
  };
  return delegatedPlane(plane, {
    start: (request, edge) => refuse(`start ${request.capability}`, edge),
    cancel: (id, edge) => refuse(`cancel ${id}`, edge),
    async call(capability, input, edge, options) {
      const declared = plane.capability(capability);
      if (declared && !declared.plane && declared.effect === "read") return plane.call(capability, input, edge, options);
      return refuse(callWhat(capability, input), edge);
    },
  });
}

/** What a refused call would have done, for the failure's message: the start names its capability and run_id. */
function callWhat(capability: string, input: unknown): string {
  if (capability !== "executions.start") return capability;
  const request = (typeof input === "object" && input !== null ? input : {}) as { capability?: unknown; run_id?: unknown };
  const target = typeof request.capability === "string" ? ` ${request.capability.slice(0, 128)}` : "";
  const runId = typeof request.run_id === "string" ? ` with run_id ${JSON.stringify(request.run_id.slice(0, 128))}` : "";
  return `executions.start${target}${runId}`;
}
