import { readdirSync, readFileSync } from "node:fs";
import { reapChild } from "../adapter/reap-child.ts";
import { threadStat } from "./memory-watchdog.ts";

/**
 * Ends every process a worker's thread started itself (a handler's or a top level's `execSync`,
 * `spawnSync`, `spawn`; `ctx.exec` children are the main thread's, ended by their own rules),
 * and every process below them: a thread waiting in `execSync` for a child cannot be terminated
 * until that child ends, and would hold its thread, the child and a server's stop until then
 * (docs/containment.md). `thread` is `<pid>/task/<tid>`; Linux only, nothing elsewhere. With
 * `startedSince` (epoch ms), only the processes the thread started since then, and theirs.
 */
export function killThreadDescendants(thread: string | null, startedSince?: number): void {
  if (thread === null) return;
  let roots = childrenIn(`/proc/${thread}/children`);
  // A process an earlier task started and left running (a detached server, say) is spared; it is
  // this process's child all the same, which nobody else will reap once it exits.
  if (startedSince !== undefined) {
    const kept = roots.filter((pid) => (startedAt(pid) ?? Infinity) < startedSince - CLOCK_SLACK_MS);
    roots = roots.filter((pid) => !kept.includes(pid));
    reapWhenDone(kept.map(childOf));
  }
  // Known by their start too, taken before they die: a pid alone may be another process's later.
  const killed = roots.map(childOf);
  for (const pid of descendants(roots)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
  // The thread's own children are this process's: once killed, nobody but us can reap them (the
  // code of the thread that started them is gone), and each would stay a zombie. Theirs are
  // taken by init, as any orphan is.
  reapLater(killed, 0);
}

/**
 * A child of this process: its pid, and when it started (field 22 of its stat), which a reused pid
 * does not share. `adopted`: an orphan of an ended worker thread (adoptOrphans), reaped only once
 * seen exited twice in a row (`exitedBefore`).
 */
interface Child {
  pid: number;
  started: string | undefined;
  adopted?: boolean;
  exitedBefore?: boolean;
}

function childOf(pid: number): Child {
  return { pid, started: threadStat(String(pid))?.[19] };
}

/**
 * True once `child` needs no more looking at: reaped now (it had exited: a zombie), gone already,
 * or its pid is another process by now — never waited for then, so that a later child of this
 * process (a ctx.exec one, whose exit the runtime reads) keeps its status.
 */
function reaped(child: Child): boolean {
  const stat = threadStat(String(child.pid));
  if (stat === null || stat[19] !== child.started) return true;
  if (stat[0] !== "Z") return false;
  // One exited a moment ago may be a ctx.exec child the runtime is about to reap, with its status.
  if (child.adopted && !child.exitedBefore) {
    child.exitedBefore = true;
    return false;
  }
  reapChild(child.pid);
  return true;
}

/**
 * Takes in the processes a worker's thread started itself (a handler's `spawn`, not `ctx.exec`)
 * and left when the thread ended — a crash, `process.exit`, a termination: Linux hands them to
 * the main thread, whose runtime never waits for them, so each that exits stays a zombie for the
 * server's life (authoring tester, session 43: `[esbuild] <defunct>` under `docket serve`). They
 * join the spared children, reaped once seen exited two looks in a row; `own` are the main
 * thread's own children (ctx.exec groups), which its runtime reaps. Linux only.
 */
export function adoptOrphans(own: ReadonlySet<number>): void {
  const known = new Set([...spared].map((child) => child.pid));
  const orphans = childrenIn(`/proc/${process.pid}/task/${process.pid}/children`)
    .filter((pid) => !own.has(pid) && !known.has(pid))
    .map((pid) => ({ ...childOf(pid), adopted: true }));
  reapWhenDone(orphans);
}

/** Children spared from a stopped thread, reaped once they exit: looked at every REAP_POLL_MS. */
const spared = new Set<Child>();
const REAP_POLL_MS = 10_000;
let sparedTimer: ReturnType<typeof setInterval> | null = null;

function reapWhenDone(children: Child[]): void {
  for (const child of children) spared.add(child);
  if (spared.size === 0 || sparedTimer !== null) return;
  sparedTimer = setInterval(lookAtSpared, REAP_POLL_MS);
  (sparedTimer as { unref?: () => void }).unref?.();
}

/** One look at the spared children, as the timer takes every REAP_POLL_MS (tests take it themselves); answers how many are still looked after. */
export function lookAtSpared(): number {
  for (const child of spared) if (reaped(child)) spared.delete(child);
  if (spared.size === 0 && sparedTimer !== null) {
    clearInterval(sparedTimer);
    sparedTimer = null;
  }
  return spared.size;
}

/** When the killed children of a thread are reaped: soon, then later for one that is slow to die. */
const REAP_AFTER_MS = [20, 200, 2000, 20_000];

function reapLater(children: Child[], attempt: number): void {
  if (children.length === 0 || attempt >= REAP_AFTER_MS.length) return;
  const timer = setTimeout(() => reapLater(children.filter((child) => !reaped(child)), attempt + 1), REAP_AFTER_MS[attempt]);
  (timer as { unref?: () => void }).unref?.();
}

/** The kernel counts a process's start in ticks of 10 ms: this much earlier still counts as since. */
const CLOCK_SLACK_MS = 20;

/**
 * When a process started, epoch ms, or null if unknown. Linux gives its start in ticks (10 ms)
 * since boot; the time since boot (/proc/uptime, to 10 ms) turns it into this clock's.
 */
function startedAt(pid: number): number | null {
  try {
    // Field 22 (starttime) of /proc/<pid>/stat.
    const ticks = Number(threadStat(String(pid))?.[19]);
    const uptimeSeconds = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);
    return Number.isFinite(ticks) && Number.isFinite(uptimeSeconds) ? Date.now() - (uptimeSeconds * 1000 - ticks * 10) : null;
  } catch {
    return null;
  }
}

/** At most this many processes are looked at below one thread: a fork bomb must not hold the main thread. */
const MAX_PROCESSES = 4096;

function descendants(roots: number[]): number[] {
  const found = new Set<number>();
  const queue = [...roots];
  for (let pid = queue.shift(); pid !== undefined && found.size < MAX_PROCESSES; pid = queue.shift()) {
    if (found.has(pid)) continue;
    found.add(pid);
    let threads: string[];
    try {
      threads = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of threads) queue.push(...childrenIn(`/proc/${pid}/task/${tid}/children`));
  }
  return [...found];
}

function childrenIn(path: string): number[] {
  try {
    return readFileSync(path, "utf8").split(" ").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
