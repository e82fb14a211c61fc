import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionStore } from "../store/store.ts";
import { isTerminal } from "../execution/state-machine.ts";
import type { LiveTarget } from "./live-target.ts";

/** History of one execution a connection is owed: the events after `after`, up to `through`. */
export interface ReplayRange {
  readonly id: string;
  /** The connection's cursor: what it says it has. */
  readonly cursor: number;
  /** Sent up to here: the cursor, or where the history retained begins when the rest was already dropped. */
  after: number;
  readonly through: number;
}

/** What a new connection is owed before its group's log: the history it asked for, and the cursors past it. */
export interface ReplayPlan {
  ranges: ReplayRange[];
  /** Events the ranges hold now (what `stream.ready` says was replayed). */
  replayed: number;
  /** Some of the history asked for was already dropped. */
  truncated: boolean;
  /**
   * Executions whose cursor is past what is stored: their live events up to the cursor are not
   * sent (the client says it has them). Null when there is none.
   */
  skip: Map<string, number> | null;
  /** Per execution looked at, what the connection has of it once its history is sent: the later of its cursor and the last sequence read. */
  read: Map<string, number>;
}

/** True while an execution may still get events: until it finished, or, with an unknown outcome, until that is reconciled. */
function mayGetEvents(snapshot: ExecutionSnapshot): boolean {
  return !isTerminal(snapshot.state) || (snapshot.failure?.outcome_certainty === "unknown" && !snapshot.reconciliation);
}

/** Executions listed per page while planning the history of a connection to all of them. */
const LIST_PAGE = 500;

/**
 * The history a connection to `target` is owed (docs/protocol.md, "No gap, no repeat"), read when
 * it opens and sent page by page on the writer's turns: named executions from `after` (0 when
 * absent); all executions only with `after`, from it, each held one. Everything up to each
 * execution's last stored sequence is history; the group's log, which the connection reads from
 * the moment it opens, brings everything after. The store hands each event to subscribers once
 * stored (at once in memory, on commit in sqlite), so what is stored when the connection opens is
 * exactly what its log position has behind it.
 */
export function planReplay(store: ExecutionStore, target: LiveTarget): ReplayPlan {
  const plan: ReplayPlan = { ranges: [], replayed: 0, truncated: false, skip: null, read: new Map() };
  const after = target.after ?? 0;
  const owe = (id: string, last: number, ongoing: boolean) => {
    plan.read.set(id, Math.max(after, last));
    if (last < after) {
      // A cursor past what is stored. For all executions, only one that may still get events
      // is remembered (one that finished gets none, but a reconciliation of an unknown outcome).
      if (ongoing) (plan.skip ??= new Map()).set(id, after);
      return;
    }
    if (last === after) return;
    const page = store.events(id, after, 1);
    if (page === null) return;
    // History already dropped is said once, by `truncated` in stream.ready.
    plan.ranges.push({ id, cursor: after, after: Math.max(after, page.retained_from - 1), through: last });
    plan.replayed += last - Math.max(after, page.retained_from - 1);
    if (page.truncated) plan.truncated = true;
  };
  if (target.executions !== "all") {
    // Named: each from its cursor; one the store does not hold (yet) is followed from the cursor.
    for (const id of target.executions) owe(id, store.get(id)?.last_sequence ?? 0, true);
    return plan;
  }
  if (target.after === undefined) return plan;
  for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
    const page = store.list({ limit: LIST_PAGE, cursor });
    for (const snapshot of page.items) owe(snapshot.id, snapshot.last_sequence, mayGetEvents(snapshot));
    cursor = page.next_cursor ?? undefined;
  }
  return plan;
}
