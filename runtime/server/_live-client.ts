import type { Subscription } from "../store/store.ts";
import type { ExecutionEvent } from "../execution/protocol.ts";
import type { LiveSocket } from "./live-socket.ts";
import type { LiveTarget } from "./live-target.ts";

/** Connections that follow the same thing, sharing one topic of the runtime's native fan-out. */
export class LiveGroup {
  /** Connections of the group (fast or not); the group is dropped at zero. */
  members = 0;
  /** The last event queued for the topic: each event is published once, by the first fast member it reaches. */
  last: ExecutionEvent | null = null;
  /** Frames for the topic not published yet (`[published, length)`): the channel's writer publishes them in slices. */
  readonly outbox: string[] = [];
  /** The event of each outbox frame: where a member resumes if the topic has to give up (see overflow). */
  readonly outboxEvents: ExecutionEvent[] = [];
  published = 0;
  /** Length of the frames not published yet: bounded by subscriber_queue_bytes like a client's queue. */
  pendingBytes = 0;
  /** Per execution, the last sequence published to the topic. */
  readonly lastPublished = new Map<string, number>();
  /** Listed for the writer's next slice. */
  scheduled = false;
  /** A member's buffer filled during a publish on the append path: only the writer publishes until it took that member off. */
  held = false;
  /** The heartbeat epoch of the last event for the topic. */
  seen = 0;
  /** Members subscribed to the topic now: the writer checks their buffers after it publishes. */
  readonly fast = new Set<LiveClient>();
  /**
   * The group's one store subscription, held while it has fast members: each event costs the
   * append path one call for the whole group instead of one per watcher.
   */
  subscription: Subscription | null = null;
  constructor(readonly key: string, readonly target: LiveTarget, readonly topic: string) {}

  /** Frames queued for the topic and not yet published. */
  get pending(): number {
    return this.outbox.length - this.published;
  }

  /** Forgets published frames once the outbox emptied. */
  compact(): void {
    if (this.published === this.outbox.length) {
      this.outbox.length = 0;
      this.outboxEvents.length = 0;
      this.published = 0;
      this.pendingBytes = 0;
    }
  }
}

/**
 * One connection's delivery state. The queue holds shared frame strings (never copies); frames
 * `[head, length)` are waiting. The first `replayEnd` entries are replayed history, which the
 * subscriber queue bound does not count: a reconnect must get every retained event after its cursor.
 * Live frames are counted by their bytes (`liveBytes`, as UTF-16 length: exact for ASCII JSON,
 * an undercount only for text outside it), which is what the bound limits.
 */
export class LiveClient {
  readonly queue: string[] = [];
  /**
   * Executions whose cursor (`after`) is past what the store held when the connection opened:
   * its own subscription skips their events up to the cursor, a topic would not, so the client
   * joins none until each has delivered an event to it (null once none is left).
   */
  cursorsAhead: Set<string> | null = null;
  head = 0;
  replayEnd = 0;
  /** True while `store.subscribe` replays: frames are only collected, behind the ready frame. */
  opening = true;
  /** The socket said backpressure; nothing is sent until it drains. */
  blocked = false;
  /** Listed for the channel's next microtask flush. */
  scheduled = false;
  closed = false;
  subscription: Subscription | null = null;
  /**
   * Per execution, the last sequence handed to this client: queued on its own path, or published
   * to its topic while it was a member. What `stream.lagged` names as where it resumes.
   */
  readonly got = new Map<string, number>();
  /** Its group's last published sequences when it joined the topic (null off the topic). */
  topicFrom: Map<string, number> | null = null;
  /** Events dropped in the current lag episode. */
  dropped = 0;
  /** Per execution, the last sequence before its first dropped event: where the client resumes. */
  lagFrom: Map<string, number> | null = null;
  /** The heartbeat epoch of the last frame written (see LiveChannel's tick). */
  seen = 0;
  /**
   * Subscribed to its group's topic: caught up, so live events reach it by one publish for the
   * whole group instead of a send of its own. Left at the first sign of a full buffer.
   */
  fast = false;

  constructor(readonly socket: LiveSocket, readonly group: LiveGroup | null) {}

  /** Length of the live frames waiting (not replay): what `subscriber_queue_bytes` bounds. */
  liveBytes = 0;

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

  get waiting(): number {
    return this.queue.length - this.head;
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
