import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { HEAD_BYTES } from "../../runtime/store/_sqlite-tables.ts";
import { allEvents, draft, idOf, newExecution, pathTo, TestClock } from "./_fixtures.ts";
import { openStore, tempDb } from "./_sqlite-support.ts";

/** The head column of each row, and where the events rows start, as the file holds them. */
function layout(path: string) {
  const file = new Database(path, { readonly: true });
  const rows = file.query("SELECT ord, head_last, head IS NOT NULL AS has_head FROM executions ORDER BY ord").all();
  const chunks = file.query("SELECT execution_ord AS ord, min(first_sequence) AS first FROM events GROUP BY execution_ord ORDER BY execution_ord").all();
  file.close();
  return { rows, chunks };
}

/** An execution's first events in its own row (HEAD_BYTES): reads, restarts and retention see one history. */
export function headCases(): void {
  describe("sqlite store row heads", () => {
    test("sqlite store keeps an execution's first events in its row while they fit, the later ones in events rows, and reads them back as one history across restarts", async () => {
      const path = tempDb();
      const clock = new TestClock();
      const store = openStore(path, clock);
      // 1: grows its head over three writes, then a large event does not fit: it and every later one go to the events rows.
      store.create(newExecution(1));
      await store.durable();
      store.append(idOf(1), [draft.started(), draft.log("one")]);
      await store.durable();
      store.append(idOf(1), [draft.progress(1, 3)]);
      await store.durable();
      store.append(idOf(1), [draft.log("x".repeat(HEAD_BYTES))]);
      await store.durable();
      store.append(idOf(1), [draft.log("two"), draft.progress(2, 3), draft.completed("succeeded", { ok: true })]);
      // 2: all of it in its head, written in one tick; 3: left running, its head folded back on open.
      store.create(newExecution(2));
      store.append(idOf(2), pathTo("succeeded"));
      store.create(newExecution(3));
      store.append(idOf(3), [draft.started(), draft.progress(1, 2)]);
      await store.durable();
      const events = [1, 2, 3].map((n) => allEvents(store, idOf(n)));
      const snapshots = [1, 2, 3].map((n) => store.get(idOf(n)));
      // A read from the middle of the head and across into the events rows.
      expect(store.events(idOf(1), 2)!.events.map((e) => e.sequence)).toEqual([3, 4, 5, 6, 7, 8]);
      store.close();
      expect(layout(path)).toEqual({
        rows: [
          { ord: 1, head_last: 4, has_head: 1 },
          { ord: 2, head_last: 3, has_head: 1 },
          { ord: 3, head_last: 3, has_head: 1 },
        ],
        chunks: [{ ord: 1, first: 5 }],
      });

      const reopened = openStore(path, clock);
      expect(reopened.recovered.map((r) => r.id)).toEqual([idOf(3)]);
      expect([1, 2].map((n) => allEvents(reopened, idOf(n)))).toEqual(events.slice(0, 2));
      expect([1, 2].map((n) => reopened.get(idOf(n)))).toEqual(snapshots.slice(0, 2));
      // The running one was folded from its head: its progress, then the failure recovery appended after it.
      expect(allEvents(reopened, idOf(3)).slice(0, 3)).toEqual(events[2]);
      expect(reopened.get(idOf(3))).toMatchObject({ state: "failed", progress: snapshots[2]!.progress });
      // Appends after a reopen go on from the row's head as it was: 3's completion fit in it.
      reopened.close();
      expect(layout(path).rows[2]).toEqual({ ord: 3, head_last: 4, has_head: 1 });

      // Fewer events kept: a head wholly below the kept ones leaves the file, one partly below stays and reads from where they start.
      const lowered = openStore(path, clock, { events_retained: 2 });
      expect(allEvents(lowered, idOf(1)).map((e) => e.sequence)).toEqual([7, 8]);
      expect(allEvents(lowered, idOf(2)).map((e) => e.sequence)).toEqual([2, 3]);
      lowered.close();
      expect(layout(path).rows.map((r) => (r as { has_head: number }).has_head)).toEqual([0, 1, 1]);
    });
  });
}
