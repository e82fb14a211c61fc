import { readFileSync } from "node:fs";
import { signalOwnProcess } from "../worker/_own-process.ts";

/**
 * The signals that ask a docket process to stop cleanly: SIGINT (Ctrl-C), SIGTERM, and SIGHUP (the
 * terminal or SSH session went away). One the process was started with ignored stays ignored, as
 * with any command: SIGHUP under `nohup`, SIGINT in a command a script starts in the background
 * (`docket run … &`: the shell ignores Ctrl-C for it), which a listener would otherwise override.
 * SIGTERM is always listened to. Handled, a signal stops a run's children and writes its result,
 * and a server removes its lease, instead of dying on the spot.
 *
 * What was ignored at start is read from /proc (Linux), once, before docket listens to any. Where
 * it cannot be read, SIGHUP is left to the system's default, so `nohup docket …` keeps its meaning
 * everywhere, and SIGINT is listened to.
 */
export function stopSignals(): NodeJS.Signals[] {
  const ignored = ignoredAtStart();
  if (ignored === null) return ["SIGINT", "SIGTERM"];
  return (["SIGINT", "SIGTERM", "SIGHUP"] as const).filter((signal) => signal === "SIGTERM" || !ignored.has(signal));
}

/** The numbers of the signals whose start disposition is looked at (bit n − 1 of `SigIgn`). */
const SIGNAL_NUMBERS = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3 } as const;

/**
 * Whether this process was started with `signal` ignored (SIGHUP, SIGINT or SIGQUIT, read from
 * /proc on Linux; false where it cannot be read): a listener of docket's own must not undo that.
 */
export function ignoredFromStart(signal: NodeJS.Signals): boolean {
  return ignoredAtStart()?.has(signal) ?? false;
}
let ignoredSignals: Set<NodeJS.Signals> | null | undefined;

/** SIGHUP and SIGINT as this process was started: those ignored, or null when that cannot be read. */
function ignoredAtStart(): Set<NodeJS.Signals> | null {
  if (ignoredSignals !== undefined) return ignoredSignals;
  try {
    const mask = /^SigIgn:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    if (mask === undefined) return (ignoredSignals = null);
    const bits = BigInt(`0x${mask}`);
    ignoredSignals = new Set(Object.entries(SIGNAL_NUMBERS).filter(([, n]) => ((bits >> BigInt(n - 1)) & 1n) === 1n).map(([name]) => name as NodeJS.Signals));
  } catch {
    ignoredSignals = null;
  }
  return ignoredSignals;
}

/**
 * How close to the last stop signal another one is taken as an echo of it. One request to stop
 * can reach docket twice: a Ctrl-C or a `kill -TERM -<group>` reaches every process of the group,
 * and a parent that passes signals on (the npm launcher on Node < 22.15, npm's own script runner)
 * sends the same signal again a few milliseconds later. A person's deliberate second press, after
 * reading "press Ctrl-C again", comes far later than this.
 */
export const STOP_SIGNAL_ECHO_MS = 250;

/** Options of {@link onStopSignal}. */
export interface StopSignalOptions {
  /** The signals listened to; default {@link stopSignals}. */
  signals?: NodeJS.Signals[];
  /** The clock the echo window is measured with; default `performance.now`. */
  now?: () => number;
}

/**
 * Calls `listener` for every stop signal, except one that comes within {@link STOP_SIGNAL_ECHO_MS}
 * of the last signal it was called for: that is the same request to stop arriving by a second
 * path, and counting it would turn one press into two (which stops a run at once). Returns the
 * function that uninstalls it; until then the echoes are swallowed rather than left to the
 * runtime's default of dying on the spot.
 */
export function onStopSignal(listener: (signal: NodeJS.Signals) => void, options: StopSignalOptions = {}): () => void {
  const signals = options.signals ?? stopSignals();
  const now = options.now ?? (() => performance.now());
  let last = Number.NEGATIVE_INFINITY;
  const onSignal = (signal: NodeJS.Signals) => {
    const at = now();
    if (at - last < STOP_SIGNAL_ECHO_MS) return;
    last = at;
    listener(signal);
  };
  for (const signal of signals) process.on(signal, onSignal);
  // A signal held while the command's modules loaded (holdStopSignals) is this listener's now.
  for (const signal of releaseHold()) queueMicrotask(() => onSignal(signal));
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}

/** The hold of {@link holdStopSignals} while it lasts: what came, and how to end it. */
let hold: { came: NodeJS.Signals[]; end(): void } | null = null;

/**
 * From the very start of a command that listens for stop signals later (`docket run`, once its
 * modules are loaded and its input read), a stop signal is held for that listener instead of
 * ending the process on the spot: the first one installed with {@link onStopSignal} gets it at
 * once. A run stopped in its first tens of milliseconds then still ends as a run stopped before
 * it started, with its document (README.md). Held for `ms` at most: a command that never
 * listens (it waits on stdin meanwhile, say) is then ended by the signal as it would have been.
 */
export function holdStopSignals(ms = 1000): void {
  if (hold !== null) return;
  const signals = stopSignals();
  let timer: ReturnType<typeof setTimeout> | null = null;
  const came: NodeJS.Signals[] = [];
  const onSignal = (signal: NodeJS.Signals) => {
    came.push(signal);
    timer ??= setTimeout(() => {
      // Nobody took it: the signal's own default, as if it had never been held.
      const first = releaseHold()[0];
      if (first !== undefined) signalOwnProcess(first);
    }, ms);
  };
  for (const signal of signals) process.on(signal, onSignal);
  hold = {
    came,
    end() {
      for (const signal of signals) process.off(signal, onSignal);
      if (timer !== null) clearTimeout(timer);
    },
  };
}

/** Ends the hold, answering the signals it held (none when there was no hold). */
function releaseHold(): NodeJS.Signals[] {
  if (hold === null) return [];
  const { came } = hold;
  hold.end();
  hold = null;
  return came;
}
