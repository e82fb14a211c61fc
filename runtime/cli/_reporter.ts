import type { Clock } from "../execution/clock.ts";
import type { Actor } from "../execution/protocol.ts";
import type { ExecutionReport, ReportAnswer } from "../execution/report-protocol.ts";
import { isTerminal } from "../execution/state-machine.ts";
import type { ExecutionStore, Subscription } from "../store/store.ts";
import { nextBatch, withheldIfLarge } from "./_reporter-batch.ts";

/** What a run's reporter is built from. */
export interface ExecutionReporterOptions {
  /** The run's own store: the reporter reads the events from it, nothing else keeps a copy. */
  store: ExecutionStore;
  id: string;
  pid: number;
  /** Bytes of one live-channel frame: a larger value travels withheld and stays with the run. */
  frameBytes: number;
  /** Where the server is, for what the run says. */
  serverUrl: string;
  /** Sends one report; throws when no answer came (nothing answers, an error status). */
  send(report: ExecutionReport): Promise<ReportAnswer>;
  /** Cancels the run's own execution, as the server's answer asked, in the name of who asked. */
  cancel(requestedBy: Actor | null): void;
  /** Says one line on stderr (without its newline). */
  say(line: string): void;
  clock: Pick<Clock, "setTimeout" | "clearTimeout" | "monotonic">;
  /** Quiet time after an event before it is reported; default 100 ms, so events travel in batches. */
  soonMs?: number;
  /** The longest time between two reports; default 2 s (less when the server's silence limit asks). */
  everyMs?: number;
}

/** Reports one execution to the server serving the checkout, while it runs and once it ended. */
export interface ExecutionReporter {
  /** Sends what is left once the execution is terminal; resolves when the server holds it all, or reporting stopped. */
  finish(): Promise<void>;
  /** Stops reporting at once, saying nothing. */
  stop(): void;
}

/** Failed reports in a row, after one succeeded, that make the run stop reporting (docs/protocol.md). */
const FAILURES_TO_STOP = 3;

/**
 * Creates the reporter of docs/protocol.md. One report at a time; each carries the events after the
 * `through` of the last answer, so a lost, cut or twice-sent report is mended by the next. A
 * report goes soon after anything happens and at the latest `everyMs` after the last one, so a
 * quiet run is still heard. The first failed report, or three in a row after a success, end
 * reporting with one line on stderr; the run goes on either way.
 */
export function createExecutionReporter(options: ExecutionReporterOptions): ExecutionReporter {
  const { store, id, pid, clock, say } = options;
  const soonMs = options.soonMs ?? 100;
  let everyMs = options.everyMs ?? 2000;
  const created = store.get(id)!;
  const description: Omit<ExecutionReport, "events"> = {
    id,
    pid,
    capability: created.capability,
    input: withheldIfLarge(created.input, options.frameBytes, pid),
    effect: created.effect,
    cancellable: created.cancellable,
    run_id: created.run_id,
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
  let failures = 0;
  let cancelPassed = false;
  let finishing = false;
  let resolveFinished!: () => void;
  const finished = new Promise<void>((resolve) => (resolveFinished = resolve));
  let subscription: Subscription | null = null;

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

  async function report(): Promise<void> {
    if (stopped || inFlight) return;
    const batch = nextBatch(store, id, through, { frameBytes: options.frameBytes, pid });
    if (!batch.ok) {
      return end(`events of ${id} after ${through} were dropped from this process before the server at ${options.serverUrl} took them, so from now on this execution is visible to this process alone`);
    }
    // The input travels until the server holds the execution; after that it would only weigh.
    const body: ExecutionReport = { ...description, input: through === 0 ? description.input : undefined, events: batch.events };
    inFlight = true;
    let answer: ReportAnswer;
    try {
      answer = await options.send(body);
    } catch (error) {
      inFlight = false;
      return failed(error);
    }
    inFlight = false;
    if (stopped) return;
    failures = 0;
    if (!heard) {
      heard = true;
      say(`reported to the server at ${options.serverUrl}: ${options.serverUrl}/cockpit/executions/${id}`);
    }
    through = answer.through;
    // Reports come well within the server's silence limit, whatever it is set to.
    everyMs = Math.max(10, Math.min(everyMs, Math.floor(answer.silence_ms / 3)));
    if (answer.cancel_requested && !cancelPassed) {
      cancelPassed = true;
      options.cancel(answer.requested_by);
    }
    if (answer.ended) return ended(answer);
    const last = store.events(id, through, 1)?.last_sequence ?? through;
    if (last > through) wake(batch.full || answer.gap || finishing ? 0 : soonMs);
    else if (finishing) end(null);
    else wake(everyMs);
  }

  /** The server holds the execution as terminal: the end of reporting, silent when it is the run's own end. */
  function ended(answer: ReportAnswer): void {
    const local = store.get(id);
    const same = local !== null && isTerminal(local.state) && answer.through >= local.last_sequence && answer.state === local.state;
    end(same ? null : `the server at ${options.serverUrl} ended ${id} as ${answer.state} (${answer.message}), so from now on this execution is visible to this process alone`);
  }

  function failed(error: unknown): void {
    failures++;
    if (!heard || failures >= FAILURES_TO_STOP) {
      const reason = (error as Error)?.message ?? String(error);
      end(`the server at ${options.serverUrl} stopped answering (${reason}), so from now on this execution is visible to this process alone`);
      return;
    }
    wake(Math.min(everyMs, soonMs * 2 ** failures));
  }

  function end(line: string | null): void {
    if (stopped) return;
    stopped = true;
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
    subscription?.unsubscribe();
    if (line !== null) say(line);
    resolveFinished();
  }

  // Any event of the execution wakes the reporter; the events themselves are read from the store.
  subscription = store.subscribe({ executions: [id], after: created.last_sequence }, () => wake(soonMs));
  // The first report goes at once: the server shows the execution from its start.
  wake(0);

  return {
    finish() {
      finishing = true;
      wake(0);
      return finished;
    },
    stop: () => end(null),
  };
}
