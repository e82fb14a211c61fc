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
