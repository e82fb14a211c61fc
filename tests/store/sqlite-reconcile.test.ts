// A reconciliation reaches a finished execution, whose snapshot the sqlite store serves from its
// file: it must be written whole with it, and read back the same after a close or a crash.
import { afterAll, describe, expect, test } from "bun:test";
import { allEvents, draft, idOf, newExecution, TestClock } from "./_fixtures.ts";
import { reconciled, unknownEnd } from "./_contract-reconcile.ts";
import { copyOfFiles, openStore, removeDbDirs, tempDb } from "./_sqlite-support.ts";

afterAll(removeDbDirs);

const DAY = 24 * 60 * 60 * 1000;

describe("sqlite store: reconciliation", () => {
  test("sqlite store keeps a reconciliation of a written, finished execution across a close and a crash", async () => {
    const path = tempDb();
    const clock = new TestClock();
    const store = openStore(path, clock);
    store.create(newExecution(1, { effect: "write" }));
    store.append(idOf(1), [draft.started(), draft.log("pushing"), unknownEnd]);
    store.flush();
    // Written and finished: its reads now come from the file.
    clock.advance(60_000);
    store.append(idOf(1), [reconciled("applied", "the tag is on the remote")]);
    const live = store.get(idOf(1))!;
    expect(live.reconciliation).toMatchObject({ outcome: "applied", note: "the tag is on the remote", at: clock.iso() });
    await store.durable();
    // What a crash right now leaves.
    const crashed = openStore(copyOfFiles(path), clock);
    expect(crashed.get(idOf(1))).toEqual(live);
    expect(crashed.recovered).toEqual([]);
    expect(() => crashed.append(idOf(1), [reconciled("not_applied")])).toThrow(/already reconciled/);
    crashed.close();
    store.close();

    const reopened = openStore(path, clock);
    expect(reopened.get(idOf(1))).toEqual(live);
    expect(allEvents(reopened, idOf(1)).map((e) => e.type)).toEqual(["execution.created", "execution.started", "execution.log", "execution.completed", "execution.reconciled"]);
    expect(reopened.list({ state: "failed" }).items[0]!.reconciliation!.outcome).toBe("applied");
    reopened.close();
  });

  test("sqlite store keeps an unknown outcome's details past details_retention_ms until it is reconciled, then lets them expire", () => {
    const clock = new TestClock();
    const store = openStore(tempDb(), clock, { details_retention_ms: DAY });
    store.create(newExecution(1, { effect: "write" }));
    store.append(idOf(1), [draft.started(), draft.log("the evidence"), unknownEnd]);
    clock.advance(30 * DAY);
    expect(store.expireDetails()).toBe(0);
    expect(store.get(idOf(1))!.log.map((l) => l.message)).toEqual(["the evidence"]);
    store.append(idOf(1), [reconciled("applied")]);
    expect(store.expireDetails()).toBe(1);
    // Its identity stays, the reconciliation included: it is how the execution was settled.
    expect(store.get(idOf(1))).toMatchObject({ details_expired: true, log: [], state: "failed", reconciliation: { outcome: "applied" } });
    store.close();
  });

  test("sqlite store takes a reconciliation in the same tick as the completion it follows", () => {
    const path = tempDb();
    const clock = new TestClock();
    const store = openStore(path, clock);
    store.create(newExecution(1, { effect: "write" }));
    store.append(idOf(1), [draft.started(), unknownEnd]);
    store.append(idOf(1), [reconciled("not_applied")]);
    store.close();
    const reopened = openStore(path, clock);
    expect(reopened.get(idOf(1))).toMatchObject({ state: "failed", last_sequence: 4, reconciliation: { outcome: "not_applied" } });
    reopened.close();
  });
});
