import type { ExecutionSnapshot } from "./snapshot.ts";
import { isTerminal } from "./state-machine.ts";

/** What retention needs to know of an execution besides its snapshot. */
export interface RetentionFacts {
  /** Its artifact folder still holds files: not released (and not without artifacts). */
  artifactsHeld: boolean;
}

/**
 * True when nobody can tell whether the execution's effect happened (a `write` stopped by force,
 * say) and nobody has settled it since (docs/reconciliation.md).
 */
export function outcomeUnknown(snapshot: Pick<ExecutionSnapshot, "failure" | "reconciliation">): boolean {
  return snapshot.failure?.outcome_certainty === "unknown" && snapshot.reconciliation === undefined;
}

/**
 * Whether a finished execution's details may expire once `details_retention_ms` has passed
 * (docs/limits.md): only a terminal execution whose artifacts are released (or that has none) and
 * whose outcome is known. An `unknown` outcome keeps its details as the evidence a person settles
 * it with, until it is reconciled. Its identity (id, state, run_id, failure) stays either way.
 */
export function mayExpire(snapshot: Pick<ExecutionSnapshot, "state" | "failure" | "reconciliation">, facts: RetentionFacts): boolean {
  return isTerminal(snapshot.state) && !facts.artifactsHeld && !outcomeUnknown(snapshot);
}
