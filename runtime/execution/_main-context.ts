import type { CapabilityContext, HostFacts } from "../capability/declaration.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import type { PlaneHandle } from "./plane.ts";

/**
 * The context of a built-in plane capability, which runs in the main thread as a direct call:
 * it has no execution, so progress goes nowhere, and it gets the plane bound to its caller.
 */
export function mainThreadContext(plane: PlaneHandle, host: () => HostFacts, signal: AbortSignal): CapabilityContext {
  const cancellation = () => Object.assign(new Error("Cancelled"), { name: "CancelledError" });
  return {
    progress: {
      step() {},
      stepDone() {},
      progress() {},
      log() {},
      stream() {},
      diagnostic() {},
      cancelled: () => signal.aborted,
      cancellation,
    },
    signal,
    root: plane.root,
    artifacts: {
      write: async () => {
        throw new CapabilityError("artifacts_unavailable", "Artifacts can only be written by a capability running as an execution.");
      },
    },
    execution: null,
    host: async () => host(),
    plane,
  };
}
