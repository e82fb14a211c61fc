// Lets the event loop turn before work that holds the main thread (a page, a listing, a snapshot of
// megabytes): the runtime hands the main thread its workers' messages only when the loop turns to
// its timers and immediates, not between one request and the next. Without a turn, a few clients
// asking for such answers back to back kept every worker's answer waiting as long as they went on
// — a direct call waited 11.5 s behind four clients reloading one large execution's page (hostile
// tester, session 39; docs/containment.md).

/** Resolves on the next turn of the event loop (setImmediate). */
export function loopTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
