import { describe, expect, test } from "bun:test";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { createMemoryStore, type ExecutionStore } from "../../runtime/store/index.ts";
import { storeContract } from "./contract.ts";
import { draft, idOf, limitsWith, newExecution, pathTo } from "./_fixtures.ts";
import { reconciled, unknownEnd } from "./_contract-reconcile.ts";
import { countStringify } from "../_support/count-stringify.ts";

storeContract("memory", (limits, clock, onForgotUnsettled) => createMemoryStore({ limits, clock, onListenerError: () => {}, onForgotUnsettled }));

describe("memory store", () => {
  test("memory store serializes no event for its subscribers: each gets the event, and serializes it only if it needs to", async () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1));
    store.create(newExecution(2));
    expect(await countStringify(() => store.append(idOf(1), [draft.started(), draft.progress(1)]))).toBe(0);
    const got: Array<string | undefined> = [];
    store.subscribe({ executions: "all" }, (_e, json) => got.push(json));
    store.subscribe({ executions: [idOf(1)] }, (_e, json) => got.push(json));
    store.subscribe({ executions: [idOf(1)], after: 3 }, (_e, json) => got.push(json));
    got.length = 0;
    expect(await countStringify(() => store.append(idOf(1), [draft.progress(2), draft.progress(3)]))).toBe(0);
    expect(got).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  test("memory store reports the first error of each throwing listener once, to onListenerError", () => {
    const reported: Array<{ error: unknown; event: ExecutionEvent }> = [];
    const store = createMemoryStore({ limits: limitsWith(), onListenerError: (error, event) => reported.push({ error, event }) });
    store.create(newExecution(1));
    store.subscribe({ executions: "all" }, () => {
      throw new Error("first");
    });
    store.subscribe({ executions: [idOf(1)] }, (event) => {
      if (event.sequence >= 2) throw new Error("second");
    });
    store.append(idOf(1), [draft.started(), draft.progress(1), draft.progress(2)]);
    expect(reported.map((r) => [(r.error as Error).message, r.event.sequence])).toEqual([
      ["first", 2],
      ["second", 2],
    ]);
  });

  test("memory store keeps list pages right while thousands of executions come and go", () => {
    const store: ExecutionStore = createMemoryStore({ limits: limitsWith({ executions_retained: 100 }) });
    let cursor: string | null = null;
    const walked: string[] = [];
    for (let i = 1; i <= 5000; i++) {
      store.create(newExecution(i));
      // Every fifth one stays running: those are never forgotten.
      store.append(idOf(i), pathTo(i % 5 === 0 ? "running" : "succeeded"));
      if (i === 2500) {
        const page = store.list({ limit: 10 });
        walked.push(...page.items.map((s) => s.id));
        cursor = page.next_cursor;
      }
    }
    const counts = store.list().counts;
    expect(counts.running).toBe(1000);
    expect(counts.succeeded).toBe(0);
    // A walk begun long ago goes on over what is still held, older than where it stopped.
    for (; cursor !== null; ) {
      const page = store.list({ limit: 7, cursor });
      walked.push(...page.items.map((s) => s.id));
      cursor = page.next_cursor;
    }
    // Only running ones are left of the first 2,500: the walk lists each of them once, newest first.
    expect(walked).toEqual(Array.from({ length: 500 }, (_, i) => idOf(2500 - 5 * i)));
  });

  test("memory store forgets the oldest terminal executions while all their events together are over executions_retained_bytes, never an active one", () => {
    const MIB = 1024 * 1024;
    // 1 MiB in all; each execution logs ~300 KiB (3 lines of 100 KiB), so three finished ones fit and a fourth does not.
    const store = createMemoryStore({ limits: limitsWith({ executions_retained: 1000, executions_retained_bytes: MIB, log_line_bytes: MIB }) });
    const line = "x".repeat(100 * 1024);
    const big = (n: number, state: "succeeded" | "running") => {
      store.create(newExecution(n));
      store.append(idOf(n), [draft.started(), draft.log(line), draft.log(line), draft.log(line)]);
      if (state === "succeeded") store.append(idOf(n), [draft.completed("succeeded")]);
    };
    big(1, "running");
    big(2, "succeeded");
    big(3, "succeeded");
    // 1 still running: ~900 KiB held, under the budget; the next creation looks again.
    big(4, "succeeded");
    expect([1, 2, 3, 4].map((n) => store.get(idOf(n))?.state ?? null)).toEqual(["running", "succeeded", "succeeded", "succeeded"]);
    store.create(newExecution(5));
    // 1.2 MiB held: the oldest finished one (2) goes, the older running one (1) stays.
    expect([1, 2, 3, 4, 5].map((n) => store.get(idOf(n))?.state ?? null)).toEqual(["running", null, "succeeded", "succeeded", "queued"]);
    expect(store.events(idOf(2))).toBeNull();
    // Small executions cost little: hundreds fit beside the big ones, and only big ones went.
    for (let n = 6; n < 400; n++) {
      store.create(newExecution(n));
      store.append(idOf(n), pathTo("succeeded"));
    }
    expect(store.get(idOf(6))?.state).toBe("succeeded");
    expect(store.get(idOf(1))?.state).toBe("running");
    // Everything finished but the running one: once it finishes it is no more than the others.
    store.append(idOf(1), [draft.completed("succeeded")]);
    big(400, "succeeded");
    big(401, "succeeded");
    expect(store.get(idOf(1))).toBeNull();
    expect(store.get(idOf(3))).toBeNull();
    expect(store.get(idOf(401))?.state).toBe("succeeded");
    expect(store.list({ limit: 500 }).items.length).toBeGreaterThan(300);
  });

  test("memory store holds no more than executions_retained_bytes of finished executions however many big ones come and go", () => {
    const MIB = 1024 * 1024;
    const store = createMemoryStore({ limits: limitsWith({ executions_retained: 100_000, executions_retained_bytes: 2 * MIB, log_line_bytes: MIB }) });
    const line = "y".repeat(64 * 1024);
    for (let n = 1; n <= 200; n++) {
      store.create(newExecution(n));
      store.append(idOf(n), [draft.started(), draft.log(line), draft.completed("succeeded")]);
    }
    const held = store.list({ limit: 500 }).items;
    // ~66 KiB each: about 31 fit in 2 MiB (the newest, created after the last look, counts too).
    expect(held.length).toBeGreaterThanOrEqual(28);
    expect(held.length).toBeLessThanOrEqual(33);
    expect(held[0]!.id).toBe(idOf(200));
    // A reconciliation-free finished history reads back whole.
    expect(store.events(idOf(200))!.events.map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.log", "execution.completed"]);
  });

  test("memory store keeps unreconciled unknown outcomes under executions_retained_bytes like active ones, and forgets the oldest of them once they alone hold more (tester T)", () => {
    const MIB = 1024 * 1024;
    const store = createMemoryStore({ limits: limitsWith({ executions_retained: 1000, executions_retained_bytes: MIB, log_line_bytes: MIB }) });
    const line = "z".repeat(200 * 1024);
    const unknownBig = (n: number) => {
      store.create(newExecution(n, { effect: "write" }));
      store.append(idOf(n), [draft.started(), draft.log(line), unknownEnd]);
    };
    // Two unsettled (~400 KiB) and big known ones: the known ones go first, the evidence stays.
    unknownBig(1);
    unknownBig(2);
    for (let n = 3; n <= 6; n++) {
      store.create(newExecution(n));
      store.append(idOf(n), [draft.started(), draft.log(line), draft.completed("succeeded")]);
    }
    store.create(newExecution(7));
    expect([1, 2].map((n) => store.get(idOf(n))?.failure?.outcome_certainty)).toEqual(["unknown", "unknown"]);
    expect(store.get(idOf(3))).toBeNull();
    expect(store.retainedBytes!()).toBeLessThanOrEqual(MIB);
    // Reconciled, one is the oldest finished execution again, and goes first when room is needed.
    store.append(idOf(1), [reconciled()]);
    for (let n = 8; n <= 10; n++) unknownBig(n);
    store.create(newExecution(11));
    expect(store.get(idOf(1))).toBeNull();
    // Unsettled ones alone over the bound (2, 8, 9, 10: ~800 KiB + the rest): the oldest of them goes, memory stays bounded.
    for (let n = 12; n <= 14; n++) unknownBig(n);
    store.create(newExecution(15));
    expect(store.get(idOf(2))).toBeNull();
    expect(store.get(idOf(14))?.failure?.outcome_certainty).toBe("unknown");
    expect(store.retainedBytes!()).toBeLessThanOrEqual(MIB);
  });

  test("memory store hands out input and output as read-only values that a caller cannot change", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    const input = { list: [1, 2] };
    store.create(newExecution(1, { input }));
    input.list.push(3);
    expect(store.get(idOf(1))!.input).toEqual({ list: [1, 2] });
    store.append(idOf(1), [draft.started(), draft.completed("succeeded", { out: { deep: true } })]);
    const snapshot = store.get(idOf(1))!;
    expect(() => {
      (snapshot.output as { out: { deep: boolean } }).out.deep = false;
    }).toThrow();
    expect(Object.isFrozen(store.events(idOf(1))!.events[0]!.data)).toBe(false); // the envelope data of created is plain…
    expect(Object.isFrozen((store.events(idOf(1))!.events[0]!.data as { input: object }).input)).toBe(true); // …its input is the frozen copy
  });

  test("a kept value's objects are frozen, inside arrays too, but not its arrays: JavaScriptCore makes a frozen array slower to read and larger", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1, { input: { list: [{ at: 1 }, [{ at: 2 }]], numbers: Array.from({ length: 100_000 }, (_, i) => i) } }));
    const input = store.get(idOf(1))!.input as { list: [{ at: number }, [{ at: number }]]; numbers: number[] };
    expect(Object.isFrozen(input)).toBe(true);
    expect(Object.isFrozen(input.list[0])).toBe(true);
    expect(Object.isFrozen(input.list[1][0])).toBe(true);
    expect(Object.isFrozen(input.list)).toBe(false);
    expect(Object.isFrozen(input.numbers)).toBe(false);
  });
});
