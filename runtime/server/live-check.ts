import type { Limits } from "../execution/limits.ts";
import type { ExecutionStore } from "../store/store.ts";
import { executionNotFound, type NotHeld } from "../execution/marked-run-answer.ts";
import { cursorOf, namedExecutionsWithin, parseLiveTarget, type LiveTarget } from "./live-target.ts";

/** The verdict on a `/events` request before the upgrade: the subscription, or the refusal to answer. */
export type LiveCheck =
  | { ok: true; target: LiveTarget }
  | { ok: false; status: 400 | 404 | 426 | 503; error_code: string; message: string; suggestion?: string; context: Record<string, unknown>; headers?: Record<string, string> };

/** What admission looks at besides the request. */
export interface LiveAdmission {
  store: ExecutionStore;
  limits: Limits;
  connections: number;
  stopping: boolean;
  /** Why an execution the store does not hold is not here, when it ran in a `docket run` without a server. */
  whyNotHeld?: (id: string, cannot: string) => NotHeld | null;
}

/**
 * Admits a `/events` request before any upgrade (docs/protocol.md "Refusals"): 400 by shape, 426 for a
 * plain GET (naming the HTTP routes of the same events), 404 for an execution the store does not
 * hold, 503 when `live_connections` are open or the server is stopping.
 */
export function checkLiveRequest(params: URLSearchParams, upgrade: boolean, admission: LiveAdmission): LiveCheck {
  const parsed = parseLiveTarget(params);
  if (!parsed.ok) return { ok: false, status: 400, error_code: "invalid_input", message: parsed.message, context: parsed.context };
  const { target } = parsed;
  const most = namedExecutionsWithin(admission.limits.frame_bytes);
  if (target.executions !== "all" && target.executions.length > most) {
    return {
      ok: false,
      status: 400,
      error_code: "invalid_input",
      message: `At most ${most} executions can be followed on one connection with frame_bytes ${admission.limits.frame_bytes} (its stream.ready names them in one frame), got ${target.executions.length}; open several connections.`,
      context: { parameter: "execution", limit: most },
    };
  }
  if (!upgrade) {
    // The first execution's cursor: its own when each has one.
    const named = target.executions === "all" ? null : target.executions[0]!;
    const after = named !== null && target.cursors !== undefined ? cursorOf(target, named) : target.after;
    const events = `/api/v1/executions/events?id=${named === null ? "<id>" : encodeURIComponent(named)}${after === undefined ? "" : `&after=${after}`}`;
    return {
      ok: false,
      status: 426,
      error_code: "invalid_input",
      message: `/events is a WebSocket (RFC 6455): connect with a WebSocket client. Over HTTP, read the same events from ${events} and list executions at /api/v1/executions.`,
      context: { reason: "upgrade_required", events, executions: "/api/v1/executions" },
      headers: { Upgrade: "websocket", Connection: "Upgrade" },
    };
  }
  if (target.executions !== "all") {
    const missing = target.executions.find((id) => admission.store.get(id) === null);
    if (missing) return { ok: false, status: 404, ...executionNotFound(missing, admission.whyNotHeld?.(missing, "has none of its events to send") ?? null) };
  }
  const { limits, connections, stopping } = admission;
  if (stopping || connections >= limits.live_connections) {
    return {
      ok: false,
      status: 503,
      error_code: "unavailable",
      message: stopping ? "The server is stopping." : `The live channel already has ${connections === 1 ? "1 connection" : `${connections} connections`} (limit ${limits.live_connections}).`,
      suggestion: stopping ? "Connect again once it has started again." : "Close a live connection you no longer need (a cockpit tab, a follower), or raise the limit: docket serve --live-connections or DOCKET_LIVE_CONNECTIONS.",
      context: { limit: limits.live_connections, retry_after_s: 1 },
    };
  }
  return { ok: true, target };
}
