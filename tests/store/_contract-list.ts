import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { EXECUTION_STATES, type ExecutionState } from "../../runtime/execution/state-machine.ts";
import { InvalidCursorError, type ExecutionStore, type ListFilter } from "../../runtime/store/index.ts";
import { draft, idOf, newExecution, pathTo, type Fixture } from "./_fixtures.ts";
import { reconciled, unknownEnd } from "./_contract-reconcile.ts";

const CAPABILITIES = ["demo.read", "demo.write", "files.digest"];

/** Creates `n` executions, spreading capabilities and states; answers the ids newest first. */
function populate(store: ExecutionStore, n: number): string[] {
  for (let i = 1; i <= n; i++) {
    store.create(newExecution(i, { capability: CAPABILITIES[i % 3]! }));
    store.append(idOf(i), pathTo(EXECUTION_STATES[i % EXECUTION_STATES.length]!));
  }
  return Array.from({ length: n }, (_, i) => idOf(n - i));
}

/** Every id a walk over the pages answers, in order. */
function walk(store: ExecutionStore, filter: ListFilter): { ids: string[]; pages: number } {
  const ids: string[] = [];
  let pages = 0;
  for (let cursor = filter.cursor; ; ) {
    const page = store.list({ ...filter, cursor });
    pages++;
    ids.push(...page.items.map((s) => s.id));
    if (page.next_cursor === null) return { ids, pages };
    expect(page.items).toHaveLength(filter.limit ?? 50);
    cursor = page.next_cursor;
  }
}

/** `list`: order, filters, pages, counts, cursors. */
export function listCases(f: Fixture): void {
  describe("list", () => {
    test("store.list answers newest first, filtered by state and capability", () => {
      const store = f.make();
      const ids = populate(store, 12);
      expect(store.list().items.map((s) => s.id)).toEqual(ids);
      const running = store.list({ state: "running" }).items;
      expect(running.map((s) => s.id)).toEqual(ids.filter((id) => store.get(id)!.state === "running"));
      expect(running.length).toBeGreaterThan(0);
      const writes = store.list({ capability: "demo.write" }).items;
      expect(writes.map((s) => s.id)).toEqual(ids.filter((id) => store.get(id)!.capability === "demo.write"));
      const both = store.list({ capability: "demo.write", state: "succeeded" }).items;
      expect(both.every((s) => s.capability === "demo.write" && s.state === "succeeded")).toBe(true);
      expect(store.list({ capability: "nope" }).items).toEqual([]);
      expect(store.list({ capability: "nope" }).next_cursor).toBeNull();
    });

    test("store.list shows each execution with what grows kept small, the rest as get answers it; a listing asked again after the execution changed shows the change (hostile tester, session 39)", () => {
      const store = f.make();
      const big = { text: "y".repeat(10_000) };
      store.create(newExecution(1, { input: big }));
      const lines = Array.from({ length: 40 }, (_, i) => draft.log(`line ${i} ${"z".repeat(100)}`));
      const steps = Array.from({ length: 15 }, (_, i) => [draft.step(`s${i}`), draft.stepDone(`s${i}`, i !== 2)]).flat();
      const diagnostics = Array.from({ length: 14 }, (_, i) => draft.diagnostic(`d${i}`));
      store.append(idOf(1), [draft.started(), ...lines, ...steps, ...diagnostics, draft.completed("succeeded", { rows: Array.from({ length: 2000 }, (_, i) => i) })]);
      store.create(newExecution(2));
      store.append(idOf(2), [draft.started(), draft.log("one"), unknownEnd]);
      for (let round = 0; round < 2; round++) {
        const [small, listed] = store.list().items;
        const whole = store.get(idOf(1))!;
        expect(small).toEqual(store.get(idOf(2))!);
        expect(listed!.log.map((line) => line.message)).toEqual(whole.log.slice(-3).map((line) => line.message));
        expect(listed!.log_dropped).toBe(whole.log_dropped + whole.log.length - 3);
        expect(listed!.steps.map((step) => step.id)).toEqual(whole.steps.slice(-10).map((step) => step.id));
        expect(listed!.steps_dropped).toBe(whole.steps_dropped + 5);
        expect(listed!.steps_dropped_failed).toBe(1);
        expect(listed!.diagnostics).toEqual(whole.diagnostics.slice(0, 10));
        expect(listed!.diagnostics_dropped).toBe(whole.diagnostics_dropped + 4);
        expect(listed!.input).toEqual({ withheld: "listing", limit: 4096, self: whole.links.self });
        expect(listed!.output).toEqual({ withheld: "listing", limit: 4096, self: whole.links.self });
        const { log, log_dropped, steps, steps_dropped, steps_dropped_failed, diagnostics, diagnostics_dropped, input, output, ...rest } = whole;
        expect(listed).toMatchObject(rest);
      }
      // A reconciliation after the end is a change a listing shows at once.
      store.append(idOf(2), [reconciled()]);
      expect(store.list().items[0]).toEqual(store.get(idOf(2))!);
    });

    test("store.list keeps each listed execution to about 16 KiB of JSON: escapes counted, long steps and diagnostics fewer (checking tester, session 39)", () => {
      const store = f.make();
      store.create(newExecution(1, { input: { nul: "\u0000".repeat(1000) } }));
      const steps = Array.from({ length: 12 }, (_, i) => [draft.step(`s${i}-${"i".repeat(900)}`, "t".repeat(1000)), draft.stepDone(`s${i}-${"i".repeat(900)}`, true, "m".repeat(4000))]).flat();
      const diagnostics = Array.from({ length: 12 }, () => draft.diagnostic("d".repeat(4000)));
      store.append(idOf(1), [draft.started(), ...steps, ...diagnostics, draft.completed("succeeded", { ok: "\u2028".repeat(10) })]);
      const [listed] = store.list().items;
      const whole = store.get(idOf(1))!;
      expect(listed!.input).toEqual({ withheld: "listing", limit: 4096, self: whole.links.self });
      expect(listed!.output).toEqual({ ok: "\u2028".repeat(10) });
      expect(JSON.stringify(listed).length).toBeLessThanOrEqual(16 * 1024);
      expect(listed!.steps.length + listed!.steps_dropped).toBe(whole.steps.length + whole.steps_dropped);
      expect(listed!.diagnostics.length + listed!.diagnostics_dropped).toBe(whole.diagnostics.length + whole.diagnostics_dropped);
      expect(listed!.steps.at(-1)?.id ?? null).toBe(listed!.steps.length === 0 ? null : whole.steps.at(-1)!.id);
    });

    test("store.list counts every execution held, per state, whatever the filter and page", () => {
      const store = f.make();
      populate(store, 13);
      const expected = Object.fromEntries(EXECUTION_STATES.map((s) => [s, 0])) as Record<ExecutionState, number>;
      for (let i = 1; i <= 13; i++) expected[store.get(idOf(i))!.state]++;
      expect(store.list({ limit: 1 }).counts).toEqual(expected);
      expect(store.list({ state: "queued", capability: "demo.read" }).counts).toEqual(expected);
      expect(Object.values(expected).reduce((a, b) => a + b)).toBe(13);
    });

    test("store.list pages cover every matching execution exactly once, whatever the page size", () => {
      const store = f.make();
      const ids = populate(store, 23);
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 30 }), fc.option(fc.constantFrom(...EXECUTION_STATES), { nil: undefined }), fc.option(fc.constantFrom(...CAPABILITIES), { nil: undefined }), (limit, state, capability) => {
          const expected = ids.filter((id) => (state === undefined || store.get(id)!.state === state) && (capability === undefined || store.get(id)!.capability === capability));
          const { ids: seen, pages } = walk(store, { limit, state, capability });
          expect(seen).toEqual(expected);
          expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
        }),
        { numRuns: 60 },
      );
    });

    test("store.list pages started before new executions were created still cover the older ones exactly once", () => {
      const store = f.make();
      const ids = populate(store, 10);
      const first = store.list({ limit: 4 });
      for (let i = 11; i <= 15; i++) store.create(newExecution(i));
      const rest = walk(store, { limit: 4, cursor: first.next_cursor! } as ListFilter);
      expect([...first.items.map((s) => s.id), ...rest.ids]).toEqual(ids);
    });

    test("store.list answers 50 by default and at most 500", () => {
      const store = f.make();
      for (let i = 1; i <= 501; i++) store.create(newExecution(i));
      expect(store.list().items).toHaveLength(50);
      const most = store.list({ limit: 10_000 });
      expect(most.items).toHaveLength(500);
      expect(most.items[0]!.id).toBe(idOf(501));
      expect(store.list({ limit: 500, cursor: most.next_cursor! }).items.map((s) => s.id)).toEqual([idOf(1)]);
    });

    test("store.list refuses a cursor it did not make with InvalidCursorError (an invalid_input failure at the edge)", () => {
      const store = f.make();
      populate(store, 5);
      const good = store.list({ limit: 2 }).next_cursor!;
      for (const bad of ["", "!!!", "not-a-cursor", "eyJvIjoxfQ", btoa("o:-1"), btoa("o:abc"), "A".repeat(5000), good + "x"]) {
        let error: unknown;
        try {
          store.list({ cursor: bad });
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(InvalidCursorError);
        const failure = (error as InvalidCursorError).toFailure({ request_id: "req-9", trace_id: "t" });
        expect(failure).toMatchObject({ error_code: "invalid_input", stage: "validate", request_id: "req-9", trace_id: "t", retryability: "never" });
        expect(failure.message.length).toBeLessThan(300);
      }
      expect(store.list({ cursor: good }).items).toHaveLength(3);
    });

    test("store.list answers copies: changing an item changes nothing in the store", () => {
      const store = f.make();
      populate(store, 2);
      const [item] = store.list().items;
      item!.state = "failed";
      item!.steps.push({ id: "x", title: "x", state: "running", message: null, started_at: "", finished_at: null });
      expect(store.list().items[0]!.state).not.toBe("failed");
      expect(store.list().items[0]!.steps).toEqual([]);
    });
  });

  describe("heads", () => {
    /** Every head a walk over the pages answers, in order. */
    function walkHeads(store: ExecutionStore, limit: number, cursor?: string) {
      const heads = [];
      for (;;) {
        const page = store.heads(cursor, limit);
        heads.push(...page.items);
        if (page.next_cursor === null) return heads;
        expect(page.items).toHaveLength(limit);
        cursor = page.next_cursor;
      }
    }

    test("store.heads answers every execution held, newest first, with what its snapshot says of its history", () => {
      // Histories longer than events_retained lose their oldest; running, finished, queued ones mixed.
      const store = f.make({ events_retained: 10, executions_retained: 20 });
      for (let i = 1; i <= 26; i++) {
        store.create(newExecution(i));
        if (i % 3 === 0) continue;
        store.append(idOf(i), [draft.started()]);
        for (let p = 0; p < (i % 4) * 6; p++) store.append(idOf(i), [draft.progress(p)]);
        if (i % 3 === 1) store.append(idOf(i), [draft.completed(i % 2 === 0 ? "succeeded" : "failed")]);
      }
      const expected = walk(store, { limit: 7 }).ids.map((id) => {
        const snapshot = store.get(id)!;
        return { id, state: snapshot.state, last_sequence: snapshot.last_sequence, retained_from: snapshot.retained_from };
      });
      expect(expected.length).toBeGreaterThanOrEqual(20);
      expect(expected.some((head) => head.retained_from > 1)).toBe(true);
      for (const limit of [1, 3, 7, 500]) expect(walkHeads(store, limit)).toEqual(expected);
      for (const head of expected) expect(store.events(head.id, 0, 1)).toMatchObject({ retained_from: head.retained_from, last_sequence: head.last_sequence });
    });

    test("store.heads and store.list take each other's cursors, and heads answers at most 1000 a page", () => {
      const store = f.make();
      for (let i = 1; i <= 1003; i++) store.create(newExecution(i));
      const page = store.heads(undefined, 5000);
      expect(page.items).toHaveLength(1000);
      expect(page.items[0]!.id).toBe(idOf(1003));
      expect(store.list({ cursor: page.next_cursor! }).items.map((s) => s.id)).toEqual([idOf(3), idOf(2), idOf(1)]);
      const listed = store.list({ limit: 2 });
      expect(store.heads(listed.next_cursor!, 2).items.map((h) => h.id)).toEqual([idOf(1001), idOf(1000)]);
      expect(store.heads(undefined, 0).items).toHaveLength(1);
    });

    test("store.heads refuses a cursor it did not make with InvalidCursorError", () => {
      const store = f.make();
      populate(store, 5);
      for (const bad of ["", "!!!", btoa("o:-1"), "A".repeat(5000)]) expect(() => store.heads(bad, 10)).toThrow(InvalidCursorError);
    });
  });
}
