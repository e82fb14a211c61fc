import type { EdgeInfo } from "../execution/plane.ts";
import { newTraceId, requestIdFrom, traceIdFrom } from "../server/edge-ids.ts";

/** The ids a CLI run carries from its edge (docs/protocol.md): a W3C `TRACEPARENT` from the caller is honoured. */
export function cliEdge(env: Record<string, string | undefined>): EdgeInfo {
  return {
    actor: { kind: "cli", pid: process.pid },
    request_id: requestIdFrom(undefined),
    trace_id: traceIdFrom(env.TRACEPARENT) ?? newTraceId(),
  };
}
