import type { EventDraft } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { buildFailure, forcedStopCertainty } from "../execution/failure.ts";

/**
 * The snapshot an unwritable execution ends from: its committed one without the bulky parts that
 * made it too big to write — steps, progress, diagnostics and log (each counted as dropped). Its
 * events keep them: whatever was committed of them is still read back whole.
 */
export function slimmed(snapshot: ExecutionSnapshot): ExecutionSnapshot {
  return {
    ...snapshot,
    steps: [],
    steps_dropped: (snapshot.steps_dropped ?? 0) + snapshot.steps.length,
    steps_dropped_failed: (snapshot.steps_dropped_failed ?? 0) + snapshot.steps.filter((step) => step.state === "failed").length,
    progress: null,
    diagnostics: [],
    diagnostics_dropped: snapshot.diagnostics_dropped + snapshot.diagnostics.length,
    log: [],
    log_dropped: snapshot.log_dropped + snapshot.log.length,
  };
}

/** Thrown by the writer for a snapshot over its bound: a value no later try can write. */
export class UnwritableValueError extends Error {
  constructor(id: string, chars: number, bound: number) {
    super(`the snapshot of ${id} is ${chars} characters of JSON, over the store's bound of ${bound}`);
    this.name = "UnwritableValueError";
  }
}

/**
 * The events that end an execution the file refused to hold (a value too big for it, whatever
 * the moment): `failed`, `internal`, stage `complete`, from its committed state. Its handler may
 * have acted (a write: outcome unknown). A queued one is marked started first, the only way to
 * `failed` the lifecycle allows: the engine had begun it, or it could not have produced anything.
 */
export function unwritableCompletion(snapshot: ExecutionSnapshot, error: unknown): EventDraft[] {
  const reason = error instanceof Error ? error.message : String(error);
  const failure = buildFailure({
    error_code: "internal",
    stage: "complete",
    message: `${snapshot.capability} produced more than the execution store can write (${reason.slice(0, 200)}); ${snapshot.id} was ended here so that no other execution waits for it. What it reported after its last stored event is not kept.`,
    ...forcedStopCertainty(snapshot.effect),
    suggestion: "Report less per execution (shorter step titles and messages, fewer steps), then start it again.",
    request_id: snapshot.request_id,
    trace_id: snapshot.trace_id,
    context: { capability: snapshot.capability, last_stored_sequence: snapshot.last_sequence },
  });
  const drafts: EventDraft[] = [];
  if (snapshot.state === "queued") drafts.push({ type: "execution.started", data: {} });
  drafts.push({ type: "execution.completed", data: { state: "failed", failure, duration_ms: 0 } } as EventDraft);
  return drafts;
}
