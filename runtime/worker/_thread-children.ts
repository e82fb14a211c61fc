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
  // A process an earlier task started and left running (a detached server, say) is spared.
  if (startedSince !== undefined) roots = roots.filter((pid) => (startedAt(pid) ?? Infinity) >= startedSince - CLOCK_SLACK_MS);
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
  reapLater(roots, 0);
}

/** When the killed children of a thread are reaped: soon, then later for one that is slow to die. */
const REAP_AFTER_MS = [20, 200, 2000, 20_000];

function reapLater(pids: number[], attempt: number): void {
  if (pids.length === 0 || attempt >= REAP_AFTER_MS.length) return;
  const timer = setTimeout(() => reapLater(pids.filter((pid) => !reapChild(pid)), attempt + 1), REAP_AFTER_MS[attempt]);
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
