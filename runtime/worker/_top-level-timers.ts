// Timers a capability's top level starts, seen during its trial load (load-probe.ts): such a timer
// passed the trial and then ran on the server's main thread, where nothing contains what it does
// (docs/containment.md, "Loading"). Only a trial worker installs this, and it is ended after the
// trial: the globals it replaces are never those of a worker that runs handlers.

import { createRequire } from "node:module";
import { dirname } from "node:path";

/** A timer the capability's code started and that is still pending. */
export interface PendingTimer {
  /** The call: `setTimeout`, `setInterval`, `Bun.sleep`, `setTimeout (node:timers/promises)`. */
  kind: string;
  /** Where the capability's code started it: a path (without docket's query) and line. */
  where: { path: string; line: number } | null;
  /** When a timeout is due (performance.now()); Infinity for an interval. */
  due: number;
}

/** docket's own code: this file's folder's parent in a checkout of docket, the bundle in the binary (`/$bunfs/…`). */
const OWN_ROOT = dirname(dirname(new URL(import.meta.url).pathname));
const FRAME_PATH = /(?:\(|\bat\s)((?:file:\/\/)?\/[^\s()]*?)(?:\?[^\s():]*)?:(\d+):\d+\)?\s*$/;

/**
 * Replaces the timer functions a top level can defer work with — setTimeout, setInterval (and
 * their clears), `Bun.sleep`, `AbortSignal.timeout`, and setTimeout and setInterval of
 * `node:timers/promises` — with
 * versions that remember the timers the capability's code starts: any code but docket's own and
 * a package's (node_modules). Returns what is still pending, for the trial to judge once the
 * import and its turns are over.
 */
export function trackTopLevelTimers(): { pending(): PendingTimer[] } {
  const pending = new Map<unknown, PendingTimer>();
  const OwnError = Error;
  const startedBy = (): PendingTimer["where"] | false => startedByCapability(OwnError);
  const g = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originalTimeout = g.setTimeout!;
  const originalInterval = g.setInterval!;
  const originalClearTimeout = g.clearTimeout!;
  const originalClearInterval = g.clearInterval!;

  g.setTimeout = function (callback: unknown, ms?: unknown, ...args: unknown[]) {
    const where = startedBy();
    if (where === false || typeof callback !== "function") return originalTimeout(callback, ms, ...args);
    let handle: unknown;
    const fire = (...given: unknown[]) => {
      pending.delete(handle);
      return (callback as (...a: unknown[]) => unknown)(...given);
    };
    handle = originalTimeout(fire, ms, ...args);
    pending.set(handle, { kind: "setTimeout", where, due: performance.now() + Math.max(1, Number(ms) || 0) });
    return handle;
  };
  g.setInterval = function (callback: unknown, ms?: unknown, ...args: unknown[]) {
    const handle = originalInterval(callback, ms, ...args);
    const where = startedBy();
    if (where !== false) pending.set(handle, { kind: "setInterval", where, due: Infinity });
    return handle;
  };
  g.clearTimeout = function (handle: unknown) {
    pending.delete(handle);
    return originalClearTimeout(handle);
  };
  g.clearInterval = function (handle: unknown) {
    pending.delete(handle);
    return originalClearInterval(handle);
  };

  /** A promise-returning timer: pending until it settles. */
  const promised = <A extends unknown[]>(kind: string, original: (...args: A) => Promise<unknown>, msOf: (args: A) => number) =>
    function (this: unknown, ...args: A) {
      const where = startedBy();
      const promise = original.apply(this, args);
      if (where === false) return promise;
      const entry = {};
      pending.set(entry, { kind, where, due: performance.now() + Math.max(1, msOf(args) || 0) });
      const done = () => void pending.delete(entry);
      promise.then(done, done);
      return promise;
    };
  // A signal that aborts later runs its listeners later, on whichever thread imported the file.
  const signals = globalThis.AbortSignal as unknown as { timeout: (ms: number) => AbortSignal };
  const signalTimeout = signals.timeout;
  signals.timeout = function (this: unknown, ms: number) {
    const where = startedBy();
    const signal = signalTimeout.call(this, ms);
    if (where !== false) {
      const entry = {};
      pending.set(entry, { kind: "AbortSignal.timeout", where, due: performance.now() + Math.max(1, Number(ms) || 0) });
      signal.addEventListener("abort", () => pending.delete(entry), { once: true });
    }
    return signal;
  };
  const bun = (globalThis as { Bun?: { sleep: (ms: number | Date) => Promise<void> } }).Bun;
  if (bun) bun.sleep = promised("Bun.sleep", bun.sleep.bind(bun), ([ms]) => (ms instanceof Date ? ms.getTime() - Date.now() : Number(ms))) as typeof bun.sleep;
  try {
    // The module object a capability's `import { setTimeout } from "node:timers/promises"` reads from.
    const timers = createRequire(import.meta.url)("node:timers/promises") as Record<string, (...args: unknown[]) => unknown>;
    const timeout = timers.setTimeout as (...args: unknown[]) => Promise<unknown>;
    timers.setTimeout = promised("setTimeout (node:timers/promises)", timeout, ([ms]) => Number(ms));
    const interval = timers.setInterval!;
    timers.setInterval = function (this: unknown, ...args: unknown[]) {
      const where = startedBy();
      const iterator = interval.apply(this, args);
      if (where !== false) pending.set(iterator, { kind: "setInterval (node:timers/promises)", where, due: Infinity });
      return iterator;
    };
  } catch {
    // No such module in this runtime: nothing to watch there.
  }
  return { pending: () => [...pending.values()] };
}

/**
 * Whether the code that called a timer function is the capability's: false for docket's own code
 * and for a package's; else where it is.
 * The stack is taken with the runtime's defaults, whatever the top level did to `Error`.
 */
function startedByCapability(OwnError: ErrorConstructor): NonNullable<PendingTimer["where"]> | false {
  const errorStatics = OwnError as unknown as { stackTraceLimit?: number; prepareStackTrace?: unknown };
  const limit = errorStatics.stackTraceLimit;
  const prepare = errorStatics.prepareStackTrace;
  let stack: string;
  try {
    errorStatics.stackTraceLimit = 64;
    errorStatics.prepareStackTrace = undefined;
    stack = String(new OwnError().stack ?? "");
  } finally {
    errorStatics.stackTraceLimit = limit;
    errorStatics.prepareStackTrace = prepare;
  }
  // The first frame with a file that is not docket's decides (native frames have none, and an
  // eval's frame is followed by the frame of the code that called eval).
  const lines = stack.split("\n");
  for (let i = 1; i < lines.length; i++) {
    const frame = FRAME_PATH.exec(lines[i]!);
    if (!frame) continue;
    // (Code an eval ran names its file with the query encoded.)
    const path = frame[1]!.replace(/^file:\/\//, "").replace(/%3Fdocket_\w+=[\w&=%-]*$/i, "");
    if (path.startsWith(`${OWN_ROOT}/`) || path.startsWith("/$bunfs/")) continue;
    return path.includes("/node_modules/") ? false : { path, line: Number(frame[2]) };
  }
  // Only docket's own frames: docket's own timer.
  return false;
}
