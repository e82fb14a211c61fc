import { readFileSync } from "node:fs";

/**
 * The signals that ask a docket process to stop cleanly: SIGINT (Ctrl-C), SIGTERM, and SIGHUP (the
 * terminal or SSH session went away) unless the process was started with it ignored (`nohup`,
 * which a listener would otherwise override). Handled, a hang-up stops a run's children and
 * writes its result, and a server removes its lease, instead of dying on the spot.
 *
 * Whether SIGHUP was ignored at start is read from /proc (Linux). Where it cannot be read, SIGHUP
 * is left to the system's default, so `nohup docket …` keeps its meaning everywhere.
 */
export function stopSignals(): NodeJS.Signals[] {
  return hangUpIgnoredOrUnknown() ? ["SIGINT", "SIGTERM"] : ["SIGINT", "SIGTERM", "SIGHUP"];
}

/** True when SIGHUP is in this process's ignored set (`SigIgn`, bit 0), or the set cannot be read. */
function hangUpIgnoredOrUnknown(): boolean {
  try {
    const mask = /^SigIgn:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    return mask === undefined || (Number.parseInt(mask.slice(-1), 16) & 1) === 1;
  } catch {
    return true;
  }
}
