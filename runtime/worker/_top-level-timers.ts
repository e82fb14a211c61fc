// Timers a capability's own top level starts, seen during its trial load (load-probe.ts): such a
// timer passed the trial and then ran on the server's main thread, where nothing contains what it
// does (docs/containment.md, "Loading"). Only a trial worker installs this, and it is ended after
// the trial: the globals it replaces are never those of a worker that runs handlers.

/** A timer the file's own code started and that is still pending. */
export interface PendingTimer {
  kind: "setTimeout" | "setInterval";
  /** Where the file's code started it: a path (without docket's query) and line, or null. */
  where: { path: string; line: number } | null;
  /** When a timeout is due (performance.now()); Infinity for an interval. */
  due: number;
}

/** Pinned modules are the capability's own code (pinned-sources.ts); packages and docket are not. */
const OWN_FRAME = /((?:file:\/\/)?\/[^\s()]*?)\?docket_pin=[\w]+:(\d+):\d+/;
const ANY_FRAME = /(?:\(|\bat\s)((?:file:\/\/)?\/?[^\s()]*?):\d+:\d+\)?/;

/**
 * Replaces setTimeout, setInterval and their clears with versions that remember the timers the
 * capability's own code starts (the innermost frame that is not this file's is a pinned module).
 * Returns what is still pending, for the trial to judge once the import and its turns are over.
 */
export function trackTopLevelTimers(): { pending(): PendingTimer[] } {
  const pending = new Map<unknown, PendingTimer>();
  const g = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originalTimeout = g.setTimeout!;
  const originalInterval = g.setInterval!;
  const originalClearTimeout = g.clearTimeout!;
  const originalClearInterval = g.clearInterval!;

  const startedByOwnCode = (): PendingTimer["where"] | false => {
    // Frame 0 is "Error", 1 this function, 2 the wrapper: the caller is the first after them.
    const frames = (new Error().stack ?? "").split("\n").slice(3);
    const caller = frames.find((frame) => ANY_FRAME.test(frame));
    const own = caller ? OWN_FRAME.exec(caller) : null;
    return own ? { path: own[1]!.replace(/^file:\/\//, ""), line: Number(own[2]) } : false;
  };

  g.setTimeout = function (callback: unknown, ms?: unknown, ...args: unknown[]) {
    const where = startedByOwnCode();
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
    const where = startedByOwnCode();
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
  return { pending: () => [...pending.values()] };
}
