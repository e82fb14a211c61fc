import type { Clock } from "../execution/clock.ts";
import { formatWindow } from "./run-reporter.ts";
import type { Actor } from "../execution/protocol.ts";
import type { FailureDescriptor } from "../execution/failure.ts";
import { REPORT_MAX_EVENTS, type ExecutionReport, type ReportAnswer } from "../execution/report-protocol.ts";
import { isTerminal } from "../execution/state-machine.ts";
import type { ExecutionStore, Subscription } from "../store/store.ts";
import { nextBatch, withheldIfLarge } from "./_reporter-batch.ts";
import { OUTBOX_UNITS, ReporterOutbox } from "./_reporter-outbox.ts";

/** What a run's reporter is built from. */
export interface ExecutionReporterOptions {
  /** The run's own store: the reporter follows the execution there and keeps what it has not reported in its outbox. */
  store: ExecutionStore;
  id: string;
  pid: number;
  /** The run's pid namespace (lease.ts `ownPidNamespace`), sent so the server knows whether it can see `pid`. */
  pidNamespace?: string | null;
  /** Bytes of one live-channel frame: a larger value travels withheld and stays with the run. */
  frameBytes: number;
  /** Where the server is, for what the run says: read each time (a server restarted on the checkout has another). */
  serverUrl: string | (() => string);
  /** How what the run says names the server (default: "the server at <its URL>"): read each time too. */
  serverName?: () => string;
  /**
   * Sends one report; throws when no answer came (nothing answers, an error status). `signal`
   * aborts when reporting ends meanwhile (the run's end window passed): nobody waits for it then.
   */
  send(report: ExecutionReport, signal: AbortSignal): Promise<ReportAnswer>;
  /** Cancels the run's own execution, as the server's answer asked, in the name of who asked. */
  cancel(requestedBy: Actor | null): void;
  /** Says one line on stderr (without its newline). */
  say(line: string): void;
  /**
   * With a run_id: the hash of the real input (canonical-json.ts), sent so the server keeps the
   * run's identity. The run's handler waits for it: `first` is taken only once the server holds the
   * run_id as this execution's, which its reports ask for after the first (docs/protocol.md).
   */
  inputHash?: string;
  /** The run said already that the server does not answer (it did not when the run began): failed reports say it again only after it answered. */
  unanswered?: boolean;
  clock: Pick<Clock, "setTimeout" | "clearTimeout" | "monotonic">;
  /** Quiet time after an event before it is reported; default 100 ms, so events travel in batches. */
  soonMs?: number;
  /** The longest time between two reports; default 2 s (less when the server's silence limit asks). */
  everyMs?: number;
  /** Event JSON (UTF-16 units) kept for a server that has not taken it yet; default OUTBOX_UNITS (64 Mi). */
  outboxUnits?: number;
  /** The longest wait between two tries while the server does not answer; default 5 s. */
  maxBackoffMs?: number;
  /**
   * How long a run that has ended keeps trying to report its end to a server that does not answer;
   * default 3 s: enough for a server that restarts, short enough that a job whose server is gone
   * does not hang on it.
   */
  finishWaitMs?: number;
  /**
   * Leaves the reports still owed by a run that ended while its server did not take its end (down
   * or frozen) — LEAVE_AFTER_MS after the end, and again when the end window passes — for the
   * server to take once it finds this run's process gone (store/left-reports.ts); answers where
   * they were left. Absent: nothing is left.
   */
  leave?: (reports: ExecutionReport[]) => string | null;
  /** Removes what `leave` left, once the server took the run's end after all. */
  forgetLeft?: () => void;
}

/**
 * How long after its end a run whose server has not taken that end yet leaves what it owes
 * (store/left-reports.ts): a server that answers takes an end in milliseconds, and a run killed
 * later than this in its end window (a CI job cancelled then) has left it all the same.
 */
const LEAVE_AFTER_MS = 250;

/**
 * The most reports a run leaves for its server: as many as the events its outbox keeps can make,
 * so that a run that could still have reported them all leaves them all. A report holds up to 1
 * MiB or REPORT_MAX_EVENTS events; the outbox keeps OUTBOX_UNITS units of JSON (up to 3 bytes a
 * unit), and no event's JSON is under 100 units, so its events make no more reports than the
 * larger of the two counts. A run that owes more (its outbox dropped events) leaves none, says
 * so, and its server judges it by its silence. At 16, a run that logged 50,000 lines while its
 * server was down left nothing, and its success was recorded as a failure of unknown outcome; at
 * 192, 200,000 one-character lines (CLI testers).
 */
const LEFT_REPORTS = Math.max(Math.ceil((OUTBOX_UNITS * 3) / (1024 * 1024)), Math.ceil(OUTBOX_UNITS / 100 / REPORT_MAX_EVENTS));

/**
 * A report the server did not answer in time while it says, itself, why (its store cannot write:
 * a full disk): it holds reports until it can. Said as that, not as a server that does not answer.
 */
export class ServerStoreFaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ServerStoreFaultError";
  }
}

/** The server answered and refused the report (a 4xx): trying again would only be refused again. */
export class ReportRefusedError extends Error {
  constructor(
    message: string,
    /** The server's descriptor of the refusal, when it sent one. */
    readonly failure: FailureDescriptor | null = null,
  ) {
    super(message);
    this.name = "ReportRefusedError";
  }
}

/**
 * The server answered and could not take the report now (a 503 on a low disk, a 429): it may later.
 * What it said goes with a run that cannot go on without its answer (a run_id), not "did not answer".
 */
export class ReportDeferredError extends Error {
  constructor(
    message: string,
    /** The server's descriptor of the refusal. */
    readonly failure: FailureDescriptor,
  ) {
    super(message);
    this.name = "ReportDeferredError";
  }
}

/** What the server made of a run's first report. */
export type FirstReport =
  /** It holds the execution now (or had it already): the run goes on. */
  | { kind: "taken" }
  /** The run_id is another execution's, with the same capability and input: that one is this run. */
  | { kind: "deduplicated"; execution_id: string }
  /** It refused the report (a run_id used with another input: run_id_conflict). */
  | { kind: "refused"; failure: FailureDescriptor | null }
  /** No answer that took it: whether the run_id is free cannot be known; `said`: why, when the server said (a low disk, a store that cannot write). */
  | { kind: "unheard"; said?: { reason: string; failure: FailureDescriptor | null } };

/** Reports one execution to the server serving the checkout, while it runs and once it ended. */
export interface ExecutionReporter {
  /** Settles with the server's verdict on the first report, once its answer (or its failure) came. */
  first: Promise<FirstReport>;
  /**
   * Sends what is left once the execution is terminal; resolves when the server holds it all, or
   * reporting stopped, at the latest `waitMs` (default `finishWaitMs`) after the first call, whatever
   * a report in flight is waiting for. A later call may shorten that window (a second Ctrl-C), never lengthen it.
   */
  finish(waitMs?: number): Promise<void>;
  /** Stops reporting at once, saying nothing; what an ended run still owes is left for the server (`leave`). */
  stop(): void;
  /**
   * The last sequence the server holds of the execution, once it took the run's end, when that is
   * beyond the run's own: the server's own `execution.cancel_requested` of a cancel asked of it that
   * reached the run only after it had ended, stored before the run's end. Null otherwise.
   */
  serverLastSequence(): number | null;
}

/** Failed reports in a row, after one succeeded, before the run says the server does not answer (docs/protocol.md). */
const FAILURES_TO_WARN = 3;
/**
 * Time without an answer after which one failed report is enough to say so (a report that timed
 * out, 3 s, is such a silence): a frozen server makes each report wait for its timeout, so three
 * in a row would be said long after the freeze, or after the run's end.
 */
const SILENCE_TO_WARN_MS = 2500;

/**
 * Creates the reporter of docs/protocol.md. One report at a time; each carries the events after the
 * `through` of the last answer, so a lost, cut or twice-sent report is mended by the next. A
 * report goes soon after anything happens and at the latest `everyMs` after the last one, so a
 * quiet run is still heard.
 *
 * A server that stops answering (the first failed report, or three in a row after a success) is
 * said once on stderr; the run goes on and keeps trying, backing off to `maxBackoffMs`, and says
 * so again when the server answers. If the server ended the execution for silence meanwhile, the
 * run reports its real end when it has one, which the server records as a reconciliation
 * (docs/reconciliation.md). A run that has ended stops trying `finishWaitMs` after its end, or after
 * the server's last answer that took more of its events (a server behind, not gone).
 */
export function createExecutionReporter(options: ExecutionReporterOptions): ExecutionReporter {
  const { store, id, pid, clock, say } = options;
  const soonMs = options.soonMs ?? 100;
  const maxBackoffMs = options.maxBackoffMs ?? 5000;
  const finishWaitMs = options.finishWaitMs ?? 3000;
  const serverUrl = options.serverUrl;
  const serverNow = typeof serverUrl === "string" ? () => serverUrl : serverUrl;
  const serverName = options.serverName ?? ((): string => `the server at ${serverNow()}`);
  let everyMs = options.everyMs ?? 2000;
  const created = store.get(id)!;
  const description: Omit<ExecutionReport, "events"> = {
    id,
    pid,
    ...(options.pidNamespace ? { pid_namespace: options.pidNamespace } : {}),
    capability: created.capability,
    input: withheldIfLarge(created.input, options.frameBytes, pid),
    effect: created.effect,
    cancellable: created.cancellable,
    run_id: created.run_id,
    ...(created.run_id !== null && options.inputHash !== undefined ? { input_hash: options.inputHash } : {}),
    session_key: created.session_key,
    request_id: created.request_id,
    trace_id: created.trace_id,
  };

  let through = 0;
  let inFlight = false;
  let timer: unknown = null;
  let timerDue = Number.POSITIVE_INFINITY;
  let stopped = false;
  let heard = false;
  /** The server holds the run_id as this execution's (or there is none to hold): the run may begin. */
  let bound = options.inputHash === undefined;
  let failures = 0;
  let warned = options.unanswered === true;
  // The last report failed with an answer of the server's (it cannot take reports now), not silence.
  let lastAnswered = false;
  let cancelPassed = false;
  /** The sequence of this run's own execution.cancel_requested, once it has one: every report says it. */
  let cancelSequence: number | null = null;
  /** The server's last sequence of the execution when it holds events beyond the run's (serverLastSequence). */
  let serverLast: number | null = null;
  let finishing = false;
  let finishingSince = 0;
  /** The end window passed without the server taking the run's end (gaveUp). */
  let givenUp = false;
  /** Leaves what the run owes if the server has not taken its end LEAVE_AFTER_MS after it ended. */
  let leaveTimer: unknown = null;
  /** Whether reports were left while the end window was still open (leaveQuietly): removed if the server takes the end after all. */
  let leftEarly = false;
  /** Ends reporting when the end window (finish) passes, even while a report waits for an answer. */
  let finishTimer: unknown = null;
  let finishDue = Number.POSITIVE_INFINITY;
  /**
   * The end window: how long after the run's end — or after the server's last answer that took
   * more of its events since — reporting still tries. Shortened by a later finish (a second Ctrl-C),
   * it is no longer moved on by answers: that run asked to be let go.
   */
  let finishWindowMs = 0;
  let windowShortened = false;
  /** When the server last took events after the run's end; 0 while it has not. */
  let tookSinceEndAt = 0;
  /** Aborts the report in flight when reporting ends under it. */
  let inFlightAbort: AbortController | null = null;
  /** When the server last answered (or reporting began): how long it has been silent. */
  let answeredAt = clock.monotonic();
  /** The server ended the execution for silence: only the run's own end is reported now. */
  let awaitingEnd = false;
  let endSent = false;
  let resolveFirst!: (first: FirstReport) => void;
  /** Whether `first` settled already (a later answer is no first verdict any more). */
  let firstKnown = false;
  const first = new Promise<FirstReport>((resolve) => (resolveFirst = (verdict) => ((firstKnown = true), resolve(verdict))));
  let resolveFinished!: () => void;
  const finished = new Promise<void>((resolve) => (resolveFinished = resolve));
  let subscription: Subscription | null = null;
  // What the server has not taken yet, kept apart from the store, which drops its oldest events.
  const outbox = new ReporterOutbox(options.outboxUnits);
  const unsent: Pick<ExecutionStore, "events"> = { events: (_id, after = 0, limit = 1000) => outbox.page(after, limit) ?? store.events(id, after, limit) };

  /** Sends a report in `ms` unless one is due sooner; while one is in flight, the answer decides. */
  function wake(ms: number): void {
    if (stopped || inFlight) return;
    const due = clock.monotonic() + ms;
    if (timer !== null && timerDue <= due) return;
    if (timer !== null) clock.clearTimeout(timer);
    timerDue = due;
    timer = clock.setTimeout(() => {
      timer = null;
      timerDue = Number.POSITIVE_INFINITY;
      void report();
    }, ms);
  }

  /** The run's own `execution.completed`, fit for a report; null while it has not ended. */
  function ownEnd(): ExecutionReport["events"] | null {
    const local = store.get(id);
    if (local === null || !isTerminal(local.state)) return null;
    const batch = nextBatch(store, id, local.last_sequence - 1, { frameBytes: options.frameBytes, pid, maxEvents: 1 });
    return batch.ok ? batch.events : null;
  }

  async function report(): Promise<void> {
    if (stopped || inFlight) return;
    let body: ExecutionReport;
    let full = false;
    if (awaitingEnd) {
      const events = ownEnd();
      // Still working: nothing to say until the end (the store's next event wakes this again).
      if (events === null) return;
      body = { ...description, input: undefined, events };
    } else {
      const batch = nextBatch(unsent, id, through, { frameBytes: options.frameBytes, pid });
      if (!batch.ok) {
        return end(`events of ${id} after ${through} were dropped from this process before ${serverName()} took them, so from now on this execution is visible to this process alone`);
      }
      full = batch.full;
      // The input travels until the server holds the execution; after that it would only weigh.
      body = { ...description, input: through === 0 ? description.input : undefined, events: batch.events };
    }
    // The server stores a cancel asked of it as its own event, which the run's takes the place of:
    // where the run's is tells it how far it got in the run's sequences (docs/protocol.md).
    if (cancelSequence !== null) body.cancel_sequence = cancelSequence;
    if (!bound) body.bind_run_id = true;
    inFlight = true;
    inFlightAbort = new AbortController();
    let answer: ReportAnswer;
    try {
      answer = await options.send(body, inFlightAbort.signal);
    } catch (error) {
      inFlight = false;
      inFlightAbort = null;
      resolveFirst(
        error instanceof ReportRefusedError
          ? { kind: "refused", failure: error.failure }
          : error instanceof ReportDeferredError || error instanceof ServerStoreFaultError
            ? { kind: "unheard", said: { reason: error.message, failure: error instanceof ReportDeferredError ? error.failure : null } }
            : { kind: "unheard" },
      );
      // Reporting ended while this one waited (its end window passed): nothing more to say or try.
      if (stopped) return;
      return failed(error);
    }
    inFlight = false;
    inFlightAbort = null;
    if (answer.deduplicated_to !== undefined) {
      // The run_id is another execution's: this one is not the server's to show, and does not run
      // (or, when the server was not heard before it began, has run beside it: said so).
      const late = firstKnown;
      resolveFirst({ kind: "deduplicated", execution_id: answer.deduplicated_to });
      return end(late ? `${serverName()} names ${answer.deduplicated_to} as this run_id's execution, and could not be asked before this run began: this run is visible to this process alone` : null);
    }
    // The first report only creates the execution there; the run_id is bound by the next, which the
    // server reads only while this run waits for it: a run that gave up holds no run_id. A server
    // that does not say bound the run_id with the first report.
    if (!bound && answer.run_id_bound !== false) bound = true;
    if (bound) resolveFirst({ kind: "taken" });
    if (stopped) return;
    failures = 0;
    answeredAt = clock.monotonic();
    lastAnswered = false;
    if (!heard && bound) {
      heard = true;
      say(`reported to ${serverName()}: ${serverNow()}/cockpit/executions/${id}`);
    }
    if (warned) {
      warned = false;
      say(`${serverName()} answers again; reporting ${id} resumed`);
    }
    if (awaitingEnd) endSent = true;
    // A server that answers and takes more after the run's end is not gone, only behind (a run
    // that logged faster than reports travel): the end window counts from its last answer.
    if (finishing && answer.through > through && !windowShortened) moveFinishWindow();
    through = answer.through;
    outbox.acknowledged(through);
    // Reports come well within the server's silence limit, whatever it is set to.
    everyMs = Math.max(10, Math.min(everyMs, Math.floor(answer.silence_ms / 3)));
    if (answer.cancel_requested && !cancelPassed) {
      cancelPassed = true;
      options.cancel(answer.requested_by);
    }
    if (answer.ended) return ended(answer);
    if (!bound) return wake(0);
    const last = unsent.events(id, through, 0)?.last_sequence ?? through;
    if (last > through) wake(full || answer.gap || finishing ? 0 : soonMs);
    else if (finishing) end(null);
    else wake(everyMs);
  }

  /** The server holds the execution as terminal: the end of reporting, silent when it is the run's own end. */
  function ended(answer: ReportAnswer): void {
    const local = store.get(id);
    const done = local !== null && isTerminal(local.state);
    if (answer.takes_end === true && !endSent) {
      // Ended for silence while this run could not be heard: its real end settles it, once it has one.
      if (!awaitingEnd) {
        awaitingEnd = true;
        if (!done) say(`${serverName()} ended ${id} as ${answer.state} while it could not hear this run (${answer.message}); the run goes on and reports its real end when it finishes`);
      }
      if (done) wake(0);
      return;
    }
    if (awaitingEnd) {
      end(answer.takes_end === true ? `${serverName()} could not settle ${id} from this run's end (its outcome is unknown too); settle it by hand: docket executions reconcile ${id}` : `${serverName()} holds ${id} as ${answer.state} and recorded this run's real end: ${answer.message}`);
      return;
    }
    const same = done && answer.through >= local!.last_sequence && answer.state === local!.state;
    // A cancel asked of the server that reached this run only after it had ended is held there as
    // the server's own event, before this run's end: said, and the run's document counts it, so
    // that the run and the server tell the same execution (docs/protocol.md).
    if (same && answer.through > local!.last_sequence) {
      serverLast = answer.through;
      const cancels = answer.through - local!.last_sequence === 1 ? "a cancel" : `${answer.through - local!.last_sequence} events`;
      return end(`${serverName()} holds ${cancels} asked of it for ${id} that reached this run only after it had ended ${local!.state}: it stands there before this run's end, which is sequence ${answer.through} there (${local!.last_sequence} here)`);
    }
    if (same) return end(null);
    if (done) return end(`${serverName()} holds ${id} as ${answer.state}: ${answer.message}`);
    end(`${serverName()} ended ${id} as ${answer.state} (${answer.message}), so from now on this execution is visible to this process alone`);
  }

  function failed(error: unknown): void {
    const reason = (error as Error)?.message ?? String(error);
    // A run with a run_id waits for its first answer and says itself what a refusal of it means
    // (nothing runs): "visible to this process alone" would say it goes on.
    if (error instanceof ReportRefusedError && !bound) return end(null);
    if (error instanceof ReportRefusedError) return end(`${serverName()} refused the report of ${id} (${reason}), so from now on this execution is visible to this process alone`);
    // A server that answered and cannot take reports now (a low disk, a store that cannot write) is
    // said as that, not as one that does not answer; a run waiting for its run_id's first answer
    // says itself that nothing ran (checking tester, session 41).
    const answered = error instanceof ReportDeferredError || error instanceof ServerStoreFaultError;
    lastAnswered = answered;
    if (answered && !bound) return end(null);
    failures++;
    // Ended, with a server that does not answer: what it owes is left at once, then again when
    // the end window passes — a run killed while it waits (a CI job cancelled) leaves it all the same.
    if (finishing) leaveQuietly();
    if (!warned && (!heard || failures >= FAILURES_TO_WARN || clock.monotonic() - answeredAt >= SILENCE_TO_WARN_MS)) {
      warned = true;
      say(
        answered
          ? `${serverName()} answers, but cannot take this run's reports now: ${reason}; this run goes on and keeps trying to report to it`
          : `${serverName()} does not answer (${reason}); this run goes on and keeps trying to report to it`,
      );
    }
    // Once the run has ended, the finish timer ends reporting when its window passes.
    wake(Math.min(maxBackoffMs, soonMs * 2 ** failures));
  }

  /** The end window passed without the server holding the run's end. */
  function gaveUp(): void {
    finishTimer = null;
    givenUp = true;
    const since = tookSinceEndAt > 0 ? `its last answer (it was still taking this run's events ${formatWindow(tookSinceEndAt - finishingSince)} after the run's end)` : "this run's end";
    end(`${serverName()} ${lastAnswered ? "did not take this run's reports" : "did not answer"} within ${formatWindow(finishDue - Math.max(finishingSince, tookSinceEndAt))} of ${since}, so the end of ${id} was not reported to it${leaveOwed()}`);
  }

  /**
   * Leaves what an ended run still owes for the server to take later (options.leave): where it
   * went; null when nothing was left (nothing owed, the run not ended, no place to leave it);
   * or the error that kept it from being left.
   */
  function leaveNow(): { where: string } | { error: unknown } | null {
    const local = store.get(id);
    if (options.leave === undefined || local === null || !isTerminal(local.state)) return null;
    const reports = owedReports();
    if (reports === null) return null;
    if (reports === "too many") return { error: new Error(`it owes more than the ${LEFT_REPORTS} reports a run leaves; the server will end it as of unknown outcome`) };
    try {
      const where = options.leave(reports);
      return where === null ? null : { where };
    } catch (error) {
      return { error };
    }
  }

  /** Leaves what the run owes without a word, while it still tries the server (failed, finishing); a failure is said when the end window passes (leaveOwed). */
  function leaveQuietly(): void {
    if (stopped || leftEarly) return;
    const left = leaveNow();
    leftEarly = left !== null && "where" in left;
  }

  /** Leaves what the server has not taken of an ended run, as the run gives up on it; what the run says of it. */
  function leaveOwed(): string {
    const left = leaveNow();
    if (left === null) return "";
    if ("where" in left) return `; it is left in ${left.where}, which the server takes once it finds this run's process gone`;
    return `, nor could it be left for the server in .docket/reports/ (${(left.error as Error)?.message ?? String(left.error)})`;
  }

  /** The reports this run still owes, each as report() would send it; null when it owes none; "too many" when more than a run leaves. */
  function owedReports(): ExecutionReport[] | null | "too many" {
    const bodyOf = (events: ExecutionReport["events"], input: unknown): ExecutionReport => {
      const body: ExecutionReport = { ...description, input, events };
      if (cancelSequence !== null) body.cancel_sequence = cancelSequence;
      if (!bound) body.bind_run_id = true;
      return body;
    };
    if (awaitingEnd) {
      const events = ownEnd();
      return events === null ? null : [bodyOf(events, undefined)];
    }
    const reports: ExecutionReport[] = [];
    for (let after = through; reports.length <= LEFT_REPORTS; ) {
      const batch = nextBatch(unsent, id, after, { frameBytes: options.frameBytes, pid });
      if (!batch.ok) return null;
      if (batch.events.length === 0) break;
      reports.push(bodyOf(batch.events, after === 0 ? description.input : undefined));
      after = batch.events.at(-1)!.sequence;
      if (!batch.full) break;
    }
    return reports.length === 0 ? null : reports.length > LEFT_REPORTS ? "too many" : reports;
  }

  /** The end window, from now: the server just took more of the run's events. */
  function moveFinishWindow(): void {
    const now = clock.monotonic();
    tookSinceEndAt = now;
    if (stopped || finishTimer === null) return;
    clock.clearTimeout(finishTimer);
    finishDue = now + finishWindowMs;
    finishTimer = clock.setTimeout(gaveUp, finishWindowMs);
  }

  function end(line: string | null): void {
    if (stopped) return;
    stopped = true;
    // Left while the server did not answer, and then it took the end (or reporting ended for another reason than giving up on it).
    if (leaveTimer !== null) clock.clearTimeout(leaveTimer);
    leaveTimer = null;
    if (leftEarly && !givenUp) options.forgetLeft?.();
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
    if (finishTimer !== null) clock.clearTimeout(finishTimer);
    finishTimer = null;
    inFlightAbort?.abort();
    subscription?.unsubscribe();
    if (line !== null) say(line);
    resolveFirst({ kind: "unheard" });
    resolveFinished();
  }

  // Every event of the execution, its history first, goes to the outbox and wakes the reporter.
  subscription = store.subscribe({ executions: [id], after: 0 }, (event, json) => {
    if (event.type === "execution.cancel_requested") cancelSequence ??= event.sequence;
    outbox.add(event, (json ?? JSON.stringify(event)).length);
    wake(soonMs);
  });
  // The first report goes at once: the server shows the execution from its start.
  wake(0);

  return {
    first,
    finish(waitMs = finishWaitMs) {
      const now = clock.monotonic();
      if (!finishing) {
        finishing = true;
        finishingSince = now;
        // A server known not to answer: left at once. Else if it has not taken the end a moment
        // later (a report in flight to a server frozen just now waits 3 s to fail): left then.
        if (failures > 0 || warned) leaveQuietly();
        else leaveTimer = clock.setTimeout(() => ((leaveTimer = null), leaveQuietly()), LEAVE_AFTER_MS);
      }
      // A report in flight to a frozen server waits for its own timeout: the window is kept by a
      // timer of its own, not by the next failure (docs/protocol.md: "it tries 3 s more").
      if (!stopped && now + waitMs < finishDue) {
        if (finishDue !== Number.POSITIVE_INFINITY) windowShortened = true;
        finishWindowMs = waitMs;
        finishDue = now + waitMs;
        if (finishTimer !== null) clock.clearTimeout(finishTimer);
        finishTimer = clock.setTimeout(gaveUp, waitMs);
      }
      wake(0);
      return finished;
    },
    serverLastSequence: () => serverLast,
    // Stopped waiting (a third Ctrl-C): what it owes stays for the server, as when it gives up.
    stop: () => {
      if (stopped) return;
      leaveQuietly();
      givenUp = true;
      end(null);
    },
  };
}
