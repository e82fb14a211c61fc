import type { Readable } from "node:stream";
import { onStopSignal } from "../adapter/stop-signals.ts";
import { READER_LOOK_MS } from "../adapter/reader-gone.ts";
import { signalOwnProcess } from "../worker/_own-process.ts";

/** Why the agent's session ends: its stdin ended (finish what was asked), a signal, or its stdout closed (stop now: no answer can reach it). */
export type HangUp = "stdin" | "signal" | "stdout";

/**
 * Resolves when the agent hangs up: stdin ends or closes (the MCP stdio transport does not say
 * so itself; `readWhole`, asked once a second while stdin flows, tells an end the runtime did
 * not report: read-to-end.ts), the process is asked to stop (SIGINT, SIGTERM, a hang-up: stop-signals.ts), or
 * `stdoutClosed` aborts (the agent closed its end of stdout: what it asks can never be answered).
 * After a signal, its echo (the same signal passed on by a parent) is swallowed while the session
 * winds down; a second request to stop leaves at once, as the runtime's default would.
 */
export function untilHangUp(stdin: Readable, stdoutClosed?: AbortSignal, readWhole?: () => boolean | null): Promise<HangUp> {
  return new Promise((resolve) => {
    // A socket stdin whose end the runtime does not report (read-to-end.ts): asked once a second
    // while it flows, and its end is said for it when two looks in a row found it ended and read
    // whole (a second is far longer than a chunk read takes to reach its listener).
    let ends = 0;
    const look =
      readWhole === undefined
        ? null
        : setInterval(() => {
            if (stdin.readableEnded || stdin.readableFlowing !== true || readWhole() !== true) return void (ends = 0);
            if (++ends >= 2) stdin.emit("end");
          }, READER_LOOK_MS);
    (look as { unref?: () => void } | null)?.unref?.();
    let signalled = false;
    const offSignals = onStopSignal((signal) => {
      if (!signalled) {
        signalled = true;
        done("signal");
        return;
      }
      offSignals();
      signalOwnProcess(signal);
    });
    const done = (why: HangUp) => {
      if (look !== null) clearInterval(look);
      stdin.off("end", onEnd);
      stdin.off("close", onEnd);
      stdoutClosed?.removeEventListener("abort", onStdoutClosed);
      if (why !== "signal") offSignals();
      resolve(why);
    };
    const onEnd = () => done("stdin");
    const onStdoutClosed = () => done("stdout");
    stdin.once("end", onEnd);
    stdin.once("close", onEnd);
    if (stdoutClosed?.aborted) onStdoutClosed();
    else stdoutClosed?.addEventListener("abort", onStdoutClosed, { once: true });
  });
}
