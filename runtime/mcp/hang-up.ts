import type { Readable } from "node:stream";
import { onStopSignal } from "../adapter/stop-signals.ts";
import { READER_LOOK_MS } from "../adapter/reader-gone.ts";
import { signalOwnProcess } from "../worker/_own-process.ts";

/** Why the agent's session ends: its stdin ended (finish what was asked), a signal, or its stdout closed (stop now: no answer can reach it). */
export type HangUp = "stdin" | "signal" | "stdout";

/** What ends the session at once, before the end of stdin or after it: a signal, or the agent's stdout closed. */
export type StopNow = Exclude<HangUp, "stdin">;

/** What {@link untilHangUp} watches for. */
export interface HangUps {
  /** The first hang-up: stdin's end, a signal or stdout closed, whichever comes first. */
  hangUp: Promise<HangUp>;
  /**
   * A signal or stdout closed, whenever it comes: after stdin ended too, while what was read is
   * still being answered. What is left then is not done (no answer could reach the agent, or the
   * process was asked to stop): the session winds down as it does at a signal before the end.
   */
  stopNow: Promise<StopNow>;
  /** Stops watching (stdin, stdout, signals): a signal then takes the runtime's default. */
  close(): void;
}

/**
 * Watches for the agent hanging up: stdin ends or closes (the MCP stdio transport does not say
 * so itself; `readWhole`, asked once a second while stdin flows, tells an end the runtime did
 * not report: read-to-end.ts), the process is asked to stop (SIGINT, SIGTERM, a hang-up: stop-signals.ts), or
 * `stdoutClosed` aborts (the agent closed its end of stdout: what it asks can never be answered).
 * Signals and stdout stay watched once stdin has ended: the requests read before the end are
 * answered then, and a backlog of them run to the last while the agent was gone (twenty calls of
 * a second each, 19 s with stdout closed) or a SIGTERM took the runtime's default, no orderly
 * close (MCP checking tester, session 50). After a signal, its echo (the same signal passed on by
 * a parent) is swallowed while the session winds down; a second request to stop leaves at once,
 * as the runtime's default would.
 */
export function untilHangUp(stdin: Readable, stdoutClosed?: AbortSignal, readWhole?: () => boolean | null): HangUps {
  let hungUp: (why: HangUp) => void = () => undefined;
  let stopped: (why: StopNow) => void = () => undefined;
  const hangUp = new Promise<HangUp>((resolve) => (hungUp = resolve));
  const stopNow = new Promise<StopNow>((resolve) => (stopped = resolve));
  // A socket stdin whose end the runtime does not report (read-to-end.ts): asked once a second
  // while it flows, and its end is said for it when two looks in a row found it ended and read
  // whole (a second is far longer than a chunk read takes to reach its listener).
  let ends = 0;
  let look =
    readWhole === undefined
      ? null
      : setInterval(() => {
          if (stdin.readableEnded || stdin.readableFlowing !== true || readWhole() !== true) return void (ends = 0);
          if (++ends >= 2) stdin.emit("end");
        }, READER_LOOK_MS);
  (look as { unref?: () => void } | null)?.unref?.();
  /** stdin's end no longer matters: it ended, or the session stops. */
  const offStdin = () => {
    if (look !== null) clearInterval(look);
    look = null;
    stdin.off("end", onEnd);
    stdin.off("close", onEnd);
  };
  let signalled = false;
  let offSignals = onStopSignal((signal) => {
    if (!signalled) {
      signalled = true;
      stop("signal");
      return;
    }
    offSignals();
    signalOwnProcess(signal);
  });
  const stop = (why: StopNow) => {
    offStdin();
    stdoutClosed?.removeEventListener("abort", onStdoutClosed);
    hungUp(why);
    stopped(why);
  };
  const onEnd = () => {
    offStdin();
    hungUp("stdin");
  };
  const onStdoutClosed = () => {
    // Nothing is left to wind down gently for the agent: a signal now takes the runtime's default.
    if (!signalled) offSignals();
    stop("stdout");
  };
  stdin.once("end", onEnd);
  stdin.once("close", onEnd);
  if (stdoutClosed?.aborted) onStdoutClosed();
  else stdoutClosed?.addEventListener("abort", onStdoutClosed, { once: true });
  return {
    hangUp,
    stopNow,
    close() {
      offStdin();
      stdoutClosed?.removeEventListener("abort", onStdoutClosed);
      offSignals();
      offSignals = () => undefined;
    },
  };
}
