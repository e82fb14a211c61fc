import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import type { ExecutionStore } from "../../runtime/store/store.ts";

/** Resolves with an execution's snapshot once `store` has its `execution.completed` (already stored or to come). */
export function terminalSnapshot(store: ExecutionStore, id: string): Promise<ExecutionSnapshot> {
  return new Promise((resolve) => {
    const subscription = store.subscribe({ executions: [id], after: 0 }, (event) => {
      if (event.type !== "execution.completed") return;
      queueMicrotask(() => subscription.unsubscribe());
      resolve(store.get(id)!);
    });
  });
}
