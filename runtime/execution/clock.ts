/** Time as the engine sees it, injected so that tests of deadlines and heartbeats run in milliseconds. */
export interface Clock {
  /** Wall-clock time, for timestamps people read. */
  now(): Date;
  /** Monotonic milliseconds (`performance.now()`), for durations and deadlines. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
