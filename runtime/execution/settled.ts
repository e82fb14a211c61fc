import type { ExecutionStore } from "../store/store.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import { isTerminal } from "./state-machine.ts";

/** Resolves with the snapshot once the execution is terminal (at once if it already is). */
export function settled(store: ExecutionStore, id: string): Promise<ExecutionSnapshot> {
  return new Promise((resolve, reject) => {
    const now = store.get(id);
    if (!now) return reject(new Error(`No execution ${id} in the store`));
    if (isTerminal(now.state)) return resolve(now);
    let done = false;
    const subscription = store.subscribe({ executions: [id], after: now.last_sequence }, (event) => {
      if (done || event.type !== "execution.completed") return;
      done = true;
      queueMicrotask(() => subscription.unsubscribe());
      resolve(store.get(id)!);
    });
  });
}
