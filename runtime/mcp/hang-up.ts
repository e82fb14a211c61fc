import type { Readable } from "node:stream";
import { onStopSignal } from "../adapter/stop-signals.ts";

/** Why the agent's session ends: its stdin ended (finish what was asked), or a signal (stop now). */
export type HangUp = "stdin" | "signal";

/**
 * Resolves when the agent hangs up: stdin ends or closes (the MCP stdio transport does not say
 * so itself), or the process is asked to stop (SIGINT, SIGTERM, a hang-up: stop-signals.ts).
 * After a signal, its echo (the same signal passed on by a parent) is swallowed while the session
 * winds down; a second request to stop leaves at once, as the runtime's default would.
 */
export function untilHangUp(stdin: Readable): Promise<HangUp> {
  return new Promise((resolve) => {
    let signalled = false;
    const offSignals = onStopSignal((signal) => {
      if (!signalled) {
        signalled = true;
        done("signal");
        return;
      }
      offSignals();
      process.kill(process.pid, signal);
    });
    const done = (why: HangUp) => {
      stdin.off("end", onEnd);
      stdin.off("close", onEnd);
      if (why === "stdin") offSignals();
      resolve(why);
    };
    const onEnd = () => done("stdin");
    stdin.once("end", onEnd);
    stdin.once("close", onEnd);
  });
}
