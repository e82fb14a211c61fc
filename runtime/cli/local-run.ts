import { relative, resolve } from "node:path";
import { prepareCapabilityThread } from "./_capability-thread.ts";
import { bootPlane, type BootedPlane } from "../boot.ts";
import { findCheckoutRoot } from "../capability/checkout.ts";
import { LOAD_ERROR_DETAIL, type LoadError } from "../capability/registered.ts";
import { plainText } from "../execution/text-sanitize.ts";
import { buildFailure, FailureError, type Retryability } from "../execution/failure.ts";
import { LimitsError, resolveLimits } from "../execution/limits.ts";
import type { ExecutionEvent } from "../execution/protocol.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import { INPUT_ENV_SUGGESTION, inputEnvProblem, keptByCheck } from "./_input.ts";
import { droppedFieldText, undeclaredFields } from "../execution/undeclared-fields.ts";
import { terminalStyle, type TerminalStyle } from "./_terminal.ts";
import { onInterrupts } from "./_interrupts.ts";
import { UNSAID } from "../execution/thrown.ts";
import { EXIT } from "./exit-code.ts";
import { gitHubPrinters, isGitHubActions, maskCommands, runnerSafe } from "./github-actions.ts";
import { writerOf } from "./fd-writer.ts";
import { checkValue } from "../execution/validate.ts";
import { MIN_MASKED_LENGTH } from "../execution/secret-mask.ts";
import { createLiveView, wantsLiveView, type LiveView } from "./live-view.ts";
import { createRunReporter, formatWindow, plainPrinters } from "./run-reporter.ts";
import { checkoutHolder, findServer, isUnleased, serverClient, serverOnceStarted, startingWaitMs } from "./server-client.ts";
import { isTerminal } from "../execution/state-machine.ts";
import { reportToServer } from "./_reporter-to-server.ts";
import { childGroups, endEveryChildGroup, signalGroup } from "../worker/process-groups.ts";
import { forgetEndedLeftChildren } from "../worker/child-ledger.ts";
import { guardExit } from "../worker/_own-process.ts";
import type { ExecutionReporter } from "./_reporter.ts";
import { endRunMark, runMarksDir, type RunMark } from "../store/run-marks.ts";
import type { LocalRunOptions, RunOutput } from "./local-run-options.ts";
import { cliEdge } from "./cli-edge.ts";
import { finishRefused, finishSettled } from "./_run-end.ts";
import { finishDeduplicated, finishFromMark } from "./_deduplicated-run.ts";
import { secretsToAnnounce } from "./_secrets-to-announce.ts";
import { claimWithoutServer } from "./_claim-without-server.ts";
import { filesToLoad, locateTarget, reportLoadErrors, targetFile } from "./run-target.ts";

/**
 * `docket run`: boots a plane in this process (memory store, one execution worker), starts the
 * capability as a local execution, prints its events on stderr as they come and its output on
 * stdout, and answers the exit code. Ctrl-C asks cooperative cancel; a second one stops at once.
 */
export async function runLocally(options: LocalRunOptions): Promise<number> {
  const { output, env } = options;
  const style = terminalStyle({ isTTY: options.output.stderrIsTTY }, env);
  const edge = cliEdge(env);
  const gitHub = isGitHubActions(env);
  const refuse = (message: string, context: Record<string, unknown> = {}, error_code: "invalid_input" | "unavailable" = "invalid_input", retry?: { retryability: Retryability; suggestion: string }) =>
    finishRefused(
      options,
      style,
      buildFailure({ error_code, stage: error_code === "unavailable" ? "admit" : "validate", message, request_id: edge.request_id, trace_id: edge.trace_id, context, ...(error_code === "unavailable" ? { retryability: "safe" as const } : {}), ...retry }),
    );

  // A flag's mistake says how to correct the flag, not "the input" as a request's would.
  const flagMistake = (suggestion: string) => ({ retryability: "never" as const, suggestion });
  if (!options.input.ok) return refuse(`Cannot run ${options.target}: ${options.input.message}`, {}, "invalid_input", options.input.suggestion === undefined ? undefined : flagMistake(options.input.suggestion));
  if (typeof options.deadlineMs === "object") return refuse(`Cannot run ${options.target}: ${options.deadlineMs.problem}`, {}, "invalid_input", flagMistake("Give --deadline-ms the milliseconds the run may take, like --deadline-ms 60000 for a minute, or leave it out; nothing ran."));
  const deadlineMs = options.deadlineMs;
  const input = options.input.value;
  let limits;
  try {
    // One execution worker: a CLI run runs one thing, and every worker costs start-up time.
    limits = resolveLimits({ env, overrides: { max_concurrent: 1 } });
  } catch (error) {
    if (error instanceof LimitsError) return refuse(`Cannot run ${options.target}: ${error.message}.`);
    throw error;
  }

  // Capability code may not end the run with process.exit (see guardExit); docket's own exits below do.
  const exitGuard = guardExit();
  // Until an execution exists there is nothing to cancel: Ctrl-C ends the run at once, nothing
  // having run, with what a run that did not start leaves (its one JSON document, the result file,
  // the step outputs); a second press while those are written leaves without them.
  let stoppedEarly = false;
  // `following`: the run is another one's (its run_id used), whose execution goes on without it.
  const stopWithoutRunning = (following?: string) => {
    if (stoppedEarly) return exitGuard.exit(EXIT.cancelled);
    stoppedEarly = true;
    const failure = buildFailure({
      error_code: "cancelled",
      stage: "admit",
      message: following === undefined ? `docket run was stopped before ${options.target} started; nothing ran.` : `docket run was stopped while it followed ${following}, the execution its run_id names; nothing of this run ran, and ${following} goes on where it runs.`,
      suggestion: following === undefined ? "Run it again when you want it to run." : "Run it again with the same --run-id to follow it to its end.",
      retryability: "safe",
      request_id: edge.request_id,
      trace_id: edge.trace_id,
    });
    void finishRefused(options, style, failure).finally(() => exitGuard.exit(EXIT.cancelled));
  };
  const stopBeforeStart = () => stopWithoutRunning();
  let interrupt: { first(signal: NodeJS.Signals): void; second(): void } = { first: stopBeforeStart, second: stopBeforeStart };
  // Past the second Ctrl-C: leave at once (once the run is over, its children killed first).
  let leave: () => void = () => exitGuard.exit(EXIT.cancelled);
  const uninstallInterrupts = onInterrupts({ first: (signal) => interrupt.first(signal), second: () => interrupt.second(), later: () => leave() });
  const uninstall = () => {
    uninstallInterrupts();
    exitGuard.restore();
  };

  const file = targetFile(options.target, options.cwd);
  // Does a server serve this checkout (docs/protocol.md)? Asked while the plane boots, so it costs no time.
  const serving = findServer(findCheckoutRoot(options.cwd)).catch(() => null);
  prepareCapabilityThread();
  const only = await filesToLoad(options, file);
  let plane: BootedPlane;
  try {
    plane = await bootPlane({
      cwd: options.cwd,
      storeKind: "memory",
      limits,
      capabilityDirs: options.capabilityDirs,
      files: file ? [file] : [],
      only,
      importFile: (path) => import(path),
      // The plane's log holds what handlers threw (stacks): no escape of theirs reaches the terminal.
      log: (line) => output.stderr(runnerSafe(env, `${plainText(line)}\n`)),
      // A run makes no direct call: no direct-lane worker to spawn (one fewer start-up cost).
      directWorkers: 0,
      // Each file the run loads (its own, or for a built-in every file of the checkout) is tried in
      // a worker first: one whose top level loops or exits is a load error named in the run, not a
      // run that hangs past Ctrl-C and SIGTERM (no handler runs on a thread that never yields) or
      // ends without a word. While it is tried, this thread stays free to take a Ctrl-C.
      trialLoads: true,
    });
  } catch (error) {
    // A worker that cannot start (a broken build, no threads left), or a start failing otherwise:
    // the details, which may name paths inside the binary, go to the log under the correlation id;
    // the failure says what to do, without claiming a cause it does not know.
    const failure = buildFailure({
      error_code: "unavailable",
      stage: "admit",
      message: `docket could not start (load the capabilities and start its worker threads), so ${options.target} did not run.`,
      request_id: edge.request_id,
      trace_id: edge.trace_id,
      suggestion: "The log line above says why: fix what it names (a file or folder it cannot read) and run it again; if it names docket's own files, reinstall docket and report it.",
    });
    output.stderr(runnerSafe(env, `[docket] ${failure.correlation_id} could not start: ${(error as Error)?.stack ?? String(error)}\n`));
    uninstall();
    return finishRefused(options, style, failure);
  }
  let reporter: ExecutionReporter | null = null;
  // On a terminal that may animate, the live view draws the run; elsewhere plain lines (README.md).
  let live: LiveView | null = null;
  try {
    const { capabilityId, ownErrors, otherErrors } = locateTarget(plane, options.target, file);
    // Before anything else is printed: the runner then blanks these values in every later line.
    const declared = capabilityId === null ? null : plane.registry.get(capabilityId);
    const announced = declared ? secretsToAnnounce(declared, input) : [];
    // A value given with --input-env is one its giver keeps off the command line: announced too,
    // whether or not the capability marks its field sensitive.
    const fromEnv = (options.input.fromEnv ?? []).map((field) => ({ field, value: valueAt(input, field) }));
    const unmarked = fromEnv.filter(({ value }) => typeof value === "string" && !announced.includes(value));
    // The value as the schema hands it on (trimmed, upper-cased) is the one printed and stored:
    // announced too, or the job's log would show it.
    const checked = declared && unmarked.length > 0 ? checkValue(declared.def.input, input ?? {}, "input") : null;
    // Each text the schema made of it (split into a list, wrapped in an object): what is printed.
    const changed = (field: string, value: unknown) => (checked?.ok ? textsIn(valueAt(checked.value, field)).filter((made) => made !== value) : []);
    const unmarkedForms = unmarked.flatMap(({ field, value }) => [value as string, ...changed(field, value)]);
    if (gitHub && declared) output.stderr(maskCommands([...announced, ...unmarkedForms], MIN_MASKED_LENGTH));
    for (const field of declared ? (options.input.fromEnv ?? []) : []) {
      const problem = inputEnvProblem(field, declared!.input_schema);
      // The JSON Schema does not say whether an object keeps fields it does not name (valibot's
      // looseObject does): the check itself does, when the input passes it.
      if (problem !== null && !keptByCheck(declared!.def.input, input, field)) return await refuse(`Cannot run ${options.target}: ${problem}`, { field }, "invalid_input", flagMistake(INPUT_ENV_SUGGESTION));
    }
    // Only a sensitive field is masked by docket: one that is not is printed and stored as given.
    for (const { field, value } of declared ? unmarked : []) {
      // A value too short to mask (it would blank ordinary words) is announced to no one.
      const jobMasks = gitHub && [value as string, ...changed(field, value)].some((form) => form.length >= MIN_MASKED_LENGTH) ? " (this job's log masks it)" : "";
      output.stderr(runnerSafe(env, `note: --input-env fills ${field}, which ${declared!.id} does not mark sensitive(): its value is printed and stored like any other field${jobMasks}; mark the field sensitive() in the capability file to have docket mask it everywhere.\n`));
    }
    // capabilities.verify reports every file that does not load itself, as an error diagnostic: a
    // warning here too would annotate each of them twice in a CI job.
    if (capabilityId !== "capabilities.verify") reportLoadErrors(otherErrors, plane.root, gitHub, style, output);
    if (capabilityId === null) {
      // Run by id, the file is named too (file:line:column), as the listing names it: the id alone
      // does not say which file failed.
      const at = (e: LoadError) => (e.line === null ? "" : `${e.line}${e.column !== null ? `:${e.column}` : ""}`);
      const where = (e: LoadError) => [relative(plane.root, e.file) || e.file, at(e)].filter(Boolean).join(":");
      // What the file said is withheld from the document and the job summary, and printed just
      // above, in this run's log: the refusal says so, not to look in a server's log.
      const ownWords = (reason: string) => reason.replaceAll(UNSAID, UNSAID_HERE);
      const why = ownErrors.map((e) => (file === null ? `${where(e)} ${ownWords(e.reason)}` : `${e.line !== null ? `line ${at(e)}: ` : ""}${ownWords(e.reason)}`)).join("; ");
      // What the file threw is printed here, in this run's log (stderr), as docket serve's log says
      // it: never in the document, nor in what a server is told.
      for (const e of ownErrors) {
        if (e[LOAD_ERROR_DETAIL] !== undefined) output.stderr(runnerSafe(env, `[docket] ${plainText(where(e))}: ${e[LOAD_ERROR_DETAIL]}\n`));
      }
      // A reason that is a sentence already ends with its own period.
      const reason = why || "the file declares no capability";
      // The file is what is wrong, not an input: the default suggestion would say to correct the input.
      return await refuse(`Cannot run ${options.target}: ${reason}${/[.!?]$/.test(reason) ? "" : "."}`, { file: file ?? ownErrors[0]!.file, errors: ownErrors.map((e) => ({ ...e, reason: ownWords(e.reason) })) }, "invalid_input", { retryability: "never", suggestion: "Correct the capability file as the message says and run it again." });
    }
    // Its fields are the capability's: now a variable that gives none of them a value is refused.
    if (options.input.unsetEnv !== undefined) return await refuse(`Cannot run ${options.target}: ${options.input.unsetEnv}`, {}, "invalid_input", flagMistake(INPUT_ENV_SUGGESTION));

    let server = await serving;
    const root = findCheckoutRoot(options.cwd);
    // A server holds this checkout but does not answer (frozen, busy): with a run_id, nobody can
    // say whether that run_id was used already, and running anyway ran it twice (a tester froze
    // the server while a start with the same run_id waited in it). Without one, the run goes on.
    // One still starting (`docket serve &` just before, in the same CI step) is waited for.
    if (!server && options.runId !== undefined) {
      const loadingMs = await startingWaitMs(root, options.capabilityDirs.map((dir) => resolve(options.cwd, dir)), limits.load_timeout_ms);
      const found = await serverOnceStarted(root, (holder, waitMs) => output.stderr(`${style.dim(`the docket server${holder.pid ? ` (pid ${holder.pid})` : ""} serving this checkout is starting (loading its capability files); this run waits up to ${formatWindow(waitMs)} for it to answer, as its run_id is that server's to keep`)}\n`), loadingMs);
      if (found !== null && "server" in found) server = found.server;
      else if (found !== null) return await refuse(`The docket server (pid ${found.holder.pid}) serving this checkout ${found.loading ? `did not finish starting within ${formatWindow(found.waitedMs)} (it has written no address yet: its capability files are still loading, or it is frozen)` : `at ${found.holder.url} does not answer`}, so whether run_id ${options.runId} was used already cannot be known; nothing ran. Run again once it answers (the same --run-id is safe), or stop it.`, { pid: found.holder.pid, run_id: options.runId }, "unavailable");
    }
    // With a run_id, the handler waits for the word on it — the server's, or without one the marks
    // and store file of the checkout: already another execution's, this run is that one and does not
    // run (docs/protocol.md).
    let release: (() => void) | null = null;
    const hold = options.runId !== undefined ? new Promise<void>((resolve) => (release = resolve)) : undefined;
    let started;
    // When this run's --deadline-ms passes, counted from its admission as an execution's is: a run
    // that turns out to be another one follows that one until then, not for ever.
    const deadlineAt = deadlineMs === undefined ? undefined : performance.now() + deadlineMs;
    try {
      started = plane.engine.start({ capability: capabilityId, input, run_id: options.runId, deadline_ms: deadlineMs }, edge, { hold });
    } catch (error) {
      if (error instanceof FailureError) return await finishRefused(options, style, error.failure, capabilityId);
      throw error;
    }
    const id = started.execution.id;
    // The work stays here either way; a server only gets to show it.
    live = !gitHub && wantsLiveView({ isTTY: output.stderrIsTTY }, env) ? createLiveView({ write: output.stderr, style }) : null;
    const say = (line: string) => (live ? live.above(style.dim(line)) : output.stderr(`${style.dim(line)}\n`));
    // The identity the run's engine recorded: the hash of the input as checked, as a start's is.
    const inputHash = options.runId === undefined ? undefined : plane.store.findRun(options.runId)?.input_hash;
    if (server) reporter = reportToServer({ server, plane: plane.engine, id, edge, say, inputHash });
    else {
      // A server that holds the checkout's lock and does not answer (frozen, overloaded, starting)
      // is the checkout's server all the same, silent for now: the run reports to it once it
      // answers, as to one that went silent mid-run (docs/protocol.md, "One plane per checkout").
      const holder = checkoutHolder(root);
      if (holder === null) {
        // With a run_id, said once the run_id is claimed: the run may turn out to be another one.
        if (options.runId === undefined) say("no server serves this checkout, so this execution is visible to this process alone");
      } else if (options.runId !== undefined) {
        // None at the first look, one now: the run_id is that server's to keep, and it did not answer yet.
        return await refuse(`A docket server (pid ${holder.pid}) began serving this checkout as this run started, so run_id ${options.runId} was not kept; nothing ran.`, { run_id: options.runId, pid: holder.pid }, "unavailable", { retryability: "safe", suggestion: "Run again: the run then goes through that server (the same --run-id is safe)." });
      } else {
        const silent = isUnleased(holder) ? "is starting (it has written no address yet)" : `at ${holder.url} does not answer`;
        say(`the docket server${holder.pid ? ` (pid ${holder.pid})` : ""} serving this checkout ${silent}; this run goes on and reports to it once it answers`);
        reporter = reportToServer({ server: serverClient(holder), plane: plane.engine, id, edge, say, unanswered: true });
      }
    }
    // A field the input schema does not have is dropped by its check without a word: a typo in a
    // CI step's --input would run with the default instead. Said, with the field meant. Not `exact`:
    // the execution's input is as stored (a secret redacted whole), not what the check kept.
    for (const field of "input" in started.execution ? undeclaredFields(input, started.execution.input, declared?.input_schema) : []) {
      say(`note: ${capabilityId} has no input field ${droppedFieldText(field, declared?.input_schema)}; it was ignored`);
    }
    // After the second Ctrl-C the run is over at once: a server is given STOP_NOW_REPORT_MS to take
    // its end, not the 3 s a run that ended by itself tries (README.md, "a second one stops it at once").
    let stoppingNow = false;
    // The execution is over and the run only waits for the server; then it writes its end.
    let ended = false;
    let writing = false;
    interrupt = {
      first(signal) {
        const receipt = plane.engine.cancel(id, edge);
        // SIGTERM is how `timeout`, CI runners and container stops end a step, most of them with
        // SIGKILL next rather than a second signal: a handler that cannot be asked to stop is
        // stopped after the grace a cancelled one gets, so the run still ends with its document,
        // its children ended — not killed with nothing said, nor left running for ever.
        // A hang-up is the same: the terminal is gone, and nobody is left to press Ctrl-C again.
        const terminating = !receipt.requested && signal !== "SIGINT" && !isTerminal(plane.store.get(id)?.state ?? "succeeded");
        if (terminating) setTimeout(() => interrupt.second(), limits.grace_ms);
        const note = receipt.requested ? "cancelling…" : terminating ? `${receipt.message.replace(/\.$/, "")}, or until ${signal}'s grace of ${formatWindow(limits.grace_ms)} passes: then it is stopped.` : receipt.message;
        // A second signal of any kind stops it: Ctrl-C is named only to whoever pressed it.
        const again = signal === "SIGINT" ? "press Ctrl-C again to stop now" : `a second ${signal} stops it now`;
        if (live) live.cancelling(`${note} ${again}`);
        else output.stderr(`${style.yellow(note)} ${again}\n`);
      },
      second() {
        if (live) live.cancelling("stopping now…");
        else output.stderr(`${style.yellow("stopping now")}\n`);
        stoppingNow = true;
        // The end is being written to a reader that takes nothing: given up now, not after the
        // rest of its 10 s (said as a failed write, exit 1), where a third signal left without a word.
        if (writing) writerOf(process.stdout).abandon("a second stop signal came while its reader took nothing");
        plane.engine.forceStop(id);
        // Cancelled already (the handler stopped when asked), the run may be waiting for a server.
        if (ended) void reporter?.finish(STOP_NOW_REPORT_MS);
      },
    };
    // A third Ctrl-C while only a server is waited for stops waiting: the run still ends with its
    // document, result file and step outputs. Anything else (its end cannot be written) leaves at once.
    leave = () => {
      if (writing || !isTerminal(plane.store.get(id)?.state ?? "running")) return exitGuard.exit(EXIT.cancelled);
      reporter?.stop();
    };
    if (server && reporter && hold) {
      const first = await reporter.first;
      if (first.kind === "deduplicated") return await finishDeduplicated(options, style, server!, { id: first.execution_id, capability: capabilityId! }, say, deadlineAt);
      if (first.kind === "refused" && first.failure?.error_code === "run_id_conflict") return await finishRefused(options, style, first.failure, capabilityId);
      if (first.kind === "refused") {
        // Not kept there, the run_id would not stop the next run with it: this one must not run either.
        const why = first.failure === null ? "" : ` (${first.failure.error_code}: ${first.failure.message.replace(/[.\s]+$/, "")})`;
        const code = first.failure?.error_code === "invalid_input" ? "invalid_input" : "unavailable";
        return await refuse(`The docket server at ${server!.url} refused this run's first report${why}, so run_id ${options.runId} could not be kept there, and a run with it again would run again; nothing ran.${code === "unavailable" && first.failure?.retryability !== "never" ? " Run again once the server takes reports (the same --run-id is safe)." : ""}`, { run_id: options.runId, server_error_code: first.failure?.error_code ?? null }, code, first.failure ? { retryability: first.failure.retryability, suggestion: first.failure.suggestion } : undefined);
      }
      if (first.kind === "unheard") {
        // What the server said, when it answered (a low disk, a store that cannot write), not "did not answer" (distribution tester, session 41).
        const said = first.said;
        const answered = said === undefined ? "did not answer this run's first report" : `could not take this run's first report (${said.reason.replace(/[.\s]+$/, "")})`;
        const suggestion = said?.failure?.suggestion;
        return await refuse(`The docket server at ${server!.url} ${answered}, so whether run_id ${options.runId} was used already cannot be known; nothing ran. Run again once it ${said === undefined ? "answers" : "takes reports"} (the same --run-id is safe).`, { run_id: options.runId, ...(said?.failure ? { server_error_code: said.failure.error_code } : {}) }, "unavailable", suggestion ? { retryability: said!.failure!.retryability, suggestion } : undefined);
      }
      // Taken: the run goes on.
      release!();
    }
    // Without a server, the run_id is claimed in the checkout (docs/protocol.md, "A run without a server").
    let mark: RunMark | null = null;
    if (!server && hold) {
      const claimed = await claimWithoutServer(options, style, { root, id, capabilityId, inputHash: inputHash!, limit: limits.run_identities, edge, say, refuse });
      if (typeof claimed === "number") return claimed;
      if ("marked" in claimed) {
        // Nothing of this run's own begins: Ctrl-C while the other run is followed ends the wait.
        const stopFollowing = () => stopWithoutRunning(claimed.marked.execution_id);
        interrupt = { first: stopFollowing, second: stopFollowing };
        say(`run_id ${options.runId} was already used for ${claimed.marked.execution_id} by a run without a server (pid ${claimed.marked.pid}, ${claimed.marked.started_at}), so this run is that execution and nothing runs again`);
        return await finishFromMark(options, style, root, claimed.marked, say, deadlineAt);
      }
      mark = claimed.claimed;
      say("no server serves this checkout, so this execution is visible to this process alone (its run_id is kept in .docket/runs/)");
      release!();
    }
    const snapshot = await follow(plane, id, gitHub, style, output, live);
    ended = true;
    if (mark !== null) {
      try {
        endRunMark(root, mark, snapshot);
      } catch (error) {
        say(`could not write how ${id} ended into ${runMarksDir(root)} (${error instanceof Error ? error.message : String(error)}): a run with run_id ${options.runId} again still runs nothing, but cannot say how this one ended`);
      }
    }
    // The server holds the end too before the run says how it ended (a script may ask it next).
    await reporter?.finish(stoppingNow ? STOP_NOW_REPORT_MS : undefined);
    writing = true;
    // A cancel the server holds before the run's end (it came too late for the run) is counted as the server counts it.
    const serverLast = reporter?.serverLastSequence() ?? null;
    const told = serverLast === null ? snapshot : { ...snapshot, last_sequence: serverLast };
    // Heard by no server, the execution is in no server's store: nothing can reconcile it there.
    return await finishSettled(options, style, told, {}, reporter === null);
  } finally {
    // The terminal gets its cursor back whatever happened (an exception included).
    live?.stop();
    reporter?.stop();
    // Not awaited: the process exits right after, which ends the workers as surely as terminating
    // them one by one, and waiting for that would add tens of milliseconds to every run.
    void plane.close().catch(() => undefined);
    // But not their children, each in a group of its own: a handler stopped by force (the second
    // Ctrl-C) left its ctx.exec child running, which the exiting process would never end. Ended
    // as the pool ends them (TERM, then KILL after the grace); none left, nothing is waited for.
    // One more Ctrl-C (or TERM) meanwhile kills them at once and leaves: never the children left.
    const killNow = () => {
      for (const group of childGroups) signalGroup(group, "SIGKILL");
      exitGuard.exit(EXIT.cancelled);
    };
    interrupt = { first: killNow, second: killNow };
    leave = killNow;
    await endEveryChildGroup(Math.floor(limits.grace_ms / 2));
    // Groups a killed docket left, sent TERM as this run began: the records of those gone are forgotten now.
    forgetEndedLeftChildren();
    uninstall();
  }
}

/** Prints an execution's events (its history, then live) until it is terminal; answers its final snapshot. */
function follow(plane: BootedPlane, id: string, gitHub: boolean, style: TerminalStyle, output: RunOutput, live: LiveView | null): Promise<ExecutionSnapshot> {
  const plain = plainPrinters(style, { localTime: output.stderrIsTTY });
  const reporter = live ?? createRunReporter({ write: output.stderr, printers: gitHub ? gitHubPrinters(plain.printers) : plain.printers, unknown: plain.unknown, flush: plain.flush });
  return new Promise((resolveSnapshot) => {
    let done = false;
    const subscription = plane.store.subscribe({ executions: [id], after: 0 }, (event: ExecutionEvent) => {
      if (done) return;
      reporter.print(event);
      if (event.type !== "execution.completed") return;
      done = true;
      queueMicrotask(() => subscription.unsubscribe());
      resolveSnapshot(plane.store.get(id)!);
    });
  });
}

/** How long a run stopped by a second Ctrl-C waits for a server to take its end: a local server answers in milliseconds. */
const STOP_NOW_REPORT_MS = 500;

/** What a run of the file says in place of UNSAID: what the file said is printed just above, on stderr. */
const UNSAID_HERE = " (what it said is in this run's log above, on stderr, and not in this document or summary, as it may hold a secret)";

/** The value at a dotted field path of an input (`auth.token`), if there is one. */
/** The texts a value holds (itself, or its strings at any depth, at most TEXTS_ANNOUNCED of them). */
function textsIn(value: unknown): string[] {
  const texts: string[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0 && texts.length < TEXTS_ANNOUNCED) {
    const at = stack.pop();
    if (typeof at === "string") texts.push(at);
    else if (at !== null && typeof at === "object") stack.push(...Object.values(at as object).slice(0, TEXTS_ANNOUNCED));
  }
  return texts;
}

/** Texts of one transformed --input-env value announced at most: a list of thousands is no secret's form. */
const TEXTS_ANNOUNCED = 256;

function valueAt(input: unknown, field: string): unknown {
  let value = input;
  for (const segment of field.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}
