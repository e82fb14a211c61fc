import type { CapabilityContext, HostFacts, ProgressReporter } from "../capability/declaration.ts";
import { createExec } from "../worker/exec.ts";
import { spawnHere } from "../worker/spawn-child.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import type { PlaneHandle } from "./plane.ts";

const cancellation = () => Object.assign(new Error("Cancelled"), { name: "CancelledError" });

/** Progress of a direct call goes nowhere; only `cancelled()` depends on the call. */
const NO_PROGRESS: Omit<ProgressReporter, "cancelled"> = Object.freeze({
  step() {},
  stepDone() {},
  progress() {},
  log() {},
  stream() {},
  diagnostic() {},
  cancellation,
});

const NO_ARTIFACTS: CapabilityContext["artifacts"] = Object.freeze({
  write: async () => {
    throw new CapabilityError("artifacts_unavailable", "Artifacts can only be written by a capability running as an execution.");
  },
});

/**
 * The context of a built-in plane capability, which runs in the main thread as a direct call:
 * it has no execution, so progress goes nowhere, and it gets the plane bound to its caller.
 * What does not depend on the call is shared: every HTTP `executions.start` builds one.
 */
export function mainThreadContext(plane: PlaneHandle, host: () => HostFacts, signal: AbortSignal): CapabilityContext {
  const progress: ProgressReporter = { ...NO_PROGRESS, cancelled: () => signal.aborted };
  let exec: CapabilityContext["exec"] | undefined;
  return {
    progress,
    signal,
    root: plane.root,
    artifacts: NO_ARTIFACTS,
    execution: null,
    host: async () => host(),
    // Made on first use: most plane handlers never run a command, and every direct call builds a context.
    exec: (...args) => (exec ??= createExec({ root: plane.root, progress, signal: () => signal, killGraceMs: plane.limits.grace_ms, spawn: spawnHere }).exec)(...args),
    plane,
  };
}
