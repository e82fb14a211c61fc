import { describe, expect, test } from "bun:test";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { ExecutionReport, ReportAnswer } from "../../runtime/execution/report-protocol.ts";
import { createMemoryStore } from "../../runtime/store/memory-store.ts";
import type { ExecutionStore } from "../../runtime/store/store.ts";
import { createExecutionReporter } from "../../runtime/cli/_reporter.ts";
import { ManualClock } from "../_support/manual-clock.ts";

const ID = "x-20260908T010203Z-0a1b2c3d";
const PID = 4242;
const URL = "http://127.0.0.1:4700";

/** Lets the reporter's awaited sends settle. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** A run's store with its execution created and started, and a fake server that answers as the test says. */
function setup(options: { frameBytes?: number } = {}) {
  const limits = resolveLimits();
  const store: ExecutionStore = createMemoryStore({ limits });
  store.create({ id: ID, capability: "demo.read", input: { n: 1 }, actor: { kind: "cli", pid: PID }, repository: "/checkout", run_id: null, session_key: null, request_id: "r-1", trace_id: "0af7651916cd43dd8448eb211c80319c", cancellable: true, effect: "read", input_hash: "h" });
  store.append(ID, [{ type: "execution.started", data: {} }]);
  const clock = new ManualClock();
  const sent: ExecutionReport[] = [];
  const said: string[] = [];
  const cancels: unknown[] = [];
  // What the fake server does with the next report: answer (by default, take everything) or fail.
  let next: (report: ExecutionReport) => ReportAnswer | Error = (report) => took(report);
  let held = 0;
  const took = (report: ExecutionReport, extra: Partial<ReportAnswer> = {}): ReportAnswer => {
    const events = report.events as Array<{ sequence: number }>;
    if (events.length > 0 && events[0]!.sequence <= held + 1) held = Math.max(held, events.at(-1)!.sequence);
    return { id: ID, through: held, applied: 0, gap: false, state: "running", cancel_requested: false, requested_by: null, ended: false, silence_ms: 30_000, message: "", ...extra };
  };
  const reporter = createExecutionReporter({
    store,
    id: ID,
    pid: PID,
    frameBytes: options.frameBytes ?? limits.frame_bytes,
    serverUrl: URL,
    clock,
    async send(report) {
      sent.push(structuredClone(report));
      const answer = next(report);
      if (answer instanceof Error) throw answer;
      return answer;
    },
    cancel: (by) => cancels.push(by),
    say: (line) => said.push(line),
  });
  return {
    store,
    clock,
    sent,
    said,
    cancels,
    reporter,
    took,
    answerWith(fn: (report: ExecutionReport) => ReportAnswer | Error) {
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

  test("reporter stops at the first failed report when the server never answered, saying so once", async () => {
    const t = setup();
    t.answerWith(() => new Error("ECONNREFUSED"));
    await t.tick(0);
    expect(alone(t.said)).toEqual([`the server at ${URL} stopped answering (ECONNREFUSED), so from now on this execution is visible to this process alone`]);
    progress(t.store, 1);
    await t.tick(5000);
    expect(t.sent).toHaveLength(1);
    await t.reporter.finish();
  });

  test("reporter forgives two failed reports after a success, and stops at the third in a row", async () => {
    const t = setup();
    await t.tick(0);
    t.answerWith(() => new Error("timed out"));
    progress(t.store, 1);
    await t.tick(100);
    await t.tick(200);
    expect(t.sent).toHaveLength(3);
    expect(alone(t.said)).toEqual([]);
    // A success in between starts the count again.
    t.answerWith((report) => t.took(report));
    await t.tick(400);
    expect(t.sent).toHaveLength(4);
    expect(sequences(t.sent[3]!)).toEqual([3]);
    t.answerWith(() => new Error("timed out"));
    progress(t.store, 2);
    await t.tick(100);
    await t.tick(200);
    expect(alone(t.said)).toEqual([]);
    await t.tick(400);
    expect(t.sent).toHaveLength(7);
    expect(alone(t.said)).toHaveLength(1);
    await t.tick(10_000);
    expect(t.sent).toHaveLength(7);
  });

  test("reporter passes a cancel asked of the server to the run once, in the name of who asked", async () => {
    const t = setup();
    t.answerWith((report) => t.took(report, { cancel_requested: true, requested_by: { kind: "cockpit" } }));
    await t.tick(0);
    await t.tick(2000);
    expect(t.cancels).toEqual([{ kind: "cockpit" }]);
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
