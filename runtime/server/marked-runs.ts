// The executions `docket run` ran without a server, as a server started later can tell them
// (docs/protocol.md, "A run without a server"): from each run's mark in .docket/runs/.
import { isProcessAlive, ownPidNamespace, processStarted } from "./lease.ts";
import { readRunMark, type RunMark } from "../store/run-marks.ts";
import type { MarkedRun } from "../execution/marked-run-answer.ts";


/**
 * Whether the process that left `mark` still runs: false once it is gone (or its pid names another
 * process now), "unknown" from another pid namespace, where its pid means nothing here.
 */
export function markedRunAlive(mark: RunMark): boolean | "unknown" {
  if (mark.pid_namespace !== ownPidNamespace()) return "unknown";
  if (!isProcessAlive(mark.pid)) return false;
  return mark.pid_started === null || processStarted(mark.pid) === mark.pid_started;
}

/**
 * Looks up, by execution id, the runs whose marks a server recorded as it started (`marks`): each
 * mark is read again when asked, since a run still going when the server started writes its end
 * there later. A mark removed since (to make room) is answered as last read: the run_id stays
 * that run's. Null for any other execution.
 */
export function markedRunLookup(root: string, marks: readonly RunMark[]): (executionId: string) => MarkedRun | null {
  const lastRead = new Map(marks.map((mark) => [mark.execution_id, mark]));
  return (executionId) => {
    const known = lastRead.get(executionId);
    if (known === undefined) return null;
    let mark: RunMark | null = null;
    try {
      mark = readRunMark(root, known.run_id);
    } catch {
      // Unreadable now: as last read.
    }
    if (mark !== null && mark.execution_id === executionId) lastRead.set(executionId, mark);
    else mark = known;
    return { mark, alive: mark.end === undefined ? markedRunAlive(mark) : false };
  };
}
