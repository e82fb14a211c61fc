import { readFileSync } from "node:fs";

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
const SIGNAL_NUMBERS = { SIGHUP: 1, SIGINT: 2 } as const;
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
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
