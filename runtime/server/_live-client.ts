import type { Subscription } from "../store/store.ts";
import type { LiveSocket } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";
import { LiveLog, type LagEpoch, type LogEntries, type LogView } from "./_live-log.ts";

/**
 * Connections that follow the same thing. The group holds one store subscription and one log of
 * frames for all of them; each member that reads from the log is a position in it. Caught-up
 * ("fast") members of a runtime with native fan-out (Bun) share one topic, published from the
 * log once for all of them.
 */
export class LiveGroup {
  /** Connections of the group, in any state; the group is dropped at zero. */
  members = 0;
  readonly log = new LiveLog();
  /** The group's live store subscription, feeding its log: made with the group, gone with it. */
  subscription: Subscription | null = null;
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
  /** The lowest position a member still reads from the log (stale-low between looks, never above). */
  lowest = 0;
  /** Listed for the writer to publish the topic's waiting frames. */
  scheduled = false;
  /** Listed for the writer to write its behind members. */
  listed = false;
  /** The heartbeat epoch of the last event for the group. */
  seen = 0;
  constructor(readonly key: string, readonly target: LiveTarget, readonly topic: string) {}

  /** Frames appended and not yet published to the topic. */
  get pending(): number {
    return this.fast.size === 0 ? 0 : this.log.end - this.published;
  }
}

/**
 * One connection's delivery state. It starts on its own store subscription ("own" mode): the
 * queue holds the ready frame, the replayed history and live frames (shared strings, never
 * copies), frames `[head, length)` waiting; the first `replayEnd` are replay, which the
 * subscriber queue bound does not count (a reconnect must get every retained event after its
 * cursor). Once its queue is written it moves to its group's log ("log" mode), where it is a
 * position (`cursor`), on the group's topic (`fast`), or, having fallen too far behind, reading
 * what it kept (`view`) before it is told `stream.lagged`.
 */
export class LiveClient {
  readonly queue: string[] = [];
  /**
   * Executions whose cursor (`after`) is past what the store held when the connection opened:
   * its own subscription skips their events up to the cursor, the group's log does not, so the
   * client stays on its own until each has delivered an event to it (null once none is left).
   */
  cursorsAhead: Set<string> | null = null;
  head = 0;
  replayEnd = 0;
  /** True while `store.subscribe` replays: frames are only collected, behind the ready frame. */
  opening = true;
  /** The socket said backpressure; nothing is sent until it drains. */
  blocked = false;
  /** Listed for the channel's next write. */
  scheduled = false;
  closed = false;
  /** Its own store subscription, in "own" mode only. */
  subscription: Subscription | null = null;
  /** Reads from its group's log (after its own queue was written). */
  inLog = false;
  /** Its next position in the log (or in its view): behind or lagging members. */
  cursor = 0;
  /** On the group's topic. */
  fast = false;
  /** What it kept of the log when it fell too far behind, and where its lag began. */
  view: LogView | null = null;
  lag: LagEpoch | null = null;
  /**
   * Per execution, the last sequence handed to this client: what `stream.lagged` names as where
   * it resumes. An execution's last event removes it (nothing of it can be lost after that). The
   * execution of the latest frame written from the log is kept apart (lastId) and only moved into
   * the map when another execution's frame follows: a flood of one execution costs no map write.
   */
  readonly got = new Map<string, number>();
  lastId: string | null = null;
  lastSequence = 0;
  /** Its group's last published sequences when it joined the topic (null off the topic). */
  topicFrom: Map<string, number> | null = null;
  /** Events dropped in the current lag episode ("own" mode). */
  dropped = 0;
  /** Per execution, the last sequence before its first dropped event ("own" mode). */
  lagFrom: Map<string, number> | null = null;
  /** The heartbeat epoch of the last frame written (see LiveChannel's tick). */
  seen = 0;
  /** Length of the live frames waiting in its own queue (not replay): what `subscriber_queue_bytes` bounds there. */
  liveBytes = 0;

  constructor(readonly socket: LiveSocket, readonly group: LiveGroup) {}

  /** Queues a live frame, counting its bytes against the bound. */
  pushLive(frame: string): void {
    this.queue.push(frame);
    this.liveBytes += frame.length;
  }

  /** Takes the next waiting frame to send, uncounting it if it was live. */
  next(): string {
    const index = this.head++;
    const frame = this.queue[index]!;
    if (index >= this.replayEnd) this.liveBytes -= frame.length;
    return frame;
  }

  /** Frames waiting in its own queue. */
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

  /** Something left to write by its own sends (its queue, or log frames a topic does not bring it). */
  get hasFrames(): boolean {
    return this.waiting > 0 || (this.inLog && !this.fast && (this.cursor < this.sourceEnd || this.view !== null));
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

  /** The last sequence of `id` handed to it, 0 for none. */
  gotOf(id: string): number {
    return id === this.lastId ? this.lastSequence : (this.got.get(id) ?? 0);
  }

  /** Forgets sent frames: all of them when the queue emptied, else in large steps to keep pushes cheap. */
  compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      this.replayEnd = 0;
      this.liveBytes = 0;
    } else if (this.head >= 4096 && this.head * 2 >= this.queue.length) {
      this.queue.splice(0, this.head);
      this.replayEnd = Math.max(0, this.replayEnd - this.head);
      this.head = 0;
    }
  }
}
