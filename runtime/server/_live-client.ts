import type { Subscription } from "../store/store.ts";
import type { ExecutionEvent } from "../execution/protocol.ts";
import type { LiveSocket } from "./live-socket.ts";

/** Connections that follow the same thing, sharing one topic of the runtime's native fan-out. */
export class LiveGroup {
  /** Connections of the group (fast or not); the group is dropped at zero. */
  members = 0;
  /** The last event published to the topic: each event is published once, by the first fast member it reaches. */
  last: ExecutionEvent | null = null;
  constructor(readonly key: string, readonly topic: string) {}
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
