/**
 * Backpressure between a handler and the main thread (docs/containment.md).
 *
 * A handler that emits events faster than the main thread can store them would otherwise queue
 * them without bound in the port between the threads: a loop logging 2 KB lines grew the process
 * by ~900 MB in five seconds, until the memory watchdog stopped it as if it had leaked. Instead
 * the worker counts what it posted and the main thread what it received, in one shared Int32;
 * when the worker is more than {@link BACKLOG_UNITS} ahead, the handler's thread waits until the
 * main thread has caught up to half of that. A handler is slowed to the speed of the store, never
 * stopped and never made to lose an event.
 */

/** UTF-16 units of event JSON (a few MiB) a worker may post before its handler waits for the main thread. */
const BACKLOG_UNITS = 2 * 1024 * 1024;
/** How long one wait lasts before the worker looks again: a termination takes effect between waits. */
const WAIT_SLICE_MS = 50;

/** A new counter, shared by one worker and the main thread. */
export function createBacklog(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4));
}

/** Worker side: `units` were posted; waits while the main thread is more than BACKLOG_UNITS behind, until it is down to half. */
export function postedEvents(backlog: Int32Array, units: number): void {
  if (Atomics.add(backlog, 0, units) + units <= BACKLOG_UNITS) return;
  for (let ahead = Atomics.load(backlog, 0); ahead > BACKLOG_UNITS / 2; ahead = Atomics.load(backlog, 0)) {
    Atomics.wait(backlog, 0, ahead, WAIT_SLICE_MS);
  }
}

/** Main thread side: `units` were taken off the counter; wakes a waiting worker once it may go on. */
function receivedEvents(backlog: Int32Array, units: number): void {
  if (Atomics.sub(backlog, 0, units) - units <= BACKLOG_UNITS / 2) Atomics.notify(backlog, 0);
}

/** UTF-16 units of one worker's events the main thread takes in one turn of its loop before it lets that worker wait for the next turn. */
const TURN_UNITS = 512 * 1024;

/**
 * Main thread side, what a worker's slot calls for each batch it receives. Within a turn of the
 * event loop, the first TURN_UNITS are counted off at once, as the batches arrive; past them, only
 * once the loop has turned (`setImmediate`).
 *
 * Why: a runtime delivers a port's messages for as long as they keep coming before it turns its
 * loop (Bun does), and a worker let go on at every batch keeps them coming. A handler flooding
 * events faster than the store takes them held the main thread in one turn for over a second —
 * timers, HTTP requests and live clients all waited (`/healthz` took 1.2 s beside two floods on
 * the sqlite store). Now a turn takes at most TURN_UNITS + BACKLOG_UNITS of each worker's events,
 * then the workers wait while the loop serves everyone else. Below that, a worker is let go on
 * at once, so an ordinary stream of events never waits for a turn.
 */
export function turnBoundReceiver(backlog: Int32Array): (units: number) => void {
  let thisTurn = 0;
  let owed = 0;
  let turning = false;
  const turned = () => {
    turning = false;
    thisTurn = 0;
    if (owed === 0) return;
    const units = owed;
    owed = 0;
    receivedEvents(backlog, units);
  };
  return (units) => {
    if (!turning) {
      turning = true;
      setImmediate(turned);
    }
    thisTurn += units;
    if (thisTurn <= TURN_UNITS) receivedEvents(backlog, units);
    else owed += units;
  };
}
