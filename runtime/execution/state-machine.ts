/** Every state an execution can be in (docs/protocol.md). */
export const EXECUTION_STATES = ["queued", "running", "cancelling", "succeeded", "failed", "cancelled"] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

/** The states no execution leaves. */
export const TERMINAL_STATES: ReadonlySet<ExecutionState> = new Set(["succeeded", "failed", "cancelled"]);

const MOVES: Record<ExecutionState, readonly ExecutionState[]> = {
  queued: ["running", "cancelled"],
  running: ["succeeded", "failed", "cancelling"],
  cancelling: ["cancelled", "succeeded", "failed"],
  succeeded: [],
  failed: [],
  cancelled: [],
};

/** The whole lifecycle contract: the store refuses any move this does not allow. */
export function mayMoveTo(from: ExecutionState, to: ExecutionState): boolean {
  return MOVES[from].includes(to);
}

/** True for succeeded, failed and cancelled. */
export function isTerminal(state: ExecutionState): boolean {
  return TERMINAL_STATES.has(state);
}

/** Thrown by a store asked to make a move `mayMoveTo` refuses; nothing is applied. */
export class IllegalTransitionError extends Error {
  constructor(readonly id: string, readonly from: ExecutionState, readonly to: ExecutionState) {
    super(`Execution ${id} cannot move from ${from} to ${to}`);
    this.name = "IllegalTransitionError";
  }
}
