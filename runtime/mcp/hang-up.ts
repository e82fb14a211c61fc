import type { Readable } from "node:stream";
import { stopSignals } from "../adapter/stop-signals.ts";

/** Why the agent's session ends: its stdin ended (finish what was asked), or a signal (stop now). */
export type HangUp = "stdin" | "signal";

/**
 * Resolves when the agent hangs up: stdin ends or closes (the MCP stdio transport does not say
 * so itself), or the process is asked to stop (SIGINT, SIGTERM, a hang-up: stop-signals.ts).
 */
export function untilHangUp(stdin: Readable): Promise<HangUp> {
  const signals = stopSignals();
  return new Promise((resolve) => {
    const done = (why: HangUp) => {
      stdin.off("end", onEnd);
      stdin.off("close", onEnd);
      for (const signal of signals) process.off(signal, onSignal);
      resolve(why);
    };
    const onEnd = () => done("stdin");
    const onSignal = () => done("signal");
    stdin.once("end", onEnd);
    stdin.once("close", onEnd);
    for (const signal of signals) process.once(signal, onSignal);
  });
}
