import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { threadStat } from "./memory-watchdog.ts";
import { inDocketWords } from "../execution/thrown.ts";

/**
 * The module that guards a thread a handler starts itself (`new Worker(…)`), preloaded there
 * before its own code; compiled into the binary beside the worker entry (scripts/build.ts).
 */
export const NESTED_GUARD_URL = new URL("./worker-guard.ts", import.meta.url);

/**
 * Keeps a handler from signalling the process it runs in: `process.kill(process.pid, "SIGTERM")`
 * in a worker stopped the whole server, every other execution with it (docs/containment.md). A
 * signal to this process, to its process group, to every process of its group (pid 0) or to every
 * process it may signal (pid -1) is refused with EPERM, as the system refuses a signal not
 * allowed; signal 0 (is it alive?) and every other process are left alone; `process.abort()` is
 * refused the same way. The same check guards the runtime's own `process._kill`, and every thread
 * the handler starts (`new Worker`, from node:worker_threads or the global) gets this guard
 * before its code runs. The pid and signal are read once: the values checked are the values sent.
 * Installed once per worker, before any capability loads.
 */
export function guardOwnProcess(): void {
  guardSignals();
  guardNestedWorkers();
}

/**
 * The signal part of the guard alone, for the main thread of a process that imports capability
 * files (their top level, and what it defers, runs there): process.kill and process._kill of this
 * process, its group, 0 and -1 refused, process.abort too. docket's own code never signals itself.
 */
export function guardSignals(): void {
  const marked = process as unknown as Record<symbol, true>;
  if (marked[GUARDED]) return;
  marked[GUARDED] = true;
  const group = ownProcessGroup();
  // A thread id of this process is this process too: a signal sent to it goes to every thread (Linux).
  const ownThread = (target: number) => target > 0 && Number.isInteger(target) && existsSync(`/proc/${process.pid}/task/${target}`);
  const own = (target: number) => target === process.pid || target === 0 || target === -1 || target === -process.pid || (group !== null && target === -group) || ownThread(target);
  const guarded = <R>(name: string, send: (pid: number, signal?: string | number) => R) =>
    function (pid: unknown, signal?: unknown): R {
      const target = Number(pid);
      const sig = signal === undefined || typeof signal === "number" ? signal : String(signal);
      if (own(target) && sig !== 0 && sig !== "0") {
        throw refusal(`${name}(${target}${sig === undefined ? "" : `, ${JSON.stringify(sig)}`}) would signal the docket process that runs every execution; a handler ends its own work by returning or throwing.`, `${name}() of docket's own process`);
      }
      return send(target, sig);
    };
  const runtime = process as unknown as { _kill?: (pid: number, signal?: string | number) => unknown };
  const kill = process.kill.bind(process);
  const underlying = typeof runtime._kill === "function" ? runtime._kill : null;
  // docket's own code re-raises a signal it took, to end by its default (signalOwnProcess):
  // with the kill the process had, its `_kill` (which process.kill calls) included. Kept here,
  // where no capability's code can reach it.
  unguardedKill = (signal: NodeJS.Signals) => {
    const now = runtime._kill;
    if (underlying !== null) runtime._kill = underlying;
    try {
      kill(process.pid, signal);
    } finally {
      if (underlying !== null) runtime._kill = now;
    }
  };
  process.kill = guarded("process.kill", kill) as typeof process.kill;
  if (underlying !== null) runtime._kill = guarded("process._kill", underlying.bind(process));
  // In a worker it would end the whole process too (a capability file's top level tried in a
  // worker first must fail there, not pass and then run on the main thread).
  process.abort = (() => {
    throw refusal("process.abort() would end the docket process that runs every execution; a handler ends its own work by returning or throwing.", "process.abort()");
  }) as typeof process.abort;
}

/**
 * Marks an error the guard threw with the call it refused (`"process.abort()"`): a handler that
 * lets it through fails saying that docket refused that call, not only that it threw "an Error
 * EPERM" (docs/containment.md).
 */
export const REFUSED_CALL = Symbol.for("docket.own-process.refused");

/** The EPERM the guard throws for `call`, as the system refuses a signal not allowed, marked with the call. */
function refusal(message: string, call: string): NodeJS.ErrnoException {
  const error = new Error(message) as NodeJS.ErrnoException & { [REFUSED_CALL]?: string };
  error.code = "EPERM";
  Object.defineProperty(error, REFUSED_CALL, { value: call });
  return inDocketWords(error);
}

/** The call the guard refused, when `error` is its refusal. */
export function refusedCall(error: unknown): string | null {
  try {
    const call = (error as { [REFUSED_CALL]?: unknown } | null)?.[REFUSED_CALL];
    return typeof call === "string" ? call : null;
  } catch {
    return null;
  }
}

/**
 * Guards `process.exit` on the main thread of `docket run` while it runs (or of a server, with
 * SERVER_ENDING): a capability file's top
 * level, or what it deferred (`main().then(() => process.exit(0))`, left from the script it came
 * from), ended the run with its own exit code — 0 included — before the execution's end was
 * written, and a CI step passed with nothing done and nothing said. The call throws instead: at
 * the top level it is the file's load error; later, an error the run reports. Answers docket's
 * own exit, and what puts the runtime's back.
 */
export function guardExit(ending = RUN_ENDING): { exit: (code: number) => never; restore(): void } {
  const original = process.exit;
  const exit = original.bind(process) as (code: number) => never;
  process.exit = function (code?: unknown): never {
    const error = new Error(`process.exit(${code === undefined ? "" : String(code)}) in capability code would ${ending}; a capability ends its work by returning or throwing.`) as NodeJS.ErrnoException;
    error.code = "EPERM";
    throw error;
  } as typeof process.exit;
  return { exit, restore: () => void (process.exit = original) };
}

/** What a capability's process.exit would do to `docket run`, as guardExit says it by default. */
const RUN_ENDING = "end docket run before its execution's end is written, and a CI step would pass or fail on it with nothing said";

/** What a capability's process.exit would do to `docket capabilities`: a listing that is empty, and says nothing. */
export const LISTING_ENDING = "end docket capabilities before its listing is written, with nothing said (a CI check reading it would pass on an empty list)";

/**
 * The same for a process that serves (`docket serve`, `docket mcp`): a file whose top level exits
 * only on the main thread passes its trial in a worker, and its import there would end the server
 * with nothing said. Guarded, its import fails instead: a load error naming the call.
 */
export const SERVER_ENDING = "end the docket server, every execution it runs and every client it serves, with nothing said";

/** Marks a process object (one per thread) whose signals are guarded already. */
const GUARDED = Symbol.for("docket.signals.guarded");

/** The process's own kill of itself, as it was before guardSignals; null while nothing is guarded. */
let unguardedKill: ((signal: NodeJS.Signals) => void) | null = null;

/**
 * Sends `signal` to this process, for docket's own code that took a signal and now ends by its
 * default: with the runtime's own kill, not the guard's, which refuses to signal this process
 * (a Ctrl-C of `docket capabilities list | cat` was refused, and the listing went on to its end).
 */
export function signalOwnProcess(signal: NodeJS.Signals): void {
  if (unguardedKill !== null) unguardedKill(signal);
  else process.kill(process.pid, signal);
}
/** Marks a thread whose Worker constructors preload the guard already. */
const WRAPPED = Symbol.for("docket.workers.wrapped");

/**
 * Worker constructors that preload this guard into the thread they start (Bun's `preload` option),
 * in a pool worker and on the main thread of a process that imports capability files. docket's
 * own pool takes the constructor before this runs (_worker-slot.ts): its workers install the
 * guard from their entry.
 */
export function guardNestedWorkers(): void {
  const marked = globalThis as unknown as Record<symbol, true>;
  if (marked[WRAPPED]) return;
  marked[WRAPPED] = true;
  const preload = NESTED_GUARD_URL.pathname;
  const withGuard = (options: unknown) => {
    const given = (options ?? {}) as { preload?: string | string[] };
    const others = given.preload === undefined ? [] : Array.isArray(given.preload) ? given.preload : [given.preload];
    return { ...given, preload: [preload, ...others] };
  };
  const wrap = <C extends new (...args: never[]) => object>(Original: C): C => {
    function Worker(this: unknown, url: unknown, options?: unknown) {
      // The runtime starts the thread within the constructor: the one that appears is its.
      const before = threadIds();
      const started = Reflect.construct(Original, [url, withGuard(options)], new.target ?? Worker);
      counted(started, before === null ? [] : [...(threadIds() ?? [])].filter((id) => !before.has(id)));
      return started;
    }
    Worker.prototype = Original.prototype;
    Object.defineProperty(Original.prototype, "constructor", { value: Worker, writable: true, configurable: true });
    return Worker as unknown as C;
  };
  // The module object that `import { Worker } from "node:worker_threads"` reads its binding from.
  const threads = createRequire(import.meta.url)("node:worker_threads") as { Worker: new (...args: never[]) => object };
  threads.Worker = wrap(threads.Worker);
  if (typeof globalThis.Worker === "function") globalThis.Worker = wrap(globalThis.Worker as unknown as new (...args: never[]) => object) as unknown as typeof globalThis.Worker;
}

/** The threads this one started (`new Worker`) that have not ended (their OS threads, when known), and who hears of each change. */
const nested = new Map<object, string[]>();
let nestedListener: ((threads: string[]) => void) | null = null;

/**
 * Tells `listener` the OS threads under /proc (`<pid>/task/<tid>`, Linux only) of the threads this
 * one started (`new Worker`, guarded above) that are alive, at once and on each start and end: a
 * pool worker tells the pool, whose idle watch then looks at what those threads use while the
 * worker has no task (docs/containment.md).
 */
export function onNestedWorkers(listener: (threads: string[]) => void): void {
  nestedListener = listener;
  tellNested();
}

function tellNested(): void {
  nestedListener?.([...nested.values()].flat());
}

/** Counts a thread started until it ends ("exit" of node:worker_threads', "close" of the global Worker's). */
function counted(worker: object, threads: string[]): void {
  const events = worker as { once?: (event: string, listener: () => void) => void; addEventListener?: (event: string, listener: () => void, options: { once: boolean }) => void };
  const end = () => {
    if (nested.delete(worker)) tellNested();
  };
  if (typeof events.once === "function") events.once("exit", end);
  else if (typeof events.addEventListener === "function") events.addEventListener("close", end, { once: true });
  else return;
  nested.set(worker, threads.map((id) => `${process.pid}/task/${id}`));
  tellNested();
}

/** The ids of this process's threads now (/proc/self/task), or null where they cannot be read. */
function threadIds(): Set<string> | null {
  try {
    return new Set(readdirSync("/proc/self/task"));
  } catch {
    return null;
  }
}

/** This process's group id, from /proc (Linux); null where it cannot be read. */
function ownProcessGroup(): number | null {
  // Field 5 (pgrp).
  const group = Number(threadStat("self")?.[2]);
  return Number.isInteger(group) && group > 0 ? group : null;
}
