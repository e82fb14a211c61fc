import type { ExecutionStore } from "../store/store.ts";
import type { Clock } from "./clock.ts";
import type { StorageRefusal } from "./storage-gate.ts";
import type { Limits } from "./limits.ts";
import type { EdgeInfo } from "./plane.ts";
import type { Actor, EventDraft, ExecutionEvent } from "./protocol.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import type { ExecutionReport, ReportAnswer } from "./report-protocol.ts";
import { buildFailure, FailureError, type FailureOptions } from "./failure.ts";
import { canonicalHash } from "./canonical-json.ts";
import { IllegalTransitionError, isTerminal, mayMoveTo, type ExecutionState } from "./state-machine.ts";
import { checkReportEvents } from "./_report-events.ts";
import { endedForSilence, runReconciliation } from "./_run-reconciliation.ts";

/** What the ledger is built from; the engine passes its own. */
export interface ReportLedgerOptions {
  store: ExecutionStore;
  limits: Pick<Limits, "report_silence_ms" | "run_identities">;
  /** The checkout this server serves: every reported execution carries it, as its own do. */
  root: string;
  clock: Clock;
  log: (line: string) => void;
  /**
   * Redacts an input by the schema of a capability this server knows. The run's engine redacted
   * it already; the second pass costs little and hides what an older or broken run forgot.
   */
  redactInput(capability: string, input: unknown): unknown;
  /** Why a new run may not be admitted now (a store that cannot write, storage over budget); null when it may. */
  storageRefusal?: (verb: string) => StorageRefusal | null;
}

/**
 * The refusal of a new run_id once the store keeps `run_identities` of them, in one wording for a
 * start (engine.ts) and a run's first report (here). `without` is how the caller leaves its run_id
 * out on its own surface ("Start without a run_id", "Run without --run-id"); the limit is the
 * server's either way. Waiting frees none (identities outlive their executions), so never retryable.
 */
export function runIdentitiesFull(runId: string, limit: number, without: string): Omit<FailureOptions, "request_id" | "trace_id"> {
  const advice = `${without}, or raise the server's limit (docket serve --run-identities, or DOCKET_RUN_IDENTITIES).`;
  return {
    error_code: "capacity",
    stage: "admit",
    message: `Cannot record run_id "${runId}": the limit of ${limit} run identities is reached. ${advice}`,
    suggestion: advice,
    context: { limit, run_id: runId },
    retryability: "never",
  };
}

/** The server's side of docs/protocol.md: reported runs kept in the store, heard or ended for silence. */
export interface ReportLedger {
  /** Applies a report's new events once and in order; throws FailureError (invalid_input) for a report it refuses. */
  ingest(report: ExecutionReport, edge: EdgeInfo): ReportAnswer;
  /**
   * Records a cancel asked of this server for a run it hears: the run learns it from its next
   * answer and cancels its own execution. Null when no run is reporting `id`.
   */
  requestCancel(id: string, actor: Actor): { pid: number } | null;
  close(): void;
}

/** A reported run this server still hears. */
interface Session {
  pid: number;
  timer: unknown;
  cancelBy: Actor | null;
}

/**
 * Creates the ledger. Reported executions live in the same store as the server's own, under the
 * run's id, with `actor: {kind:"cli", pid}`; the store's `last_sequence` is how far the server got,
 * so nothing but the silence timers and pending cancels is kept here. The server never appends
 * an event of its own to a reported execution that is still going (a cancel waits for the run's
 * own `execution.cancel_requested`), so the run's sequences and the server's stay the same.
 */
export function createReportLedger(options: ReportLedgerOptions): ReportLedger {
  const { store, limits, clock, log } = options;
  const sessions = new Map<string, Session>();

  function ingest(report: ExecutionReport, edge: EdgeInfo): ReportAnswer {
    const refuse = (message: string, context: Record<string, unknown>) =>
      new FailureError(buildFailure({ error_code: "invalid_input", stage: "validate", message, context, request_id: edge.request_id, trace_id: edge.trace_id }));
    const checked = checkReportEvents(report.id, report.events);
    if (!checked.ok) throw refuse(`Cannot take the report of ${report.id}: ${checked.problem.message}`, checked.problem.context);
    const existing = store.current(report.id);
    if (existing) {
      if (existing.actor.kind !== "cli") {
        throw refuse(`Cannot take the report of ${report.id}: this server runs an execution with that id itself (started by ${existing.actor.kind}).`, { reason: "id_in_use" });
      }
      if (existing.actor.pid !== report.pid) {
        throw refuse(`Cannot take the report of ${report.id} from pid ${report.pid}: process ${existing.actor.pid} reports that execution.`, { reason: "reported_by_another_process", pid: existing.actor.pid });
      }
      if (isTerminal(existing.state)) return answer(report.id, settleFromRun(existing, checked.events, report.pid), 0, false);
    }
    const through = existing?.last_sequence ?? 0;
    const fresh = checked.events.filter((event) => event.sequence > through);
    // A report that starts after a gap is refused whole: applying it would number its events wrong.
    if (fresh.length === 0 ? existing === null : fresh[0]!.sequence !== through + 1) {
      if (existing) touch(report.id, report.pid);
      return answer(report.id, existing, 0, true);
    }
    // The whole report is checked before anything of it is stored: a refused one leaves no trace.
    const moveProblem = lifecycleProblem(existing?.state ?? "queued", fresh);
    if (moveProblem !== null) throw refuse(`Cannot take the report of ${report.id}: ${moveProblem}.`, { reason: "illegal_transition" });
    if (!existing) {
      // The run_id of a run is its identity as a start's is: used already, the run is that execution.
      const claimed = claimRun(report, edge);
      if (claimed !== null) return claimed;
      // A new run is a new admission: refused like a start while the store cannot take it. A run
      // already here goes on being heard, so that what it already showed is not cut off.
      const refused = options.storageRefusal?.(`take the report of ${report.id}`);
      if (refused) throw new FailureError(buildFailure({ ...refused, stage: "admit", request_id: edge.request_id, trace_id: edge.trace_id }));
      if (report.run_id && report.input_hash && !store.recordRun({ run_id: report.run_id, execution_id: report.id, capability: report.capability, input_hash: report.input_hash })) {
        throw new FailureError(buildFailure({ ...runIdentitiesFull(report.run_id, limits.run_identities, "Run without --run-id"), request_id: edge.request_id, trace_id: edge.trace_id }));
      }
      create(report, fresh[0] as ExecutionEvent<"execution.created">, refuse);
    }
    const drafts = fresh.filter((event) => event.type !== "execution.created").map((event) => ({ type: event.type, data: event.data }) as EventDraft);
    if (drafts.length > 0) {
      try {
        store.append(report.id, drafts);
      } catch (error) {
        // A batch the lifecycle refuses leaves no trace in the store; the report is what was wrong.
        if (error instanceof IllegalTransitionError) throw refuse(`Cannot take the report of ${report.id}: ${error.message}.`, { reason: "illegal_transition" });
        throw error;
      }
    }
    const now = store.current(report.id)!;
    if (isTerminal(now.state)) end(report.id);
    else touch(report.id, report.pid);
    return answer(report.id, now, fresh.length, false);
  }

  /**
   * The first report of a run with a run_id (and its input's hash) whose run_id is already used:
   * with the same capability and input it is that execution — the answer names it and nothing is
   * taken, so the run does not run again; with another, run_id_conflict (409), as for a start.
   * Null when the run_id is free (or the report has none).
   */
  function claimRun(report: ExecutionReport, edge: EdgeInfo): ReportAnswer | null {
    if (!report.run_id || !report.input_hash) return null;
    const known = store.findRun(report.run_id);
    if (known === null) return null;
    if (known.capability !== report.capability || known.input_hash !== report.input_hash) {
      throw new FailureError(
        buildFailure({
          error_code: "run_id_conflict",
          stage: "admit",
          message: `run_id "${report.run_id}" was already used for ${known.execution_id} with ${known.capability === report.capability ? "a different input" : `capability ${known.capability}`}.`,
          context: { run_id: report.run_id, execution_id: known.execution_id },
          request_id: edge.request_id,
          trace_id: edge.trace_id,
        }),
      );
    }
    const original = store.current(known.execution_id);
    const state = original?.state ?? null;
    return {
      ...answer(report.id, null, 0, false),
      state,
      ended: true,
      deduplicated_to: known.execution_id,
      message: `run_id "${report.run_id}" was already used for ${known.execution_id}${state ? ` (${state})` : ""}: that execution is this run, so nothing was taken and nothing runs again.`,
    };
  }

  function create(report: ExecutionReport, created: ExecutionEvent<"execution.created">, refuse: (message: string, context: Record<string, unknown>) => FailureError): void {
    if (created.data.capability !== report.capability) {
      throw refuse(`Cannot take the report of ${report.id}: it describes ${report.capability}, but its execution.created names ${created.data.capability}.`, { reason: "inconsistent" });
    }
    const input = options.redactInput(report.capability, report.input === undefined ? created.data.input : report.input);
    store.create({
      id: report.id,
      capability: report.capability,
      input,
      actor: { kind: "cli", pid: report.pid },
      repository: options.root,
      run_id: report.run_id ?? null,
      session_key: report.session_key ?? null,
      request_id: report.request_id,
      trace_id: report.trace_id,
      cancellable: report.cancellable,
      effect: report.effect,
      // Of the redacted input: the run identity (claimRun) holds the hash of the real one, which the run sent.
      input_hash: canonicalHash(input),
      // The run's own word: the server may not know the capability, or know another version of it.
      capability_version: created.data.capability_version ?? null,
    });
  }

  /**
   * A run that comes back after this server ended it for silence reports its real end: its
   * `execution.completed` becomes the reconciliation of the execution (the terminal state here
   * does not move). Answers the snapshot as it is now.
   */
  function settleFromRun(existing: ExecutionSnapshot, events: readonly ExecutionEvent[], pid: number): ExecutionSnapshot {
    const end = events.find((event): event is ExecutionEvent<"execution.completed"> => event.type === "execution.completed");
    if (!end || !endedForSilence(existing)) return existing;
    const data = runReconciliation(end, pid);
    if (data === null) {
      log(`[docket] ${existing.id}: docket run (pid ${pid}) came back and reported its end, ${end.data.state} with an unknown outcome too; it stays unsettled for a person to reconcile.`);
      return existing;
    }
    try {
      store.append(existing.id, [{ type: "execution.reconciled", data }]);
      log(`[docket] ${existing.id} (${existing.capability}) reconciled as ${data.outcome} (run) by docket run (pid ${pid}), which came back and reported its real end: ${end.data.state}.`);
    } catch (error) {
      // Settled by someone else in the meantime: the first reconciliation stands.
      if (!(error instanceof IllegalTransitionError)) throw error;
    }
    return store.get(existing.id) ?? existing;
  }

  function answer(id: string, snapshot: ExecutionSnapshot | null, applied: number, gap: boolean): ReportAnswer {
    const through = snapshot?.last_sequence ?? 0;
    const session = sessions.get(id);
    const ended = snapshot !== null && isTerminal(snapshot.state);
    let message: string;
    if (ended && snapshot!.reconciliation?.method === "run") message = `${id} is ${snapshot!.state}: ${snapshot!.failure?.message ?? ""} This run's own end was recorded as its reconciliation (${snapshot!.reconciliation.outcome}).`;
    else if (ended) message = `${id} is ${snapshot!.state}${snapshot!.failure ? `: ${snapshot!.failure.message}` : ""}`;
    else if (gap) message = `Events after sequence ${through} are missing from this report; send again from ${through + 1}.`;
    else message = `Took ${applied} event(s); this server holds ${id} through sequence ${through}.`;
    return {
      id,
      through,
      applied,
      gap,
      state: snapshot?.state ?? null,
      cancel_requested: !ended && (session?.cancelBy ?? null) !== null,
      requested_by: ended ? null : (session?.cancelBy ?? null),
      ended,
      takes_end: ended && endedForSilence(snapshot!),
      silence_ms: limits.report_silence_ms,
      message,
    };
  }

  /** The run was heard: its silence is measured from now. */
  function touch(id: string, pid: number): void {
    const session = sessions.get(id) ?? { pid, timer: null, cancelBy: null };
    if (session.timer !== null) clock.clearTimeout(session.timer);
    session.timer = clock.setTimeout(() => silence(id), limits.report_silence_ms);
    sessions.set(id, session);
  }

  function end(id: string): void {
    const session = sessions.get(id);
    if (session?.timer != null) clock.clearTimeout(session.timer);
    sessions.delete(id);
  }

  /**
   * Nothing heard for `report_silence_ms`: the execution fails `unavailable` with an unknown
   * outcome (the run may still be working where this server cannot see it), so a killed run is
   * never a ghost in the list.
   */
  function silence(id: string): void {
    const session = sessions.get(id);
    sessions.delete(id);
    const snapshot = store.current(id);
    if (!session || !snapshot || isTerminal(snapshot.state)) return;
    const silent = describeMs(limits.report_silence_ms);
    const failure = buildFailure({
      error_code: "unavailable",
      stage: "report",
      message: `Nothing was heard from docket run (pid ${session.pid}) for ${silent}: it was stopped, killed, or lost its way to this server, and may still be working where this server cannot see it.`,
      retryability: snapshot.effect === "write" ? "manual_reconcile" : "safe",
      outcome_certainty: "unknown",
      suggestion: `Check whether process ${session.pid} is still running; its own output says how the work ended.`,
      context: { pid: session.pid, silence_ms: limits.report_silence_ms },
      request_id: snapshot.request_id,
      trace_id: snapshot.trace_id,
    });
    const startedAt = Date.parse(snapshot.started_at ?? snapshot.created_at);
    const duration_ms = Math.max(0, clock.now().getTime() - (Number.isNaN(startedAt) ? clock.now().getTime() : startedAt));
    // A run heard only up to its creation is still queued here, and queued cannot fail: it had started.
    const drafts: EventDraft[] = snapshot.state === "queued" ? [{ type: "execution.started", data: {} }] : [];
    drafts.push({ type: "execution.completed", data: { state: "failed", failure, duration_ms } });
    try {
      store.append(id, drafts);
      log(`[docket] ${id}: nothing heard from docket run (pid ${session.pid}) for ${silent}; it is failed unavailable.`);
    } catch (error) {
      log(`[docket] could not end the silent reported execution ${id}: ${(error as Error).message}`);
    }
  }

  /**
   * Runs reported to an earlier server on this checkout and still unfinished in a durable store:
   * their process may still be working, so each gets a fresh silence timer — a report resumes it,
   * silence ends it `unavailable` as for any run.
   */
  function adoptUnfinished(): void {
    for (const state of ["queued", "running", "cancelling"] as const) {
      let cursor: string | undefined;
      do {
        const page = store.list({ state, limit: 500, cursor });
        for (const snapshot of page.items) if (snapshot.actor.kind === "cli") touch(snapshot.id, snapshot.actor.pid);
        cursor = page.next_cursor ?? undefined;
      } while (cursor !== undefined);
    }
  }

  adoptUnfinished();

  return {
    ingest,
    requestCancel(id, actor) {
      const session = sessions.get(id);
      if (!session) return null;
      session.cancelBy ??= actor;
      return { pid: session.pid };
    },
    close() {
      for (const session of sessions.values()) if (session.timer !== null) clock.clearTimeout(session.timer);
      sessions.clear();
    },
  };
}

/** The first lifecycle move of `events` that `mayMoveTo` refuses from `state`, in words; null when all are allowed. */
function lifecycleProblem(state: ExecutionState, events: readonly ExecutionEvent[]): string | null {
  let current = state;
  for (const event of events) {
    const next: ExecutionState | null =
      event.type === "execution.started" ? "running" : event.type === "execution.cancel_requested" ? "cancelling" : event.type === "execution.completed" ? (event.data as { state: ExecutionState }).state : null;
    if (isTerminal(current) && event.type !== "execution.created") return `event ${event.sequence} (${event.type}) comes after the execution ended ${current}`;
    if (next === null) continue;
    if (!mayMoveTo(current, next)) return `event ${event.sequence} would move the execution from ${current} to ${next}, which the lifecycle does not allow`;
    current = next;
  }
  return null;
}

/** `30 s`, `1500 ms`: a bound as a person reads it. */
function describeMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
