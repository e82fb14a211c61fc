import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { ExecutionHead, ExecutionStore } from "../store/store.ts";
import { isTerminal } from "../execution/state-machine.ts";
import { cursorOf, type LiveTarget } from "./live-target.ts";

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
  /** Executions whose cursor is their last stored sequence, with it: nothing is owed, and the cursor is what the connection has of them. */
  level: Map<string, number>;
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
 * What the store held when a connection opened: its newest execution, and the heads cursor of the
 * ones before it. An execution created later is new to the connection, sent from its first event
 * whatever its cursor, however long it waited for its turn (LiveChannel) before it was planned.
 */
export interface OpenedAt {
  newest: string | null;
  older: string | null;
}

/**
 * True when the store holds more executions than one page of heads: a connection to all of them
 * from a cursor then has a plan worth taking turns for (LiveChannel); with fewer it is planned at
 * once, in one step.
 */
export function manyHeld(store: ExecutionStore): boolean {
  return store.heads(undefined, HEADS_PAGE).next_cursor !== null;
}

/** What the store holds now (see OpenedAt). */
export function openedAt(store: ExecutionStore): OpenedAt {
  const page = store.heads(undefined, 1);
  return { newest: page.items[0]?.id ?? null, older: page.next_cursor };
}

/**
 * Where planning a connection to all executions is: the newest execution held when it opened,
 * then the older ones from its cursor, then the newer ones (created since it opened, if it waited
 * for its turn) from their first event; done once every one was looked at.
 */
type Phase = "newest" | "older" | "newer" | "done";

/**
 * The history a connection to `target` is owed (docs/protocol.md, "No gap, no repeat"): named
 * executions each from its cursor (its own, or `after`; 0 when absent); all executions only with
 * `after`: each held when the connection opened from `after`, each created since from its first
 * event. Everything up to each execution's last stored sequence when it is looked at is history;
 * the channel's log, which the connection reads from the moment planning begins, brings
 * everything after (and what it brings twice, stored while the history was looked at, is left
 * out: see `read`). Looking at every
 * execution held takes a while with many held: it is done a page of heads at a time (`step`; the
 * store's `heads`, which builds no snapshot), one per turn of the writer, so that no open holds
 * the server for long.
 */
export class ReplayPlanner {
  readonly plan: ReplayPlan = { ranges: [], replayed: 0, truncated: false, dropped: 0, skip: null, level: new Map(), read: new Map() };
  /** The connection's cursor of every execution (0 without one); named executions may each have their own (cursorOf). */
  readonly after: number;
  private phase: Phase;
  /** The next page of heads in this phase; undefined for the first from the newest. */
  private cursor: string | null | undefined;

  constructor(
    private readonly store: ExecutionStore,
    target: LiveTarget,
    private readonly opened: OpenedAt,
  ) {
    this.after = target.after ?? 0;
    this.phase = target.executions === "all" && target.after !== undefined ? "newest" : "done";
    // Named: each from its own cursor; one the store does not hold (yet) is followed from it.
    if (target.executions !== "all") {
      for (const id of target.executions) {
        const cursor = cursorOf(target, id);
        const page = store.events(id, cursor, 1);
        this.owe(id, cursor, page?.last_sequence ?? 0, page?.retained_from ?? 1, () => true);
      }
    }
  }

  /**
   * Looks at the next page of executions held (a connection to all of them; the older ones'
   * last page and the newer ones' first go together); true once every one was.
   */
  step(): boolean {
    const { store, after, opened } = this;
    if (this.phase === "newest") {
      if (opened.newest !== null) {
        const page = store.events(opened.newest, after, 1);
        if (page !== null) this.owe(opened.newest, after, page.last_sequence, page.retained_from, () => mayGetEvents(store.get(opened.newest!)));
      }
      [this.phase, this.cursor] = opened.older !== null ? ["older", opened.older] : ["newer", undefined];
    }
    // Whether a finished one may still get events (an unknown outcome not reconciled yet) takes
    // its snapshot: asked only of one whose cursor is past what is stored.
    const ongoing = (head: ExecutionHead) => () => !isTerminal(head.state) || mayGetEvents(store.get(head.id));
    if (this.phase === "older") {
      const page = store.heads(this.cursor ?? undefined, HEADS_PAGE);
      for (const head of page.items) this.owe(head.id, after, head.last_sequence, head.retained_from, ongoing(head));
      if (page.next_cursor !== null) {
        this.cursor = page.next_cursor;
        return false;
      }
      [this.phase, this.cursor] = ["newer", undefined];
    }
    if (this.phase === "done") return true;
    const page = store.heads(this.cursor ?? undefined, HEADS_PAGE);
    // Newest first: the first one already looked at is where the executions it opened after begin.
    for (const head of page.items) {
      if (this.plan.read.has(head.id)) {
        this.phase = "done";
        return true;
      }
      this.owe(head.id, 0, head.last_sequence, head.retained_from, ongoing(head));
    }
    this.cursor = page.next_cursor;
    if (this.cursor === null) this.phase = "done";
    return this.phase === "done";
  }

  /** Owes `id`'s history from `cursor` (what the connection has of it) up to `last`, as far as it is retained. */
  private owe(id: string, cursor: number, last: number, retainedFrom: number, ongoing: () => boolean): void {
    const { plan } = this;
    plan.read.set(id, Math.max(cursor, last));
    if (last < cursor) {
      // A cursor past what is stored. For all executions, only one that may still get events
      // is remembered (one that finished gets none, but a reconciliation of an unknown outcome).
      if (ongoing()) (plan.skip ??= new Map()).set(id, cursor);
      return;
    }
    if (last === cursor) {
      if (cursor > 0) plan.level.set(id, cursor);
      return;
    }
    // History already dropped is said once, by `truncated` and `dropped` in stream.ready.
    const from = Math.max(cursor, retainedFrom - 1);
    plan.dropped += from - cursor;
    plan.ranges.push({ id, cursor, after: from, through: last });
    plan.replayed += last - from;
    if (cursor + 1 < retainedFrom) plan.truncated = true;
  }
}
