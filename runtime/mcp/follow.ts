import type { ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionStore, Subscription } from "../store/store.ts";

/** How following an execution ended. */
export type FollowOutcome =
  | { kind: "completed"; snapshot: ExecutionSnapshot }
  /** The caller stopped following (its request was cancelled or its connection closed). */
  | { kind: "aborted" }
  /** The store does not hold the execution (its details were forgotten). */
  | { kind: "gone" };

/** Options of {@link followExecution}. */
export interface FollowOptions {
  signal: AbortSignal;
  /** Every event of the execution, from its first, in sequence order. */
  onEvent?: (event: ExecutionEvent) => void;
}

/**
 * Follows one execution through the store to its end: its retained history first, then live
 * (the store's subscribe-then-replay leaves no gap), until `execution.completed`, which is always
 * last. Resolves with the terminal snapshot; never keeps a subscription past its answer.
 */
export function followExecution(store: ExecutionStore, id: string, options: FollowOptions): Promise<FollowOutcome> {
  const { signal } = options;
  return new Promise((resolve) => {
    let done = false;
    let subscription: Subscription | null = null;
    const finish = (outcome: FollowOutcome) => {
      if (done) return;
      done = true;
      subscription?.unsubscribe();
      signal.removeEventListener("abort", onAbort);
      resolve(outcome);
    };
    const onAbort = () => finish({ kind: "aborted" });
    if (signal.aborted) return finish({ kind: "aborted" });
    signal.addEventListener("abort", onAbort, { once: true });
    subscription = store.subscribe({ executions: [id], after: 0 }, (event) => {
      if (done) return;
      options.onEvent?.(event);
      if (event.type !== "execution.completed") return;
      const snapshot = store.get(id);
      finish(snapshot ? { kind: "completed", snapshot } : { kind: "gone" });
    });
    // The replay runs inside subscribe: it may have finished before `subscription` was assigned.
    if (done) subscription.unsubscribe();
    else if (subscription.missing.includes(id)) finish({ kind: "gone" });
  });
}
