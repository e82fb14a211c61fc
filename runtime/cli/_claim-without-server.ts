import { buildFailure, type Retryability } from "../execution/failure.ts";
import type { EdgeInfo } from "../execution/plane.ts";
import { runMarksDir, type RunMark } from "../store/run-marks.ts";
import type { LocalRunOptions } from "./local-run-options.ts";
import type { TerminalStyle } from "./_terminal.ts";
import { finishRefused } from "./_run-end.ts";
import { claimRunIdLocally } from "./_run-id-claim.ts";

/** What claimWithoutServer needs of the run. */
interface LocalClaimOptions {
  root: string;
  /** The run's own execution, held until the claim is made. */
  id: string;
  capabilityId: string;
  inputHash: string;
  limit: number;
  edge: EdgeInfo;
  say: (line: string) => void;
  refuse: (message: string, context: Record<string, unknown>, error_code: "unavailable", retry?: { retryability: Retryability; suggestion: string }) => Promise<number>;
}

/**
 * Claims the run_id of a run that found no server (claimRunIdLocally): the mark left (the run
 * goes on), the mark of the run this one is (followed by the caller), or this run's end when it
 * must not run — a conflict, the store file naming it, a server appearing, no room, or a mark that
 * cannot be read or written (whether the run_id was used is then unknown).
 */
export async function claimWithoutServer(options: LocalRunOptions, style: TerminalStyle, claim: LocalClaimOptions): Promise<{ claimed: RunMark } | { marked: RunMark } | number> {
  const runId = options.runId!;
  const { root, edge } = claim;
  let answer;
  try {
    answer = claimRunIdLocally(root, { run_id: runId, execution_id: claim.id, capability: claim.capabilityId, input_hash: claim.inputHash }, claim.limit);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return await claim.refuse(`Cannot look up or keep run_id ${runId} in ${runMarksDir(root)} or .docket/state.db (${why}), so whether it was used already cannot be known, and a run with it again would run again; nothing ran. Fix what the message says (a full disk, a folder not writable) and run again (the same --run-id is safe).`, { run_id: runId }, "unavailable", {
      retryability: "safe",
      suggestion: "Fix what the message says (a full disk, a .docket/ this user cannot write to, a file in .docket/runs/ that is not a run mark) and run again: the same --run-id is safe.",
    });
  }
  switch (answer.kind) {
    case "claimed":
      return { claimed: answer.mark };
    case "marked":
      return { marked: answer.mark };
    case "server":
      return await claim.refuse(`A docket server began serving this checkout as this run started, so run_id ${runId} was not kept; nothing ran.`, { run_id: runId }, "unavailable", { retryability: "safe", suggestion: "Run again: the run then goes through that server (the same --run-id is safe)." });
    case "stored":
      return await claim.refuse(
        `run_id ${runId} was already used for ${answer.known.execution_id} by this checkout's server, which is not running now, so how that execution ended cannot be read here; nothing ran. Start the server (docket serve) and run again: the same --run-id then answers as ${answer.known.execution_id} ended.`,
        { run_id: runId, execution_id: answer.known.execution_id },
        "unavailable",
        { retryability: "safe", suggestion: "Start the server (docket serve) and run again with the same --run-id." },
      );
    case "conflict": {
      const { known } = answer;
      const failure = buildFailure({
        error_code: "run_id_conflict",
        stage: "admit",
        message: `run_id "${runId}" was already used for ${known.execution_id} with ${known.capability === claim.capabilityId ? "a different input" : `capability ${known.capability}`}.`,
        context: { run_id: runId, execution_id: known.execution_id },
        request_id: edge.request_id,
        trace_id: edge.trace_id,
      });
      return await finishRefused(options, style, failure, claim.capabilityId);
    }
    case "full": {
      const failure = buildFailure({
        error_code: "capacity",
        stage: "admit",
        message: `This checkout keeps the run_ids of ${answer.count} runs without a server in ${runMarksDir(root)} (limit run_identities, ${claim.limit}), so run_id ${runId} cannot be kept; nothing ran.`,
        suggestion: "Delete the files of runs you will not retry from .docket/runs/ (each holds one run_id), or raise DOCKET_RUN_IDENTITIES.",
        retryability: "never",
        context: { run_id: runId, count: answer.count, limit: claim.limit },
        request_id: edge.request_id,
        trace_id: edge.trace_id,
      });
      return await finishRefused(options, style, failure, claim.capabilityId);
    }
  }
}
