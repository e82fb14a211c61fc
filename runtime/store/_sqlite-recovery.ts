import type { EventDraft } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { buildFailure, forcedStopCertainty } from "../execution/failure.ts";
import { isTerminal } from "../execution/state-machine.ts";
import type { ExecutionStore } from "./store.ts";
import type { Entry } from "./_sqlite-entry.ts";

/** What recovery did to one execution found unfinished on open. */
export interface RecoveredExecution {
  id: string;
  /** The state the file held. */
  found: "queued" | "running" | "cancelling";
  /** The terminal state recovery wrote. */
  state: "cancelled" | "failed";
}

/** When the execution last reported, for the message; its last event's timestamp. */
export interface LastHeard {
  timestamp: string;
  sequence: number;
}

/**
 * The event that ends an execution the server stopped under (docs/architecture.md): found `queued`, it never
 * ran, so it is `cancelled` with nothing applied; found `running` or `cancelling`, its handler was
 * stopped by the server's end, so it is `failed` `interrupted` with the certainty of its effect
 * (docs/protocol.md: a write may have acted — `unknown`, reconcile by hand; a read changed nothing — `safe`).
 * Found `queued` but `begun` (its handler was handed to a worker before its start was written:
 * _sqlite-starting.ts), it is ended as a running one, after an `execution.started`.
 * Never success, never gone. Null for an execution that already finished.
 *
 * No `execution.cancel_requested` is needed on the way: queued → cancelled, running → failed and
 * cancelling → failed are all moves `mayMoveTo` allows (and the store checks them like any other).
 */
export function recoveryCompletion(snapshot: ExecutionSnapshot, last: LastHeard, begun = false): EventDraft | null {
  const ids = { request_id: snapshot.request_id, trace_id: snapshot.trace_id };
  if (snapshot.state === "queued" && !begun) {
    const failure = buildFailure({
      ...ids,
      error_code: "cancelled",
      stage: "queue",
      message: `${snapshot.id} (${snapshot.capability}) did not start: the server stopped while it was queued, and it was cancelled when the server started again.`,
      retryability: "safe",
      outcome_certainty: "not_applied",
      context: { capability: snapshot.capability, recovered: true },
    });
    return { type: "execution.completed", data: { state: "cancelled", failure, duration_ms: 0 } };
  }
  if (snapshot.state !== "queued" && snapshot.state !== "running" && snapshot.state !== "cancelling") return null;
  const certainty = forcedStopCertainty(snapshot.effect);
  const write = snapshot.effect === "write";
  // Queued in the file but handed to a worker (_sqlite-starting.ts): its start was not written yet.
  const when = snapshot.state === "queued" ? "as it started (its handler had been handed to a worker)" : `while it ran (last heard from at ${last.timestamp}, event ${last.sequence})`;
  const failure = buildFailure({
    ...ids,
    error_code: "interrupted",
    stage: "run",
    message: `${snapshot.capability} was interrupted: the server stopped ${when}.${write ? " It may have changed something before it stopped." : ""}`,
    ...certainty,
    suggestion: write
      ? "Check what it changed before starting it again: it is a write, and its outcome is unknown."
      : "Start it again if the work is still wanted: it only reads, so nothing was changed.",
    context: { capability: snapshot.capability, last_event_at: last.timestamp, last_sequence: last.sequence, recovered: true },
  });
  // How long it ran as far as anyone knows: from its start to the last thing it reported.
  const duration_ms = snapshot.started_at === null ? 0 : Math.max(0, Date.parse(last.timestamp) - Date.parse(snapshot.started_at));
  return { type: "execution.completed", data: { state: "failed", failure, duration_ms } };
}

/**
 * Ends every unfinished execution of `entries` through the store's own `append` (so the move is
 * checked, numbered, folded and written like any other), except runs reported by another process;
 * answers what it did, in order.
 */
export function recoverUnfinished(store: Pick<ExecutionStore, "append" | "events">, entries: Iterable<Entry>, begun: ReadonlySet<string> = new Set()): RecoveredExecution[] {
  const recovered: RecoveredExecution[] = [];
  for (const entry of [...entries]) {
    if (isTerminal(entry.state)) continue;
    const found = entry.state as RecoveredExecution["found"];
    const snapshot = entry.snapshot!;
    // A run reported by `docket run` works in its own process, which may well have outlived this
    // server: the report ledger adopts it and ends it only if it stays silent (docs/protocol.md).
    if (snapshot.actor.kind === "cli") continue;
    const [lastEvent] = store.events(entry.id, entry.lastSequence - 1, 1)!.events;
    // Handed to a worker before its start was written: it started, then the server stopped.
    const started = found === "queued" && begun.has(entry.id);
    const draft = recoveryCompletion(snapshot, { timestamp: lastEvent?.timestamp ?? snapshot.created_at, sequence: entry.lastSequence }, started);
    if (draft === null) continue;
    store.append(entry.id, started ? [{ type: "execution.started", data: {} }, draft] : [draft]);
    recovered.push({ id: entry.id, found, state: entry.state as RecoveredExecution["state"] });
  }
  return recovered;
}
