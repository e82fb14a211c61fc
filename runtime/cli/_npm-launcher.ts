// How the npm package's launcher (`npx docket`, scripts/npm-template/bin/docket.js) started this
// process, as it says in the environment (docs/distribution.md, "npm"): the command to name in
// the hints docket prints, and, where the launcher waits beside docket (Node below 22.15, which
// cannot replace itself with the binary), its end, which must end docket too.
import { readFileSync } from "node:fs";

/** The command a user types to run docket: `npx docket` when the npm launcher started it, else `docket`. */
export function commandName(env: NodeJS.ProcessEnv = process.env): string {
  // Only this value is taken: the variable is the launcher's word, never text to print as given.
  return env.DOCKET_COMMAND === "npx docket" ? "npx docket" : "docket";
}

/** How often docket looks whether the launcher that waits for it is still its parent. */
const LAUNCHER_LOOK_MS = 1000;

/**
 * When the launcher that spawned this process (DOCKET_LAUNCHER_PID, its parent) is gone — killed
 * with SIGKILL, which it cannot pass on — docket stops as on SIGTERM: it was left serving its
 * port, with nothing to stop it but a kill by pid. Looked at once a second (the parent's pid
 * changes when it dies); the variable is removed so that no process docket starts inherits it.
 */
export function followLauncher(): void {
  const launcher = Number(process.env.DOCKET_LAUNCHER_PID);
  delete process.env.DOCKET_LAUNCHER_PID;
  if (!Number.isSafeInteger(launcher) || launcher <= 1) return;
  const stop = async () => {
    // The runtime's own kill: the guard against capability code refuses a signal to docket's own pid.
    (await import("../worker/_own-process.ts")).signalOwnProcess("SIGTERM");
  };
  if (process.ppid !== launcher) {
    // Killed before docket got here (its first ~100 ms: checking tester, session 44), it is gone or
    // a zombie; a live process that is not docket's parent named there is none of docket's.
    if (gone(launcher)) void stop();
    return;
  }
  const look = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(look);
    void stop();
  }, LAUNCHER_LOOK_MS);
  look.unref?.();
}

/** True when no process `pid` runs: none at all, or one that exited and was not reaped yet (a zombie). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  try {
    // The state is the field after the command's closing parenthesis (Linux).
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z";
  } catch {
    return false;
  }
}
