// A run that comes back after the server ended it for silence reports its real end, recorded as
// a reconciliation (docs/reconciliation.md): the server's terminal state never moves.
import { describe, expect, test } from "bun:test";
import type { EdgeInfo } from "../../runtime/execution/plane.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import type { ExecutionReport } from "../../runtime/execution/report-protocol.ts";
import { EDGE, harness, type Harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";

const PID = 4242;
const RUN_EDGE: EdgeInfo = { actor: { kind: "cli", pid: PID }, request_id: "r-run", trace_id: "0af7651916cd43dd8448eb211c80319c" };

/** A run's own engine with demo.write started and a step reported; the test ends it. */
async function runOf() {
  const run = harness();
  const id = run.engine.start({ capability: "demo.write", input: {} }, RUN_EDGE).execution.id;
  await flush();
  const task = run.pool.of(id)!;
  task.emit({ type: "execution.step", data: { id: "push", title: "Pushing" } });
  await flush();
  return { run, id, task, events: () => run.store.events(id, 0, 1000)!.events };
}

function reportOf(run: Harness, id: string, events: readonly ExecutionEvent[]): ExecutionReport {
  const s = run.store.get(id)!;
  return { id, pid: PID, capability: s.capability, input: s.input, effect: s.effect, cancellable: s.cancellable, run_id: s.run_id, session_key: s.session_key, request_id: s.request_id, trace_id: s.trace_id, events: [...events] };
}

const send = (server: Harness, report: ExecutionReport) => server.engine.handle(EDGE).report(report);

/** The server heard the run's first events, then nothing for its silence: failed unavailable. */
async function silenced() {
  const r = await runOf();
  const server = harness({ report_silence_ms: 1000 });
  await send(server, reportOf(r.run, r.id, r.events()));
  server.clock.advance(1000);
  const ended = server.store.get(r.id)!;
  expect(ended).toMatchObject({ state: "failed", failure: { error_code: "unavailable", outcome_certainty: "unknown" } });
  return { ...r, server, ended };
}

describe("runs that come back", () => {
  test("report of a run the server ended for silence answers takes_end; its real end becomes the reconciliation, the state stays", async () => {
    const { run, id, task, server, ended, events } = await silenced();
    // Heard again while still working: the server says it takes the run's end.
    const again = await send(server, reportOf(run, id, events()));
    expect(again).toMatchObject({ ended: true, takes_end: true, state: "failed", applied: 0 });

    task.succeed({ ok: true });
    await flush();
    const end = events().at(-1)!;
    expect(end.type).toBe("execution.completed");
    const answer = await send(server, reportOf(run, id, [end]));
    expect(answer).toMatchObject({ ended: true, takes_end: false, state: "failed" });
    expect(answer.message).toContain("recorded as its reconciliation (applied)");

    const snapshot = server.store.get(id)!;
    expect(snapshot.state).toBe("failed");
    expect(snapshot.failure).toEqual(ended.failure);
    expect(snapshot.reconciliation).toMatchObject({
      outcome: "applied",
      method: "run",
      actor: { kind: "cli", pid: PID },
      evidence: { reported_by: { pid: PID }, state: "succeeded", sequence: end.sequence, output: { ok: true } },
    });
    expect(snapshot.reconciliation!.note).toContain(`docket run (pid ${PID}) came back`);
    const types = server.store.events(id, 0, 1000)!.events.map((e) => e.type);
    expect(types.slice(-2)).toEqual(["execution.completed", "execution.reconciled"]);
    expect(server.logged.some((l) => l.includes(`${id} (demo.write) reconciled as applied (run)`))).toBe(true);
    // Sent again (a lost answer): nothing more is recorded.
    expect(await send(server, reportOf(run, id, [end]))).toMatchObject({ ended: true, takes_end: false });
    expect(server.store.events(id, 0, 1000)!.events.filter((e) => e.type === "execution.reconciled")).toHaveLength(1);
    // Release is possible now.
    expect(server.engine.handle(EDGE).release(id)).toEqual({ id, released: 0 });
  });

  test("report of a run's end that knows its outcome settles it as that outcome; an unknown one settles nothing", async () => {
    const failedKnown = await silenced();
    failedKnown.task.end({ ok: false, error: { kind: "capability", code: "rejected", message: "the remote refused the push", context: {} } });
    await flush();
    // A CapabilityError of a write is unknown by default: the run's end does not settle it.
    await send(failedKnown.server, reportOf(failedKnown.run, failedKnown.id, [failedKnown.events().at(-1)!]));
    expect(failedKnown.server.store.get(failedKnown.id)!.reconciliation).toBeUndefined();
    expect(failedKnown.server.logged.some((l) => l.includes("stays unsettled for a person to reconcile"))).toBe(true);
    // A person still can.
    await failedKnown.server.engine.handle(EDGE).reconcile({ id: failedKnown.id, outcome: "not_applied", note: "the remote has nothing" });

    // A CapabilityError that knows nothing was applied settles it as not_applied.
    const refused = await silenced();
    refused.task.end({ ok: false, error: { kind: "capability", code: "rejected", message: "the remote refused the push", context: {}, outcome_certainty: "not_applied" } });
    await flush();
    const end = refused.events().at(-1)! as ExecutionEvent<"execution.completed">;
    expect(end.data.failure!.outcome_certainty).toBe("not_applied");
    await send(refused.server, reportOf(refused.run, refused.id, [end]));
    expect(refused.server.store.get(refused.id)!.reconciliation).toMatchObject({
      outcome: "not_applied",
      method: "run",
      evidence: { state: "failed", failure: { error_code: "rejected", outcome_certainty: "not_applied", message: "the remote refused the push" } },
    });
  });

  test("report: the reconciliation of a run's end is refused when someone settled it first, and never comes from another pid", async () => {
    const { run, id, task, server, events } = await silenced();
    await server.engine.handle(EDGE).reconcile({ id, outcome: "not_applied", note: "checked by hand" });
    task.succeed({ ok: true });
    await flush();
    const answer = await send(server, reportOf(run, id, [events().at(-1)!]));
    expect(answer).toMatchObject({ ended: true, takes_end: false });
    expect(server.store.get(id)!.reconciliation).toMatchObject({ outcome: "not_applied", method: "manual" });
    expect(() => send(server, { ...reportOf(run, id, [events().at(-1)!]), pid: PID + 1 })).toThrow(/process 4242 reports that execution/);
  });
});
