// Work a capability's top level defers — timers, immediates, servers, process listeners — seen
// during its trial load (load-probe.ts): such work passed the trial and then ran
// on the server's main thread, where nothing contains what it does (docs/containment.md,
// "Loading"). Only a trial worker installs this, and it is ended after its trials: the globals and
// modules it replaces are never those of a worker that runs handlers.

import { createRequire } from "node:module";
import { dirname } from "node:path";

/** Work the capability's code deferred and that is still pending. */
export interface PendingWork {
  /** The call: `setTimeout`, `setInterval`, `Bun.sleep`, `setImmediate`, `Bun.serve`, `process.on("SIGTERM")`… */
  kind: string;
  /** What the top level left, as the load error says it: "a timer running", "a server listening"… */
  left: string;
  /** How to end it before the top level ends: "clear it", "close it"… */
  undo: string;
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
 * a package's (`isPackage`: in node_modules, or a package linked into it — see _linked-packages.ts). Returns what is still pending, for the trial to judge once the
 * import and its turns are over.
 */
export function trackTopLevelWork(isPackage: (path: string) => boolean = (path) => path.includes("/node_modules/")): TopLevelWork {
  // A trial worker runs trials one after the other while each passes (load-probe.ts): the
  // globals are replaced once, and each trial starts with nothing pending (a trial that passed
  // left nothing of its own code pending).
  if (tracking !== null) return tracking.restart(isPackage);
  tracking = installTracking(isPackage);
  return tracking;
}

/** The tracking this thread installed, if any. */
let tracking: TopLevelWork | null = null;

/** What a trial's top level left pending: its own work, and how much a package started. */
export interface TopLevelWork {
  /** The work the capability's own code deferred and that is still pending. */
  pending(): PendingWork[];
  /** How many timers, intervals and immediates a package started are still pending: they run later, in this worker. */
  foreign(): number;
  restart(isPackage: (path: string) => boolean): TopLevelWork;
}

function installTracking(packageTest: (path: string) => boolean) {
  let isPackage = packageTest;
  const pending = new Map<unknown, PendingWork>();
  const OwnError = Error;
  // Started directly by the capability's code: a timer the runtime starts for it (inside
  // node:timers/promises, say) is judged by what the capability chains on, below.
  // Who started the work the last wrapper saw: a package's is no file's to refuse, but it runs
  // later in this worker, so one still pending keeps the worker from the next trial (`foreign`).
  let byPackage = false;
  const startedBy = (): PendingWork["where"] | false => {
    const starter = starterOf(OwnError, isPackage);
    byPackage = starter === "package";
    return starter === "package" || starter === "docket" ? false : starter;
  };
  /** Timers, intervals and immediates a package started that are still pending. */
  const foreign = new Set<unknown>();
  const g = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
  // A timer is cleared by its handle, by the number it converts to (`+setTimeout(…)`), or by its
  // own `close()`: each forgets it.
  const byNumber = new Map<number, unknown>();
  const remember = (handle: unknown, timer: PendingWork) => {
    pending.set(handle, timer);
    if (handle !== null && typeof handle === "object") {
      const id = Number(handle);
      if (Number.isFinite(id)) byNumber.set(id, handle);
      const close = (handle as { close?: () => unknown }).close;
      if (typeof close === "function") {
        Object.defineProperty(handle, "close", {
          configurable: true,
          writable: true,
          value(this: unknown) {
            forget(handle);
            return close.call(this);
          },
        });
      }
    }
  };
  const forget = (handle: unknown) => {
    const held = typeof handle === "number" ? byNumber.get(handle) : handle;
    pending.delete(held);
    foreign.delete(held);
    if (typeof handle === "number") byNumber.delete(handle);
  };
  /** `start(fire)` for a package's callback: pending in `foreign` until it fired (once: `once`) or was cleared. */
  const foreignWork = (start: (fire: (...given: unknown[]) => unknown) => unknown, callback: (...a: unknown[]) => unknown, once: boolean) => {
    let handle: unknown;
    handle = start((...given: unknown[]) => {
      if (once) foreign.delete(handle);
      return callback(...given);
    });
    foreign.add(handle);
    const id = Number(handle);
    if (handle !== null && typeof handle === "object" && Number.isFinite(id)) byNumber.set(id, handle);
    return handle;
  };
  const originalTimeout = g.setTimeout!;
  const originalInterval = g.setInterval!;
  const originalClearTimeout = g.clearTimeout!;
  const originalClearInterval = g.clearInterval!;

  g.setTimeout = function (callback: unknown, ms?: unknown, ...args: unknown[]) {
    const where = startedBy();
    if (where === false && byPackage && typeof callback === "function") return foreignWork((fire) => originalTimeout(fire, ms, ...args), callback as (...a: unknown[]) => unknown, true);
    if (where === false || typeof callback !== "function") return originalTimeout(callback, ms, ...args);
    let handle: unknown;
    const fire = (...given: unknown[]) => {
      pending.delete(handle);
      return (callback as (...a: unknown[]) => unknown)(...given);
    };
    handle = originalTimeout(fire, ms, ...args);
    remember(handle, { kind: "setTimeout", left: "a timer running", undo: "clear it", where, due: performance.now() + Math.max(1, Number(ms) || 0) });
    return handle;
  };
  g.setInterval = function (callback: unknown, ms?: unknown, ...args: unknown[]) {
    const where = startedBy();
    if (where === false && byPackage && typeof callback === "function") return foreignWork((fire) => originalInterval(fire, ms, ...args), callback as (...a: unknown[]) => unknown, false);
    const handle = originalInterval(callback, ms, ...args);
    if (where !== false) remember(handle, { kind: "setInterval", left: "an interval running", undo: "clear it", where, due: Infinity });
    return handle;
  };
  g.clearTimeout = function (handle: unknown) {
    forget(handle);
    return originalClearTimeout(handle);
  };
  g.clearInterval = function (handle: unknown) {
    forget(handle);
    return originalClearInterval(handle);
  };

  /**
   * A promise-returning timer (`Bun.sleep`, `setTimeout` of `node:timers/promises`) runs nothing
   * of its own: what the capability's code chains on it (`.then(…)`) does. It is pending from
   * such a chaining until it settles — not when it only guards finished work
   * (`Promise.race([work, Bun.sleep(5000)])`, where the runtime chains on it, not the capability).
   */
  const chained = (kind: string, promise: Promise<unknown>, due: number) => {
    let entry: object | null = null;
    for (const method of ["then", "catch", "finally"] as const) {
      const original = promise[method] as (...args: unknown[]) => Promise<unknown>;
      Object.defineProperty(promise, method, {
        configurable: true,
        writable: true,
        value(this: Promise<unknown>, ...args: unknown[]) {
          const caller = callerOf(OwnError, isPackage);
          if (entry === null && typeof caller === "object") {
            const added = (entry = {});
            pending.set(added, { kind, left: "a timer running", undo: "clear it", where: caller, due });
            const done = () => void pending.delete(added);
            original.call(promise, done, done);
          }
          return original.apply(this, args);
        },
      });
    }
    return promise;
  };
  const promised = <A extends unknown[]>(kind: string, original: (...args: A) => Promise<unknown>, msOf: (args: A) => number) =>
    function (this: unknown, ...args: A) {
      return chained(kind, original.apply(this, args), performance.now() + Math.max(1, msOf(args) || 0));
    };
  // A signal that aborts later runs its listeners later, on whichever thread imported the file:
  // pending while a listener the capability's code added waits on it (fetch's own does not count).
  const signals = globalThis.AbortSignal as unknown as { timeout: (ms: number) => AbortSignal };
  const signalTimeout = signals.timeout;
  signals.timeout = function (this: unknown, ms: number) {
    const signal = signalTimeout.call(this, ms);
    const due = performance.now() + Math.max(1, Number(ms) || 0);
    const listen = signal.addEventListener;
    const entry = {};
    const watchFrom = (caller: ReturnType<typeof callerOf>) => {
      if (typeof caller === "object" && !signal.aborted) pending.set(entry, { kind: "AbortSignal.timeout", left: "a timer running", undo: "clear it", where: caller, due });
    };
    listen.call(signal, "abort", () => pending.delete(entry), { once: true });
    Object.defineProperty(signal, "addEventListener", {
      configurable: true,
      writable: true,
      value(this: AbortSignal, type: string, ...rest: unknown[]) {
        if (type === "abort") watchFrom(callerOf(OwnError, isPackage));
        return (listen as (...args: unknown[]) => void).call(this, type, ...rest);
      },
    });
    const onabort = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(signal), "onabort");
    if (onabort?.set && onabort.get) {
      Object.defineProperty(signal, "onabort", {
        configurable: true,
        get: () => onabort.get!.call(signal),
        set: (handler: unknown) => {
          if (handler) watchFrom(callerOf(OwnError, isPackage));
          onabort.set!.call(signal, handler);
        },
      });
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
      if (where !== false) pending.set(iterator, { kind: "setInterval (node:timers/promises)", left: "an interval running", undo: "clear it", where, due: Infinity });
      return iterator;
    };
  } catch {
    // No such module in this runtime: nothing to watch there.
  }

  // An immediate runs on the next turn: one that schedules itself again never lets the trial end
  // quiet, and would go on doing so on the main thread (`function spin() { …; setImmediate(spin) }`).
  const originalImmediate = g.setImmediate!;
  const originalClearImmediate = g.clearImmediate!;
  g.setImmediate = function (callback: unknown, ...args: unknown[]) {
    const where = startedBy();
    if (where === false && byPackage && typeof callback === "function") return foreignWork((fire) => originalImmediate(fire, ...args), callback as (...a: unknown[]) => unknown, true);
    if (where === false || typeof callback !== "function") return originalImmediate(callback, ...args);
    let handle: unknown;
    const fire = (...given: unknown[]) => {
      pending.delete(handle);
      return (callback as (...a: unknown[]) => unknown)(...given);
    };
    handle = originalImmediate(fire, ...args);
    pending.set(handle, { kind: "setImmediate", left: "work scheduled", undo: "stop scheduling it", where, due: performance.now() });
    return handle;
  };
  g.clearImmediate = function (handle: unknown) {
    pending.delete(handle);
    foreign.delete(handle);
    return originalClearImmediate(handle);
  };

  /** `object`, made by the capability's code, pending until its `method` (close, stop) is called. */
  const openUntil = (object: unknown, method: string, work: Omit<PendingWork, "where">, where: PendingWork["where"]) => {
    if (object === null || typeof object !== "object") return;
    const end = (object as Record<string, unknown>)[method];
    if (typeof end !== "function") return;
    pending.set(object, { ...work, where });
    Object.defineProperty(object, method, {
      configurable: true,
      writable: true,
      value(this: unknown, ...args: unknown[]) {
        pending.delete(object);
        return (end as (...a: unknown[]) => unknown).apply(this, args);
      },
    });
  };
  const require = createRequire(import.meta.url);
  // A server answers each connection on the main thread once imported there.
  if (bun) {
    const servers = bun as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of ["serve", "listen"]) {
      const original = servers[name];
      if (typeof original !== "function") continue;
      try {
        servers[name] = function (this: unknown, ...args: unknown[]) {
          const where = startedBy();
          const server = original.apply(this, args);
          if (where !== false) openUntil(server, "stop", { kind: `Bun.${name}`, left: "a server listening", undo: "stop it", due: Infinity }, where);
          return server;
        };
      } catch {
        // Read-only in this runtime: not watched.
      }
    }
  }
  for (const module of ["node:net", "node:http", "node:https"]) {
    try {
      const prototype = (require(module) as { Server: { prototype: Record<string, (...args: unknown[]) => unknown> } }).Server.prototype;
      const listen = prototype.listen!;
      prototype.listen = function (this: unknown, ...args: unknown[]) {
        const where = startedBy();
        if (where !== false && !pending.has(this)) openUntil(this, "close", { kind: `${module.slice(5)} server.listen`, left: "a server listening", undo: "close it", due: Infinity }, where);
        return listen.apply(this, args);
      };
    } catch {
      // No such module here: nothing to watch.
    }
  }
  // A listener on the process (a signal, "exit", "unhandledRejection") or on the global scope
  // runs on the main thread when that comes, beside docket's own.
  const listening = (target: object, label: string, adders: string[], removers: string[], clearer: string | null, once: (event: unknown, then: () => void) => void) => {
    const entries = new Map<string, object>();
    const keyOf = (event: unknown, listener: unknown) => `${String(event)}\u0000${listenerIds.get(listener as object) ?? ""}`;
    const methods = target as Record<string, (...args: unknown[]) => unknown>;
    for (const name of adders) {
      const add = methods[name];
      if (typeof add !== "function") continue;
      methods[name] = function (this: unknown, event: unknown, listener: unknown, ...rest: unknown[]) {
        const where = startedBy();
        const added = add.call(this, event, listener, ...rest);
        if (where !== false && typeof listener === "function") {
          if (!listenerIds.has(listener)) listenerIds.set(listener, String(++listenerCount));
          const key = keyOf(event, listener);
          const entry = {};
          entries.set(key, entry);
          pending.set(entry, { kind: `${label}.${name}(${JSON.stringify(String(event))})`, left: `a listener on ${label}`, undo: "remove it", where, due: Infinity });
          const forget = () => {
            pending.delete(entry);
            if (entries.get(key) === entry) entries.delete(key);
          };
          // Gone by itself: a one-time listener once it fired, one added with a signal once that aborts.
          const options = rest[0] as { once?: unknown; signal?: unknown } | undefined;
          if (name === "once" || name === "prependOnceListener" || (typeof options === "object" && options?.once === true)) once(event, forget);
          const signal = typeof options === "object" ? options?.signal : undefined;
          if (signal instanceof AbortSignal) {
            if (signal.aborted) forget();
            else signal.addEventListener("abort", forget, { once: true });
          }
        }
        return added;
      };
    }
    for (const name of removers) {
      const remove = methods[name];
      if (typeof remove !== "function") continue;
      methods[name] = function (this: unknown, event: unknown, listener: unknown, ...rest: unknown[]) {
        const key = keyOf(event, listener);
        const entry = entries.get(key);
        if (entry) (pending.delete(entry), entries.delete(key));
        return remove.call(this, event, listener, ...rest);
      };
    }
    if (clearer && typeof methods[clearer] === "function") {
      const clear = methods[clearer]!;
      methods[clearer] = function (this: unknown, ...args: unknown[]) {
        for (const [key, entry] of entries) if (args.length === 0 || key.startsWith(`${String(args[0])}\u0000`)) (pending.delete(entry), entries.delete(key));
        return clear.apply(this, args);
      };
    }
  };
  // Each listener function by a number of its own: the same function added for two events is two entries.
  const listenerIds = new WeakMap<object, string>();
  let listenerCount = 0;
  const processOnce = process.once.bind(process) as (event: string | symbol, then: () => void) => void;
  const globalAdd = globalThis.addEventListener.bind(globalThis);
  listening(process, "process", ["on", "addListener", "once", "prependListener", "prependOnceListener"], ["off", "removeListener"], "removeAllListeners", (event, then) => processOnce(event as string, then));
  listening(globalThis, "globalThis", ["addEventListener"], ["removeEventListener"], null, (event, then) => globalAdd(String(event), then, { once: true }));
  const tracked = {
    pending: () => [...pending.values()],
    foreign: () => foreign.size,
    restart(next: (path: string) => boolean) {
      isPackage = next;
      pending.clear();
      foreign.clear();
      byNumber.clear();
      return tracked;
    },
  };
  return tracked;
}

/**
 * The lines of a stack taken here with the runtime's defaults (64 frames, no custom formatting),
 * whatever the top level did to `Error`'s settings; line 0 is the message.
 */
function stackLines(OwnError: ErrorConstructor): string[] {
  const errorStatics = OwnError as unknown as { stackTraceLimit?: number; prepareStackTrace?: unknown };
  const limit = errorStatics.stackTraceLimit;
  const prepare = errorStatics.prepareStackTrace;
  try {
    errorStatics.stackTraceLimit = 64;
    errorStatics.prepareStackTrace = undefined;
    return String(new OwnError().stack ?? "").split("\n");
  } finally {
    errorStatics.stackTraceLimit = limit;
    errorStatics.prepareStackTrace = prepare;
  }
}

/** The file and line a stack line names (without docket's query), or null for a frame of the runtime's own. */
function frameOf(line: string): { path: string; line: number } | null {
  const frame = FRAME_PATH.exec(line);
  if (!frame) return null;
  // (Code an eval ran names its file with the query encoded.)
  return { path: frame[1]!.replace(/^file:\/\//, "").replace(/%3Fdocket_\w+=[\w&=%-]*$/i, ""), line: Number(frame[2]) };
}

/** docket's own code: from source, or the binary's bundle. */
const isOwn = (path: string) => path.startsWith(`${OWN_ROOT}/`) || path.startsWith("/$bunfs/");

/**
 * Who started a timer, a server or a listener: the nearest frame that names a file, past the
 * runtime's own (a callback handed to `forEach`, a Promise executor or a microtask has the
 * runtime's frame above the code that called, or no frame of its own at all). A package's or
 * docket's is let be; anything else is the capability's — with its place when a frame names
 * one, null when none does (code run from a microtask can show no frame of its own).
 */
function starterOf(OwnError: ErrorConstructor, isPackage: (path: string) => boolean): NonNullable<PendingWork["where"]> | null | "package" | "docket" {
  const lines = stackLines(OwnError);
  let sawOwn = false;
  // Line 0 is the message; 1–4 are stackLines, this function, startedBy and the wrapper that called it.
  for (let i = 5; i < lines.length; i++) {
    const frame = frameOf(lines[i]!);
    if (frame === null) continue;
    if (isOwn(frame.path)) {
      sawOwn = true;
      continue;
    }
    return isPackage(frame.path) ? "package" : frame;
  }
  return sawOwn ? "docket" : null;
}

/**
 * Who called: the capability's code (where), a package's, or the runtime itself ("native": a
 * frame that names no file, as `Promise.race` calling `then`). docket's own frames are skipped.
 * The stack is taken with the runtime's defaults, whatever the top level did to `Error`.
 */
function callerOf(OwnError: ErrorConstructor, isPackage: (path: string) => boolean): NonNullable<PendingWork["where"]> | "package" | "native" | "docket" {
  const lines = stackLines(OwnError);
  for (let i = 1; i < lines.length; i++) {
    const frame = frameOf(lines[i]!);
    if (frame === null) return "native";
    if (isOwn(frame.path)) continue;
    return isPackage(frame.path) ? "package" : frame;
  }
  return "docket";
}
