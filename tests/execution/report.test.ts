import { describe, expect, test } from "bun:test";
import { FailureError } from "../../runtime/execution/failure.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import type { EdgeInfo } from "../../runtime/execution/plane.ts";
import type { ExecutionReport } from "../../runtime/execution/report-protocol.ts";
import { EDGE, harness, type Harness } from "./_support/harness.ts";
import type { StorageFault } from "../../runtime/store/store.ts";
import { flush } from "./_support/fake-pool.ts";

const PID = 4242;
const RUN_EDGE: EdgeInfo = { actor: { kind: "cli", pid: PID }, request_id: "r-run", trace_id: "0af7651916cd43dd8448eb211c80319c" };

/**
 * A real run: a second engine (the `docket run` process) starts demo.read, which emits a step,
 * progress and a log, and succeeds. Its store's events are what the run reports.
 */
async function finishedRun(options: { capability?: string; input?: unknown; end?: "succeed" | "hold" } = {}) {
  const run = harness();
  const id = run.engine.start({ capability: options.capability ?? "demo.read", input: options.input ?? { n: 3 } }, RUN_EDGE).execution.id;
  await flush();
  const task = run.pool.of(id)!;
  task.emit({ type: "execution.step", data: { id: "s", title: "Step" } });
  task.emit({ type: "execution.progress", data: { current: 1, total: 2, message: "half" } });
  task.emit({ type: "execution.log", data: { level: "info", message: "working" } });
  task.emit({ type: "execution.step_done", data: { id: "s", ok: true } });
  if (options.end !== "hold") {
    task.succeed({ n: 3 });
    await flush();
  }
  const events = run.store.events(id, 0, 1000)!.events;
  return { run, id, events, task };
}

function reportOf(h: Harness, id: string, events: readonly ExecutionEvent[], extra: Partial<ExecutionReport> = {}): ExecutionReport {
  const snapshot = h.store.get(id)!;
  return {
    id,
    pid: PID,
    capability: snapshot.capability,
    input: snapshot.input,
    effect: snapshot.effect,
    cancellable: snapshot.cancellable,
    run_id: snapshot.run_id,
    session_key: snapshot.session_key,
    request_id: snapshot.request_id,
    trace_id: snapshot.trace_id,
    events: [...events],
    ...extra,
  };
}

const send = (server: Harness, report: ExecutionReport, edge: EdgeInfo = EDGE) => server.engine.handle(edge).report(report);

function failureOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    if (error instanceof FailureError) return error.failure;
    throw error;
  }
  throw new Error("expected a FailureError");
}

/** The events as the server holds them, without the stamps each side puts on its own copy. */
const unstamped = (events: readonly ExecutionEvent[]) => events.map(({ timestamp, ...rest }) => (void timestamp, rest));

describe("executions.report (engine)", () => {
  test("report ingestion applies each event once and in order: the server holds the run's events under the run's id", async () => {
    const { run, id, events } = await finishedRun();
    const server = harness();
    const first = await send(server, reportOf(run, id, events.slice(0, 3)));
    expect(first).toMatchObject({ id, through: 3, applied: 3, gap: false, state: "running", ended: false, cancel_requested: false });
    // Overlapping the first: events at or below `through` are skipped, the rest applied once.
    const second = await send(server, reportOf(run, id, events.slice(1)));
    expect(second).toMatchObject({ through: events.length, applied: events.length - 3, state: "succeeded", ended: true });
    const held = server.store.events(id, 0, 1000)!.events;
    expect(unstamped(held)).toEqual(unstamped(events));
    const snapshot = server.store.get(id)!;
    expect(snapshot).toMatchObject({ id, state: "succeeded", actor: { kind: "cli", pid: PID }, repository: "/checkout", output: { n: 3 }, request_id: "r-run" });
    expect(snapshot.steps.map((s) => [s.id, s.state])).toEqual([["s", "succeeded"]]);
    // The work never runs in the server.
    expect(server.pool.tasks).toHaveLength(0);
  });

  test("report sent twice is applied once; the duplicate answers the same through", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness();
    const report = reportOf(run, id, events);
    expect(await send(server, report)).toMatchObject({ through: events.length, applied: events.length });
    expect(await send(server, report)).toMatchObject({ through: events.length, applied: 0, gap: false });
    expect(server.store.get(id)!.last_sequence).toBe(events.length);
    expect(server.store.get(id)!.log.map((l) => l.message)).toEqual(["working"]);
  });

  test("report cut short is mended by the next one, which starts after the answered through", async () => {
    const { run, id, events } = await finishedRun();
    const server = harness();
    const cut = await send(server, reportOf(run, id, events.slice(0, 2)));
    expect(cut.through).toBe(2);
    const next = await send(server, reportOf(run, id, events.slice(cut.through)));
    expect(next).toMatchObject({ through: events.length, state: "succeeded" });
    expect(unstamped(server.store.events(id, 0, 1000)!.events)).toEqual(unstamped(events));
  });

  test("report that begins after a gap is refused whole, nothing applied, and answers through so the run resends", async () => {
    const { run, id, events } = await finishedRun();
    const server = harness();
    // The server holds nothing yet: a report without the execution.created is a gap from 0.
    expect(await send(server, reportOf(run, id, events.slice(2)))).toMatchObject({ through: 0, applied: 0, gap: true, state: null });
    expect(server.store.get(id)).toBeNull();
    await send(server, reportOf(run, id, events.slice(0, 2)));
    const gap = await send(server, reportOf(run, id, events.slice(3)));
    expect(gap).toMatchObject({ through: 2, applied: 0, gap: true, state: "running" });
    expect(gap.message).toContain("send again from 3");
    expect(server.store.get(id)!.last_sequence).toBe(2);
    expect(await send(server, reportOf(run, id, events.slice(2)))).toMatchObject({ through: events.length, gap: false });
  });

  test("report from a second pid re-using a reported id is refused and changes nothing", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness();
    await send(server, reportOf(run, id, events.slice(0, 2)));
    const refused = failureOf(() => send(server, reportOf(run, id, events.slice(2), { pid: PID + 1 })));
    expect(refused).toMatchObject({ error_code: "invalid_input", context: { reason: "reported_by_another_process", pid: PID } });
    expect(refused.message).toContain(`pid ${PID + 1}`);
    expect(server.store.get(id)!.last_sequence).toBe(2);
  });

  test("report under the id of one of the server's own executions is refused", async () => {
    const server = harness();
    const own = server.engine.start({ capability: "demo.read", input: {} }, EDGE).execution;
    await flush();
    const events = server.store.events(own.id)!.events;
    const refused = failureOf(() => send(server, reportOf(server, own.id, events)));
    expect(refused).toMatchObject({ error_code: "invalid_input", context: { reason: "id_in_use" } });
    expect(server.store.get(own.id)!.actor).toEqual({ kind: "http" });
  });

  test("report silence ends a write failed unavailable, outcome unknown, naming the pid (manual clock)", async () => {
    const { run, id, events } = await finishedRun({ capability: "demo.write", input: {}, end: "hold" });
    const server = harness({ report_silence_ms: 30_000 });
    await send(server, reportOf(run, id, events.slice(0, 3)));
    server.clock.advance(29_999);
    // Heard again (a report with nothing new still says the run is alive): silence counts from here.
    expect(await send(server, reportOf(run, id, []))).toMatchObject({ through: 3, applied: 0, gap: false, silence_ms: 30_000 });
    server.clock.advance(29_999);
    expect(server.store.get(id)!.state).toBe("running");
    server.clock.advance(1);
    const snapshot = server.store.get(id)!;
    expect(snapshot.state).toBe("failed");
    expect(snapshot.failure).toMatchObject({ error_code: "unavailable", stage: "report", outcome_certainty: "unknown", context: { pid: PID, silence_ms: 30_000 } });
    expect(snapshot.failure!.message).toContain(`pid ${PID}`);
    expect(server.logged.join("\n")).toContain(`pid ${PID}`);
    expect(server.clock.pending).toBe(0);
  });

  test("report silence ends a read failed unavailable with nothing applied: a read changes nothing, so there is nothing to reconcile (manual clock)", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness({ report_silence_ms: 1000 });
    await send(server, reportOf(run, id, events.slice(0, 3)));
    server.clock.advance(1000);
    const snapshot = server.store.get(id)!;
    expect(snapshot).toMatchObject({ state: "failed", effect: "read", failure: { error_code: "unavailable", stage: "report", outcome_certainty: "not_applied", retryability: "safe" } });
    expect(snapshot.failure!.suggestion).toContain("demo.read is a read and changed nothing");
    // The message says it too, not only that how far it got is unknown (checking tester, session 39).
    expect(snapshot.failure!.message).toEndWith("demo.read is a read: whatever it got to, it changed nothing.");
    // Not one of the unknown outcomes the run's real end would settle.
    expect((await send(server, reportOf(run, id, events.slice(3)))).takes_end).toBe(false);
  });

  test("report keeps the run's own times: created, started and finished are when the run did them, not when a late server read them (manual clock)", async () => {
    const { run, id, events, task } = await finishedRun({ end: "hold" });
    const own = run.store.get(id)!;
    const server = harness();
    // The server was stopped while the run began: it reads the first report 3 s late.
    server.clock.advance(3000);
    await send(server, reportOf(run, id, events));
    expect(server.store.get(id)).toMatchObject({ created_at: own.created_at, started_at: own.started_at });
    expect(server.store.events(id, 0, 1000)!.events.map((e) => e.timestamp)).toEqual(events.map((e) => e.timestamp));
    // A run's clock ahead of the server's dates nothing in the server's future.
    run.clock.advance(60_000);
    task.succeed({ n: 3 });
    await flush();
    await send(server, reportOf(run, id, run.store.events(id, events.length, 1000)!.events));
    expect(server.store.get(id)).toMatchObject({ state: "succeeded", finished_at: server.clock.now().toISOString() });
  });

  test("report of events stamped out of order stores each at or after the one before it: finished_at is never before started_at", async () => {
    const { run, id, events } = await finishedRun();
    const server = harness();
    server.clock.advance(5000);
    // The run's clock stepped back before its end (an NTP correction): it started 2 s after its
    // creation, and its end is stamped 1 s after the creation.
    const at = (ms: number) => new Date(Date.parse(events[0]!.timestamp) + ms).toISOString();
    const skewed = events.map((e) => (e.type === "execution.created" ? e : { ...e, timestamp: at(e.type === "execution.completed" ? 1000 : 2000) }));
    const started = skewed.find((e) => e.type === "execution.started")!;
    await send(server, reportOf(run, id, skewed));
    const stored = server.store.events(id, 0, 1000)!.events.map((e) => Date.parse(e.timestamp));
    expect(stored).toEqual([...stored].sort((a, b) => a - b));
    const snapshot = server.store.get(id)!;
    expect(Date.parse(snapshot.finished_at!)).toBeGreaterThanOrEqual(Date.parse(snapshot.started_at!));
    expect(snapshot.started_at).toBe(started.timestamp);
  });

  test("report silence measures the duration on the server's clock alone: a run whose clock is an hour behind is not given the hour (manual clock)", async () => {
    const { run, id, events } = await finishedRun({ capability: "demo.write", input: {}, end: "hold" });
    const server = harness({ report_silence_ms: 30_000 });
    server.clock.advance(3_600_000);
    await send(server, reportOf(run, id, events.slice(0, 3)));
    server.clock.advance(30_000);
    const snapshot = server.store.get(id)!;
    expect(snapshot.state).toBe("failed");
    // Heard running for the 30 s of silence, as this server measured them.
    expect(snapshot.duration_ms).toBe(30_000);
  });

  test("report after the silence failure is answered as ended and applies nothing", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness({ report_silence_ms: 1000 });
    await send(server, reportOf(run, id, events.slice(0, 3)));
    server.clock.advance(1000);
    const failedAt = server.store.get(id)!.last_sequence;
    const late = await send(server, reportOf(run, id, events.slice(3)));
    expect(late).toMatchObject({ ended: true, state: "failed", applied: 0, through: failedAt });
    expect(late.message).toContain("Nothing was heard");
    expect(server.store.get(id)!.last_sequence).toBe(failedAt);
  });

  test("report silence of a run heard only up to its creation still ends it failed", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness({ report_silence_ms: 1000 });
    await send(server, reportOf(run, id, events.slice(0, 1)));
    expect(server.store.get(id)!.state).toBe("queued");
    server.clock.advance(1000);
    expect(server.store.get(id)).toMatchObject({ state: "failed", failure: { error_code: "unavailable" } });
  });

  test("report silence is not judged on a timer that fired late because this process was stopped: the reports it then reads resume the run (manual clock)", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness({ report_silence_ms: 3000 });
    await send(server, reportOf(run, id, events.slice(0, 3)));
    server.clock.advance(1000);
    // SIGSTOP for 5 s: the silence fell due meanwhile, and the run's reports wait unread.
    server.clock.stall(5000);
    server.clock.advance(0);
    expect(server.store.get(id)!.state).toBe("running");
    // The first report read after the resume: the run is heard, and goes on to its end.
    expect(await send(server, reportOf(run, id, events.slice(3)))).toMatchObject({ state: "running", through: events.length, ended: false });
    server.clock.advance(2999);
    expect(server.store.get(id)!.state).toBe("running");
    // A run that really went quiet still fails once the silence is heard whole.
    server.clock.advance(1);
    expect(server.store.get(id)).toMatchObject({ state: "failed", failure: { error_code: "unavailable", stage: "report" } });
  });

  test("report silence after a stop of this process is judged once the server has listened a whole silence limit since its resume (manual clock)", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness({ report_silence_ms: 3000 });
    await send(server, reportOf(run, id, events.slice(0, 3)));
    server.clock.stall(10_000);
    server.clock.advance(0);
    server.clock.advance(2999);
    expect(server.store.get(id)!.state).toBe("running");
    server.clock.advance(1);
    expect(server.store.get(id)).toMatchObject({ state: "failed", failure: { error_code: "unavailable", context: { silence_ms: 3000 } } });
    expect(server.clock.pending).toBe(0);
  });

  test("cancel of a reported execution is stored before it is answered and passed to the run until the run's own cancel takes its place", async () => {
    const { run, id, events, task } = await finishedRun({ end: "hold" });
    const server = harness();
    await send(server, reportOf(run, id, events));
    const receipt = server.engine.cancel(id, { ...EDGE, actor: { kind: "cockpit" } });
    expect(receipt).toMatchObject({ id, requested: true, cancellable: true, state: "cancelling" });
    expect(receipt.message).toContain(`pid ${PID}`);
    // The server's own event, in the store before the receipt is shown (docs/durability.md).
    expect(server.store.events(id, events.length, 10)!.events.map((e) => [e.sequence, e.type, e.data])).toEqual([[events.length + 1, "execution.cancel_requested", { actor: { kind: "cockpit" } }]]);

    // The run logged once more before it heard: the server holds it after its cancel, and still
    // counts how far it got in the run's own sequences.
    task.emit({ type: "execution.log", data: { level: "info", message: "still working" } });
    await flush();
    const logged = await send(server, reportOf(run, id, run.store.events(id, events.length, 1000)!.events));
    expect(logged).toMatchObject({ through: events.length + 1, applied: 1, state: "cancelling", cancel_requested: true, requested_by: { kind: "cockpit" } });
    // Sent again, the same report takes nothing twice.
    expect(await send(server, reportOf(run, id, run.store.events(id, events.length, 1000)!.events))).toMatchObject({ through: events.length + 1, applied: 0, gap: false });

    // The run does what the answer says: it cancels its own execution, as the one who asked.
    run.engine.cancel(id, { ...RUN_EDGE, actor: logged.requested_by! });
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    const own = run.store.events(id, 0, 1000)!.events.find((e) => e.type === "execution.cancel_requested")!;
    const rest = run.store.events(id, logged.through, 1000)!.events;
    const last = await send(server, reportOf(run, id, rest, { cancel_sequence: own.sequence }));
    expect(last).toMatchObject({ state: "cancelled", ended: true, cancel_requested: false, through: run.store.get(id)!.last_sequence });
    // The run's cancel took the place of the server's: one of each event, the same count as the run's.
    const held = server.store.events(id, 0, 1000)!.events;
    expect(held.map((e) => e.sequence)).toEqual(run.store.events(id, 0, 1000)!.events.map((e) => e.sequence));
    expect(held.filter((e) => e.type === "execution.cancel_requested").map((e) => [e.sequence, e.data])).toEqual([[events.length + 1, { actor: { kind: "cockpit" } }]]);
    expect(held.at(-2)).toMatchObject({ type: "execution.log", data: { message: "still working" } });
  });

  test("cancel of a reported execution that cancelled itself meanwhile keeps one cancel: the run's, reported with its sequence, is not stored twice", async () => {
    const { run, id, events, task } = await finishedRun({ end: "hold" });
    const server = harness();
    await send(server, reportOf(run, id, events));
    expect(server.engine.cancel(id, EDGE)).toMatchObject({ requested: true, state: "cancelling" });
    // Ctrl-C in the run before it heard of the server's cancel.
    run.engine.cancel(id, RUN_EDGE);
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    const own = run.store.events(id, 0, 1000)!.events.find((e) => e.type === "execution.cancel_requested")!;
    const answer = await send(server, reportOf(run, id, run.store.events(id, events.length, 1000)!.events, { cancel_sequence: own.sequence }));
    expect(answer).toMatchObject({ state: "cancelled", ended: true, cancel_requested: false });
    expect(server.store.get(id)!.last_sequence).toBe(run.store.get(id)!.last_sequence);
    expect(server.store.events(id, 0, 1000)!.events.filter((e) => e.type === "execution.cancel_requested")).toHaveLength(1);
  });

  test("cancel of a reported execution still queued is stored with the report of its start, and passed to the run", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness();
    await send(server, reportOf(run, id, events.slice(0, 1)));
    expect(server.engine.cancel(id, EDGE)).toMatchObject({ requested: true, state: "queued" });
    const started = await send(server, reportOf(run, id, events.slice(1)));
    expect(started).toMatchObject({ state: "cancelling", through: events.length, cancel_requested: true, requested_by: { kind: "http" } });
    expect(server.store.get(id)).toMatchObject({ state: "cancelling", last_sequence: events.length + 1 });
  });

  test("cancel of a reported execution that is not cancellable is refused as for any other", async () => {
    const { run, id, events } = await finishedRun({ capability: "demo.write", input: {}, end: "hold" });
    const server = harness();
    await send(server, reportOf(run, id, events.slice(0, 2)));
    expect(server.engine.cancel(id, EDGE)).toMatchObject({ requested: false, cancellable: false });
    expect(await send(server, reportOf(run, id, []))).toMatchObject({ cancel_requested: false });
  });

  test("malformed report is refused with invalid_input and nothing stored is lost", async () => {
    const { run, id, events } = await finishedRun();
    const server = harness();
    await send(server, reportOf(run, id, events.slice(0, 2)));
    const refusals = [
      [{ ...events[2]!, type: "execution.nonsense" }],
      [{ ...events[2]!, data: { current: "half" } }],
      [{ ...events[2]!, execution_id: "x-20260908T010203Z-ffffffff" }],
      [events[2]!, events[4]!],
      [{ ...events[2]!, type: "execution.created", data: events[0]!.data }],
      ["not an event"],
    ];
    for (const bad of refusals) {
      const failure = failureOf(() => send(server, reportOf(run, id, bad as ExecutionEvent[])));
      expect(failure.error_code).toBe("invalid_input");
      expect(failure.message).toContain(`Cannot take the report of ${id}`);
    }
    // A batch the lifecycle refuses (a second start) leaves no trace either.
    const started = events.find((e) => e.type === "execution.started")!;
    const illegal = failureOf(() => send(server, reportOf(run, id, [{ ...events[2]!, type: "execution.started", data: {} } as ExecutionEvent, events[3]!])));
    expect(illegal).toMatchObject({ error_code: "invalid_input", context: { reason: "illegal_transition" } });
    expect(started.sequence).toBe(2);
    expect(server.store.get(id)!.last_sequence).toBe(2);
    expect(await send(server, reportOf(run, id, events.slice(2)))).toMatchObject({ through: events.length, state: "succeeded" });
  });

  test("a first report whose later events the lifecycle refuses creates nothing at all", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness();
    const created = events[0]!;
    const completed = { ...events[1]!, type: "execution.completed", data: { state: "succeeded", output: { n: 1 }, duration_ms: 1 } } as ExecutionEvent;
    const failure = failureOf(() => send(server, reportOf(run, id, [created, completed])));
    expect(failure).toMatchObject({ error_code: "invalid_input", context: { reason: "illegal_transition" } });
    expect(failure.message).toContain("from queued to succeeded");
    expect(server.store.get(id)).toBeNull();
  });

  test("report of a capability the server knows is redacted again by its schema; an unknown one is kept as the run sent it", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness();
    const secret = { user: "ada", auth: { token: "s3cret" }, keys: [] };
    const created = { ...events[0]!, data: { ...events[0]!.data, capability: "demo.secret", input: secret } } as ExecutionEvent;
    await send(server, reportOf(run, id, [created], { capability: "demo.secret", input: secret }));
    expect(server.store.get(id)!.input).toEqual({ user: "ada", auth: { token: "[redacted]" }, keys: [] });

    const other = await finishedRun({ end: "hold" });
    const file = { ...other.events[0]!, data: { ...other.events[0]!.data, capability: "team.deploy" } } as ExecutionEvent;
    await send(server, reportOf(other.run, other.id, [file], { capability: "team.deploy", input: { where: "staging" } }));
    expect(server.store.get(other.id)).toMatchObject({ capability: "team.deploy", input: { where: "staging" }, state: "queued" });
  });
});

describe("executions.report and capability_version", () => {
  test("report keeps the run's capability_version from its execution.created, whatever the server has loaded", async () => {
    const { run, id, events } = await finishedRun({ end: "hold" });
    const server = harness();
    const created = { ...events[0]!, data: { ...events[0]!.data, capability: "team.deploy", capability_version: "sha256:00112233aabbccdd" } } as ExecutionEvent;
    send(server, reportOf(run, id, [created], { capability: "team.deploy", input: {} }));
    expect(server.store.get(id)).toMatchObject({ capability: "team.deploy", capability_version: "sha256:00112233aabbccdd" });
    expect((server.store.events(id)!.events[0]!.data as { capability_version?: string }).capability_version).toBe("sha256:00112233aabbccdd");
  });
});

describe("executions.report and a run waiting for its run_id", () => {
  const HASH = "a".repeat(64);

  /** A `docket run --run-id` whose handler waits for the server (its hold never settles here): it has its creation alone. */
  function waitingRun(runId = "rid-wait", capability: { capability: string; input: unknown } = { capability: "demo.read", input: { n: 3 } }) {
    const run = harness();
    const id = run.engine.start({ ...capability, run_id: runId }, RUN_EDGE, { hold: new Promise(() => undefined) }).execution.id;
    const report = (extra: Partial<ExecutionReport> = {}) => reportOf(run, id, run.store.events(id, 0, 1000)!.events, { input_hash: HASH, ...extra });
    return { run, id, report };
  }

  test("report of a run waiting for its run_id creates its execution queued and leaves the run_id free; the next report binds it, and only its answer says run_id_bound", async () => {
    const { id, report } = waitingRun();
    const server = harness();
    expect(await send(server, report({ bind_run_id: true }))).toMatchObject({ id, through: 1, state: "queued", run_id_bound: false });
    expect(server.store.findRun("rid-wait")).toBeNull();
    expect(await send(server, report({ bind_run_id: true }))).toMatchObject({ id, through: 1, applied: 0, state: "queued", run_id_bound: true });
    expect(server.store.findRun("rid-wait")).toMatchObject({ execution_id: id, input_hash: HASH });
    // Asked again (an answer lost), it is bound already: the same answer.
    expect(await send(server, report({ bind_run_id: true }))).toMatchObject({ run_id_bound: true });
  });

  test("report of a run that exited while it waited for its run_id is refused and holds nothing: read first, nothing is kept; read at the bind, its execution ends cancelled, never started", async () => {
    let alive = false;
    const server = harness({}, { processAlive: (pid) => pid === PID && alive });
    const gone = waitingRun();
    expect(failureOf(() => send(server, gone.report()))).toMatchObject({ error_code: "invalid_input", context: { reason: "reporter_gone", pid: PID } });
    expect(server.store.get(gone.id)).toBeNull();

    // Alive for a moment when its first report was read (it was giving up on the answer), gone by the next.
    const late = waitingRun();
    alive = true;
    await send(server, late.report());
    alive = false;
    const refused = failureOf(() => send(server, late.report({ bind_run_id: true })));
    expect(refused).toMatchObject({ error_code: "invalid_input", context: { reason: "reporter_gone" } });
    expect(refused.message).toContain(`run_id "rid-wait" is not kept`);
    expect(server.store.get(late.id)).toMatchObject({
      state: "cancelled",
      started_at: null,
      failure: { error_code: "cancelled", outcome_certainty: "not_applied", retryability: "safe", context: { pid: PID, run_id: "rid-wait" } },
    });
    expect(server.store.findRun("rid-wait")).toBeNull();
    // The run_id was never held: a start with it runs.
    const started = server.engine.start({ capability: "demo.read", input: { n: 3 }, run_id: "rid-wait" }, EDGE);
    expect(started.deduplicated).toBe(false);
  });

  test("report binds a run_id for the first run that asks: another run waiting with it, created first, never starts and is that run", async () => {
    const first = waitingRun("rid-two");
    const second = waitingRun("rid-two");
    const server = harness();
    await send(server, first.report());
    // The first one's run_id is not bound: the second is no deduplicate of it yet.
    expect(await send(server, second.report())).toMatchObject({ id: second.id, state: "queued", run_id_bound: false });
    expect(await send(server, second.report({ bind_run_id: true }))).toMatchObject({ run_id_bound: true });
    const late = await send(server, first.report({ bind_run_id: true }));
    expect(late).toMatchObject({ deduplicated_to: second.id, run_id_bound: false });
    expect(server.store.get(first.id)).toMatchObject({ state: "cancelled", started_at: null, failure: { outcome_certainty: "not_applied" } });
    expect(server.store.get(first.id)!.failure!.message).toContain(`taken by ${second.id} first`);
  });

  test("report silence of a run that waited for its run_id and never had it bound ends it cancelled: it never started, nothing applied (manual clock)", async () => {
    const { id, report } = waitingRun();
    const server = harness({ report_silence_ms: 1000 });
    await send(server, report());
    server.clock.advance(1000);
    const snapshot = server.store.get(id)!;
    expect(snapshot).toMatchObject({ state: "cancelled", started_at: null, failure: { error_code: "cancelled", outcome_certainty: "not_applied" } });
    expect(snapshot.failure!.message).toContain(`nothing was heard from docket run (pid ${PID}) for 1 s before this server took its run_id`);
    expect(server.store.findRun("rid-wait")).toBeNull();
  });

  test("report silence of a write whose run_id was bound ends it failed with an unknown outcome: its handler may have begun", async () => {
    const { id, report } = waitingRun("rid-wait", { capability: "demo.write", input: {} });
    const server = harness({ report_silence_ms: 1000 });
    await send(server, report());
    await send(server, report({ bind_run_id: true }));
    server.clock.advance(1000);
    expect(server.store.get(id)).toMatchObject({ state: "failed", failure: { error_code: "unavailable", outcome_certainty: "unknown" } });
  });
});

describe("executions.report and the run's process", () => {
  const HERE = "pid:[4026531836]";
  const HASH = "b".repeat(64);

  test("report of a run whose process exits without reporting its end ends it failed unavailable within seconds, not after the whole silence limit (manual clock)", async () => {
    const { run, id, events } = await finishedRun({ capability: "demo.write", input: {}, end: "hold" });
    let alive = true;
    const server = harness({ report_silence_ms: 30_000 }, { processAlive: (pid) => pid === PID && alive, pidNamespace: HERE });
    await send(server, reportOf(run, id, events.slice(0, 3), { pid_namespace: HERE }));
    server.clock.advance(5000);
    // Alive and quiet: it has the whole limit.
    expect(server.store.get(id)!.state).toBe("running");
    alive = false;
    server.clock.advance(2000);
    const snapshot = server.store.get(id)!;
    expect(snapshot).toMatchObject({ state: "failed", failure: { error_code: "unavailable", stage: "report", outcome_certainty: "unknown", context: { pid: PID, reason: "reporter_exited" } } });
    expect(snapshot.failure!.message).toContain(`docket run (pid ${PID}) exited without its end reaching this server`);
    expect(server.logged.join("\n")).toContain("exited without reporting its end");
    // Nothing is heard any more, so nothing is looked at.
    expect(server.clock.pending).toBe(0);
  });

  test("a run gone after it ended is settled by the reports it left (store/left-reports.ts), not failed for silence; reports of another execution or process are refused and removed (manual clock, session 34)", async () => {
    for (const forged of [null, { id: "x-20260101T000000Z-00000000" }, { pid: PID + 1 }] as const) {
      const { run, id, events } = await finishedRun();
      let alive = true;
      const forgotten: string[] = [];
      const left = reportOf(run, id, events.slice(3), forged ?? {});
      const server = harness(
        { report_silence_ms: 30_000 },
        { processAlive: (pid) => pid === PID && alive, pidNamespace: HERE, leftReports: (of) => (of === id ? { reports: [left], forget: () => void forgotten.push(of) } : null) },
      );
      // Heard up to its third event; its server then missed the rest, and its end.
      await send(server, reportOf(run, id, events.slice(0, 3), { pid_namespace: HERE }));
      alive = false;
      server.clock.advance(2000);
      expect(forgotten).toEqual([id]);
      const snapshot = server.store.get(id)!;
      if (forged === null) {
        expect(snapshot).toMatchObject({ state: "succeeded", last_sequence: events.at(-1)!.sequence });
        expect(server.logged.join("\n")).toContain("left its end in .docket/reports/: taken, it succeeded");
      } else {
        expect(snapshot).toMatchObject({ state: "failed", failure: { error_code: "unavailable", context: { reason: "reporter_exited" } } });
        expect(server.logged.join("\n")).toContain("could not be taken: they are not this execution's, from the process that ran it");
      }
    }
  });

  test("the reports a gone run left are not taken, and stay on disk, while the store cannot write: taken then, its end was said taken and lost (checking tester, session 44)", async () => {
    const { run, id, events } = await finishedRun();
    let alive = true;
    const forgotten: string[] = [];
    const left = reportOf(run, id, events.slice(3));
    const server = harness({ report_silence_ms: 30_000 }, { processAlive: (pid) => pid === PID && alive, pidNamespace: HERE, leftReports: (of) => (of === id ? { reports: [left], forget: () => void forgotten.push(of) } : null) });
    await send(server, reportOf(run, id, events.slice(0, 3), { pid_namespace: HERE }));
    // .docket/ removed under the server: its store cannot write from now on.
    let fault: StorageFault | null = { reason: "state.db was removed while this server ran", since: new Date(0).toISOString() };
    server.store.storageFault = () => fault;
    alive = false;
    server.clock.advance(2000);
    expect(forgotten).toEqual([]);
    expect(server.logged.join("\n")).not.toContain("taken, it succeeded");
    expect(server.logged.join("\n")).toContain("are not taken for now, and kept for later");
    // Not ended for its silence meanwhile: its end is in the file.
    server.clock.advance(60_000);
    expect(server.store.get(id)!.state).toBe("running");
    expect(forgotten).toEqual([]);
    // Writable again, the next look takes them: the run's own end.
    fault = null;
    server.clock.advance(6000);
    expect(forgotten).toEqual([id]);
    expect(server.store.get(id)).toMatchObject({ state: "succeeded", failure: null });
    expect(server.logged.join("\n")).toContain("taken, it succeeded");
  });

  test("report a run sent before its process exited, read within the grace, is taken: the run ends as it reported (manual clock)", async () => {
    const { run, id, events } = await finishedRun();
    let alive = true;
    const server = harness({ report_silence_ms: 30_000 }, { processAlive: (pid) => pid === PID && alive, pidNamespace: HERE });
    await send(server, reportOf(run, id, events.slice(0, 3), { pid_namespace: HERE }));
    alive = false;
    // Seen gone at the next look; its last report was still waiting to be read.
    server.clock.advance(1000);
    expect(server.store.get(id)!.state).toBe("running");
    expect(await send(server, reportOf(run, id, events.slice(3), { pid_namespace: HERE }))).toMatchObject({ state: "succeeded", ended: true });
    server.clock.advance(30_000);
    expect(server.store.get(id)).toMatchObject({ state: "succeeded", failure: null });
  });

  test("report of a run waiting for its run_id whose process exits before the bind ends it cancelled at once, and its run_id runs (manual clock)", async () => {
    const run = harness();
    const id = run.engine.start({ capability: "demo.read", input: { n: 3 }, run_id: "rid-exit" }, RUN_EDGE, { hold: new Promise(() => undefined) }).execution.id;
    let alive = true;
    const server = harness({ report_silence_ms: 30_000 }, { processAlive: (pid) => pid === PID && alive, pidNamespace: HERE });
    await send(server, reportOf(run, id, run.store.events(id, 0, 1000)!.events, { input_hash: HASH, pid_namespace: HERE }));
    alive = false;
    server.clock.advance(2000);
    expect(server.store.get(id)).toMatchObject({ state: "cancelled", started_at: null, failure: { error_code: "cancelled", outcome_certainty: "not_applied" } });
    expect(server.store.get(id)!.failure!.message).toContain("exited without reporting its end before this server took its run_id");
    expect(server.engine.start({ capability: "demo.read", input: { n: 3 }, run_id: "rid-exit" }, EDGE).deduplicated).toBe(false);
  });

  test("report from another pid namespace (a container sharing the network) is never looked up: a pid this server cannot see is not taken for gone", async () => {
    const server = harness({ report_silence_ms: 30_000 }, { processAlive: () => false, pidNamespace: HERE });
    for (const pid_namespace of ["pid:[4026532999]", undefined]) {
      const run = harness();
      const runId = `rid-${pid_namespace ?? "none"}`.replace(/[^A-Za-z0-9._:-]/g, "");
      const id = run.engine.start({ capability: "demo.read", input: { n: 3 }, run_id: runId }, RUN_EDGE, { hold: new Promise(() => undefined) }).execution.id;
      const report = (extra: Partial<ExecutionReport>) => reportOf(run, id, run.store.events(id, 0, 1000)!.events, { input_hash: HASH, ...(pid_namespace ? { pid_namespace } : {}), ...extra });
      expect(await send(server, report({}))).toMatchObject({ state: "queued", run_id_bound: false });
      expect(await send(server, report({ bind_run_id: true }))).toMatchObject({ state: "queued", run_id_bound: true });
      server.clock.advance(5000);
      expect(server.store.get(id)!.state).toBe("queued");
    }
  });
});

describe("report ledger after a restart", () => {
  test("a cancel the earlier server answered reaches the run through the next one, which adopts it from the store", async () => {
    const { createEngine } = await import("../../runtime/execution/engine.ts");
    const { FakePool } = await import("./_support/fake-pool.ts");
    const { catalog } = await import("../_support/registered.ts");
    const { TEST_CAPABILITIES } = await import("./_support/harness.ts");
    const { run, id, events, task } = await finishedRun({ end: "hold" });
    const earlier = harness();
    await send(earlier, reportOf(run, id, events));
    expect(earlier.engine.cancel(id, { ...EDGE, actor: { kind: "cockpit" } })).toMatchObject({ requested: true, state: "cancelling" });
    // The earlier server dies before the run's next report: only its store is left.
    const later = createEngine({ registry: catalog(Object.values(TEST_CAPABILITIES)), store: earlier.store, pool: new FakePool(), limits: earlier.limits, root: "/checkout", storeKind: "sqlite", clock: earlier.clock, log: () => {} });
    task.emit({ type: "execution.log", data: { level: "info", message: "still working" } });
    await flush();
    const heard = await later.handle(EDGE).report(reportOf(run, id, run.store.events(id, events.length, 1000)!.events));
    expect(heard).toMatchObject({ through: events.length + 1, applied: 1, state: "cancelling", cancel_requested: true, requested_by: { kind: "cockpit" } });
    run.engine.cancel(id, { ...RUN_EDGE, actor: heard.requested_by! });
    task.end({ ok: false, error: { kind: "cancelled", message: "Cancelled" } });
    await flush();
    const own = run.store.events(id, 0, 1000)!.events.find((e) => e.type === "execution.cancel_requested")!;
    const last = await later.handle(EDGE).report(reportOf(run, id, run.store.events(id, heard.through, 1000)!.events, { cancel_sequence: own.sequence }));
    expect(last).toMatchObject({ state: "cancelled", ended: true });
    expect(earlier.store.get(id)).toMatchObject({ state: "cancelled", last_sequence: run.store.get(id)!.last_sequence });
  });

  /**
   * What an earlier server of the checkout left in its file: `runs` reported to it (each still
   * running), copied into a store that a new engine — the next server — opens with `options`.
   */
  async function restartedWith(runs: Array<Awaited<ReturnType<typeof finishedRun>>>, silenceMs: number, options: { processAlive?: (pid: number) => boolean; pidNamespace?: string; pid_namespace?: string } = {}) {
    const { createEngine } = await import("../../runtime/execution/engine.ts");
    const { createMemoryStore } = await import("../../runtime/store/memory-store.ts");
    const { resolveLimits } = await import("../../runtime/execution/limits.ts");
    const { ManualClock } = await import("../_support/manual-clock.ts");
    const { catalog } = await import("../_support/registered.ts");
    const { FakePool } = await import("./_support/fake-pool.ts");
    const { TEST_CAPABILITIES } = await import("./_support/harness.ts");
    const limits = resolveLimits({ overrides: { report_silence_ms: silenceMs } });
    const clock = new ManualClock();
    const store = createMemoryStore({ limits, clock: () => clock.now() });
    const earlier = harness();
    for (const run of runs) {
      await send(earlier, reportOf(run.run, run.id, run.events, options.pid_namespace ? { pid_namespace: options.pid_namespace } : {}));
      for (const event of earlier.store.events(run.id, 0, 1000)!.events) {
        if (event.type === "execution.created") {
          const s = earlier.store.get(run.id)!;
          store.create({ id: s.id, capability: s.capability, input: s.input, actor: s.actor, repository: s.repository, run_id: s.run_id, session_key: s.session_key, request_id: s.request_id, trace_id: s.trace_id, cancellable: s.cancellable, effect: s.effect });
        } else store.append(run.id, [{ type: event.type, data: event.data } as never]);
      }
    }
    const server = createEngine({ registry: catalog(Object.values(TEST_CAPABILITIES)), store, pool: new FakePool(), limits, root: "/checkout", storeKind: "sqlite", clock, log: () => {}, processAlive: options.processAlive, pidNamespace: options.pidNamespace });
    return { server, store, clock };
  }

  test("an engine adopts reported runs its durable store holds unfinished: a report resumes one, silence ends another unavailable", async () => {
    const heard = await finishedRun({ end: "hold" });
    const silent = await finishedRun({ end: "hold" });
    const { server, store, clock } = await restartedWith([heard, silent], 1000);
    clock.advance(600);
    heard.task.succeed({ n: 3 });
    await flush();
    const answer = await server.handle(EDGE).report(reportOf(heard.run, heard.id, heard.run.store.events(heard.id, 0, 1000)!.events));
    expect(answer).toMatchObject({ ended: true, state: "succeeded" });
    clock.advance(400);
    expect(store.get(silent.id)).toMatchObject({ state: "failed", failure: { error_code: "unavailable", outcome_certainty: "not_applied", context: { pid: PID } } });
    expect(store.get(heard.id)).toMatchObject({ state: "succeeded" });
    await server.close();
  });

  test("a run adopted after a restart whose process is not among this server's ends within seconds, saying so; one still alive keeps the whole limit (tester, session 33)", async () => {
    const HERE = "pid:[4026531836]";
    const gone = await finishedRun({ capability: "demo.write", input: {}, end: "hold" });
    let alive = true;
    const { server, store, clock } = await restartedWith([gone], 30_000, { processAlive: (pid) => pid === PID && alive, pidNamespace: HERE, pid_namespace: HERE });
    // Alive among this server's processes: looked at every second, and left the whole limit.
    clock.advance(5000);
    expect(store.get(gone.id)!.state).toBe("running");
    alive = false;
    clock.advance(2000);
    const snapshot = store.get(gone.id)!;
    expect(snapshot).toMatchObject({ state: "failed", failure: { error_code: "unavailable", outcome_certainty: "unknown", context: { pid: PID, reason: "reporter_not_found" } } });
    expect(snapshot.failure!.message).toContain(`docket run (pid ${PID}), which an earlier server of this checkout heard, is not among this machine's processes`);
    expect(snapshot.failure!.message).toContain("or it runs in another pid namespace (a container) this server cannot see");
    await server.close();
  });
});
