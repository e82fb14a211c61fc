import { threadStat } from "./memory-watchdog.ts";

/**
 * Keeps a handler from signalling the process it runs in: `process.kill(process.pid, "SIGTERM")`
 * in a worker stopped the whole server, every other execution with it (docs/containment.md). A
 * signal to this process, to its process group, or to every process of its group (pid 0) is
 * refused with EPERM, as the system refuses a signal not allowed; signal 0 (is it alive?) and
 * every other process are left alone; `process.abort()` is refused the same way. Installed once
 * per worker, before any capability loads.
 */
export function guardOwnProcess(): void {
  const kill = process.kill.bind(process);
  const group = ownProcessGroup();
  process.kill = ((pid: number, signal?: string | number) => {
    const target = Number(pid);
    const own = target === process.pid || target === 0 || target === -process.pid || (group !== null && target === -group);
    if (own && signal !== 0 && signal !== "0") {
      const error = new Error(
        `process.kill(${pid}${signal === undefined ? "" : `, ${JSON.stringify(signal)}`}) would signal the docket process that runs every execution; a handler ends its own work by returning or throwing.`,
      ) as NodeJS.ErrnoException;
      error.code = "EPERM";
      throw error;
    }
    return kill(pid, signal);
  }) as typeof process.kill;
  // In a worker it would end the whole process too (a capability file's top level tried in a
  // worker first must fail there, not pass and then run on the main thread).
  process.abort = (() => {
    const error = new Error("process.abort() would end the docket process that runs every execution; a handler ends its own work by returning or throwing.") as NodeJS.ErrnoException;
    error.code = "EPERM";
    throw error;
  }) as typeof process.abort;
}

/** This process's group id, from /proc (Linux); null where it cannot be read. */
function ownProcessGroup(): number | null {
  // Field 5 (pgrp).
  const group = Number(threadStat("self")?.[2]);
  return Number.isInteger(group) && group > 0 ? group : null;
}
