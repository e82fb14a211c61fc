import type { Readable } from "node:stream";

/** Why the agent's session ends: its stdin ended (finish what was asked), or a signal (stop now). */
export type HangUp = "stdin" | "signal";

/**
 * Resolves when the agent hangs up: stdin ends or closes (the MCP stdio transport does not say
 * so itself), or the process is asked to stop (SIGINT, SIGTERM).
 */
export function untilHangUp(stdin: Readable): Promise<HangUp> {
  return new Promise((resolve) => {
    const done = (why: HangUp) => {
      stdin.off("end", onEnd);
      stdin.off("close", onEnd);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve(why);
    };
    const onEnd = () => done("stdin");
    const onSignal = () => done("signal");
    stdin.once("end", onEnd);
    stdin.once("close", onEnd);
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
}
