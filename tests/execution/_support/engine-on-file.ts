import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEngine } from "../../../runtime/execution/engine.ts";
import { resolveLimits } from "../../../runtime/execution/limits.ts";
import { createSqliteStore } from "../../../runtime/store/sqlite-store.ts";
import type { StorageFault } from "../../../runtime/store/store.ts";
import { ManualClock } from "../../_support/manual-clock.ts";
import { catalog } from "../../_support/registered.ts";
import { TEST_CAPABILITIES } from "./harness.ts";
import { FakePool } from "./fake-pool.ts";

/**
 * An engine over a sqlite store whose write cadence the test moves by hand: after a write, the
 * next one waits for COMMIT_GAP_MS of this clock, which never passes unless the test says so.
 * `close()` removes its folder too.
 */
export function engineOnFile(max_concurrent: number) {
  const root = mkdtempSync(join(tmpdir(), "docket-dispatch-"));
  const limits = resolveLimits({ overrides: { max_concurrent } });
  const clock = new ManualClock();
  const file = createSqliteStore({ path: join(root, "state.db"), limits, clock: () => clock.now(), cadence: clock, onListenerError: () => {} });
  // What the engine tells the store and the pool, in order; and a write fault the test sets.
  const told: string[] = [];
  let fault: StorageFault | null = null;
  let notes = true;
  const faultListeners: Array<() => void> = [];
  const store = {
    ...file,
    storageFault: () => fault ?? file.storageFault(),
    starting: (id: string) => (told.push(`starting ${id}`), notes && file.starting(id)),
    onStorageFault: (listener: () => void) => (faultListeners.push(listener), file.onStorageFault(listener)),
  };
  const pool = new FakePool();
  const run = pool.run.bind(pool);
  pool.run = (task, options) => (told.push(`run ${task.execution?.id}`), run(task, options));
  const engine = createEngine({ registry: catalog(Object.values(TEST_CAPABILITIES)), store, pool, limits, root, storeKind: "sqlite", clock, log: () => undefined });
  const close = async () => {
    await engine.close();
    file.close();
    rmSync(root, { recursive: true, force: true });
  };
  /** The test's fault, as the store's writer would tell it after a write that failed. */
  const failWrite = (next: StorageFault) => {
    fault = next;
    for (const listener of faultListeners) listener();
  };
  return { engine, store, pool, clock, told, close, failWrite, setFault: (next: StorageFault | null) => (fault = next), setNotes: (taken: boolean) => (notes = taken) };
}

/** Runs microtasks only: no turn of the event loop, so nothing the store schedules is written. */
export async function microtasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

