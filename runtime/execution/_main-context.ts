import type { CapabilityContext, HostFacts, ProgressReporter } from "../capability/declaration.ts";
import { createExec } from "../worker/exec.ts";
import { spawnHere } from "../worker/spawn-child.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import type { PlaneHandle } from "./plane.ts";

/**
 * The context of a built-in plane capability, which runs in the main thread as a direct call:
 * it has no execution, so progress goes nowhere, and it gets the plane bound to its caller.
 */
export function mainThreadContext(plane: PlaneHandle, host: () => HostFacts, signal: AbortSignal): CapabilityContext {
  const cancellation = () => Object.assign(new Error("Cancelled"), { name: "CancelledError" });
  const progress: ProgressReporter = {
    step() {},
    stepDone() {},
    progress() {},
    log() {},
    stream() {},
    diagnostic() {},
    cancelled: () => signal.aborted,
    cancellation,
  };
  let exec: CapabilityContext["exec"] | undefined;
  return {
    progress,
    signal,
    root: plane.root,
    artifacts: {
      write: async () => {
        throw new CapabilityError("artifacts_unavailable", "Artifacts can only be written by a capability running as an execution.");
      },
    },
    execution: null,
    host: async () => host(),
    // Made on first use: most plane handlers never run a command, and every direct call builds a context.
    exec: (...args) => (exec ??= createExec({ root: plane.root, progress, signal: () => signal, killGraceMs: plane.limits.grace_ms, spawn: spawnHere }).exec)(...args),
    plane,
  };
}
