import type { ExecutionPlane } from "../execution/plane.ts";

/**
 * A plane that is `plane` but for how it starts, cancels and calls (`own`): what `docket mcp`
 * serves beside a server that holds the checkout (standby-plane.ts, later-server-plane.ts).
 * Everything else — limits, store, capabilities, their changes, the handle — is the plane's own.
 */
export function delegatedPlane(plane: ExecutionPlane, own: Pick<ExecutionPlane, "start" | "cancel" | "call">): ExecutionPlane {
  return {
    get root() {
      return plane.root;
    },
    get limits() {
      return plane.limits;
    },
    get store() {
      return plane.store;
    },
    capabilities: () => plane.capabilities(),
    capability: (id) => plane.capability(id),
    loadErrors: () => plane.loadErrors(),
    ...(plane.onCapabilitiesChanged ? { onCapabilitiesChanged: (listener: () => void) => plane.onCapabilitiesChanged!(listener) } : {}),
    start: own.start,
    cancel: own.cancel,
    call: own.call,
    handle: (edge) => plane.handle(edge),
  };
}
