import type { ReplayPlanner, ReplayRange } from "./_live-replay.ts";
import type { LiveSocket } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";
import type { LagEpoch, LiveLog, LogEntries, LogView } from "./_live-log.ts";

/**
 * Connections that follow the same thing. They read the channel's one log of frames (each one a
 * position in it, taking the entries of what the group follows); caught-up ("fast") members of a
 * runtime with native fan-out (Bun) share one topic, published from the log once for all of them.
 */
export class LiveGroup {
  /** Connections of the group, in any state; the group is dropped at zero. */
  members = 0;
  /** The executions it follows; null for all of them. */
  readonly ids: ReadonlySet<string> | null;
  /** Members written from the log by their own sends: behind the end, or caught up without a topic. */
  readonly behind = new Set<LiveClient>();
  /** Members subscribed to the topic: they have every frame before `published`, and get the rest by publish. */
  readonly fast = new Set<LiveClient>();
  /** Members that fell more than subscriber_queue_bytes behind: each reads what it kept (its view), then lags. */
  readonly lagging = new Set<LiveClient>();
  /** Log position up to which frames are published to the topic (meaningful while it has fast members). */
  published = 0;
  /** Per execution, the last sequence published to the topic (what a member leaving it got from it). */
  readonly lastPublished = new Map<string, number>();
  /** Listed for the writer to publish the topic's waiting frames. */
  scheduled = false;
  /** The heartbeat epoch of the last frame published to its topic. */
  seen = 0;
  constructor(
    readonly key: string,
    readonly target: LiveTarget,
    readonly topic: string,
    /** The channel's log, shared by every group. */
    readonly log: LiveLog,
  ) {
    this.ids = target.executions === "all" ? null : new Set(target.executions);
  }

  /** True when the group follows the execution `id`. */
  follows(id: string): boolean {
    return this.ids === null || this.ids.has(id);
  }

  /** Frames appended and not yet published to the topic. */
  get pending(): number {
    return this.fast.size === 0 ? 0 : this.log.end - this.published;
  }
}

/** The `planning` of a connection waiting for its turn (LiveClient.turn): nothing of it is planned yet. */
export const AWAITING_TURN = Object.freeze({ planner: null, start: -1 });

/**
 * One connection's delivery state. From the moment it opens (or, waiting for its turn at a history
 * of every execution, from the moment that turn comes) it is a position in the channel's log
 * (`cursor`); first it is sent its queue (the ready frame, then its history, a page at a time from
 * `replay`), then the log from that position — on the group's topic once caught up (`fast`), or,
 * having fallen too far behind, what it kept (`view`) before it is told `stream.lagged`.
 */
export class LiveClient {
  /** Frames to send before the log: `stream.ready`, a page of history, a notice. `[head, length)` wait. */
  readonly queue: string[] = [];
  head = 0;
  /** History still owed, oldest execution first (see _live-replay.ts). */
  replay: ReplayRange[] = [];
  /** Its history still being looked for, from its place in the log at `start`: nothing is written to it until then. */
  planning: { planner: ReplayPlanner; start: number } | typeof AWAITING_TURN | null = null;
  /**
   * Its turn at a history of every execution (LiveChannel's REPLAYS_AT_ONCE): `waiting` for one
   * (then `planning` is AWAITING_TURN and it is not in the log yet), `held`, or null (none needed, or given up).
   */
  turn: "waiting" | "held" | null = null;
  /** Since when (monotonic ms) its socket has been full without draining; null while it is not. */
  blockedSince: number | null = null;
  /**
   * Executions whose cursor (`after`) is past what was stored when it opened: their log frames up
   * to the cursor are not sent (the client says it has them). Null once none is left.
   */
  skip: Map<string, number> | null = null;
  /**
   * Log frames before `until` that its history already holds (something was stored while it was
   * read, see LiveChannel.open): per execution, the last sequence the history holds.
   */
  overlap: { until: number; through: Map<string, number> } | null = null;
  /** The socket said backpressure; nothing is sent until it drains (see `block`). */
  blocked = false;
  /** Listed for the channel's next write. */
  scheduled = false;
  closed = false;
  /** Its next position in the log (or in its view). */
  cursor = 0;
  /** On the group's topic. */
  fast = false;
  /** What it kept of the log when it fell too far behind, and (following everything) the lag epoch it holds. */
  view: LogView | null = null;
  lag: LagEpoch | null = null;
  /** A member of named executions that lags: for each, the last sequence appended when its lag began. */
  lagFrom: Map<string, number> | null = null;
  /**
   * Per execution, the last sequence a notice of its history already announced as lost (history
   * the store dropped while it was being sent): a later lag counts its loss from past it.
   */
  announced: Map<string, number> | null = null;
  /** Bytes its view counts for in what lagging members keep, all together (see LiveGroups.keep). */
  keptBytes = 0;
  /** Where the view it keeps ends, in bytes appended to the log in all (LiveLog `bytes`): with keptBytes, its stretch of the log. */
  keptUntil = 0;
  /**
   * A member of every execution whose view was given up before it was written (see
   * LiveGroups.giveUp): how many events of it were lost, and for each execution the first and
   * last sequence lost. Its notice adds them to what its lag epoch counts.
   */
  lostBefore: { dropped: number; spans: Map<string, { first: number; last: number }> } | null = null;
  /**
   * Per execution, the last sequence handed to this client: what `stream.lagged` names as where
   * it resumes. An execution's last event removes it (nothing of it can be lost after that). The
   * execution of the latest frame is kept apart (lastId) and only moved into the map when another
   * execution's frame follows: a flood of one execution costs no map write.
   */
  readonly got = new Map<string, number>();
  lastId: string | null = null;
  lastSequence = 0;
  /** Its group's last published sequences when it joined the topic (null off the topic). */
  topicFrom: Map<string, number> | null = null;
  /** The heartbeat epoch of the last frame written (see LiveChannel's tick). */
  seen = 0;
  /** The heartbeat epoch of the oldest ping not answered yet; null when every ping was. */
  unanswered: number | null = null;
  /** The tick from which its own pings are counted (LiveChannel.ping), and how many it sent since. */
  pingsSince = 0;
  pings = 0;

  /** Its socket said backpressure at `now`: nothing is sent until it drains. */
  block(now: number): void {
    this.blocked = true;
    this.blockedSince ??= now;
  }

  /** Its socket drained: it can take more. */
  unblock(): void {
    this.blocked = false;
    this.blockedSince = null;
  }

  constructor(readonly socket: LiveSocket, readonly group: LiveGroup) {}

  /** Frames waiting in its queue. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** Where its log frames come from now, and where they end. */
  get source(): LogEntries {
    return this.view ?? this.group.log;
  }

  get sourceEnd(): number {
    return this.view === null ? this.group.log.end : this.view.end;
  }

  /** Something left to write by its own sends (its queue, its history, or log frames a topic does not bring it). */
  get hasFrames(): boolean {
    if (this.planning !== null) return false;
    return this.waiting > 0 || this.replay.length > 0 || (!this.fast && (this.cursor < this.sourceEnd || this.view !== null));
  }

  /** Records that a frame of `id` at `sequence` (negative: its last) was handed to it. */
  handed(id: string, sequence: number): void {
    if (sequence < 0) {
      this.got.delete(id);
      if (this.lastId === id) this.lastId = null;
      return;
    }
    if (id !== this.lastId) {
      if (this.lastId !== null) this.got.set(this.lastId, this.lastSequence);
      this.lastId = id;
    }
    this.lastSequence = sequence;
  }

  /** The last sequence of `id` a history notice announced as lost, 0 for none. */
  announcedOf(id: string): number {
    return this.announced?.get(id) ?? 0;
  }

  /** The last sequence of `id` handed to it, 0 for none. */
  gotOf(id: string): number {
    return id === this.lastId ? this.lastSequence : (this.got.get(id) ?? 0);
  }

  /**
   * True when the log entry of `id` at `sequence` (at `position`) is one it is to be written: of
   * what its group follows, and not one it has already (see has). What its writes send, and what
   * a stretch given up before they did counts as lost (LiveGroups.giveUp).
   */
  takes(position: number, id: string, sequence: number): boolean {
    const ids = this.group.ids;
    if (ids !== null && !ids.has(id)) return false;
    return (this.skip === null && this.overlap === null) || !this.has(position, id, sequence);
  }

  /**
   * True when the log frame of `id` at `sequence` (at `position`) is one it has already: at or
   * below its cursor, or in its history. Forgets what no later frame can match.
   */
  has(position: number, id: string, sequence: number): boolean {
    const at = sequence < 0 ? -sequence : sequence;
    if (this.overlap !== null) {
      if (position >= this.overlap.until) this.overlap = null;
      else if (at <= (this.overlap.through.get(id) ?? 0)) return true;
    }
    if (this.skip === null) return false;
    const after = this.skip.get(id);
    if (after === undefined) return false;
    if (at <= after) return true;
    this.skip.delete(id);
    if (this.skip.size === 0) this.skip = null;
    return false;
  }

  /** Forgets sent frames: all of them when the queue emptied, else in large steps to keep pushes cheap. */
  compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head >= 4096 && this.head * 2 >= this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
