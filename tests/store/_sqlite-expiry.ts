import { describe, expect, test } from "bun:test";
import { draft, idOf, newExecution, pathTo, TestClock } from "./_fixtures.ts";
import { openStore, tempDb } from "./_sqlite-support.ts";
import { limitsWith } from "./_fixtures.ts";
import { createSqliteStore } from "../../runtime/store/sqlite-store.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { mayExpire } from "../../runtime/execution/retention.ts";

const DAY = 24 * 60 * 60 * 1000;

/** Terminal details expire after `details_retention_ms`; identities stay (docs/limits.md and docs/architecture.md). */
export function expiryCases(): void {
  describe("sqlite store expiry", () => {
    test("sqlite store drops the details of executions finished longer than details_retention_ms ago and keeps their identity", () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock, { details_retention_ms: 7 * DAY });
      store.create(newExecution(1, { run_id: "run-1" }));
      store.recordRun({ run_id: "run-1", execution_id: idOf(1), capability: "demo.read", input_hash: "hash-1" });
      store.append(idOf(1), [draft.started(), draft.step("a"), draft.log("one"), draft.log("two"), draft.diagnostic("d"), draft.progress(1, 1), draft.stepDone("a"), draft.completed("succeeded", { big: "x".repeat(1000) })]);
      store.create(newExecution(2));
      store.append(idOf(2), pathTo("failed"));
      const failedBefore = store.get(idOf(2))!;
      clock.advance(3 * DAY);
      store.create(newExecution(3));
      store.append(idOf(3), pathTo("succeeded"));
      store.create(newExecution(4));
      store.append(idOf(4), pathTo("running"));
      const recentBefore = store.get(idOf(3))!;
      const runningBefore = store.get(idOf(4))!;
      const countsBefore = store.list().counts;

      clock.advance(4 * DAY);
      // Exactly at the edge nothing goes: details are kept for the whole retention.
      expect(store.expireDetails()).toBe(0);
      clock.advance(1);
      expect(store.expireDetails()).toBe(2);

      const expired = store.get(idOf(1))!;
      expect(expired).toMatchObject({
        id: idOf(1),
        capability: "demo.read",
        state: "succeeded",
        run_id: "run-1",
        request_id: "req-1",
        created_at: "2026-09-08T01:02:03.000Z",
        finished_at: "2026-09-08T01:02:03.000Z",
        details_expired: true,
        input: null,
        output: null,
        steps: [],
        progress: null,
        log: [],
        log_dropped: 2,
        diagnostics: [],
        diagnostics_dropped: 1,
        last_sequence: 9,
        retained_from: 10,
        truncated: true,
      });
      expect(store.events(idOf(1))).toEqual({ events: [], retained_from: 10, truncated: true, last_sequence: 9 });
      // The failure is small, bounded and what every surface projects: it stays.
      expect(store.get(idOf(2))).toMatchObject({ details_expired: true, failure: failedBefore.failure, state: "failed" });
      expect("output" in store.get(idOf(2))!).toBe(false);
      expect(store.findRun("run-1")).toEqual({ run_id: "run-1", execution_id: idOf(1), capability: "demo.read", input_hash: "hash-1" });
      expect(store.get(idOf(3))).toEqual(recentBefore);
      expect(store.get(idOf(4))).toEqual(runningBefore);
      expect(store.list().counts).toEqual(countsBefore);
      expect(store.list().items.map((s) => s.id)).toEqual([idOf(4), idOf(3), idOf(2), idOf(1)]);
      expect(store.expireDetails()).toBe(0);
      store.close();

      // On open, what has aged since expires at once; the running one is recovered, not expired.
      clock.advance(3 * DAY);
      const reopened = openStore(path, clock, { details_retention_ms: 7 * DAY });
      expect(reopened.get(idOf(1))).toEqual(expired);
      expect(reopened.get(idOf(3))).toMatchObject({ details_expired: true, input: null, output: null });
      expect(reopened.get(idOf(4))).toMatchObject({ state: "failed", failure: { error_code: "interrupted" } });
      expect(reopened.get(idOf(4))!.details_expired).toBeUndefined();
      // What expired, before or on open, is not expired again.
      expect(reopened.expireDetails()).toBe(0);
      reopened.close();
    });
  
    test("sqlite store keeps the details of an unknown outcome, and of executions whose artifacts are held, past details_retention_ms", () => {
      const clock = new TestClock();
      const held = new Set<string>([idOf(2)]);
      const store = createSqliteStore({ path: tempDb(), limits: limitsWith({ details_retention_ms: DAY }), clock: clock.now, onListenerError: () => {}, artifactsHeld: (id) => held.has(id) });
      const unknown = buildFailure({ error_code: "interrupted", stage: "run", message: "stopped", request_id: "r", trace_id: "t", retryability: "manual_reconcile", outcome_certainty: "unknown" });
      store.create(newExecution(1, { effect: "write" }));
      store.append(idOf(1), [draft.started(), draft.log("evidence"), { type: "execution.completed", data: { state: "failed", failure: unknown, duration_ms: 1 } }]);
      store.create(newExecution(2));
      store.append(idOf(2), [draft.started(), draft.log("with artifacts"), draft.completed("succeeded")]);
      store.create(newExecution(3));
      store.append(idOf(3), [draft.started(), draft.log("plain"), draft.completed("succeeded")]);
      const unknownBefore = store.get(idOf(1))!;
      const heldBefore = store.get(idOf(2))!;
      clock.advance(30 * DAY);
      expect(store.expireDetails()).toBe(1);
      expect(store.get(idOf(3))!.details_expired).toBe(true);
      expect(store.get(idOf(1))).toEqual(unknownBefore);
      expect(store.get(idOf(1))!.log.map((l) => l.message)).toEqual(["evidence"]);
      expect(store.events(idOf(1))!.events).toHaveLength(4);
      expect(store.get(idOf(2))).toEqual(heldBefore);
      // Released: the next expiry lets its details go; the unknown outcome still keeps them.
      held.delete(idOf(2));
      expect(store.expireDetails()).toBe(1);
      expect(store.get(idOf(2))).toMatchObject({ details_expired: true, log: [], state: "succeeded" });
      expect(store.get(idOf(1))).toEqual(unknownBefore);
      store.close();
    });

    test("mayExpire lets go only of terminal executions with released (or no) artifacts and a known outcome", () => {
      const failure = (outcome_certainty: "unknown" | "applied" | "not_applied") => buildFailure({ error_code: "interrupted", stage: "run", message: "m", request_id: "r", trace_id: "t", outcome_certainty });
      expect(mayExpire({ state: "succeeded", failure: null }, { artifactsHeld: false })).toBe(true);
      expect(mayExpire({ state: "succeeded", failure: null }, { artifactsHeld: true })).toBe(false);
      expect(mayExpire({ state: "running", failure: null }, { artifactsHeld: false })).toBe(false);
      expect(mayExpire({ state: "failed", failure: failure("unknown") }, { artifactsHeld: false })).toBe(false);
      expect(mayExpire({ state: "failed", failure: failure("applied") }, { artifactsHeld: false })).toBe(true);
      expect(mayExpire({ state: "cancelled", failure: failure("not_applied") }, { artifactsHeld: false })).toBe(true);
    });
  });
}
