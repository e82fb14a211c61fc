import type { TaskHandle } from "../worker/task.ts";
import type { Clock } from "./clock.ts";

/**
 * The longest a `timeout_ms` timer waits before it looks again for a handler that has not begun:
 * the look that finds it begun comes at most this long after the begin, so a timeout_ms under it
 * may end up to this much late; one at least as long is exact.
 */
export const BEGIN_LOOK_MS = 50;

/**
 * Arms a declaration's `timeout_ms` for a task handed to the pool: it counts from when the task's
 * handler begins (docs/protocol.md), which only its worker knows (TaskHandle.begunAgo, noted for a
 * `timed` task) — not from the hand-over. Time its worker spends before the handler (importing the
 * file, whose top level may await; busy with a previous handler's leftover until the task is taken
 * back and run on another worker) is not the handler's.
 *
 * One timer at a time, kept in `timers` (the caller clears them all when the task ends): due
 * `timeoutMs` after the hand-over, when the handler began at the latest; then, if it has not begun
 * yet, every `timeoutMs` (at least BEGIN_LOOK_MS) — a handler found begun has begun since the last
 * look, so what is left of its time is still ahead — and once it has, for what is left, after
 * which `expire` is called. A task that never begins (its file fails to load, a cancel or a
 * deadline_ms takes it back) never expires by it.
 */
export function armHandlerTimeout(clock: Clock, handle: TaskHandle, timeoutMs: number, timers: unknown[], expire: () => void): void {
  const arm = (ms: number, look: boolean): void => {
    const timer = clock.setTimeout(() => {
      const at = timers.indexOf(timer);
      if (at >= 0) timers.splice(at, 1);
      if (!look) return expire();
      const ago = handle.begunAgo();
      if (ago === null) arm(Math.max(timeoutMs, BEGIN_LOOK_MS), true);
      else if (ago >= timeoutMs) expire();
      // Armed once: what is left is read from the worker's time once, never again.
      else arm(timeoutMs - ago, false);
    }, ms);
    timers.push(timer);
  };
  arm(timeoutMs, true);
}
