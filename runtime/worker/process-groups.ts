import { readdirSync, readFileSync } from "node:fs";

/** How often a stopping group is checked for being empty before its grace is over. */
const POLL_MS = 20;

/** Sends `signal` to every process of the group `pgid` leads; false when none is left (ESRCH). */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (!Number.isSafeInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    // EPERM: the group holds a process of another user, which a child of ours cannot have started.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Whether a process of the group `pgid` still runs: one that exited and waits to be reaped (a
 * zombie, whose parent — the system's init once its docket was killed — has not collected it
 * yet) runs nothing, though the group answers signals until it is reaped. Read from /proc where
 * there is one; elsewhere, whether the group answers a signal.
 */
export function groupRuns(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    try {
      // Fields after the command name (which may hold spaces and parentheses): state, ppid, pgrp.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z" && state !== "X") return true;
    } catch {
      // Gone meanwhile.
    }
  }
  return false;
}

/**
 * Ends process groups the way docs/authoring.md says a child ends: TERM now, KILL to whatever is
 * left after `graceMs`. Resolves once every group is gone (or was sent KILL). Used by the main
 * thread for the children of a worker that was terminated or crashed, which can run no code.
 */
export async function endProcessGroups(pgids: Iterable<number>, graceMs: number): Promise<void> {
  let left = [...pgids].filter((pgid) => signalGroup(pgid, "SIGTERM"));
  const until = performance.now() + graceMs;
  while (left.length > 0 && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(1, until - performance.now()))));
    left = left.filter((pgid) => signalGroup(pgid, 0));
  }
  for (const pgid of left) signalGroup(pgid, "SIGKILL");
}

/** Every group a worker's `ctx.exec` started in this process that has not exited yet. */
export const childGroups = new Set<number>();

/**
 * Ends every `ctx.exec` child group still running in this process, as endProcessGroups does;
 * resolves at once when there is none. What a process about to exit awaits (`docket run`): a
 * worker stopped by force has its children ended when its exit is heard, which a process exiting
 * right after its verdict never hears.
 */
export function endEveryChildGroup(graceMs: number): Promise<void> {
  return childGroups.size === 0 ? Promise.resolve() : endProcessGroups(childGroups, graceMs);
}
