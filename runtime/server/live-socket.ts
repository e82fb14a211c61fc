/**
 * What a send did: `ok` written (or buffered below the adapter's mark), `backpressure` accepted but
 * the socket is full (stop and wait for `drain`), `dropped` not delivered (the socket is gone).
 */
export type SendResult = "ok" | "backpressure" | "dropped";

/**
 * The largest message a live-channel client may send: the server reads none (docs/protocol.md),
 * and a runtime buffers a whole message before it hands it over — Bun's default is 16 MiB, so 256
 * connections each sending all but the end of one held 4 GiB. Past it the connection is closed
 * (1009) as soon as the frame's header says so. Control frames (a ping, a close) are 125 bytes at most.
 */
export const CLIENT_MESSAGE_BYTES = 4 * 1024;

/**
 * One live-channel connection as a runtime adapter exposes it. The adapter maps Bun's
 * `ServerWebSocket` or Node's `ws` socket onto this and calls `LiveChannel.drain(socket)` when a
 * socket that reported backpressure can take more, and `LiveChannel.close(socket)` when it closed.
 */
export interface LiveSocket {
  send(text: string): SendResult;
  bufferedAmount(): number;
  ping(): void;
  /**
   * True when the adapter tells the channel of every pong (LiveChannel.pong): a quiet connection
   * that leaves its pings unanswered is then closed (docs/protocol.md, "Heartbeats").
   */
  answersPings?: boolean;
  /** Batches the sends made inside `fn` into as few writes as possible. */
  cork?(fn: () => void): void;
  /** Joins / leaves a topic of the runtime's native fan-out (see LiveTopics); only with it. */
  subscribe?(topic: string): void;
  unsubscribe?(topic: string): void;
  close(code: number, reason: string): void;
}

/**
 * A runtime's native fan-out (Bun's `server.publish`): one call writes a frame to every socket
 * subscribed to a topic, ~10× cheaper than a send per socket when many watch the same thing.
 */
export interface LiveTopics {
  publish(topic: string, text: string): void;
}

/** Time as the live channel sees it, injected so heartbeat tests run in milliseconds. */
export interface LiveClock {
  /** Wall-clock milliseconds since the epoch, for heartbeat timestamps. */
  now(): number;
  /** Milliseconds from any fixed point, with fractions, for intervals; default `performance.now()`. */
  monotonic?(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock. */
export const systemLiveClock: LiveClock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    // A heartbeat must never keep a stopping process alive.
    (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
