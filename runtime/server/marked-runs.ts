// The executions `docket run` ran without a server, as a server started later can tell them
// (docs/protocol.md, "A run without a server"): from each run's mark in .docket/runs/.
import { isProcessAlive, ownPidNamespace, processStarted } from "./lease.ts";
import { readRunMark, type RunMark } from "../store/run-marks.ts";
import type { MarkedRun } from "../execution/marked-run-answer.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { isTerminal, type ExecutionState } from "../execution/state-machine.ts";


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
 * Looks up, by execution id, the runs whose marks a server recorded as it started (`marks`): a
 * mark is read again when asked while its run had no end, since a run still going when the server
 * started writes its end there later; an end read stays (it never changes, and an end holds the
 * output: a large one is not read on every question). A mark removed since (to make room) is
 * answered as last read: the run_id stays that run's. Null for any other execution.
 */
export function markedRunLookup(root: string, marks: readonly RunMark[]): (executionId: string) => MarkedRun | null {
  const lastRead = new Map(marks.map((mark) => [mark.execution_id, mark]));
  return (executionId) => {
    const known = lastRead.get(executionId);
    if (known === undefined) return null;
    let mark: RunMark = known;
    if (known.end === undefined) {
      try {
        const read = readRunMark(root, known.run_id);
        if (read !== null && read.execution_id === executionId) mark = read;
      } catch {
        // Unreadable now: as last read.
      }
      lastRead.set(executionId, mark);
    }
    if (mark.end === undefined) return { mark, alive: markedRunAlive(mark) };
    // An end docket wrote is the execution's final snapshot; anything else (a mark edited by hand) tells nothing.
    return endWritten(mark) ? { mark, alive: false } : { mark, alive: false, unreadableEnd: true };
  };
}

/** Whether a mark's end is what a run writes there: its own execution's snapshot, in a final state. */
function endWritten(mark: RunMark): boolean {
  const end = mark.end as Partial<ExecutionSnapshot> | undefined;
  return end !== undefined && end.id === mark.execution_id && typeof end.state === "string" && isTerminal(end.state as ExecutionState) && typeof end.capability === "string" && Array.isArray(end.steps) && typeof end.links === "object" && end.links !== null;
}
