import { describe, expect, test } from "bun:test";
import { ExecutionRows } from "../../runtime/store/_execution-rows.ts";
import { IdHash } from "../../runtime/store/_id-hash.ts";
import { SealedExecution } from "../../runtime/store/_sealed-execution.ts";

/** A small deterministic generator, so that a failure replays. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("IdHash", () => {
  test("IdHash finds every id it holds and none it was told to drop, through growth and removals in any order", () => {
    const byOrder = new Map<number, string>();
    const hash = new IdHash((order) => byOrder.get(order)!);
    const next = random(7);
    const held: number[] = [];
    for (let order = 0; order < 20_000; order++) {
      const id = `x-20260908T010203Z-${Math.floor(next() * 4096).toString(16).padStart(8, "0")}-${order}`;
      byOrder.set(order, id);
      hash.add(id, order);
      held.push(order);
      // Removes one in three, a random one: runs of probes are shifted back from anywhere.
      if (next() < 0.35) {
        const [gone] = held.splice(Math.floor(next() * held.length), 1);
        hash.remove(byOrder.get(gone!)!, gone!);
        expect(hash.find(byOrder.get(gone!)!)).toBe(-1);
        byOrder.delete(gone!);
      }
    }
    expect(hash.size).toBe(held.length);
    for (const order of held) expect(hash.find(byOrder.get(order)!)).toBe(order);
    expect(hash.find("x-20260908T010203Z-00000000")).toBe(-1);
  });
});

describe("ExecutionRows", () => {
  test("ExecutionRows keeps each row's order, state, capability and sealed parts through forgetting and compaction", () => {
    const rows = new ExecutionRows();
    for (let order = 1; order <= 5000; order++) {
      rows.add(order, "queued", order % 3 === 0 ? "demo.write" : "demo.read");
      const row = rows.rowOf(order);
      rows.setState(row, order % 7 === 0 ? "running" : "succeeded");
      if (order % 7 !== 0) rows.seal(row, new SealedExecution(1, order, order * 1000, order % 11 === 0 ? [order, order + 1] : order, -1), order * 10);
    }
    // Forget every finished one below 4000: past half of the table, which compacts it.
    for (let order = 1; order < 4000; order++) if (order % 7 !== 0) rows.forget(rows.rowOf(order));
    expect(rows.length).toBeLessThan(5000);
    for (let order = 1; order <= 5000; order++) {
      const row = rows.rowOf(order);
      if (order < 4000 && order % 7 !== 0) {
        expect(row).toBe(-1);
        continue;
      }
      expect(rows.order(row)).toBe(order);
      expect(rows.state(row)).toBe(order % 7 === 0 ? "running" : "succeeded");
      expect(rows.capability(row)).toBe(order % 3 === 0 ? "demo.write" : "demo.read");
      expect(rows.hasCapability(row, "demo.write")).toBe(order % 3 === 0);
      expect(rows.isSealed(row)).toBe(order % 7 !== 0);
      if (order % 7 === 0) continue;
      const sealed = rows.sealed(row);
      expect([sealed.first, sealed.last, sealed.baseMs, sealed.chunks, sealed.snapshotText, rows.idRef(row)]).toEqual([1, order, order * 1000, order % 11 === 0 ? [order, order + 1] : order, -1, order * 10]);
    }
    expect(rows.hasCapability(rows.rowOf(4000), "never.seen")).toBe(false);
  });
});
