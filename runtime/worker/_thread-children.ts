import { readdirSync, readFileSync } from "node:fs";

/**
 * Ends every process a worker's thread started itself (a handler's or a top level's `execSync`,
 * `spawnSync`, `spawn`; `ctx.exec` children are the main thread's, ended by their own rules),
 * and every process below them: a thread waiting in `execSync` for a child cannot be terminated
 * until that child ends, and would hold its thread, the child and a server's stop until then
 * (docs/containment.md). `thread` is `<pid>/task/<tid>`; Linux only, nothing elsewhere.
 */
export function killThreadDescendants(thread: string | null): void {
  if (thread === null) return;
  for (const pid of descendants(childrenIn(`/proc/${thread}/children`))) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone already.
    }
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
