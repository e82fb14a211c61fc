import { describe, expect, test } from "bun:test";
import type { EventDraft } from "../../runtime/execution/protocol.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import { IllegalTransitionError } from "../../runtime/execution/state-machine.ts";
import { allEvents, draft, expectValidEvent, idOf, newExecution, type Fixture } from "./_fixtures.ts";

/** A write stopped by force: failed, outcome unknown (docs/reconciliation.md). */
export const unknownEnd: EventDraft = {
  type: "execution.completed",
  data: { state: "failed", failure: buildFailure({ error_code: "deadline_exceeded", stage: "run", message: "too slow", retryability: "manual_reconcile", outcome_certainty: "unknown", request_id: "r", trace_id: "t" }), duration_ms: 9 },
};

/** A reconciliation draft. */
export const reconciled = (outcome: "applied" | "not_applied" = "applied", note = "checked"): EventDraft => ({ type: "execution.reconciled", data: { outcome, method: "manual", actor: { kind: "cockpit" }, note } });

/** The one event after completion: `execution.reconciled`, once, only for an unknown outcome. */
export function reconcileCases(f: Fixture): void {
  describe("reconciliation", () => {
    test("store.append takes one execution.reconciled after an unknown completion: the state stays, the snapshot shows it", () => {
      const store = f.make({ diagnostic_message_bytes: 64 });
      store.create(newExecution(1, { effect: "write" }));
      store.append(idOf(1), [draft.started(), unknownEnd]);
      const ended = store.get(idOf(1))!;
      f.clock.advance(5000);
      const [event] = store.append(idOf(1), [reconciled("not_applied", `nothing was pushed\u001b[31m ${"x".repeat(100)}`)]);
      expectValidEvent(event);
      expect(event!.sequence).toBe(4);
      const snapshot = store.get(idOf(1))!;
      expect(snapshot).toMatchObject({ state: "failed", failure: ended.failure, finished_at: ended.finished_at, duration_ms: 9, last_sequence: 4 });
      expect(snapshot.reconciliation).toEqual({ outcome: "not_applied", method: "manual", actor: { kind: "cockpit" }, note: expect.stringMatching(/^nothing was pushed x+…$/), at: f.clock.iso() });
      // The note is as safe and as bounded as a diagnostic's message.
      expect(new TextEncoder().encode(snapshot.reconciliation!.note!).length).toBeLessThanOrEqual(64);
      expect(allEvents(store, idOf(1)).map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.completed", "execution.reconciled"]);
      expect(store.list({ state: "failed" }).items[0]!.reconciliation!.outcome).toBe("not_applied");
    });

    test("store.append refuses execution.reconciled before completion, twice, or for a known outcome, leaving no trace", () => {
      const store = f.make();
      store.create(newExecution(1, { effect: "write" }));
      expect(() => store.append(idOf(1), [reconciled()])).toThrow(IllegalTransitionError);
      store.append(idOf(1), [draft.started()]);
      expect(() => store.append(idOf(1), [reconciled()])).toThrow(/still running/);
      store.append(idOf(1), [unknownEnd, reconciled()]);
      expect(() => store.append(idOf(1), [reconciled("not_applied")])).toThrow(/already reconciled/);
      expect(() => store.append(idOf(1), [draft.log("late")])).toThrow(/terminal execution takes no more events/);
      expect(store.get(idOf(1))).toMatchObject({ last_sequence: 4, reconciliation: { outcome: "applied" } });

      store.create(newExecution(2));
      store.append(idOf(2), [draft.started(), draft.completed("succeeded")]);
      expect(() => store.append(idOf(2), [reconciled()])).toThrow(/not unknown/);
      store.create(newExecution(3));
      store.append(idOf(3), [draft.started(), draft.completed("failed")]);
      expect(() => store.append(idOf(3), [reconciled()])).toThrow(/not unknown/);
      expect(store.get(idOf(3))!.last_sequence).toBe(3);
      expect(store.get(idOf(3))!.reconciliation).toBeUndefined();
    });

    test("store.subscribe delivers execution.reconciled to a follower of the execution, after its completion", async () => {
      const store = f.make();
      store.create(newExecution(1, { effect: "write" }));
      store.append(idOf(1), [draft.started(), unknownEnd]);
      const seen: string[] = [];
      const subscription = store.subscribe({ executions: [idOf(1)], after: 3 }, (event) => seen.push(`${event.sequence} ${event.type}`));
      store.append(idOf(1), [reconciled()]);
      // Delivered once committed (docs/durability.md): at once in memory, a tick later in sqlite.
      await store.durable();
      subscription.unsubscribe();
      expect(seen).toEqual(["4 execution.reconciled"]);
    });

    test("store keeps an unreconciled unknown outcome past executions_retained, forgets it once reconciled, and the oldest unsettled only when they alone exceed the bound", () => {
      const store = f.make({ executions_retained: 2 });
      store.create(newExecution(1, { effect: "write" }));
      store.append(idOf(1), [draft.started(), unknownEnd]);
      for (let n = 2; n <= 5; n++) {
        store.create(newExecution(n));
        store.append(idOf(n), [draft.started(), draft.completed("succeeded")]);
      }
      // The known outcomes went oldest first; the unknown one, older than all of them, stays.
      expect(store.get(idOf(1))).toMatchObject({ state: "failed", failure: { outcome_certainty: "unknown" } });
      expect(store.get(idOf(2))).toBeNull();
      expect(store.list().items.map((s) => s.id)).toEqual([idOf(5), idOf(1)]);
      // Settled, it is the oldest finished execution again, and goes first.
      store.append(idOf(1), [reconciled()]);
      store.create(newExecution(6));
      expect(store.get(idOf(1))).toBeNull();
      expect(store.list().items.map((s) => s.id)).toEqual([idOf(6), idOf(5)]);
      // Bounded all the same: once three unsettled ones outnumber a bound of two, the next
      // creation forgets the oldest of them (6 stays queued: an active one never goes).
      for (let n = 7; n <= 9; n++) {
        store.create(newExecution(n, { effect: "write" }));
        store.append(idOf(n), [draft.started(), unknownEnd]);
      }
      expect(store.get(idOf(5))).toBeNull();
      expect(store.get(idOf(7))).not.toBeNull();
      // Known outcomes went without a word; an unsettled one is told, for the server's log (durability tester, session 42).
      expect(f.forgotUnsettled).toEqual([]);
      store.create(newExecution(10));
      expect(store.get(idOf(7))).toBeNull();
      expect(f.forgotUnsettled).toEqual([{ id: idOf(7), capability: store.get(idOf(8))!.capability }]);
      expect([8, 9].map((n) => store.get(idOf(n))?.failure?.outcome_certainty)).toEqual(["unknown", "unknown"]);
      expect(store.list().items.map((s) => s.id)).toEqual([idOf(10), idOf(9), idOf(8), idOf(6)]);
    });
  });
}
