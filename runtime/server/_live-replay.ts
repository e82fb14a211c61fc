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

/** What a new connection is owed before the channel's log: the history it asked for, and the cursors past it. */
export interface ReplayPlan {
  ranges: ReplayRange[];
  /** Events the ranges hold now (what `stream.ready` says was replayed). */
  replayed: number;
  /** Some of the history asked for was already dropped. */
  truncated: boolean;
  /** How many events of the history asked for were already dropped (what `truncated` is about). */
  dropped: number;
  /**
   * Executions whose cursor is past what is stored: their live events up to the cursor are not
   * sent (the client says it has them). Null when there is none.
   */
  skip: Map<string, number> | null;
  /** Executions whose cursor is their last stored sequence: nothing is owed, and the cursor is what the connection has of them. */
  level: string[];
  /** Per execution looked at, what the connection has of it once its history is sent: the later of its cursor and the last sequence read. */
  read: Map<string, number>;
}

/** True while an execution may still get events: until it finished, or, with an unknown outcome, until that is reconciled. */
function mayGetEvents(snapshot: ExecutionSnapshot | null): boolean {
  return snapshot !== null && (!isTerminal(snapshot.state) || (snapshot.failure?.outcome_certainty === "unknown" && !snapshot.reconciliation));
}

/**
 * Executions looked at per step while planning the history of a connection to all of them: a
 * page of heads (no snapshot is built) costs well under a millisecond.
 */
const HEADS_PAGE = 500;

/**
 * The history a connection to `target` is owed (docs/protocol.md, "No gap, no repeat"): named
 * executions from `after` (0 when absent); all executions only with `after`, from it, each held
 * one. Everything up to each execution's last stored sequence when it is looked at is history;
 * the channel's log, which the connection reads from the moment it opens, brings everything after
 * (and what it brings twice, stored while the history was looked at, is left out: see `read`).
 * Looking at every execution held takes a while with many held: it is done a page of heads at a
 * time (`step`; the store's `heads`, which builds no snapshot), one per turn of the writer, so
 * that no open holds the server for long.
 */
export class ReplayPlanner {
  readonly plan: ReplayPlan = { ranges: [], replayed: 0, truncated: false, dropped: 0, skip: null, level: [], read: new Map() };
  /** The connection's cursor (0 without one). */
  readonly after: number;
  /** The next page of heads (all executions); undefined for the first, null once done. */
  private cursor: string | null | undefined;

  constructor(
    private readonly store: ExecutionStore,
    private readonly target: LiveTarget,
  ) {
    this.after = target.after ?? 0;
    this.cursor = target.executions === "all" && target.after !== undefined ? undefined : null;
    // Named: each from its cursor; one the store does not hold (yet) is followed from the cursor.
    if (target.executions !== "all") {
      for (const id of target.executions) {
        const page = store.events(id, this.after, 1);
        this.owe(id, page?.last_sequence ?? 0, page?.retained_from ?? 1, () => true);
      }
    }
  }

  /** Looks at the next page of executions held (a connection to all of them); true once every one was. */
  step(): boolean {
    if (this.cursor === null) return true;
    const page = this.store.heads(this.cursor, HEADS_PAGE);
    // Whether a finished one may still get events (an unknown outcome not reconciled yet) takes
    // its snapshot: asked only of one whose cursor is past what is stored.
    for (const head of page.items) this.owe(head.id, head.last_sequence, head.retained_from, () => !isTerminal(head.state) || mayGetEvents(this.store.get(head.id)));
    this.cursor = page.next_cursor;
    return this.cursor === null;
  }

  private owe(id: string, last: number, retainedFrom: number, ongoing: () => boolean): void {
    const { plan, after } = this;
    plan.read.set(id, Math.max(after, last));
    if (last < after) {
      // A cursor past what is stored. For all executions, only one that may still get events
      // is remembered (one that finished gets none, but a reconciliation of an unknown outcome).
      if (ongoing()) (plan.skip ??= new Map()).set(id, after);
      return;
    }
    if (last === after) {
      if (after > 0) plan.level.push(id);
      return;
    }
    // History already dropped is said once, by `truncated` and `dropped` in stream.ready.
    const from = Math.max(after, retainedFrom - 1);
    plan.dropped += from - after;
    plan.ranges.push({ id, cursor: after, after: from, through: last });
    plan.replayed += last - from;
    if (after + 1 < retainedFrom) plan.truncated = true;
  }
}
