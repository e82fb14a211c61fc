import { describe, expect, test } from "bun:test";
import { draft, idOf, newExecution, type Fixture } from "./_fixtures.ts";

/** `durable` and `current` (docs/durability.md): what an answer may acknowledge, and when. */
export function durableCases(f: Fixture): void {
  describe("durable", () => {
    test("store.durable resolves once everything stored before it is committed: then readers and subscribers have it all", async () => {
      const store = f.make();
      const heard: number[] = [];
      store.subscribe({ executions: "all" }, (event) => heard.push(event.sequence));
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started(), draft.progress(1), draft.completed("succeeded")]);
      // The engine's own view has it at once, committed or not.
      expect(store.current(idOf(1))).toMatchObject({ state: "succeeded", last_sequence: 4 });
      await store.durable();
      expect(heard).toEqual([1, 2, 3, 4]);
      expect(store.get(idOf(1))).toMatchObject({ state: "succeeded", last_sequence: 4 });
      expect(store.events(idOf(1))!.events.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      expect(store.storageFault()).toBeNull();
    });

    test("store.creationCommitted is true once the creation is committed, stays true as the execution goes on, and is false for an id the store never held", async () => {
      const store = f.make();
      expect(store.creationCommitted(idOf(1))).toBe(false);
      store.create(newExecution(1));
      await store.durable();
      expect(store.creationCommitted(idOf(1))).toBe(true);
      // Later changes pending take nothing back from the creation.
      store.append(idOf(1), [draft.started()]);
      expect(store.creationCommitted(idOf(1))).toBe(true);
      await store.durable();
      expect(store.creationCommitted(idOf(2))).toBe(false);
    });

    test("store.withdraw takes back an execution nothing of which is committed, with its run identity, as though never created; anything committed, finished or unknown stays", async () => {
      const store = f.make({ run_identities: 2 });
      const heard: string[] = [];
      store.subscribe({ executions: "all" }, (event) => heard.push(`${event.execution_id.slice(-1)}:${event.sequence}`));
      const identity = (run_id: string, n: number) => ({ run_id, execution_id: idOf(n), capability: "demo.read", input_hash: `h${n}` });
      store.recordRun(identity("a", 1));
      store.create(newExecution(1, { run_id: "a" }));
      await store.durable();
      // Committed: it stays.
      expect(store.withdraw(idOf(1))).toBe(false);
      expect(store.withdraw(idOf(9))).toBe(false);
      store.recordRun(identity("b", 2));
      store.create(newExecution(2, { run_id: "b" }));
      store.append(idOf(2), [draft.started()]);
      // A store that commits as it goes (memory) has nothing to take back; a durable one has it all.
      if (store.creationCommitted(idOf(2))) {
        expect(store.withdraw(idOf(2))).toBe(false);
        expect(store.current(idOf(2))).toMatchObject({ state: "running" });
        return;
      }
      expect(store.withdraw(idOf(2))).toBe(true);
      expect(store.current(idOf(2))).toBeNull();
      expect(store.findRun("b")).toBeNull();
      expect(store.withdraw(idOf(2))).toBe(false);
      await store.durable();
      expect(store.get(idOf(2))).toBeNull();
      expect(store.events(idOf(2))).toBeNull();
      expect(store.list().items.map((s) => s.id)).toEqual([idOf(1)]);
      expect(store.list().counts).toMatchObject({ queued: 1, running: 0 });
      expect(heard).toEqual(["1:1"]);
      // Its run identity counted no more: a new one fits in run_identities, and the id is free again.
      expect(store.recordRun(identity("c", 2))).toBe(true);
      store.create(newExecution(2, { run_id: "c" }));
      await store.durable();
      expect(store.get(idOf(2))).toMatchObject({ state: "queued", last_sequence: 1, run_id: "c" });
      expect(heard).toEqual(["1:1", "2:1"]);
      // A finished one stays even before its end is committed.
      store.create(newExecution(3));
      await store.durable();
      store.append(idOf(3), [draft.started(), draft.completed("succeeded")]);
      expect(store.withdraw(idOf(3))).toBe(false);
    });

    test("store.durable with nothing pending resolves at once, and a reader is never shown more than current", async () => {
      const store = f.make();
      await store.durable();
      store.create(newExecution(1));
      store.append(idOf(1), [draft.started()]);
      const read = store.get(idOf(1));
      const now = store.current(idOf(1))!;
      expect(read === null || read.last_sequence <= now.last_sequence).toBe(true);
      await store.durable();
      await store.durable();
      expect(store.current(idOf(9))).toBeNull();
    });
  });
}
