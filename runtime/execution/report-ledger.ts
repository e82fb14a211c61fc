import type { ExecutionStore } from "../store/store.ts";
import type { Clock } from "./clock.ts";
import type { StorageRefusal } from "./storage-gate.ts";
import type { Limits } from "./limits.ts";
import type { EdgeInfo } from "./plane.ts";
import type { Actor, EventDraft, ExecutionEvent } from "./protocol.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import type { ExecutionReport, ReportAnswer } from "./report-protocol.ts";
import { buildFailure, FailureError, type FailureOptions } from "./failure.ts";
import { IllegalTransitionError, isTerminal, mayMoveTo, type ExecutionState } from "./state-machine.ts";
import { checkReportEvents } from "./_report-events.ts";
import { endedForSilence, runReconciliation } from "./_run-reconciliation.ts";
import { createReportWatch, type LeftTaken } from "./_report-watch.ts";

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
  /** Whether a process this server can see is alive; absent: every reporter counts as alive. */
  processAlive?: (pid: number) => boolean;
  /** This server's pid namespace (null: none, another OS): a reporter's pid is looked up only when it names the same. */
  pidNamespace?: string | null;
  /** The reports a run left when this server did not answer at its end (engine.ts `leftReports`). */
  leftReports?: (id: string) => { reports: ExecutionReport[]; forget(): void } | null;
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
   * Records a cancel asked of this server for a run it hears: stored as the server's own
   * `execution.cancel_requested` (the execution is `cancelling`, and a crash keeps it), and passed
   * to the run in its next answer, which cancels its own execution. Null when no run is reporting `id`.
   */
  requestCancel(id: string, actor: Actor): { pid: number } | null;
  /**
   * Takes the reports a run left for an execution this server does not hold (it never heard the
   * run: it was down or frozen at the run's first report), once the run's process is gone, as if
   * the run had sent them: true when they ended the execution. Left as they are while the run
   * lives (it may still deliver them, or take them back); taken or refused, removed.
   */
  takeUnheld(id: string): boolean;
  close(): void;
}

/**
 * Creates the ledger. Reported executions live in the same store as the server's own, under the
 * run's id, with `actor: {kind:"cli", pid}`; the store's `last_sequence` is how far the server got,
 * so nothing but the silence timers and who asked a cancel is kept here.
 *
 * The server appends one event of its own to a reported execution that is still going: the
 * `execution.cancel_requested` of a cancel asked of it, so that the answer to that cancel is
 * durable. Until the run reports its own cancel, the server holds one event more than the run
 * (`skew`); the run's own `execution.cancel_requested` then takes the place of the server's and is
 * not stored again, so from there on the run's sequences and the server's are the same again.
 */
export function createReportLedger(options: ReportLedgerOptions): ReportLedger {
  const { store, limits, clock, log } = options;
  const watch = createReportWatch({ store, limits, clock, log, looksUp: options.processAlive !== undefined, alive, abandon, takeLeft, ownNamespace: options.pidNamespace ?? null });
  const { sessions } = watch;
  /** When the execution's last stored event happened: no event of it may be stored earlier. */
  const lastStoredTime = (snapshot: ExecutionSnapshot): string =>
    store.events(snapshot.id, snapshot.last_sequence - 1, 1)?.events[0]?.timestamp ?? snapshot.finished_at ?? snapshot.started_at ?? snapshot.created_at;
  const hear = (report: ExecutionReport) => void watch.hear(report.id, report.pid, report.pid_namespace ?? null);

  /**
   * The events the server holds beyond the run's own: 1 while its stored cancel has not been taken
   * over by the run's, whose sequence the run sends once it has one (`cancel_sequence`). The
   * server holds the run's events through `last_sequence - 1` until then, so once it holds that
   * sequence the run's cancel is taken (or is the next one, to be taken the same way).
   */
  function skewOf(snapshot: ExecutionSnapshot | null, report: ExecutionReport): 0 | 1 {
    if (snapshot === null || snapshot.state !== "cancelling") return 0;
    // Its session is gone once the run was found gone or silent, when what it left is taken: the store tells then (checking tester, session 39).
    const session = sessions.get(snapshot.id);
    const askedOfServer = session !== undefined ? session.cancelBy : snapshot.actor.kind === "cli" ? watch.askedCancel(snapshot.id, snapshot.actor.pid) : null;
    if (!askedOfServer) return 0;
    return report.cancel_sequence !== undefined && snapshot.last_sequence >= report.cancel_sequence ? 0 : 1;
  }

  /**
   * Takes the reports a run whose process is gone left for this server (it did not answer at the
   * run's end): "ended" when they ended the execution, as the run ended it. Taken or refused, they
   * are removed: they would only be refused again. "kept" while the store cannot take them now
   * (it cannot write): they stay for a later look, and the execution is not judged meanwhile.
   */
  function takeLeft(id: string): LeftTaken {
    const left = options.leftReports?.(id);
    if (!left) return "none";
    const snapshot = store.current(id);
    if (snapshot === null) return "none";
    // While the store cannot write, nothing is taken and the file stays: taken then, its end was
    // said to be "taken" and was lost with the store's unwritten state (checking tester, session 44).
    const unwritable = options.storageRefusal?.(`take the reports ${id} left`);
    if (unwritable?.error_code === "unavailable") {
      deferLeft(id, unwritable.message);
      return "kept";
    }
    const edge: EdgeInfo = { actor: snapshot.actor, request_id: snapshot.request_id, trace_id: snapshot.trace_id };
    const refused = ingestLeft(id, left.reports, snapshot.actor.kind === "cli" ? snapshot.actor.pid : null, edge);
    if (passing(refused)) {
      deferLeft(id, (refused as FailureError).failure.message);
      return "kept";
    }
    if (refused !== null) logNotTaken(id, refused);
    left.forget();
    const now = store.current(id);
    if (now === null || !isTerminal(now.state)) return "none";
    log(`[docket] ${id}: docket run (pid ${snapshot.actor.kind === "cli" ? snapshot.actor.pid : "?"}) ended while this server could not hear it, and left its end in .docket/reports/: taken, it ${now.state}.`);
    return "ended";
  }

  /**
   * Whether a report was refused for the moment only (the store cannot write, storage over its
   * budget, the run identities full): the reports it left are kept for a later look, where one
   * refused as invalid would only be refused again. A run that succeeded while the disk was
   * nearly full was lost for good when its file was removed (checking tester).
   */
  const deferred = new Set<string>();
  function passing(error: unknown): boolean {
    return error instanceof FailureError && error.failure.error_code !== "invalid_input";
  }

  /**
   * Ingests the reports a run left for `id`, as `edge` would have sent them: only if they are all
   * this execution's, from process `pid` (a file is no way to report another). Answers what
   * refused them, or null when they were taken.
   */
  function ingestLeft(id: string, reports: readonly ExecutionReport[], pid: number | null, edge: EdgeInfo): unknown {
    try {
      if (reports.some((report) => report.id !== id || report.pid !== pid)) throw new Error("they are not this execution's, from the process that ran it");
      for (const report of reports) ingest(report, edge);
      return null;
    } catch (error) {
      return error;
    }
  }

  /** Reports left that are kept for a later look; looked at again every few seconds, said once. */
  function deferLeft(id: string, why: string): void {
    if (!deferred.has(id)) log(`[docket] ${id}: the reports its run left in .docket/reports/ are not taken for now, and kept for later: ${why}`);
    deferred.add(id);
  }

  function logNotTaken(id: string, error: unknown): void {
    log(`[docket] ${id}: the reports its run left in .docket/reports/ could not be taken: ${(error as Error)?.message ?? String(error)}`);
  }

  function takeUnheld(id: string): boolean {
    if (store.current(id) !== null) return false;
    const left = options.leftReports?.(id);
    if (!left) return false;
    const first = left.reports[0];
    if (first !== undefined && alive(first.pid, first.pid_namespace)) return false;
    const refused = first === undefined ? new Error("the file holds no report that checks") : ingestLeft(id, left.reports, first.pid, { actor: { kind: "cli", pid: first.pid }, request_id: first.request_id, trace_id: first.trace_id });
    if (passing(refused)) {
      deferLeft(id, (refused as FailureError).failure.message);
      return false;
    }
    if (refused !== null) logNotTaken(id, refused);
    left.forget();
    const now = store.current(id);
    if (now === null) {
      if (first !== undefined) log(`[docket] ${id}: the reports its run left in .docket/reports/ made no execution here (its run_id, ${first.run_id ?? "none"}, may name another execution already), and were removed.`);
      return false;
    }
    log(`[docket] ${id}: docket run (pid ${first!.pid}) ran it while no server heard it, and left its reports in .docket/reports/: taken, it ${isTerminal(now.state) ? now.state : `is ${now.state}`}.`);
    return isTerminal(now.state);
  }

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
      if (isTerminal(existing.state)) return answer(report, settleFromRun(existing, checked.events, report.pid), 0, false);
    }
    // How far the server got, counted in the run's own sequences.
    const through = (existing?.last_sequence ?? 0) - skewOf(existing, report);
    const fresh = checked.events.filter((event) => event.sequence > through);
    // A report that starts after a gap is refused whole: applying it would number its events wrong.
    if (fresh.length === 0 ? existing === null : fresh[0]!.sequence !== through + 1) {
      if (existing) hear(report);
      return answer(report, existing, 0, true);
    }
    // The whole report is checked before anything of it is stored: a refused one leaves no trace.
    const taken = lifecycleCheck(existing?.state ?? "queued", fresh);
    if (typeof taken === "string") throw refuse(`Cannot take the report of ${report.id}: ${taken}.`, { reason: "illegal_transition" });
    const started = taken.some((event) => event.type === "execution.started");
    if (!existing) {
      // The run_id of a run is its identity as a start's is: used already, the run is that execution.
      const claimed = claimRun(report, edge);
      if (claimed !== null) return claimed;
      // A new run is a new admission: refused like a start while the store cannot take it. A run
      // already here goes on being heard, so that what it already showed is not cut off.
      const refused = options.storageRefusal?.(`take the report of ${report.id}`);
      if (refused) throw new FailureError(buildFailure({ ...refused, stage: "admit", request_id: edge.request_id, trace_id: edge.trace_id }));
      // A run that waits for its run_id and is gone gave up on this report before it was read: kept,
      // it would only be a queued execution nobody runs.
      if (report.run_id && report.input_hash && !started && !alive(report.pid, report.pid_namespace)) throw reporterGone(report, refuse);
      // A run whose handler waits asks for its run_id with its next report (bindRun); one that
      // reports its start already did not wait, and its run_id is its identity from now on.
      if (report.run_id && report.input_hash && started) recordRun(report, edge);
      create(report, fresh[0] as ExecutionEvent<"execution.created">, refuse);
    } else if (report.run_id && report.input_hash && (started || (report.bind_run_id === true && fresh.length === 0 && existing.state === "queued"))) {
      const claimed = bindRun(report, existing, started, edge, refuse);
      if (claimed !== null) return claimed;
    }
    const events = taken.filter((event) => event.type !== "execution.created");
    const drafts = events.map((event) => ({ type: event.type, data: event.data }) as EventDraft);
    if (drafts.length > 0) {
      // Each event at or after the one stored before it: a run's clock may say otherwise (an event
      // stamped before the one it follows), and so may a cancel this server stored meanwhile.
      let floor = lastStoredTime(existing ?? store.current(report.id)!);
      const timestamps = events.map((event) => (floor = reportedTime(event.timestamp, clock.now(), floor)));
      try {
        store.append(report.id, drafts, { timestamps });
      } catch (error) {
        // A batch the lifecycle refuses leaves no trace in the store; the report is what was wrong.
        if (error instanceof IllegalTransitionError) throw refuse(`Cannot take the report of ${report.id}: ${error.message}.`, { reason: "illegal_transition" });
        throw error;
      }
    }
    let now = store.current(report.id)!;
    if (isTerminal(now.state)) sessions.end(report.id);
    else {
      hear(report);
      // From here its running time is measured on this server's clock (_report-watch.ts, silence).
      const session = sessions.get(report.id);
      if (session && now.state !== "queued") session.runningSince ??= clock.now().getTime();
      // A cancel asked while the run was still queued here is stored as soon as it can be.
      if (now.state === "running" && report.cancel_sequence === undefined) now = storeCancel(report.id) ?? now;
    }
    return answer(report, now, fresh.length, false);
  }

  /**
   * Appends the server's own `execution.cancel_requested` for a cancel asked of it, when the
   * execution is running here (a queued one cannot move to cancelling: the cancel waits for the
   * report of its start). Answers the snapshot after it, or null when nothing was stored.
   */
  function storeCancel(id: string): ExecutionSnapshot | null {
    const actor = sessions.get(id)?.cancelBy;
    if (!actor || store.current(id)?.state !== "running") return null;
    store.append(id, [{ type: "execution.cancel_requested", data: { actor } }]);
    return store.current(id);
  }

  /**
   * Binds a run's run_id to its execution, which the server holds already (docs/protocol.md): asked
   * by a run whose handler waits for the answer, or implied by a report of its start. Until then
   * the execution is queued and the run_id free, so a run that gave up waiting holds nothing. A
   * run still waiting that cannot have it — gone, the run_id another execution's, no room for one
   * more — never starts: its execution ends `cancelled` here, and the answer says why (null: bound).
   * A run that started already keeps what it reports either way; only the run_id is not its own.
   */
  function bindRun(report: ExecutionReport, existing: ExecutionSnapshot, started: boolean, edge: EdgeInfo, refuse: (message: string, context: Record<string, unknown>) => FailureError): ReportAnswer | null {
    const runId = report.run_id!;
    if (store.findRun(runId)?.execution_id === report.id) return null;
    if (started) {
      if (store.findRun(runId) === null) recordRun(report, edge);
      return null;
    }
    // Gone, it gave up waiting for the answer to this report, and began nothing.
    if (!alive(report.pid, report.pid_namespace)) {
      abandon(existing, `docket run (pid ${report.pid}) that reported it exited before this server could take its run_id`);
      throw reporterGone(report, refuse);
    }
    let claimed: ReportAnswer | null;
    try {
      claimed = claimRun(report, edge);
      if (claimed === null) recordRun(report, edge);
    } catch (error) {
      if (error instanceof FailureError) abandon(existing, `its run_id could not be taken (${error.failure.error_code}: ${error.failure.message})`);
      throw error;
    }
    if (claimed !== null) abandon(existing, `run_id "${runId}" was taken by ${claimed.deduplicated_to} first, which this run is`);
    return claimed;
  }

  /** Records a run's identity: the limit reached, the report is refused (capacity), as a start is. */
  function recordRun(report: ExecutionReport, edge: EdgeInfo): void {
    if (store.recordRun({ run_id: report.run_id!, execution_id: report.id, capability: report.capability, input_hash: report.input_hash! })) return;
    throw new FailureError(buildFailure({ ...runIdentitiesFull(report.run_id!, limits.run_identities, "Run without --run-id"), request_id: edge.request_id, trace_id: edge.trace_id }));
  }

  /**
   * Whether a reporter's process is alive. Only a pid of this server's own namespace can be looked
   * up: one from another (a container sharing the network, not the pids) counts as alive, and so
   * does one that names no namespace to a server that has one (an older run).
   */
  function alive(pid: number, namespace: string | null | undefined): boolean {
    if (!options.processAlive || (namespace ?? null) !== (options.pidNamespace ?? null)) return true;
    return options.processAlive(pid);
  }

  function reporterGone(report: ExecutionReport, refuse: (message: string, context: Record<string, unknown>) => FailureError): FailureError {
    return refuse(
      `Cannot take the report of ${report.id} from pid ${report.pid}: that process has exited, so it gave up waiting for this server before its handler began. Nothing ran, and run_id "${report.run_id}" is not kept: a run with it runs.`,
      { reason: "reporter_gone", pid: report.pid },
    );
  }

  /**
   * Ends a reported execution that never started, and never will: its run waits for its run_id
   * before its handler begins, and cannot have it. `cancelled`, nothing applied.
   */
  function abandon(snapshot: ExecutionSnapshot, why: string): void {
    sessions.end(snapshot.id);
    const failure = buildFailure({
      error_code: "cancelled",
      stage: "queue",
      message: `${snapshot.id} never started: ${why}. Its handler waits for its run_id, so nothing ran.`,
      retryability: "safe",
      outcome_certainty: "not_applied",
      context: { pid: snapshot.actor.kind === "cli" ? snapshot.actor.pid : null, run_id: snapshot.run_id },
      request_id: snapshot.request_id,
      trace_id: snapshot.trace_id,
    });
    store.append(snapshot.id, [{ type: "execution.completed", data: { state: "cancelled", failure, duration_ms: 0 } }]);
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
    if (known === null || known.execution_id === report.id) return null;
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
      ...answer(report, null, 0, false),
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
      // The run's own word: the server may not know the capability, or know another version of it.
      capability_version: created.data.capability_version ?? null,
      // When the run created it, not when its first report was read (a server stopped meanwhile reads it late).
      created_at: reportedTime(created.timestamp, clock.now(), null),
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

  function answer(report: ExecutionReport, snapshot: ExecutionSnapshot | null, applied: number, gap: boolean): ReportAnswer {
    const id = report.id;
    const through = (snapshot?.last_sequence ?? 0) - skewOf(snapshot, report);
    const session = sessions.get(id);
    const ended = snapshot !== null && isTerminal(snapshot.state);
    // Until the run reports a cancel of its own, every answer asks for it again.
    const cancelBy = ended || report.cancel_sequence !== undefined ? null : (session?.cancelBy ?? null);
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
      cancel_requested: cancelBy !== null,
      requested_by: cancelBy,
      ended,
      takes_end: ended && endedForSilence(snapshot!),
      silence_ms: limits.report_silence_ms,
      message,
      ...(report.run_id ? { run_id_bound: store.findRun(report.run_id)?.execution_id === id } : {}),
    };
  }

  return {
    ingest,
    takeUnheld,
    requestCancel(id, actor) {
      const session = sessions.get(id);
      if (!session) return null;
      session.cancelBy ??= actor;
      // Stored before the answer (docs/durability.md): a server that crashes now still passes it on.
      storeCancel(id);
      return { pid: session.pid };
    },
    close() {
      watch.close();
    },
  };
}

/**
 * The time a reported event is stored with: the run's own (docs/protocol.md), written as
 * `toISOString` writes it, but never after this server's now (a run whose clock is ahead would
 * date its history in the future, and out of the server's own events' order) nor before the
 * execution was created (`floor`).
 */
function reportedTime(given: string, now: Date, floor: string | null): string {
  const ms = Math.min(Date.parse(given), now.getTime());
  if (Number.isNaN(ms)) return now.toISOString();
  const least = floor === null ? Number.NEGATIVE_INFINITY : Date.parse(floor);
  return new Date(Math.max(ms, least)).toISOString();
}

/**
 * The events of a report to store, from `state`: all of them, but a run's own
 * `execution.cancel_requested` while the server holds one already (the one it stored for a cancel
 * asked of it, which the run's takes the place of). The first move `mayMoveTo` refuses, in words,
 * when there is one.
 */
function lifecycleCheck(state: ExecutionState, events: readonly ExecutionEvent[]): ExecutionEvent[] | string {
  let current = state;
  const taken: ExecutionEvent[] = [];
  for (const event of events) {
    const next: ExecutionState | null =
      event.type === "execution.started" ? "running" : event.type === "execution.cancel_requested" ? "cancelling" : event.type === "execution.completed" ? (event.data as { state: ExecutionState }).state : null;
    if (isTerminal(current) && event.type !== "execution.created") return `event ${event.sequence} (${event.type}) comes after the execution ended ${current}`;
    if (next === "cancelling" && current === "cancelling") continue;
    if (next !== null) {
      if (!mayMoveTo(current, next)) return `event ${event.sequence} would move the execution from ${current} to ${next}, which the lifecycle does not allow`;
      current = next;
    }
    taken.push(event);
  }
  return taken;
}
