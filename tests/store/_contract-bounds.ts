import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { allEvents, bytes, draft, idOf, newExecution, pathTo, type Fixture } from "./_fixtures.ts";

// Every control character but \t and \n (C0, DEL, C1), and ESC in particular.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
/** The text with its whole colour (SGR) sequences removed: the one escape the store keeps. */
const withoutSgr = (text: string) => text.replace(/\u001b\[[0-9;:]{0,64}m/g, "");

/** Every bound of docs/limits.md the store owns, at its edge. */
export function boundsCases(f: Fixture): void {
  describe("bounds", () => {
    test("store.append drops the oldest events beyond events_retained; retained_from moves and truncated is set", () => {
      const store = f.make({ events_retained: 10 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      for (let i = 1; i <= 8; i++) store.append(idOf(1), [draft.progress(i)]);
      expect(store.get(idOf(1))).toMatchObject({ last_sequence: 10, retained_from: 1, truncated: false });
      expect(store.events(idOf(1))!).toMatchObject({ retained_from: 1, truncated: false, last_sequence: 10 });
      store.append(idOf(1), [draft.progress(9), draft.progress(10), draft.progress(11)]);
      for (let i = 12; i <= 23; i++) store.append(idOf(1), [draft.progress(i)]);
      expect(store.get(idOf(1))).toMatchObject({ last_sequence: 25, retained_from: 16, truncated: true });
      const page = store.events(idOf(1), 0)!;
      expect(page).toMatchObject({ retained_from: 16, truncated: true, last_sequence: 25 });
      expect(page.events.map((e) => e.sequence)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
      expect(store.events(idOf(1), 14)!.truncated).toBe(true);
      expect(store.events(idOf(1), 15)!).toMatchObject({ truncated: false });
      expect(store.events(idOf(1), 15)!.events).toHaveLength(10);
      expect(store.events(idOf(1), 20)!.events.map((e) => e.sequence)).toEqual([21, 22, 23, 24, 25]);
    });

    test("store.events pages by after and limit, at most 1,000 a page, and answers null for an unknown id", () => {
      const store = f.make();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      store.append(idOf(1), Array.from({ length: 2498 }, (_, i) => draft.progress(i)));
      const first = store.events(idOf(1))!;
      expect(first.events).toHaveLength(1000);
      expect(first.events[0]!.sequence).toBe(1);
      expect(first).toMatchObject({ retained_from: 1, truncated: false, last_sequence: 2500 });
      expect(store.events(idOf(1), 0, 5000)!.events).toHaveLength(1000);
      expect(store.events(idOf(1), 0, 10)!.events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(store.events(idOf(1), 2495, 10)!.events.map((e) => e.sequence)).toEqual([2496, 2497, 2498, 2499, 2500]);
      expect(store.events(idOf(1), 2500)!.events).toEqual([]);
      expect(store.events(idOf(1), 9999)!).toMatchObject({ events: [], truncated: false, last_sequence: 2500 });
      expect(allEvents(store, idOf(1)).map((e) => e.sequence)).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
      expect(store.events(idOf(2))).toBeNull();
      expect(store.get(idOf(2))).toBeNull();
    });

    test("store.append cuts a log line at log_line_bytes without splitting a code point, keeps colour and strips every other escape and control character", () => {
      const store = f.make({ log_line_bytes: 64 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      const message = "\u001b[1;31mERROR\u001b[0m\tdisk\u0007 full\u0000\r\nnext line\u009b2K " + "€".repeat(20) + "😀".repeat(10);
      const [event] = store.append(idOf(1), [draft.log(message, "error")]) as ExecutionEvent<"execution.log">[];
      const text = event!.data.message;
      expect(event!.data.truncated).toBe(true);
      expect(bytes(text)).toBeLessThanOrEqual(64);
      expect(text.isWellFormed()).toBe(true);
      expect(text.startsWith("\u001b[1;31mERROR\u001b[0m\tdisk full ⏎ next line ")).toBe(true);
      expect(CONTROL.test(withoutSgr(text))).toBe(false);
      // Cut at a code point boundary: the next whole character would not have fitted.
      expect(bytes(text) + 3).toBeGreaterThan(64);
      const [line] = store.get(idOf(1))!.log;
      expect(line).toEqual({ sequence: 3, timestamp: f.clock.iso(), level: "error", message: text, truncated: true });
    });

    test("store.append keeps a short clean log line as it is, unmarked, and drops trailing line breaks", () => {
      const store = f.make({ log_line_bytes: 64 });
      store.create(newExecution(1));
      const [plain, trailing] = store.append(idOf(1), [draft.log("all good\tthere"), draft.log("done\r\n")]) as ExecutionEvent<"execution.log">[];
      expect(plain!.data).toEqual({ level: "info", message: "all good\tthere" });
      expect(trailing!.data).toEqual({ level: "info", message: "done" });
      const exact = "a".repeat(62) + "é"; // 64 bytes exactly
      const [fits] = store.append(idOf(1), [draft.log(exact)]) as ExecutionEvent<"execution.log">[];
      expect(fits!.data).toEqual({ level: "info", message: exact });
    });

    test("store.append sanitizes any log line into at most log_line_bytes of printable text (property)", () => {
      const store = f.make({ log_line_bytes: 64 });
      store.create(newExecution(1));
      const piece = fc.oneof(fc.string({ unit: "binary", maxLength: 40 }), fc.constantFrom("\u001b[31m", "\u001b]0;title\u0007", "\r\n", "\n", "\t", "\u009b1m", "😀", "€"));
      fc.assert(
        fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
          const message = pieces.join("");
          const [event] = store.append(idOf(1), [draft.log(message)]) as ExecutionEvent<"execution.log">[];
          const text = event!.data.message;
          expect(bytes(text)).toBeLessThanOrEqual(64);
          // Only whole colour sequences may remain: nothing that moves a cursor or retitles a window.
          expect(CONTROL.test(withoutSgr(text))).toBe(false);
          expect(text.isWellFormed()).toBe(true);
          if (bytes(message) <= 64 && !CONTROL.test(message)) expect(event!.data).toEqual({ level: "info", message });
        }),
        { numRuns: 300 },
      );
    });

    test("store.append sanitizes diagnostic messages and stream chunks, keeping their line breaks", () => {
      const store = f.make({ diagnostic_message_bytes: 64 });
      store.create(newExecution(1));
      const [diagnostic, long, stream] = store.append(idOf(1), [
        draft.diagnostic("\u001b[33mwarning\u001b[0m: unused\r\n  at line 3\u0008"),
        draft.diagnostic("y".repeat(100)),
        draft.stream("50%\r100%\n\u001b[2Kdone\u0000"),
      ]) as ExecutionEvent<"execution.diagnostic" | "execution.stream">[];
      expect((diagnostic!.data as { message: string }).message).toBe("\u001b[33mwarning\u001b[0m: unused\n  at line 3");
      const cut = (long!.data as { message: string }).message;
      expect(bytes(cut)).toBeLessThanOrEqual(64);
      expect(cut.startsWith("yyyy")).toBe(true);
      expect((stream!.data as { chunk: string }).chunk).toBe("50%\n100%\ndone");
      expect(store.get(idOf(1))!.diagnostics[0]!.message).toBe("\u001b[33mwarning\u001b[0m: unused\n  at line 3");
    });

    test("store.append makes step ids, titles and messages and progress messages one printable line, as a log line", () => {
      const store = f.make();
      store.create(newExecution(1));
      const [step, done, progress] = store.append(idOf(1), [
        { type: "execution.step", data: { id: "s\u00071", title: "\u001b]0;pwned\u0007\u001b[2JBuild\nall" } },
        { type: "execution.step_done", data: { id: "s\u00071", ok: true, message: "ok\u001b[1A\r\n" } },
        { type: "execution.progress", data: { current: 1, message: "\u001b]52;c;Zm9v\u0007half" } },
      ]) as ExecutionEvent[];
      expect(step!.data).toEqual({ id: "s1", title: "Build ⏎ all" });
      expect(done!.data).toEqual({ id: "s1", ok: true, message: "ok" });
      expect(progress!.data).toEqual({ current: 1, message: "half" });
      expect(store.get(idOf(1))!.steps[0]).toMatchObject({ id: "s1", title: "Build ⏎ all" });
    });

    test("store snapshot keeps the newest diagnostics and log lines within their bounds and counts the dropped", () => {
      const store = f.make({ diagnostics_retained: 3, log_tail_lines: 5 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      for (let i = 0; i < 10; i++) store.append(idOf(1), [draft.diagnostic(`d${i}`)]);
      store.append(idOf(1), Array.from({ length: 12 }, (_, i) => draft.log(`l${i}`)));
      const snapshot = store.get(idOf(1))!;
      expect(snapshot.diagnostics.map((d) => d.message)).toEqual(["d7", "d8", "d9"]);
      expect(snapshot.diagnostics[0]).toEqual({ severity: "warning", message: "d7", file: "a.ts", line: 1, column: 2 });
      expect(snapshot.diagnostics_dropped).toBe(7);
      expect(snapshot.log.map((l) => l.message)).toEqual(["l7", "l8", "l9", "l10", "l11"]);
      expect(snapshot.log.map((l) => l.sequence)).toEqual([20, 21, 22, 23, 24]);
      expect(snapshot.log_dropped).toBe(7);
    });

    test("store snapshot keeps at most steps_retained steps, dropping the oldest finished first, and the oldest running only when all are running", () => {
      const store = f.make({ steps_retained: 3 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), draft.step("outer", "Outer")]);
      for (let i = 0; i < 5; i++) store.append(idOf(1), [draft.step(`s${i}`), draft.stepDone(`s${i}`)]);
      let snapshot = store.get(idOf(1))!;
      expect(snapshot.steps.map((s) => s.id)).toEqual(["outer", "s3", "s4"]);
      expect(snapshot.steps_dropped).toBe(3);
      // The finished ones go first; once only running steps are left, the oldest of them goes.
      store.append(idOf(1), [draft.step("a"), draft.step("b"), draft.step("c")]);
      snapshot = store.get(idOf(1))!;
      expect(snapshot.steps.map((s) => s.id)).toEqual(["a", "b", "c"]);
      expect(snapshot.steps.every((s) => s.state === "running")).toBe(true);
      expect(snapshot.steps_dropped).toBe(6);
      // A handler beginning steps without end keeps a snapshot of steps_retained steps.
      for (let i = 0; i < 1000; i++) store.append(idOf(1), [draft.step(`open${i}`)]);
      snapshot = store.get(idOf(1))!;
      expect(snapshot.steps.map((s) => s.id)).toEqual(["open997", "open998", "open999"]);
      // The dropped step's end still shows, as a step that took no time.
      store.append(idOf(1), [draft.stepDone("outer")]);
      expect(store.get(idOf(1))!.steps.at(-1)).toMatchObject({ id: "outer", state: "succeeded" });
    });

    test("store snapshot counts the failed steps among those it dropped past steps_retained", () => {
      const store = f.make({ steps_retained: 2 });
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      for (let i = 0; i < 6; i++) store.append(idOf(1), [draft.step(`s${i}`), draft.stepDone(`s${i}`, i % 3 !== 0)]);
      const snapshot = store.get(idOf(1))!;
      expect(snapshot.steps.map((s) => s.id)).toEqual(["s4", "s5"]);
      // s0 and s3 failed; both are gone.
      expect([snapshot.steps_dropped, snapshot.steps_dropped_failed]).toEqual([4, 2]);
    });

    test("store forgets the oldest terminal execution first beyond executions_retained, and never an active one", () => {
      const store = f.make({ executions_retained: 3 });
      store.create(newExecution(1));
      store.create(newExecution(2));
      store.create(newExecution(3));
      store.append(idOf(3), pathTo("succeeded"));
      store.append(idOf(2), pathTo("failed"));
      store.create(newExecution(4));
      // 2 and 3 are terminal; 2 is the older one.
      expect(store.get(idOf(2))).toBeNull();
      expect(store.events(idOf(2))).toBeNull();
      expect([1, 3, 4].map((n) => store.get(idOf(n))?.id)).toEqual([idOf(1), idOf(3), idOf(4)]);
      store.create(newExecution(5));
      expect(store.get(idOf(3))).toBeNull();
      // 1, 4, 5 are active: nothing can go, so the store holds more than the bound.
      store.append(idOf(4), pathTo("running"));
      store.append(idOf(5), pathTo("cancelling"));
      store.create(newExecution(6));
      expect([1, 4, 5, 6].map((n) => store.get(idOf(n))?.state)).toEqual(["queued", "running", "cancelling", "queued"]);
      expect(store.list().items).toHaveLength(4);
      store.append(idOf(6), pathTo("cancelled"));
      store.append(idOf(1), pathTo("succeeded"));
      store.create(newExecution(7));
      // Oldest terminal first: 1 (created before 6), and then 6, back to the bound.
      expect(store.get(idOf(1))).toBeNull();
      expect(store.get(idOf(6))).toBeNull();
      expect(store.list().items.map((s) => s.id)).toEqual([idOf(7), idOf(5), idOf(4)]);
      expect(store.list().counts).toMatchObject({ queued: 1, running: 1, cancelling: 1, succeeded: 0, failed: 0, cancelled: 0 });
    });

    test("store.recordRun keeps at most run_identities, refusing new ones, and identities outlive their executions", () => {
      const store = f.make({ run_identities: 2, executions_retained: 1 });
      const identity = (run_id: string, n: number) => ({ run_id, execution_id: idOf(n), capability: "demo.read", input_hash: `h${n}` });
      expect(store.findRun("a")).toBeNull();
      expect(store.recordRun(identity("a", 1))).toBe(true);
      expect(store.recordRun(identity("b", 2))).toBe(true);
      expect(store.recordRun(identity("c", 3))).toBe(false);
      expect(store.findRun("c")).toBeNull();
      expect(store.findRun("a")).toEqual(identity("a", 1));
      expect(store.findRun("b")).toEqual(identity("b", 2));
      // The first identity stands.
      expect(store.recordRun(identity("a", 9))).toBe(true);
      expect(store.findRun("a")).toEqual(identity("a", 1));
      // The execution is forgotten; its identity is not.
      store.create(newExecution(1, { run_id: "a" }));
      store.append(idOf(1), pathTo("succeeded"));
      store.create(newExecution(2, { run_id: "b" }));
      expect(store.get(idOf(1))).toBeNull();
      expect(store.findRun("a")).toEqual(identity("a", 1));
      // A copy: changing it changes nothing.
      store.findRun("a")!.execution_id = "changed";
      expect(store.findRun("a")!.execution_id).toBe(idOf(1));
    });
  });
}
