import type { EventDraft, ExecutionEvent } from "../execution/protocol.ts";
import { executionLinks, type ExecutionSnapshot, type StepSnapshot } from "../execution/snapshot.ts";
import { IllegalTransitionError, isTerminal, mayMoveTo, type ExecutionState } from "../execution/state-machine.ts";
import type { Limits } from "../execution/limits.ts";
import type { NewExecution } from "./store.ts";

/** The bounds the fold applies to a snapshot. */
export type FoldLimits = Pick<Limits, "diagnostics_retained" | "log_tail_lines" | "steps_retained">;

/**
 * An event refused without a state move of its own: anything after `execution.completed` but
 * one `execution.reconciled` of an unknown outcome (the terminal state never changes), or a
 * second `execution.created`. A subclass, so that a
 * caller catching IllegalTransitionError catches every refusal of the store.
 */
export class EventRefusedError extends IllegalTransitionError {
  constructor(id: string, state: ExecutionState, readonly type: string, reason: string) {
    super(id, state, state);
    this.name = "EventRefusedError";
    this.message = `Execution ${id} refused ${type}: ${reason}`;
  }
}

/**
 * The snapshot of a just-created execution: `queued`, sequence 1 (its `execution.created`). Its
 * first members are those of the published snapshot schema, in its order (capability/schemas.ts):
 * an answer that holds a snapshot is then already what the output check would make of it, and
 * goes out without being copied (execution/_parses-unchanged.ts).
 */
export function initialSnapshot(execution: NewExecution, created_at: string): ExecutionSnapshot {
  return {
    id: execution.id,
    capability: execution.capability,
    state: "queued",
    created_at,
    last_sequence: 1,
    links: executionLinks(execution.id),
    actor: execution.actor,
    repository: execution.repository,
    run_id: execution.run_id,
    session_key: execution.session_key,
    request_id: execution.request_id,
    trace_id: execution.trace_id,
    started_at: null,
    finished_at: null,
    duration_ms: null,
    cancellable: execution.cancellable,
    effect: execution.effect,
    input: execution.input,
    capability_version: execution.capability_version ?? null,
    failure: null,
    steps: [],
    progress: null,
    diagnostics: [],
    diagnostics_dropped: 0,
    steps_dropped: 0,
    steps_dropped_failed: 0,
    log: [],
    log_dropped: 0,
    retained_from: 1,
    truncated: false,
  };
}

/** The state a lifecycle event moves to; null for an event that does not move the state. */
function targetState(draft: EventDraft): ExecutionState | null {
  switch (draft.type) {
    case "execution.started":
      return "running";
    case "execution.cancel_requested":
      return "cancelling";
    case "execution.completed":
      return draft.data.state;
    default:
      return null;
  }
}

/**
 * Throws (IllegalTransitionError) unless every draft may follow the snapshot, in order. Run on the
 * whole batch before anything of it is applied, so a refused batch leaves no trace.
 */
export function checkBatch(snapshot: ExecutionSnapshot, drafts: readonly EventDraft[]): void {
  let state = snapshot.state;
  let certainty = snapshot.failure?.outcome_certainty ?? null;
  let reconciled = snapshot.reconciliation !== undefined;
  for (const draft of drafts) {
    if (draft.type === "execution.reconciled") {
      // The one event after completion, once, and only where the outcome is unknown (docs/reconciliation.md).
      if (!isTerminal(state)) throw new EventRefusedError(snapshot.id, state, draft.type, `it is still ${state}; only a finished execution can be reconciled`);
      if (reconciled) throw new EventRefusedError(snapshot.id, state, draft.type, "it was already reconciled, and a reconciliation is never replaced");
      if (certainty !== "unknown") throw new EventRefusedError(snapshot.id, state, draft.type, `its outcome is ${certainty ?? "known"} (${state}), not unknown: there is nothing to settle`);
      reconciled = true;
      continue;
    }
    if (isTerminal(state)) throw new EventRefusedError(snapshot.id, state, draft.type, `it is already ${state}, and a terminal execution takes no more events`);
    if (draft.type === "execution.completed") certainty = draft.data.failure?.outcome_certainty ?? null;
    if (draft.type === "execution.created") throw new EventRefusedError(snapshot.id, state, draft.type, "execution.created is written once, by create");
    const to = targetState(draft);
    if (to === null) continue;
    if (!mayMoveTo(state, to)) throw new IllegalTransitionError(snapshot.id, state, to);
    state = to;
  }
}

/**
 * Keeps at most `bound` steps: the oldest finished ones go first (counted in `steps_dropped`, the
 * failed ones among them in `steps_dropped_failed` too);
 * a step still running is never dropped, so a handler looping over steps cannot grow a snapshot
 * without end, and what runs now stays visible.
 */
function boundSteps(snapshot: ExecutionSnapshot, bound: number): void {
  while (snapshot.steps.length > bound) {
    const oldestDone = snapshot.steps.findIndex((step) => step.state !== "running");
    // Only running steps left: the oldest of them goes too. A handler that begins steps without
    // end must not grow the snapshot without end; a late step_done of a dropped one shows it as
    // a step that took no time (below).
    const [dropped] = snapshot.steps.splice(oldestDone < 0 ? 0 : oldestDone, 1);
    snapshot.steps_dropped = (snapshot.steps_dropped ?? 0) + 1;
    // A reader told that steps are gone is told whether a failure went with them.
    if (dropped!.state === "failed") snapshot.steps_dropped_failed = (snapshot.steps_dropped_failed ?? 0) + 1;
  }
}

/** The latest step with this id, searched from the end (a step is usually the last one begun). */
function findStep(steps: StepSnapshot[], id: string): StepSnapshot | undefined {
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.id === id) return steps[i];
  return undefined;
}

/**
 * Applies one stored event (already checked by {@link checkBatch}) to the snapshot, in place.
 * Storage-agnostic: the memory store folds as it appends, a durable store as it loads.
 * `retained_from` and `truncated` describe the event history, which is the store's to set.
 */
export function foldEvent(snapshot: ExecutionSnapshot, event: ExecutionEvent, limits: FoldLimits): void {
  snapshot.last_sequence = event.sequence;
  const e = event as ExecutionEvent & EventDraft;
  switch (e.type) {
    case "execution.started":
      snapshot.state = "running";
      snapshot.started_at = event.timestamp;
      return;
    case "execution.cancel_requested":
      snapshot.state = "cancelling";
      snapshot.cancel_requested = { actor: e.data.actor, at: event.timestamp, ...(e.data.reason === undefined ? {} : { reason: e.data.reason }) };
      return;
    case "execution.completed":
      snapshot.state = e.data.state;
      snapshot.finished_at = event.timestamp;
      snapshot.duration_ms = e.data.duration_ms;
      snapshot.failure = e.data.failure ?? null;
      // The output is part of success only; `null` when a handler returned nothing, so that a
      // reader of "succeeded" always finds the member.
      if (e.data.state === "succeeded") snapshot.output = e.data.output === undefined ? null : e.data.output;
      else delete snapshot.output;
      return;
    case "execution.reconciled":
      snapshot.reconciliation = {
        outcome: e.data.outcome,
        method: e.data.method,
        actor: e.data.actor,
        note: e.data.note ?? null,
        at: event.timestamp,
        ...(e.data.evidence === undefined ? {} : { evidence: e.data.evidence }),
      };
      return;
    case "execution.step": {
      const step = findStep(snapshot.steps, e.data.id);
      if (step && step.state === "running") step.title = e.data.title;
      else {
        snapshot.steps.push({ id: e.data.id, title: e.data.title, state: "running", message: null, started_at: event.timestamp, finished_at: null });
        boundSteps(snapshot, limits.steps_retained);
      }
      return;
    }
    case "execution.step_done": {
      let step = findStep(snapshot.steps, e.data.id);
      if (!step || step.state !== "running") {
        // Done without a begin: shown as a step that took no time, rather than lost.
        step = { id: e.data.id, title: e.data.id, state: "running", message: null, started_at: event.timestamp, finished_at: null };
        snapshot.steps.push(step);
        boundSteps(snapshot, limits.steps_retained);
      }
      step.state = e.data.ok ? "succeeded" : "failed";
      step.message = e.data.message ?? null;
      step.finished_at = event.timestamp;
      return;
    }
    case "execution.progress":
      snapshot.progress = { current: e.data.current, total: e.data.total ?? null, message: e.data.message ?? null };
      return;
    case "execution.log": {
      const line: ExecutionSnapshot["log"][number] = { sequence: event.sequence, timestamp: event.timestamp, level: e.data.level, message: e.data.message };
      if (e.data.truncated) line.truncated = true;
      snapshot.log.push(line);
      while (snapshot.log.length > limits.log_tail_lines) {
        snapshot.log.shift();
        snapshot.log_dropped++;
      }
      return;
    }
    case "execution.diagnostic":
      snapshot.diagnostics.push({ ...e.data });
      while (snapshot.diagnostics.length > limits.diagnostics_retained) {
        snapshot.diagnostics.shift();
        snapshot.diagnostics_dropped++;
      }
      return;
    default:
      // execution.created (sequence 1, described by initialSnapshot) and execution.stream
      // (history only) change nothing else.
      return;
  }
}
