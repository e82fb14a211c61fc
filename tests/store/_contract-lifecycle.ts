import { describe, expect, test } from "bun:test";
import { EXECUTION_STATES, IllegalTransitionError, isTerminal, mayMoveTo } from "../../runtime/execution/state-machine.ts";
import { allEvents, draft, expectValidEvent, idOf, moveTo, newExecution, pathTo, type Fixture } from "./_fixtures.ts";

/** create, append, the lifecycle moves, and what a snapshot shows of them. */
export function lifecycleCases(f: Fixture): void {
  describe("lifecycle", () => {
    test("store.create answers a queued snapshot and stores execution.created at sequence 1", () => {
      const store = f.make();
      const snapshot = store.create(newExecution(1, { run_id: "run-1", session_key: "s", capability_version: "sha256:0123456789abcdef" }));
      expect(snapshot).toMatchObject({ id: idOf(1), capability: "demo.read", capability_version: "sha256:0123456789abcdef", state: "queued", actor: { kind: "http" }, repository: "/repo", run_id: "run-1", session_key: "s", request_id: "req-1", created_at: f.clock.iso(), started_at: null, finished_at: null, duration_ms: null, cancellable: true, effect: "read", input: { n: 1 }, failure: null, steps: [], progress: null, diagnostics: [], diagnostics_dropped: 0, log: [], log_dropped: 0, last_sequence: 1, retained_from: 1, truncated: false });
      expect(snapshot.links.self).toBe(`/api/v1/executions/get?id=${idOf(1)}`);
      expect("output" in snapshot).toBe(false);
      const [created] = store.events(idOf(1))!.events;
      expect(created).toEqual({ schema_version: "1", event_id: `${idOf(1)}#1`, execution_id: idOf(1), sequence: 1, timestamp: f.clock.iso(), type: "execution.created", data: { capability: "demo.read", input: { n: 1 }, actor: { kind: "http" }, run_id: "run-1", session_key: "s", capability_version: "sha256:0123456789abcdef" } });
      expect(store.get(idOf(1))).toEqual(snapshot);
    });

    test("store.create refuses an id it already holds", () => {
      const store = f.make();
      store.create(newExecution(1));
      expect(() => store.create(newExecution(1))).toThrow(/already holds/);
      expect(store.events(idOf(1))!.last_sequence).toBe(1);
    });

    test("store.append numbers events densely from 1 and stamps them from the clock", () => {
      const store = f.make();
      store.create(newExecution(1));
      f.clock.advance(1500);
      const first = store.append(idOf(1), [draft.started(), draft.progress(1)]);
      f.clock.advance(10);
      const second = store.append(idOf(1), [draft.progress(2), draft.log("hi"), draft.progress(3)]);
      const third = store.append(idOf(1), []);
      expect(third).toEqual([]);
      expect([...first, ...second].map((e) => e.sequence)).toEqual([2, 3, 4, 5, 6]);
      expect(second.map((e) => e.timestamp)).toEqual(Array(3).fill(f.clock.iso()));
      const events = allEvents(store, idOf(1));
      expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(events.map((e) => e.event_id)).toEqual([1, 2, 3, 4, 5, 6].map((s) => `${idOf(1)}#${s}`));
      expect(events.every((e) => e.schema_version === "1" && e.execution_id === idOf(1))).toBe(true);
      expect(store.get(idOf(1))!.last_sequence).toBe(6);
    });

    test("store.create and store.append keep the times they are given (a reported run's own) instead of the clock's", () => {
      const store = f.make();
      f.clock.advance(60_000);
      const created = store.create(newExecution(1, { created_at: "2026-09-08T01:02:03.100Z" }));
      expect(created.created_at).toBe("2026-09-08T01:02:03.100Z");
      const stored = store.append(idOf(1), [draft.started(), draft.log("hi"), draft.completed("succeeded")], { timestamps: ["2026-09-08T01:02:03.200Z", "2026-09-08T01:02:03.250Z", "2026-09-08T01:02:04.000Z"] });
      expect(stored.map((e) => e.timestamp)).toEqual(["2026-09-08T01:02:03.200Z", "2026-09-08T01:02:03.250Z", "2026-09-08T01:02:04.000Z"]);
      expect(store.get(idOf(1))).toMatchObject({ created_at: "2026-09-08T01:02:03.100Z", started_at: "2026-09-08T01:02:03.200Z", finished_at: "2026-09-08T01:02:04.000Z" });
      expect(allEvents(store, idOf(1)).map((e) => e.timestamp)).toEqual(["2026-09-08T01:02:03.100Z", "2026-09-08T01:02:03.200Z", "2026-09-08T01:02:03.250Z", "2026-09-08T01:02:04.000Z"]);
      // Without times, the clock's, as always.
      store.create(newExecution(2));
      expect(store.get(idOf(2))!.created_at).toBe(f.clock.iso());
    });

    test("store.append refuses an execution it does not hold, naming it", () => {
      const store = f.make();
      expect(() => store.append(idOf(9), [draft.progress(1)])).toThrow(idOf(9));
    });

    test("store.append moves the state on lifecycle events and fills the snapshot", () => {
      const store = f.make();
      store.create(newExecution(1));
      f.clock.advance(100);
      store.append(idOf(1), [draft.started()]);
      const startedAt = f.clock.iso();
      expect(store.get(idOf(1))).toMatchObject({ state: "running", started_at: startedAt });
      store.append(idOf(1), [draft.cancelRequested()]);
      expect(store.get(idOf(1))!.state).toBe("cancelling");
      f.clock.advance(50);
      store.append(idOf(1), [draft.completed("succeeded", { files: 3 })]);
      expect(store.get(idOf(1))).toMatchObject({ state: "succeeded", started_at: startedAt, finished_at: f.clock.iso(), duration_ms: 12.5, output: { files: 3 }, failure: null });

      store.create(newExecution(2));
      store.append(idOf(2), pathTo("failed"));
      const failed = store.get(idOf(2))!;
      expect(failed).toMatchObject({ state: "failed", failure: { error_code: "internal", stage: "run" } });
      expect("output" in failed).toBe(false);

      store.create(newExecution(3));
      store.append(idOf(3), [draft.completed("cancelled")]);
      expect(store.get(idOf(3))).toMatchObject({ state: "cancelled", started_at: null, failure: { error_code: "cancelled" } });
    });

    test("the snapshot keeps who asked an execution to stop, when and why, after retention lets the event go and after the end (checking tester, session 42)", () => {
      const store = f.make({ events_retained: 10 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      f.clock.advance(100);
      const at = f.clock.iso();
      store.append(idOf(1), [{ type: "execution.cancel_requested", data: { actor: { kind: "http" }, reason: "deadline_ms" } }]);
      expect(store.get(idOf(1))!.cancel_requested).toEqual({ actor: { kind: "http" }, at, reason: "deadline_ms" });
      // A handler logging through its grace: the event leaves the retained history, the snapshot keeps it.
      for (let i = 0; i < 30; i++) store.append(idOf(1), [{ type: "execution.log", data: { level: "info", message: `line ${i}` } }]);
      expect(store.events(idOf(1))!.events.some((event) => event.type === "execution.cancel_requested")).toBe(false);
      expect(store.get(idOf(1))).toMatchObject({ state: "cancelling", truncated: true, cancel_requested: { actor: { kind: "http" }, at, reason: "deadline_ms" } });
      store.append(idOf(1), [draft.completed("succeeded", { n: 1 })]);
      expect(store.get(idOf(1))).toMatchObject({ state: "succeeded", cancel_requested: { at, reason: "deadline_ms" } });
      // Asked by someone: no reason; never asked: no field.
      store.create(newExecution(2));
      store.append(idOf(2), [draft.started(), draft.cancelRequested(), draft.completed("cancelled")]);
      expect(store.get(idOf(2))!.cancel_requested).toEqual({ actor: { kind: "cli", pid: 42 }, at: f.clock.iso() });
      store.create(newExecution(3));
      store.append(idOf(3), pathTo("succeeded"));
      expect(store.get(idOf(3))).not.toHaveProperty("cancel_requested");
    });

    test("store.append shows a succeeded execution's output even when the handler returned nothing", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), { type: "execution.completed", data: { state: "succeeded", duration_ms: 1 } }]);
      const snapshot = store.get(idOf(1))!;
      expect("output" in snapshot).toBe(true);
      expect(snapshot.output ?? null).toBeNull();
    });

    test("store.append allows every move mayMoveTo allows", () => {
      for (const from of EXECUTION_STATES) {
        for (const to of EXECUTION_STATES) {
          if (!mayMoveTo(from, to)) continue;
          const store = f.make();
          store.create(newExecution(1));
          store.append(idOf(1), pathTo(from));
          store.append(idOf(1), [moveTo(to)]);
          expect(store.get(idOf(1))!.state).toBe(to);
        }
      }
    });

    test("store.append refuses every move mayMoveTo refuses, from every state, and applies nothing of the batch", () => {
      let refused = 0;
      for (const from of EXECUTION_STATES) {
        for (const to of EXECUTION_STATES) {
          if (mayMoveTo(from, to)) continue;
          const store = f.make();
          store.create(newExecution(1));
          store.append(idOf(1), pathTo(from));
          const before = store.get(idOf(1))!;
          const eventsBefore = allEvents(store, idOf(1));
          // A legal event first: the refusal must take the whole batch back.
          expect(() => store.append(idOf(1), [draft.log("first"), draft.progress(1), moveTo(to)])).toThrow(IllegalTransitionError);
          expect(store.get(idOf(1))).toEqual(before);
          expect(allEvents(store, idOf(1))).toEqual(eventsBefore);
          refused++;
          if (!isTerminal(from)) {
            // Still usable, and numbering continues without a hole.
            const [next] = store.append(idOf(1), [draft.progress(2)]);
            expect(next!.sequence).toBe(before.last_sequence + 1);
          }
        }
      }
      expect(refused).toBe(28); // 36 pairs, 8 of them legal
    });

    test("store.append checks moves in batch order: a move legal alone is refused after another in the same batch", () => {
      const store = f.make();
      store.create(newExecution(1));
      expect(() => store.append(idOf(1), [draft.started(), draft.started()])).toThrow(IllegalTransitionError);
      expect(() => store.append(idOf(1), [draft.started(), draft.completed("succeeded"), draft.log("late")])).toThrow(IllegalTransitionError);
      expect(store.get(idOf(1))!.state).toBe("queued");
      expect(store.get(idOf(1))!.last_sequence).toBe(1);
      store.append(idOf(1), [draft.started(), draft.completed("succeeded")]);
      expect(store.get(idOf(1))!.state).toBe("succeeded");
    });

    test("store.append refuses an output JSON cannot carry and applies nothing of the batch", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      const before = store.get(idOf(1))!;
      expect(() => store.append(idOf(1), [draft.log("kept?"), draft.completed("succeeded", { big: 10n })])).toThrow();
      expect(store.get(idOf(1))).toEqual(before);
      expect(store.events(idOf(1))!.last_sequence).toBe(2);
    });

    test("store.append refuses execution.created: it is written once, by create", () => {
      const store = f.make();
      store.create(newExecution(1));
      expect(() => store.append(idOf(1), [draft.created()])).toThrow(IllegalTransitionError);
      expect(store.events(idOf(1))!.events).toHaveLength(1);
    });

    test("store.get of a terminal execution never changes afterwards", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), draft.step("a"), draft.log("one"), draft.diagnostic("d"), draft.progress(1, 2), draft.completed("succeeded", { list: [1, 2] })]);
      const read = store.get(idOf(1))!;
      const copy = structuredClone(read);
      for (const late of [draft.log("late"), draft.progress(2), draft.stream("x"), draft.completed("failed"), draft.started(), draft.cancelRequested(), draft.stepDone("a")]) {
        expect(() => store.append(idOf(1), [late])).toThrow(IllegalTransitionError);
      }
      expect(store.get(idOf(1))).toEqual(copy);
      expect(read).toEqual(copy);
      // A caller changing what it read changes nothing in the store, nor what others read.
      try {
        read.steps[0]!.title = "changed";
        read.log[0]!.message = "changed";
        read.log.push(read.log[0]!);
        read.diagnostics[0]!.message = "changed";
        read.progress!.current = 99;
        (read.output as { list: number[] }).list.push(3);
        (read.input as { n: number }).n = 7;
      } catch {
        // A store may hand out frozen values; then the change is refused outright.
      }
      expect(store.get(idOf(1))).toEqual(copy);
      expect(store.list().items[0]).toEqual(copy);
    });

    test("store.get of a running execution is a copy that later appends do not change", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), draft.step("a"), draft.log("one")]);
      const read = store.get(idOf(1))!;
      const copy = structuredClone(read);
      store.append(idOf(1), [draft.stepDone("a", false, "broke"), draft.log("two"), draft.progress(5)]);
      expect(read).toEqual(copy);
      expect(store.get(idOf(1))).toMatchObject({ steps: [{ id: "a", state: "failed", message: "broke" }], progress: { current: 5, total: null, message: null } });
    });

    test("store.append folds steps, progress and log lines into the snapshot", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      f.clock.advance(5);
      const t1 = f.clock.iso();
      store.append(idOf(1), [draft.step("scan", "Scanning"), draft.progress(3, 10), draft.log("reading", "warn")]);
      f.clock.advance(5);
      store.append(idOf(1), [draft.stepDone("scan", true, "3 files"), draft.stepDone("orphan", false), { type: "execution.progress", data: { current: 4, message: "almost" } }]);
      const snapshot = store.get(idOf(1))!;
      expect(snapshot.steps).toEqual([
        { id: "scan", title: "Scanning", state: "succeeded", message: "3 files", started_at: t1, finished_at: f.clock.iso() },
        { id: "orphan", title: "orphan", state: "failed", message: null, started_at: f.clock.iso(), finished_at: f.clock.iso() },
      ]);
      expect(snapshot.progress).toEqual({ current: 4, total: null, message: "almost" });
      expect(snapshot.log).toEqual([{ sequence: 5, timestamp: t1, level: "warn", message: "reading" }]);
    });

    test("store events all validate against the protocol's ExecutionEventSchema", () => {
      const store = f.make({ log_line_bytes: 64 });
      const delivered: unknown[] = [];
      store.subscribe({ executions: "all" }, (event, json) => delivered.push(JSON.parse(json ?? JSON.stringify(event))));
      store.create(newExecution(1, { run_id: "r", session_key: "k", actor: { kind: "mcp", client: "agent" } }));
      store.append(idOf(1), [draft.started(), draft.step("s"), draft.progress(1), draft.progress(2, 3), draft.log("\u001b[31mred\u001b[0m\n" + "é".repeat(80)), draft.stream("a\rb\u0007"), draft.diagnostic("x".repeat(200)), draft.stepDone("s", false, "no"), draft.cancelRequested()]);
      store.append(idOf(1), [draft.completed("failed")]);
      store.create(newExecution(2, { actor: { kind: "cli", pid: 7 } }));
      store.append(idOf(2), [draft.started(), draft.completed("succeeded", { nested: { deep: [1, "two", null] } })]);
      const stored = [...allEvents(store, idOf(1)), ...allEvents(store, idOf(2))];
      expect(stored).toHaveLength(14);
      for (const event of stored) expectValidEvent(event);
      expect(delivered).toEqual(JSON.parse(JSON.stringify(stored)));
      for (const event of delivered) expectValidEvent(event);
    });

    test("store.release refuses an execution that has not finished, and keeps the run identity", () => {
      const store = f.make();
      store.create(newExecution(1, { run_id: "r1" }));
      store.recordRun({ run_id: "r1", execution_id: idOf(1), capability: "demo.read", input_hash: "h" });
      expect(() => store.release(idOf(1))).toThrow(/queued/);
      store.append(idOf(1), [draft.started()]);
      expect(() => store.release(idOf(1))).toThrow(/running/);
      store.append(idOf(1), [draft.completed("succeeded")]);
      store.release(idOf(1));
      expect(store.findRun("r1")).toEqual({ run_id: "r1", execution_id: idOf(1), capability: "demo.read", input_hash: "h" });
      expect(() => store.release(idOf(2))).toThrow(idOf(2));
    });

    test("store.close ends subscriptions and refuses further work", () => {
      const store = f.make();
      store.create(newExecution(1));
      const seen: number[] = [];
      store.subscribe({ executions: [idOf(1)] }, (e) => seen.push(e.sequence));
      store.close();
      expect(() => store.append(idOf(1), [draft.started()])).toThrow(/closed/);
      expect(() => store.create(newExecution(2))).toThrow(/closed/);
      expect(seen).toEqual([1]);
      store.close();
    });
  });
}
