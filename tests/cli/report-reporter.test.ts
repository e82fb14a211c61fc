import { describe, expect, test } from "bun:test";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { ExecutionReport, ReportAnswer } from "../../runtime/execution/report-protocol.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";
import type { ExecutionStore } from "../../runtime/store/store.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { createExecutionReporter, ReportDeferredError, ReportRefusedError } from "../../runtime/cli/_reporter.ts";
import { ManualClock } from "../_support/manual-clock.ts";

const ID = "x-20260908T010203Z-0a1b2c3d";
const PID = 4242;
const URL = "http://127.0.0.1:4700";

/** Lets the reporter's awaited sends settle. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/**
 * A run's store with its execution created and started, and a fake server that answers as the test
 * says. With `runId`, a run whose handler waits for the server's word on it: created alone.
 */
function setup(options: { frameBytes?: number; limits?: Parameters<typeof resolveLimits>[0]; outboxUnits?: number; runId?: string } = {}) {
  const limits = resolveLimits(options.limits);
  const store: ExecutionStore = createMemoryStore({ limits });
  store.create({ id: ID, capability: "demo.read", input: { n: 1 }, actor: { kind: "cli", pid: PID }, repository: "/checkout", run_id: options.runId ?? null, session_key: null, request_id: "r-1", trace_id: "0af7651916cd43dd8448eb211c80319c", cancellable: true, effect: "read" });
  if (options.runId === undefined) store.append(ID, [{ type: "execution.started", data: {} }]);
  const clock = new ManualClock();
  const sent: ExecutionReport[] = [];
  const said: string[] = [];
  const cancels: unknown[] = [];
  const signals: AbortSignal[] = [];
  // What the fake server does with the next report: answer (by default, take everything), fail,
  // or keep it waiting (a promise: a frozen server).
  let next: (report: ExecutionReport) => ReportAnswer | Error | Promise<ReportAnswer> = (report) => took(report);
  let held = 0;
  // Where the server is now: a server restarted on the checkout answers at another port.
  let serverUrl = URL;
  const took = (report: ExecutionReport, extra: Partial<ReportAnswer> = {}): ReportAnswer => {
    const events = report.events as Array<{ sequence: number }>;
    if (events.length > 0 && events[0]!.sequence <= held + 1) held = Math.max(held, events.at(-1)!.sequence);
    return { id: ID, through: held, applied: 0, gap: false, state: "running", cancel_requested: false, requested_by: null, ended: false, takes_end: false, silence_ms: 30_000, message: "", ...extra };
  };
  const reporter = createExecutionReporter({
    store,
    id: ID,
    pid: PID,
    frameBytes: options.frameBytes ?? limits.frame_bytes,
    serverUrl: () => serverUrl,
    clock,
    async send(report, signal) {
      sent.push(structuredClone(report));
      signals.push(signal);
      const answer = next(report);
      if (answer instanceof Error) throw answer;
      return answer;
    },
    cancel: (by) => cancels.push(by),
    say: (line) => said.push(line),
    outboxUnits: options.outboxUnits,
    inputHash: options.runId === undefined ? undefined : "a".repeat(64),
  });
  return {
    moveServer: (url: string) => (serverUrl = url),
    store,
    clock,
    sent,
    said,
    cancels,
    signals,
    reporter,
    took,
    /** A server that takes the report and never answers: the report fails at its timeout (3 s, as reportToServer's). */
    freeze() {
      next = () => new Promise<ReportAnswer>((_, reject) => clock.setTimeout(() => reject(new Error("no answer in time")), 3000));
    },
    answerWith(fn: (report: ExecutionReport) => ReportAnswer | Error | Promise<ReportAnswer>) {
      next = fn;
    },
    forget() {
      held = 0;
    },
    async tick(ms: number) {
      clock.advance(ms);
      await settle();
    },
  };
}

const sequences = (report: ExecutionReport) => (report.events as Array<{ sequence: number }>).map((e) => e.sequence);
const progress = (store: ExecutionStore, current: number) => store.append(ID, [{ type: "execution.progress", data: { current } }]);
const alone = (said: string[]) => said.filter((line) => line.includes("visible to this process alone"));

describe("the run's reporter", () => {
  test("reporter sends the history at once, then each event soon after it happens, with the description and the input once", async () => {
    const t = setup();
    await t.tick(0);
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]).toMatchObject({ id: ID, pid: PID, capability: "demo.read", input: { n: 1 }, effect: "read", cancellable: true, request_id: "r-1" });
    expect(sequences(t.sent[0]!)).toEqual([1, 2]);
    expect(t.said).toEqual([`reported to the server at ${URL}: ${URL}/cockpit/executions/${ID}`]);
    progress(t.store, 1);
    progress(t.store, 2);
    await t.tick(99);
    expect(t.sent).toHaveLength(1);
    await t.tick(1);
    expect(t.sent).toHaveLength(2);
    expect(sequences(t.sent[1]!)).toEqual([3, 4]);
    expect(t.sent[1]!.input).toBeUndefined();
  });

  test("reporter reports a quiet run at the latest every 2 s, well within the server's silence", async () => {
    const t = setup();
    await t.tick(0);
    await t.tick(1999);
    expect(t.sent).toHaveLength(1);
    await t.tick(1);
    expect(t.sent).toHaveLength(2);
    expect(sequences(t.sent[1]!)).toEqual([]);
    // A server with a short silence limit is reported to more often.
    t.answerWith((report) => t.took(report, { silence_ms: 300 }));
    await t.tick(2000);
    await t.tick(100);
    expect(t.sent).toHaveLength(4);
  });

  test("reporter resends from the answered through after a gap, at once", async () => {
    const t = setup();
    await t.tick(0);
    // The server lost what it held (it restarted): it answers through 0, and the run sends all again.
    t.forget();
    t.answerWith((report) => ({ ...t.took(report), gap: sequences(report)[0] !== 1, through: sequences(report)[0] === 1 ? sequences(report).at(-1)! : 0 }));
    progress(t.store, 1);
    await t.tick(100);
    expect(sequences(t.sent[1]!)).toEqual([3]);
    await t.tick(0);
    expect(sequences(t.sent[2]!)).toEqual([1, 2, 3]);
  });

  test("reporter keeps what the server has not taken although the run's store dropped it (events_retained): the server gets every event", async () => {
    const t = setup({ limits: { overrides: { events_retained: 10 } } });
    await t.tick(0);
    // The server stops answering while the handler logs far more than the run's store keeps.
    t.answerWith(() => new Error("ECONNREFUSED"));
    for (let i = 1; i <= 200; i++) progress(t.store, i);
    await t.tick(100);
    expect(t.store.events(ID, 2, 1)!.truncated).toBe(true);
    t.answerWith((report) => t.took(report));
    for (let i = 0; i < 20 && t.sent.at(-1)!.events.length > 0; i++) await t.tick(5000);
    const delivered = t.sent.flatMap((report) => sequences(report));
    expect(new Set(delivered)).toEqual(new Set(Array.from({ length: 202 }, (_, i) => i + 1)));
    expect(t.said.join("\n")).not.toContain("dropped");
  });

  test("reporter whose outbox overflowed says the server will not get this run's events, and stops", async () => {
    const t = setup({ limits: { overrides: { events_retained: 10 } }, outboxUnits: 2000 });
    await t.tick(0);
    t.answerWith(() => new Error("ECONNREFUSED"));
    for (let i = 1; i <= 200; i++) progress(t.store, i);
    await t.tick(100);
    t.answerWith((report) => t.took(report));
    await t.tick(5000);
    await t.tick(5000);
    expect(t.said.join("\n")).toContain("were dropped from this process before the server");
  });

  test("reporter says at the first failed report that the server does not answer, then keeps trying with a bounded backoff", async () => {
    const t = setup();
    t.answerWith(() => new Error("ECONNREFUSED"));
    await t.tick(0);
    expect(t.said).toEqual([`the server at ${URL} does not answer (ECONNREFUSED); this run goes on and keeps trying to report to it`]);
    // 200, 400, 800, 1600, 3200 ms, then never more than 5 s apart.
    for (const wait of [200, 400, 800, 1600, 3200, 5000, 5000]) {
      const before = t.sent.length;
      await t.tick(wait - 1);
      expect(t.sent).toHaveLength(before);
      await t.tick(1);
      expect(t.sent).toHaveLength(before + 1);
    }
    expect(t.said).toHaveLength(1);
    // It answers again: everything is reported from the start, and the run says so once.
    t.answerWith((report) => t.took(report));
    progress(t.store, 1);
    await t.tick(5000);
    expect(sequences(t.sent.at(-1)!)).toEqual([1, 2, 3]);
    expect(t.sent.at(-1)!.input).toEqual({ n: 1 });
    expect(t.said.slice(1)).toEqual([`reported to the server at ${URL}: ${URL}/cockpit/executions/${ID}`, `the server at ${URL} answers again; reporting ${ID} resumed`]);
    // Restarted on another port, the server the run reports to again is the one it names.
    t.answerWith(() => new Error("ECONNREFUSED"));
    progress(t.store, 2);
    for (let i = 0; i < 4; i++) await t.tick(5000);
    expect(t.said.at(-1)).toBe(`the server at ${URL} does not answer (ECONNREFUSED); this run goes on and keeps trying to report to it`);
    t.moveServer("http://127.0.0.1:4999");
    t.answerWith((report) => t.took(report));
    await t.tick(5000);
    expect(t.said.at(-1)).toBe(`the server at http://127.0.0.1:4999 answers again; reporting ${ID} resumed`);
  });

  test("reporter forgives two failed reports after a success, says so at the third in a row, and resumes where the server stopped", async () => {
    const t = setup();
    await t.tick(0);
    t.answerWith(() => new Error("timed out"));
    progress(t.store, 1);
    await t.tick(100);
    await t.tick(200);
    expect(t.sent).toHaveLength(3);
    expect(t.said.filter((l) => l.includes("does not answer"))).toEqual([]);
    // A success in between starts the count again.
    t.answerWith((report) => t.took(report));
    await t.tick(400);
    expect(t.sent).toHaveLength(4);
    expect(sequences(t.sent[3]!)).toEqual([3]);
    t.answerWith(() => new Error("timed out"));
    progress(t.store, 2);
    await t.tick(100);
    await t.tick(200);
    expect(t.said.filter((l) => l.includes("does not answer"))).toEqual([]);
    await t.tick(400);
    expect(t.sent).toHaveLength(7);
    expect(t.said.filter((l) => l.includes("does not answer"))).toEqual([`the server at ${URL} does not answer (timed out); this run goes on and keeps trying to report to it`]);
    progress(t.store, 3);
    t.answerWith((report) => t.took(report));
    await t.tick(800);
    // Nothing was lost meanwhile: the report carries what the server has not taken.
    expect(sequences(t.sent.at(-1)!)).toEqual([4, 5]);
    expect(alone(t.said)).toEqual([]);
    expect(t.said.at(-1)).toBe(`the server at ${URL} answers again; reporting ${ID} resumed`);
  });

  test("reporter stops at once, saying so, when the server answers and refuses the report", async () => {
    const t = setup();
    t.answerWith(() => new ReportRefusedError("HTTP 400 invalid_input: process 17 reports that execution"));
    await t.tick(0);
    expect(alone(t.said)).toEqual([`the server at ${URL} refused the report of ${ID} (HTTP 400 invalid_input: process 17 reports that execution), so from now on this execution is visible to this process alone`]);
    progress(t.store, 1);
    await t.tick(10_000);
    expect(t.sent).toHaveLength(1);
    await t.reporter.finish();
  });

  test("reporter's first answer says what a server that answered and could not take the report said (a low disk), where one that did not answer says nothing (distribution tester, session 41)", async () => {
    const failure = buildFailure({ error_code: "unavailable", stage: "admit", message: "The disk is low", suggestion: "Free some space.", retryability: "after_delay", request_id: "r", trace_id: "t" });
    const deferred = setup({ runId: "r-1" });
    deferred.answerWith(() => new ReportDeferredError("HTTP 503 unavailable: The disk is low", failure));
    await deferred.tick(0);
    expect(await deferred.reporter.first).toEqual({ kind: "unheard", said: { reason: "HTTP 503 unavailable: The disk is low", failure } });
    deferred.reporter.stop();
    const silent = setup({ runId: "r-2" });
    silent.answerWith(() => new Error("ECONNREFUSED"));
    await silent.tick(0);
    expect(await silent.reporter.first).toEqual({ kind: "unheard" });
    silent.reporter.stop();
  });

  test("reporter of a run with no run_id says a server that answers and cannot take its reports is that, not silent, and gives up on it in those words (checking tester, session 41)", async () => {
    const failure = buildFailure({ error_code: "unavailable", stage: "admit", message: "The disk is low", retryability: "after_delay", request_id: "r", trace_id: "t" });
    const t = setup();
    t.answerWith(() => new ReportDeferredError("HTTP 503 unavailable: The disk is low", failure));
    await t.tick(0);
    expect(t.said).toEqual([`the server at ${URL} answers, but cannot take this run's reports now: HTTP 503 unavailable: The disk is low; this run goes on and keeps trying to report to it`]);
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    const finished = t.reporter.finish();
    await t.tick(0);
    await t.tick(3000);
    await finished;
    expect(t.said.at(-1)).toStartWith(`the server at ${URL} did not take this run's reports within 3 s of this run's end, so the end of ${ID} was not reported to it`);
    expect(t.said.join("\n")).not.toContain("does not answer");
  });

  test("reporter of a run that ended gives up on a server that does not answer finishWaitMs after the end", async () => {
    const t = setup();
    await t.tick(0);
    t.answerWith(() => new Error("ECONNREFUSED"));
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    let done = false;
    const finished = t.reporter.finish().then(() => (done = true));
    await t.tick(0);
    await t.tick(2999);
    expect(done).toBe(false);
    await t.tick(1);
    await finished;
    expect(t.said.at(-1)).toBe(`the server at ${URL} did not answer within 3 s of this run's end, so the end of ${ID} was not reported to it`);
  });

  test("reporter of a run that ended gives up finishWaitMs after its end while its report still waits for a frozen server, and aborts that report", async () => {
    const t = setup();
    await t.tick(0);
    // Frozen: a report is never answered, not even by a timeout of its own.
    t.answerWith(() => new Promise<ReportAnswer>(() => {}));
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    let done = false;
    const finished = t.reporter.finish().then(() => (done = true));
    await t.tick(0);
    expect(t.sent).toHaveLength(2);
    await t.tick(2999);
    expect(done).toBe(false);
    expect(t.signals.at(-1)!.aborted).toBe(false);
    await t.tick(1);
    await finished;
    expect(t.signals.at(-1)!.aborted).toBe(true);
    expect(t.said.at(-1)).toBe(`the server at ${URL} did not answer within 3 s of this run's end, so the end of ${ID} was not reported to it`);
    await t.tick(10_000);
    expect(t.sent).toHaveLength(2);
  });

  test("reporter of a run that ended keeps reporting while the server takes its events, however long past the end window that is: a server behind is not gone (tester T1)", async () => {
    const t = setup();
    await t.tick(0);
    // A run that logged faster than reports travel: 5,000 events wait when it ends.
    for (let i = 0; i < 5000; i++) t.store.append(ID, [{ type: "execution.log", data: { level: "info", message: `line ${i}` } }]);
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    // Each report (1,000 events at most) is answered 2.5 s after it was sent: 15 s for them all.
    t.answerWith((report) => new Promise<ReportAnswer>((resolve) => t.clock.setTimeout(() => resolve(t.took(report)), 2500)));
    let done = false;
    const finished = t.reporter.finish().then(() => (done = true));
    for (let i = 0; i < 8 && !done; i++) await t.tick(2500);
    await finished;
    expect(t.said.filter((line) => line.includes("did not answer"))).toEqual([]);
    expect((t.sent.at(-1)!.events as Array<{ type: string }>).at(-1)!.type).toBe("execution.completed");
  });

  test("reporter of a run that ended gives up when a server that took its events after the end stops answering, a window after its last answer", async () => {
    const t = setup();
    await t.tick(0);
    for (let i = 0; i < 1500; i++) t.store.append(ID, [{ type: "execution.log", data: { level: "info", message: `line ${i}` } }]);
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    // The first report after the end is taken 2 s later; then the server freezes.
    let answered = 0;
    t.answerWith((report) => (answered++ === 0 ? new Promise<ReportAnswer>((resolve) => t.clock.setTimeout(() => resolve(t.took(report)), 2000)) : new Promise<ReportAnswer>(() => {})));
    let done = false;
    const finished = t.reporter.finish().then(() => (done = true));
    await t.tick(2000);
    await t.tick(2999);
    expect(done).toBe(false);
    await t.tick(1);
    await finished;
    expect(t.said.at(-1)).toBe(`the server at ${URL} did not answer within 3 s of its last answer (it was still taking this run's events 2 s after the run's end), so the end of ${ID} was not reported to it`);
  });

  test("reporter's end window is shortened by a later finish (a second Ctrl-C), never lengthened", async () => {
    const t = setup();
    await t.tick(0);
    t.freeze();
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    let done = false;
    const finished = t.reporter.finish().then(() => (done = true));
    await t.tick(1000);
    void t.reporter.finish(500);
    void t.reporter.finish(3000);
    await t.tick(499);
    expect(done).toBe(false);
    await t.tick(1);
    await finished;
    expect(t.said.at(-1)).toBe(`the server at ${URL} did not answer within 1.5 s of this run's end, so the end of ${ID} was not reported to it`);
  });

  test("reporter says at the first report that timed out that the server does not answer: three timeouts in a row would come long after a freeze", async () => {
    const t = setup();
    await t.tick(0);
    t.freeze();
    // The quiet run's report 2 s later waits 3 s for its answer.
    await t.tick(2000);
    expect(t.said.filter((l) => l.includes("does not answer"))).toEqual([]);
    await t.tick(3000);
    expect(t.said.filter((l) => l.includes("does not answer"))).toEqual([`the server at ${URL} does not answer (no answer in time); this run goes on and keeps trying to report to it`]);
  });

  test("reporter of a run the server ended for silence goes on, and reports its own end once it has one", async () => {
    const t = setup();
    await t.tick(0);
    // The server ended it while it could not hear the run; it takes the run's end.
    t.answerWith(() => ({ ...t.took({ events: [] } as unknown as ExecutionReport), through: 3, state: "failed", ended: true, takes_end: true, message: "Nothing was heard from docket run (pid 4242) for 30 s" }));
    progress(t.store, 1);
    await t.tick(100);
    expect(t.said.at(-1)).toBe(`the server at ${URL} ended ${ID} as failed while it could not hear this run (Nothing was heard from docket run (pid 4242) for 30 s); the run goes on and reports its real end when it finishes`);
    const sent = t.sent.length;
    progress(t.store, 2);
    await t.tick(10_000);
    // Nothing more to say until the end.
    expect(t.sent).toHaveLength(sent);
    t.answerWith(() => ({ ...t.took({ events: [] } as unknown as ExecutionReport), through: 4, state: "failed", ended: true, takes_end: false, message: "its own end was recorded as its reconciliation (applied)" }));
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    const finished = t.reporter.finish();
    await t.tick(0);
    await finished;
    const last = t.sent.at(-1)!;
    expect(last.events).toHaveLength(1);
    expect(last.events[0]).toMatchObject({ type: "execution.completed", sequence: 5, data: { state: "succeeded" } });
    expect(t.sent).toHaveLength(sent + 1);
    expect(t.said.at(-1)).toBe(`the server at ${URL} holds ${ID} as failed and recorded this run's real end: its own end was recorded as its reconciliation (applied)`);
  });

  test("reporter passes a cancel asked of the server to the run once, in the name of who asked", async () => {
    const t = setup();
    t.answerWith((report) => t.took(report, { cancel_requested: true, requested_by: { kind: "cockpit" } }));
    await t.tick(0);
    await t.tick(2000);
    expect(t.cancels).toEqual([{ kind: "cockpit" }]);
  });

  test("reporter says in every report, once the run has its own execution.cancel_requested, which sequence it is", async () => {
    const t = setup();
    await t.tick(0);
    expect(t.sent.at(-1)!.cancel_sequence).toBeUndefined();
    progress(t.store, 1);
    const [cancel] = t.store.append(ID, [{ type: "execution.cancel_requested", data: { actor: { kind: "cockpit" } } }]);
    await t.tick(100);
    expect(t.sent.at(-1)).toMatchObject({ cancel_sequence: cancel!.sequence });
    await t.tick(2000);
    expect(t.sent.at(-1)).toMatchObject({ cancel_sequence: cancel!.sequence, events: [] });
  });

  test("reporter ends its run's reporting silently when the server holds its own end, and says so when the server ended it", async () => {
    const t = setup();
    await t.tick(0);
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    t.answerWith((report) => t.took(report, { ended: true, state: "succeeded" }));
    const finished = t.reporter.finish();
    await t.tick(0);
    await finished;
    expect(sequences(t.sent.at(-1)!)).toEqual([3]);
    expect(alone(t.said)).toEqual([]);

    const ended = setup();
    await ended.tick(0);
    ended.answerWith(() => ({ ...ended.took({ events: [] } as unknown as ExecutionReport), through: 2, ended: true, state: "failed", message: "Nothing was heard from docket run (pid 4242) for 30 s" }));
    progress(ended.store, 1);
    await ended.tick(100);
    expect(alone(ended.said)).toEqual([`the server at ${URL} ended ${ID} as failed (Nothing was heard from docket run (pid 4242) for 30 s), so from now on this execution is visible to this process alone`]);
    progress(ended.store, 2);
    await ended.tick(5000);
    expect(ended.sent).toHaveLength(2);
  });

  test("reporter of a run that ended before a cancel asked of the server reached it says so, and gives the server's count of the execution's events (hostile tester, session 39)", async () => {
    const t = setup();
    await t.tick(0);
    expect(t.reporter.serverLastSequence()).toBeNull();
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 5 } }]);
    // The server stored its own cancel_requested (3) before it took the run's end, which it holds as 4.
    t.answerWith((report) => t.took(report, { ended: true, state: "succeeded", through: 4 }));
    const finished = t.reporter.finish();
    await t.tick(0);
    await finished;
    expect(t.reporter.serverLastSequence()).toBe(4);
    expect(t.said.at(-1)).toBe(`the server at ${URL} holds a cancel asked of it for ${ID} that reached this run only after it had ended succeeded: it stands there before this run's end, which is sequence 4 there (3 here)`);
    expect(alone(t.said)).toEqual([]);
  });

  test("reporter of a run waiting for its run_id asks the server to bind it after the first answer, and lets the run begin only once an answer says it is bound", async () => {
    const { reporter, sent, took, answerWith, said, tick } = setup({ runId: "rid-1" });
    let first: unknown = null;
    void reporter.first.then((verdict) => (first = verdict));
    answerWith((report) => took(report, { state: "queued", run_id_bound: false }));
    await tick(0);
    // Created there, the run_id not bound: the run has not begun, and asks again at once.
    expect(first).toBeNull();
    answerWith((report) => took(report, { state: "queued", run_id_bound: true }));
    await tick(0);
    expect(sent.map((report) => [sequences(report), report.bind_run_id, report.input_hash])).toEqual([
      [[1], true, "a".repeat(64)],
      [[], true, "a".repeat(64)],
    ]);
    expect(first).toEqual({ kind: "taken" });
    expect(said.filter((line) => line.startsWith("reported to the server"))).toHaveLength(1);
  });

  test("reporter of a run waiting for its run_id whose bind is refused says nothing of going on: the run says itself that nothing ran", async () => {
    const { reporter, took, answerWith, said, tick } = setup({ runId: "rid-1" });
    answerWith((report) => (report.events.length > 0 ? took(report, { state: "queued", run_id_bound: false }) : new ReportRefusedError("HTTP 429 capacity: full")));
    await tick(0);
    await tick(0);
    expect(await reporter.first).toEqual({ kind: "refused", failure: null });
    expect(said).toEqual([]);
  });

  test("reporter sends a value too large for a frame withheld: it stays with the run", async () => {
    const t = setup({ frameBytes: 1024 });
    await t.tick(0);
    t.store.append(ID, [{ type: "execution.completed", data: { state: "succeeded", output: { text: "x".repeat(5000) }, duration_ms: 5 } }]);
    await t.tick(100);
    const completed = (t.sent.at(-1)!.events as any[]).at(-1);
    expect(completed.type).toBe("execution.completed");
    expect(completed.data.output).toEqual({ withheld: "too_large", bytes: JSON.stringify({ text: "x".repeat(5000) }).length, limit: 1024, pid: PID });
    expect(t.store.get(ID)!.output).toEqual({ text: "x".repeat(5000) });
  });
});
