import { onStopSignal } from "../adapter/stop-signals.ts";

/** What each Ctrl-C does; the count is what makes the second press different from the first. */
export interface InterruptHandlers {
  /** The first Ctrl-C (or SIGTERM, or hang-up: `signal` says which): ask politely. */
  first(signal: NodeJS.Signals): void;
  /** The second: stop now. */
  second(): void;
  /** Any later one: the stop did not take; leave at once. */
  later(): void;
}

/**
 * Routes SIGINT (and SIGTERM, and a hang-up, which ask the same politely: stop-signals.ts) to
 * the handlers by how many came; one request that arrives twice (a Ctrl-C passed on by a parent
 * that got it too) counts once (onStopSignal).
 * Installing a listener also turns off the runtime's default of dying on the spot, which would
 * leave a running handler's worker unasked. Returns the function that uninstalls it.
 */
export function onInterrupts(handlers: InterruptHandlers): () => void {
  let presses = 0;
  return onStopSignal((signal) => {
    presses++;
    if (presses === 1) handlers.first(signal);
    else if (presses === 2) handlers.second();
    else handlers.later();
  });
}
