import { stopSignals } from "../adapter/stop-signals.ts";

/** What each Ctrl-C does; the count is what makes the second press different from the first. */
export interface InterruptHandlers {
  /** The first Ctrl-C: ask politely. */
  first(): void;
  /** The second: stop now. */
  second(): void;
  /** Any later one: the stop did not take; leave at once. */
  later(): void;
}

/**
 * Routes SIGINT (and SIGTERM, and a hang-up, which ask the same politely: stop-signals.ts) to
 * the handlers by how many came.
 * Installing a listener also turns off the runtime's default of dying on the spot, which would
 * leave a running handler's worker unasked. Returns the function that uninstalls it.
 */
export function onInterrupts(handlers: InterruptHandlers): () => void {
  let presses = 0;
  const listener = () => {
    presses++;
    if (presses === 1) handlers.first();
    else if (presses === 2) handlers.second();
    else handlers.later();
  };
  const signals = stopSignals();
  for (const signal of signals) process.on(signal, listener);
  return () => {
    for (const signal of signals) process.off(signal, listener);
  };
}
