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
    const routes = httpRoutes(target);
    return {
      ok: false,
      status: 426,
      error_code: "invalid_input",
      message: `/events is a WebSocket (RFC 6455): connect with a WebSocket client. Over HTTP, read the same events from ${routesText(routes)} and list executions at /api/v1/executions.`,
      context: { reason: "upgrade_required", events: routes[0]!, ...(routes.length > 1 ? { events_each: routes } : {}), executions: "/api/v1/executions" },
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

// Routes a 426 names in its message; the others are counted (all are in its context, at most
// MAX_NAMED_EXECUTIONS of them), so the message stays a few lines however many are followed.
const ROUTES_NAMED = 3;

/**
 * The HTTP route of each followed execution's events, from its own cursor: a 426 naming only the
 * first of several said "the same events" of a request that asked for more (a tester's finding).
 */
function httpRoutes(target: LiveTarget): string[] {
  if (target.executions === "all") return [`/api/v1/executions/events?id=<id>${target.after === undefined ? "" : `&after=${target.after}`}`];
  return target.executions.map((id) => {
    const after = target.cursors !== undefined ? cursorOf(target, id) : target.after;
    return `/api/v1/executions/events?id=${encodeURIComponent(id)}${after === undefined ? "" : `&after=${after}`}`;
  });
}

/** The routes as a sentence: every one up to ROUTES_NAMED, else the first ones and how many more. */
function routesText(routes: string[]): string {
  if (routes.length === 1) return routes[0]!;
  if (routes.length <= ROUTES_NAMED) return `${routes.slice(0, -1).join(", ")} and ${routes.at(-1)!} (one per execution)`;
  const more = routes.length - ROUTES_NAMED;
  return `${routes.slice(0, ROUTES_NAMED).join(", ")} and ${more} more, one per execution followed, each with its own id and after (all ${routes.length} are in context.events_each)`;
}
