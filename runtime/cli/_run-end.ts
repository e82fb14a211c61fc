// How a docket run ends: what it prints on its streams, then records (_run-document.ts).
import type { FailureDescriptor } from "../execution/failure.ts";
import { expiredExecution, type ExecutionSnapshot } from "../execution/snapshot.ts";
import { exitCodeOf, failureText, type RunEnd } from "./exit-code.ts";
import { runnerSafe } from "./github-actions.ts";
import type { LocalRunOptions } from "./local-run-options.ts";
import { outputText } from "./output-text.ts";
import type { TerminalStyle } from "./_terminal.ts";
import { deliverDocument, writeSummary } from "./_run-document.ts";

/** The end of a run that never became an execution: a refusal, exit 2 (or 1 for a refusal that is not the caller's). */
export async function finishRefused(options: LocalRunOptions, style: TerminalStyle, failure: FailureDescriptor, capability = options.target): Promise<number> {
  const end: RunEnd = { state: null, failure };
  const document = `${JSON.stringify({ execution: null, failure }, null, 2)}\n`;
  if (options.format === "json") await options.output.stdout(document);
  options.output.stderr(runnerSafe(options.env, failureText(failure, style)));
  await writeSummary(options, { capability, execution: null, failure });
  return await deliverDocument(options, document, null, exitCodeOf(end));
}

/**
 * The end of an execution: output on stdout (or the one JSON document), the failure on stderr.
 * `unheld`: the execution ran in a run without a server and no server holds it (unheldFailure).
 */
export async function finishSettled(options: LocalRunOptions, style: TerminalStyle, ended: ExecutionSnapshot, also: { deduplicated?: true; details_expired?: true } = {}, unheld = false): Promise<number> {
  const { output } = options;
  // A handler that ran in this process: what "the server's log" holds of it is this run's own stderr,
  // said so in the document and the job summary too. One that ran elsewhere (deduplicated) is the server's.
  const ownLog = (failure: FailureDescriptor) => (also.deduplicated ? failure : { ...failure, suggestion: failure.suggestion.replace("in the server's log", "in this run's log above (stderr)") });
  const failure = ended.failure && ownLog(unheld ? unheldFailure(ended.failure, ended.id, options.runId) : ended.failure);
  const snapshot = failure ? { ...ended, failure } : ended;
  const document = `${JSON.stringify(snapshot.state === "succeeded" ? { execution: snapshot, output: snapshot.output, ...also } : { execution: snapshot, failure: snapshot.failure, ...also }, null, 2)}\n`;
  if (options.format === "json") {
    await output.stdout(document);
  } else if (snapshot.state === "succeeded" && !also.details_expired) {
    // An expired output is not kept (null): printing "null" would pass for what the handler answered.
    const text = outputText(snapshot.output);
    if (text !== "") await output.stdout(runnerSafe(options.env, text));
  }
  if (snapshot.state !== "succeeded" && snapshot.failure) output.stderr(runnerSafe(options.env, failureText(snapshot.failure, style)));
  await writeSummary(options, { capability: snapshot.capability, execution: snapshot, failure: snapshot.failure });
  return await deliverDocument(options, document, snapshot, exitCodeOf({ state: snapshot.state, failure: snapshot.failure }));
}

/**
 * A failure whose outcome is unknown says to settle it with `docket executions reconcile`, which
 * records what was found in the store of the server holding the execution (docs/reconciliation.md).
 * An execution run without a server is in no server's store — a server started later records its
 * run_id, not the execution — so that would answer not_found: the suggestion says what a person
 * can do instead. A handler's own suggestion that does not name reconcile stays.
 */
function unheldFailure(failure: FailureDescriptor, id: string, runId: string | undefined): FailureDescriptor {
  if (failure.outcome_certainty !== "unknown" || !/executions[ .]reconcile/.test(failure.suggestion)) return failure;
  const again = runId === undefined ? "run it again" : `run it with another --run-id (run_id ${runId} keeps answering with this end)`;
  return {
    ...failure,
    suggestion: `The work may have been done: check by hand what it changed. No server holds ${id} (it ran in a docket run without a server), so there is nothing to reconcile it with and nothing records what you find; if the work did not take effect and is still wanted, ${again}.`,
  };
}

/**
 * The end of a run whose run_id names an execution whose end nobody can tell: refused (the
 * document names the execution, deduplicated, its details expired), nothing runs again.
 */
export async function finishWithoutEnd(options: LocalRunOptions, style: TerminalStyle, original: { id: string; capability: string }, failure: FailureDescriptor): Promise<number> {
  const execution = expiredExecution({ execution_id: original.id, capability: original.capability, run_id: options.runId! });
  const document = `${JSON.stringify({ execution, failure, deduplicated: true, details_expired: true }, null, 2)}\n`;
  if (options.format === "json") await options.output.stdout(document);
  options.output.stderr(runnerSafe(options.env, failureText(failure, style)));
  await writeSummary(options, { capability: original.capability, execution: null, failure });
  return await deliverDocument(options, document, null, exitCodeOf({ state: null, failure }));
}
