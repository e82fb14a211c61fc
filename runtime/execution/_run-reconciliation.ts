import type { EventPayload, ExecutionEvent } from "./protocol.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import { boundedEvidence } from "./_reconcile-check.ts";

/**
 * True for a reported run this server ended for silence (`unavailable`, stage `report`, outcome
 * unknown) and nobody has settled since: the run's own end, when it comes back, settles it.
 */
export function endedForSilence(snapshot: Pick<ExecutionSnapshot, "failure" | "reconciliation" | "actor">): boolean {
  const f = snapshot.failure;
  return snapshot.actor.kind === "cli" && f?.error_code === "unavailable" && f.stage === "report" && f.outcome_certainty === "unknown" && snapshot.reconciliation === undefined;
}

/**
 * The reconciliation a run's own `execution.completed` makes of an execution the server ended for
 * silence (docs/reconciliation.md): `succeeded` took effect; a failure or cancel that knows its
 * outcome says it. Null when the run's own end is unknown too — then nothing is settled.
 */
export function runReconciliation(end: ExecutionEvent<"execution.completed">, pid: number): EventPayload<"execution.reconciled"> | null {
  const { state, failure, duration_ms } = end.data;
  const outcome = state === "succeeded" ? "applied" : failure?.outcome_certainty === "applied" || failure?.outcome_certainty === "not_applied" ? failure.outcome_certainty : null;
  if (outcome === null) return null;
  const evidence: Record<string, unknown> = { reported_by: { pid }, state, duration_ms, sequence: end.sequence, ended_at: end.timestamp };
  if (failure) evidence.failure = { error_code: failure.error_code, message: failure.message, outcome_certainty: failure.outcome_certainty, correlation_id: failure.correlation_id };
  if (state === "succeeded") evidence.output = boundedEvidence(end.data.output ?? null);
  const verdict = state === "succeeded" ? "succeeded" : `${state} (${failure?.error_code ?? "no failure"}, outcome ${outcome})`;
  return {
    outcome,
    method: "run",
    actor: { kind: "cli", pid },
    note: `docket run (pid ${pid}) came back after this server had ended it for silence, and reported its real end: it ${verdict} after ${Math.round(duration_ms)} ms.`,
    evidence: boundedEvidence(evidence),
  };
}
