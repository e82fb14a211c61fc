import { FailureError, type FailureDescriptor } from "../execution/failure.ts";
import type { EdgeInfo, ExecutionPlane } from "../execution/plane.ts";
import { delegatedPlane } from "./_delegated-plane.ts";

/**
 * The plane of a standalone `docket mcp` once a `docket serve` has started on its checkout
 * (`serverStarted()` says so): the agent's next start or write would run here, invisible to that
 * server, and a run_id the server also takes would run twice (README.md, "MCP reference"). From
 * then on a start and a direct write are refused with `refusal`'s failure, nothing having run;
 * direct reads, and everything about the executions this process already holds (get, list,
 * events, cancel), go on here. Before it, the plane is served as it is.
 */
export function laterServerPlane(plane: ExecutionPlane, serverStarted: () => boolean, refusal: (what: string, edge: EdgeInfo) => FailureDescriptor): ExecutionPlane {
  const refuse = (what: string, edge: EdgeInfo): never => {
    throw new FailureError(refusal(what, edge));
  };
  return delegatedPlane(plane, {
    start: (request, edge) => (serverStarted() ? refuse(`start ${request.capability}`, edge) : plane.start(request, edge)),
    cancel: (id, edge) => plane.cancel(id, edge),
    async call(capability, input, edge, options) {
      if (serverStarted() && runsWork(plane, capability)) return refuse(startWhat(capability, input), edge);
      return plane.call(capability, input, edge, options);
    },
  });
}

/** True for a call that would run work the server should hold: a start, or a direct write. */
function runsWork(plane: ExecutionPlane, capability: string): boolean {
  if (capability === "executions.start") return true;
  const declared = plane.capability(capability);
  return declared !== null && !declared.plane && declared.effect !== "read";
}

/** What a refused call would have done, for the failure's message: a start names its capability. */
function startWhat(capability: string, input: unknown): string {
  if (capability !== "executions.start") return capability;
  const request = (typeof input === "object" && input !== null ? input : {}) as { capability?: unknown };
  return `executions.start${typeof request.capability === "string" ? ` ${request.capability.slice(0, 128)}` : ""}`;
}
