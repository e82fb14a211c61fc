// A docket run whose run_id names an execution that already exists: this run is that one, and
// ends as it ends, followed at the server or through the mark of a run without a server.
import { buildFailure } from "../execution/failure.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { isTerminal } from "../execution/state-machine.ts";
import { newTraceId, requestIdFrom } from "../server/edge-ids.ts";
import { readRunMark, type RunMark } from "../store/run-marks.ts";
import type { LocalRunOptions } from "./local-run-options.ts";
import { findServer, followEvents, type ServerClient } from "./server-client.ts";
import type { TerminalStyle } from "./_terminal.ts";
import { finishRefused, finishSettled, finishWithoutEnd } from "./_run-end.ts";
import { markedRunAlive } from "../server/marked-runs.ts";

/** How long a run that is another execution keeps looking for a server that went away while it followed it. */
const FOLLOW_RESTART_MS = 30_000;

/**
 * The run_id was already used with the same capability and input, for `executionId` at the server:
 * that execution is this run. Nothing runs here; its end (followed at the server while it has none)
 * is this run's, in the same words and exit code, and the JSON document says `deduplicated`.
 * An execution whose details expired ended long ago: its state is its end, at once, and the
 * document says `details_expired` too. One the server forgot (past `executions_retained`) keeps
 * only its identity, so its end cannot be known: a refusal that no retry can help (docs/limits.md).
 * Still running when this run's own deadline (`deadlineAt`, performance.now) passes, it is left to
 * go on, and this run stops waiting (stopFollowing).
 */
export async function finishDeduplicated(options: LocalRunOptions, style: TerminalStyle, server: ServerClient, original: { id: string; capability: string }, say: (line: string) => void, deadlineAt?: number): Promise<number> {
  const executionId = original.id;
  // Run without a server, its mark tells how it ended, as this process reads it (the server holds
  // its run_id and reads the same mark, never its events).
  const marked = markOf(server.root, options.runId!);
  if (marked !== null && marked.execution_id === executionId) return await finishFromMark(options, style, server.root, marked, say, deadlineAt);
  say(`run_id ${options.runId} was already used for ${executionId}, so this run is that execution and nothing runs again: ${server.url}/cockpit/executions/${executionId}`);
  let client = server;
  const current = async (): Promise<SeenExecution> => {
    const answer = await client.request("GET", "/api/v1/executions/get", { query: { id: executionId } }).catch(() => null);
    if (answer === null) return null;
    if (answer.ok) return answer.body as ExecutionSnapshot;
    // The server knows the run_id, so a not_found names an execution it forgot, not a wrong id.
    return answer.failure.error_code === "not_found" ? "forgotten" : null;
  };
  const ended = (s: SeenExecution) => s === "forgotten" || (s !== null && (s.details_expired === true || isTerminal(s.state)));
  let snapshot = await current();
  let said = false;
  // Said once for the run, not again by each follow after the server's return.
  let quietSaid = false;
  const sayQuietOnce = (line: string) => {
    if (!quietSaid) say(line);
    quietSaid = true;
  };
  // Followed to its end, through a restart of the server (its lease names it again): a server
  // that went away mid-follow is looked for for FOLLOW_RESTART_MS.
  const giveUpAt = Date.now() + FOLLOW_RESTART_MS;
  const deadline = new AbortController();
  const timer = deadlineAt === undefined ? undefined : setTimeout(() => deadline.abort(), Math.max(0, deadlineAt - performance.now()));
  try {
    while (!ended(snapshot) && !deadline.signal.aborted) {
      if (snapshot !== null && snapshot !== "forgotten") {
        if (!said) say(`${executionId} is ${snapshot.state}; following it to its end`);
        said = true;
        await followEvents(client, { id: executionId, after: snapshot.last_sequence, onEvent: () => {}, onNote: () => {}, onQuiet: sayQuietOnce, signal: deadline.signal });
        if (deadline.signal.aborted) break;
        snapshot = await current();
        if (ended(snapshot)) break;
      }
      if (Date.now() > giveUpAt) break;
      await pause(500, deadline.signal);
      if (deadline.signal.aborted) break;
      client = (await findServer(client.root, { timeout_ms: 1500 }).catch(() => null)) ?? client;
      snapshot = await current();
    }
  } finally {
    clearTimeout(timer);
  }
  if (snapshot === "forgotten") return await finishForgotten(options, style, client, original);
  if (deadline.signal.aborted && !ended(snapshot)) return await stopFollowing(options, style, { ...original, where: `at the server at ${client.url}` });
  if (snapshot === null || !isTerminal(snapshot.state)) {
    const failure = buildFailure({
      error_code: "unavailable",
      stage: "admit",
      message: `run_id ${options.runId} names ${executionId}, whose end this run could not read from the server at ${client.url}.`,
      suggestion: `Look at ${executionId} with docket executions show ${executionId}; run with another --run-id to run again.`,
      context: { run_id: options.runId, execution_id: executionId },
      request_id: requestIdFrom(undefined),
      trace_id: newTraceId(),
    });
    return await finishRefused(options, style, failure);
  }
  if (snapshot.details_expired) say(`${executionId} ${snapshot.state}; its details expired, so its output and log are no longer kept`);
  return await finishSettled(options, style, snapshot, { deduplicated: true, ...(snapshot.details_expired ? { details_expired: true } : {}) });
}

/** How often a run that is another one without a server looks at its mark for its end. */
const MARK_LOOK_MS = 250;

/**
 * The run_id was already used by a run without a server, for `mark.execution_id`: that execution
 * is this run. Its end, written into its mark, is this run's end, in the same words and exit code,
 * and the JSON document says `deduplicated`; while that run's process still runs, its mark is
 * looked at until it ends, or until this run's own deadline (`deadlineAt`, performance.now) passes:
 * then this run stops waiting, `deadline_exceeded`, and that run goes on. A process gone without
 * writing its end (killed) left no end to tell: whether its work took effect is unknown, and
 * nothing runs again.
 */
export async function finishFromMark(options: LocalRunOptions, style: TerminalStyle, root: string, mark: RunMark, say: (line: string) => void, deadlineAt?: number): Promise<number> {
  let current: RunMark | null = mark;
  let said = false;
  while (current !== null && current.end === undefined) {
    const alive = markedRunAlive(current);
    if (alive !== true) {
      const failure = buildFailure({
        error_code: "unavailable",
        stage: "admit",
        message:
          alive === false
            ? `run_id ${options.runId} names ${current.execution_id}, run without a server by a process (pid ${current.pid}) that ended without writing how it ended (killed?): whether its work took effect is not known, and nothing runs again.`
            : `run_id ${options.runId} names ${current.execution_id}, run without a server by a process in another pid namespace (pid ${current.pid}) that has not written how it ended: this run cannot tell whether it still runs; nothing ran.`,
        suggestion: alive === false ? "Check whether that run's work took effect; run with another --run-id to run it again." : "Run again once that run has ended (the same --run-id is safe), or with another --run-id to run the work again.",
        retryability: alive === false ? "never" : "safe",
        outcome_certainty: alive === false ? "unknown" : "not_applied",
        context: { run_id: options.runId, execution_id: current.execution_id, pid: current.pid },
        request_id: requestIdFrom(undefined),
        trace_id: newTraceId(),
      });
      return await finishWithoutEnd(options, style, { id: current.execution_id, capability: current.capability }, failure);
    }
    const left = deadlineAt === undefined ? Infinity : deadlineAt - performance.now();
    if (left <= 0) return await stopFollowing(options, style, { id: current.execution_id, capability: current.capability, where: `in the run that holds it (pid ${current.pid})`, context: { pid: current.pid } });
    if (!said) say(`${current.execution_id} is still running (pid ${current.pid}); following it to its end`);
    said = true;
    await new Promise((resolve) => setTimeout(resolve, Math.min(MARK_LOOK_MS, left)));
    // Deleted meanwhile (by hand): what it said stands until its process is gone.
    current = readRunMark(root, options.runId!) ?? current;
  }
  return await finishSettled(options, style, current!.end!, { deduplicated: true }, true);
}

/**
 * The end of a run whose --deadline-ms passed while it followed the execution its run_id names
 * (still running: at the server, or in the run without a server that holds its mark): nothing of
 * this run ran, and that execution goes on (`where`). A deadline that passes before a handler
 * began is `deadline_exceeded` at stage queue, and so is this (exit code 1); the same --run-id
 * again follows that execution again, or reads how it ended.
 */
async function stopFollowing(options: LocalRunOptions, style: TerminalStyle, followed: { id: string; capability: string; where: string; context?: Record<string, unknown> }): Promise<number> {
  const failure = buildFailure({
    error_code: "deadline_exceeded",
    stage: "queue",
    message: `docket run stopped waiting for ${followed.id}, the execution its run_id ${options.runId} names, when its --deadline-ms of ${options.deadlineMs} ms passed: nothing of this run ran, and ${followed.id} goes on ${followed.where}.`,
    suggestion: "Run again with the same --run-id to follow it to its end, or read how it ended (with a longer --deadline-ms, or none, to wait for it).",
    retryability: "safe",
    context: { run_id: options.runId, execution_id: followed.id, deadline_ms: options.deadlineMs, ...followed.context },
    request_id: requestIdFrom(undefined),
    trace_id: newTraceId(),
  });
  return await finishRefused(options, style, failure, followed.capability);
}

/** Waits `ms`, or less when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}

/** What the server answers of a deduplicated run's execution: its snapshot, "forgotten" (its run_id alone is kept), or null when it could not be asked. */
type SeenExecution = ExecutionSnapshot | "forgotten" | null;

/**
 * The end of a run whose run_id names an execution the server forgot: how it ended is not kept
 * anywhere, and nothing runs again. Refused (exit 2) like a run_id_conflict: only another
 * --run-id runs the work, and retrying this one never helps. The document names the execution.
 */
async function finishForgotten(options: LocalRunOptions, style: TerminalStyle, server: ServerClient, original: { id: string; capability: string }): Promise<number> {
  const executionId = original.id;
  const failure = buildFailure({
    error_code: "not_found",
    stage: "admit",
    message: `run_id ${options.runId} names ${executionId}, which the server at ${server.url} no longer keeps (past its executions_retained): how it ended is not known, and nothing runs again.`,
    suggestion: "Run with another --run-id to run the work again.",
    // Whether that execution's work took effect is what nobody can say any more (it did run).
    outcome_certainty: "unknown",
    context: { run_id: options.runId, execution_id: executionId },
    request_id: requestIdFrom(undefined),
    trace_id: newTraceId(),
  });
  return await finishWithoutEnd(options, style, original, failure);
}

/** The mark of `runId`, or null when there is none or it cannot be read (the execution is then taken for one the server holds, or forgot). */
function markOf(root: string, runId: string): RunMark | null {
  try {
    return readRunMark(root, runId);
  } catch {
    return null;
  }
}
