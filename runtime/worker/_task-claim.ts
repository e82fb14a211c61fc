/**
 * Where the task handed to a worker stands, in one Int32 the pool shares with that worker
 * (WorkerBoot.claim). Every move is one atomic swap, so the worker beginning a task and the main
 * thread taking it back can never both win (docs/containment.md, "Take back what was never begun"):
 *
 * - `id`: handed. Posted to the worker, which has not read it yet (it may be busy with what a
 *   previous handler left running).
 * - `id | RECEIVED`: received. The worker read it and is preparing it: importing the capability
 *   file (whose top level runs then, up to `load_timeout_ms`), parsing the input.
 * - `-id`: begun. Its handler (or reconcile check, or trial load) was called.
 * - `0` after `id | RECEIVED`, set by the worker: its file failed to load; the task ended unbegun.
 * - anything else: taken back, or the next task's.
 *
 * Beside it (at byte 8) is one Float64: when the handler of the task it holds began, noted by the
 * worker just before its swap to `-id` for a task whose `timeout_ms` counts from then (WorkerTask
 * `timed`), in claimTime's time base. The swap publishes it: a main thread that reads `-id` reads
 * the time noted before.
 */

/** The highest task id: the bit above it marks a task received. */
export const MAX_TASK_ID = 0x3fffffff;
const RECEIVED = 0x40000000;

/** Bytes of a claim: the Int32 of where its task stands, then the Float64 of when its handler began. */
const CLAIM_BYTES = 16;

/** A claim to share with a new worker (WorkerBoot.claim). */
export function newClaim(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(CLAIM_BYTES));
}

/** Where a claim's begin time is kept: a view made once per worker, so that noting it allocates nothing. */
export function beginTimeOf(claim: Int32Array): Float64Array {
  return new Float64Array(claim.buffer, 8, 1);
}

/**
 * The time base of a begin time: epoch milliseconds at sub-millisecond resolution, monotonic within
 * a thread. Each thread counts from its own start (`performance.timeOrigin` is the wall clock
 * then), so a worker's times read in the main thread are off by the steps the wall clock took
 * between the two starts (a suspend, an NTP step): the main thread measures that as the worker
 * starts (clockStep) and takes it off.
 */
export function claimTime(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Main thread, as it starts a worker: how far the wall clock has moved from this thread's time
 * base, which the worker's will start from. Under a millisecond it is Date.now's own rounding down,
 * not a step.
 */
export function clockStep(): number {
  const step = Date.now() - claimTime();
  return step > -1 && step <= 0 ? 0 : step;
}

/** Main thread, before the task is posted: the worker may receive only what is handed to it. */
export function handTask(claim: Int32Array, id: number): void {
  Atomics.store(claim, 0, id);
}

/** Worker, as it reads the task and before any work on it; false: it was taken back, drop it unread. */
export function receiveTask(claim: Int32Array, id: number): boolean {
  return Atomics.compareExchange(claim, 0, id, id | RECEIVED) === id;
}

/** Worker, the last thing before the handler is called; false: it was taken back while prepared, run nothing of it. */
export function beginTask(claim: Int32Array, id: number): boolean {
  return Atomics.compareExchange(claim, 0, id | RECEIVED, -id) === (id | RECEIVED);
}

/**
 * Worker: its file failed to load, so the task ends unbegun (its failure is the file's); false: it
 * was taken back meanwhile, post nothing of it.
 */
export function endUnbegun(claim: Int32Array, id: number): boolean {
  return Atomics.compareExchange(claim, 0, id | RECEIVED, 0) === (id | RECEIVED);
}

/** Main thread, of the task its slot still holds: its worker ended it unbegun (endUnbegun), and its verdict is on its way. */
export function endedUnbegun(claim: Int32Array): boolean {
  return Atomics.load(claim, 0) === 0;
}

/**
 * Main thread: milliseconds since the handler of task `id` began, or null when it has not begun
 * there (see the claim above). `step`: clockStep when the worker started. Only for a task whose
 * worker noted its begin (`timed`).
 */
export function begunAgo(claim: Int32Array, begunAt: Float64Array, id: number, step: number): number | null {
  if (Atomics.load(claim, 0) !== -id) return null;
  return Math.max(0, claimTime() - (begunAt[0] - step));
}

/** Main thread: whether the worker received task `id` and has not begun it (it is importing the file or parsing the input). */
export function isPreparing(claim: Int32Array, id: number): boolean {
  return Atomics.load(claim, 0) === (id | RECEIVED);
}

/** Main thread: whether the worker has not even read task `id` yet. */
export function isUnreceived(claim: Int32Array, id: number): boolean {
  return Atomics.load(claim, 0) === id;
}

/** Main thread: takes task `id` back only if its worker has not read it; true when it did. */
export function takeBackUnreceived(claim: Int32Array, id: number): boolean {
  return Atomics.compareExchange(claim, 0, id, 0) === id;
}

/**
 * Main thread: takes task `id` back unless its handler began. Says where it was — `"handed"` or
 * `"received"` (its worker busy preparing it) — or null when it had begun (or ended).
 */
export function takeBackUnbegun(claim: Int32Array, id: number): "handed" | "received" | null {
  for (;;) {
    const now = Atomics.load(claim, 0);
    if (now !== id && now !== (id | RECEIVED)) return null;
    // Lost only to the worker receiving it meanwhile: look again.
    if (Atomics.compareExchange(claim, 0, now, 0) === now) return now === id ? "handed" : "received";
  }
}
