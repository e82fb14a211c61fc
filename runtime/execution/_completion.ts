import type { RegisteredCapability } from "../capability/registered.ts";
import { RETRYABILITIES } from "../capability/capability-error.ts";
import { arrivedAsJsonText, type LoadFailureCause, type TaskError, type TaskOutcome } from "../worker/task.ts";
import type { EdgeInfo } from "./plane.ts";
import { buildFailure, defaultRetryability, forcedStopCertainty, raisedSuggestion, type FailureDescriptor, type Retryability } from "./failure.ts";
import { checkValue, describeProblems } from "./validate.ts";
import { parsesUnchanged } from "./_parses-unchanged.ts";
import { MAX_INPUT_DEPTH } from "./json-depth.ts";
import { writtenJson, type PlainJsonProblem } from "./plain-json.ts";
import { maskChanged, NO_MASK, type SecretMask } from "./secret-mask.ts";
import { thrownClass, thrownDetail } from "./thrown.ts";

/** How a run ended, before it is written as `execution.completed`. */
export type Completion =
  | { state: "succeeded"; output: unknown }
  | { state: "failed" | "cancelled"; failure: FailureDescriptor; stack?: string | null };

/** What the engine knows about why a run might have stopped. */
export interface StopCircumstances {
  cancelRequested: boolean;
  deadlineExpired: boolean;
  /** The worker was terminated by the engine (deadline grace over, or a forced stop). */
  forced: boolean;
  deadlineMs: number | null;
  /**
   * Which bound `deadlineMs` is: the start request's `deadline_ms` (from admission), the
   * declaration's `timeout_ms` (from the start), or the `direct_deadline_ms` limit of a direct call.
   */
  deadlineSource?: "deadline_ms" | "timeout_ms" | "direct_deadline_ms";
  /** The process is shutting down and stopped the handler: the run was interrupted. */
  interrupted?: boolean;
}

/**
 * The one place where a handler's outcome becomes a completion: output checked against the
 * output schema, CapabilityError codes kept, cancellation and deadlines told apart, the
 * certainty of a forced stop decided by the capability's effect, and the input's secret values
 * masked in everything a client will read (docs/security.md).
 */
export function completionOf(capability: RegisteredCapability, outcome: TaskOutcome, stop: StopCircumstances, edge: EdgeInfo, mask: SecretMask = NO_MASK): Completion {
  try {
    return maskedCompletion(capability, outcome, stop, edge, mask);
  } catch (error) {
    // Total: whatever the capability's code does to the checks (a getter that throws, a schema
    // action that throws), the run ends here as an internal failure naming the error's class —
    // never an exception that would leave it running, holding its slot, for ever.
    return unmasked(capability, { ok: false, error: { kind: "internal", error_class: thrownClass(error), message: thrownDetail(error, mask.text), stack: null } }, stop, edge);
  }
}

function maskedCompletion(capability: RegisteredCapability, outcome: TaskOutcome, stop: StopCircumstances, edge: EdgeInfo, mask: SecretMask): Completion {
  const completion = unmasked(capability, outcome, stop, edge);
  if (mask === NO_MASK) return completion;
  if (completion.state === "succeeded") {
    const output = mask.value(completion.output);
    // Masked, a secret of the output is the text "[redacted]": where its schema does not take that
    // (a number, a pattern, a length, a choice), the output would no longer be what clients were
    // promised (an MCP client refuses it). Refused, as any output that does not fit.
    if (maskChanged(completion.output, output)) {
      const check = schemaProblem(capability, output);
      if (!check.ok) {
        return refusedOutput(capability, { request_id: edge.request_id, trace_id: edge.trace_id }, "returned a sensitive value of its input, which is masked as \"[redacted]\" in everything clients read, and its output schema does not take that text there", "Leave the sensitive value out of the output, or declare that field so that it may read \"[redacted]\".", { reason: "sensitive_output", ...(check.context ?? {}) }, true);
      }
    }
    return { state: "succeeded", output };
  }
  const { failure } = completion;
  // A code is shown as it is, declared in `errors` or not; one holding a secret
  // (`new CapabilityError(input.token, …)`) cannot be masked into another code, so the failure is
  // docket's own, and what the handler raised goes to the log (docs/security.md). A declared code
  // is published with the capability: a secret that happens to be part of it ("quota" in
  // quota_exceeded) reveals nothing, and the code stands.
  if (!capability.errors.includes(failure.error_code) && mask.text(failure.error_code) !== failure.error_code) {
    const raised = `a CapabilityError whose code holds a sensitive value of its input`;
    return internal(
      capability,
      { request_id: edge.request_id, trace_id: edge.trace_id },
      `${capability.id} failed at stage run: its handler raised ${raised}; the code is not shown.`,
      { retryability: failure.retryability, outcome_certainty: failure.outcome_certainty },
      mask.text(`${raised}: ${failure.error_code}: ${failure.message}`),
      { reason: "sensitive_error_code" },
      `Raise a fixed code, declared in the capability's errors, and put what varies in the message or context (they are masked).`,
    );
  }
  return {
    ...completion,
    failure: { ...failure, message: mask.text(failure.message), suggestion: mask.text(failure.suggestion), context: mask.value(failure.context) },
    stack: completion.stack ? mask.text(completion.stack) : completion.stack,
  };
}

function unmasked(capability: RegisteredCapability, outcome: TaskOutcome, stop: StopCircumstances, edge: EdgeInfo): Completion {
  const ids = { request_id: edge.request_id, trace_id: edge.trace_id };
  const forced = forcedStopCertainty(capability.effect);
  if (outcome.ok) {
    const problem = outputProblem(capability, outcome.output, arrivedAsJsonText(outcome));
    if (problem.ok) return { state: "succeeded", output: problem.value };
    return refusedOutput(capability, ids, `returned an output that ${problem.message}`, problem.suggestion, problem.context);
  }
  const error = outcome.error;
  if (stop.interrupted) {
    // Still waiting for its worker when the process stopped: nothing of it ran, even of a write.
    const began = !("never_began" in error && error.never_began === true);
    return {
      state: "failed",
      failure: buildFailure({
        ...ids,
        error_code: "interrupted",
        stage: began ? "run" : "queue",
        message: began ? `${capability.id} was stopped because the process running it shut down.` : `${capability.id} did not start: the process running it shut down first.`,
        ...(began ? forced : { retryability: "safe", outcome_certainty: "not_applied" }),
        context: { capability: capability.id },
      }),
    };
  }
  // Stopped before its handler began: nothing ran, whatever the capability writes.
  const neverBegan = error.kind === "cancelled" && error.never_began === true;
  if (neverBegan && stop.deadlineExpired) {
    return {
      state: "failed",
      failure: buildFailure({
        ...ids,
        error_code: "deadline_exceeded",
        stage: "queue",
        message: `${capability.id} did not begin within ${deadlineText(stop)}, so nothing ran.`,
        retryability: "safe",
        outcome_certainty: "not_applied",
        suggestion:
          stop.deadlineSource === "direct_deadline_ms"
            ? "It did not begin within direct_deadline_ms (it waited for a direct worker, which other direct calls held, or for its file to load there): call it again when fewer direct calls run; give direct calls more workers so one slow call does not hold the others (--direct-workers, DOCKET_DIRECT_WORKERS: 1 by default, up to 8), or raise direct_deadline_ms (--direct-deadline-ms, DOCKET_DIRECT_DEADLINE_MS); long work belongs in an execution."
            : "Start it again with a longer deadline, or when fewer executions are running.",
        context: { deadline_ms: stop.deadlineMs, terminated: false, ...(stop.deadlineSource ? { bound: stop.deadlineSource } : {}) },
      }),
    };
  }
  if (neverBegan) {
    return {
      state: "cancelled",
      failure: buildFailure({
        ...ids,
        error_code: "cancelled",
        stage: "queue",
        message: `${capability.id} was cancelled before its handler began, so nothing ran.`,
        retryability: "safe",
        outcome_certainty: "not_applied",
        context: { terminated: false },
      }),
    };
  }
  // Its file failed while its worker imported it: the file's failure, and nothing ran.
  if (error.kind === "load_failed") return loadFailed(capability, ids, error);
  // No worker of its lane could start: it never left the queue, so nothing ran, even of a write.
  if (error.kind === "worker_lost" && error.no_worker) {
    return unbegun(capability, ids, error.message, "no_worker", "Nothing ran. The server's log says why no worker thread runs (one that could not start: a broken install, no memory or threads left; or threads stuck in a blocking call): fix that and restart docket, then start this again.");
  }
  // Workers in turn died before reading it (what previous handlers left running): nothing ran.
  if (error.kind === "worker_lost" && error.never_began) {
    return unbegun(
      capability,
      ids,
      `${capability.id} did not run: ${error.message}, before its handler began.`,
      "worker_lost",
      "Nothing ran. The server's log names the capability whose leftovers (timers, callbacks) ended its workers: fix it, then start this again.",
    );
  }
  if (stop.deadlineExpired && error.kind !== "memory_exceeded" && (error.kind !== "capability" || stop.forced)) {
    return {
      state: "failed",
      failure: buildFailure({
        ...ids,
        error_code: "deadline_exceeded",
        stage: "run",
        message: `${capability.id} did not finish within ${deadlineText(stop)} and ${stop.forced ? "did not stop when asked; its worker was terminated." : "stopped when asked."}`,
        ...forced,
        // A write whose effect is unknown is settled first, whatever stopped it (buildFailure's default).
        ...(forced.retryability === "manual_reconcile" ? {} : { suggestion: deadlineSuggestion(stop, capability) }),
        context: { deadline_ms: stop.deadlineMs, terminated: stop.forced, ...(stop.deadlineSource ? { bound: stop.deadlineSource } : {}) },
      }),
    };
  }
  switch (error.kind) {
    case "memory_exceeded":
      // Whatever else was asked (a cancel, a deadline), the memory limit is what stopped it.
      return {
        state: "failed",
        failure: buildFailure({
          ...ids,
          error_code: "memory_exceeded",
          stage: "run",
          message: `${capability.id} used more memory than its worker's limit of ${error.limit_mb} MiB (about ${error.used_mb} MiB when stopped); its worker was terminated.`,
          ...(capability.effect === "write" ? forced : { outcome_certainty: "not_applied" as const }),
          context: { capability: capability.id, limit_mb: error.limit_mb, used_mb: error.used_mb },
        }),
      };
    case "capability": {
      // The handler may know its write's fate; a read changes nothing whatever it says.
      const certainty = capability.effect === "read" ? "not_applied" : error.outcome_certainty === "applied" || error.outcome_certainty === "not_applied" ? error.outcome_certainty : "unknown";
      // Its own word on retrying, else the code's, never "safe" for what may have been applied.
      const retryability = RETRYABILITIES.has(error.retryability ?? "") ? (error.retryability as Retryability) : defaultRetryability(error.code, certainty);
      return {
        state: "failed",
        failure: buildFailure({
          ...ids,
          error_code: error.code,
          stage: "run",
          message: error.message,
          retryability,
          outcome_certainty: certainty,
          suggestion: error.suggestion ?? raisedSuggestion(error.code, retryability),
          context: error.context,
        }),
      };
    }
    case "cancelled":
    case "terminated":
      if (stop.cancelRequested || error.kind === "cancelled") {
        return {
          state: "cancelled",
          failure: buildFailure({
            ...ids,
            error_code: "cancelled",
            stage: "run",
            message: stop.forced
              ? `${capability.id} was stopped by force after cancellation was requested.`
              : stop.cancelRequested
                ? `${capability.id} was cancelled and stopped when asked.`
                : `${capability.id} stopped itself as cancelled (its handler threw its cancellation) without anyone asking.`,
            ...(stop.forced || capability.effect === "write" ? forced : { retryability: "safe", outcome_certainty: "not_applied" }),
            context: { terminated: stop.forced },
          }),
        };
      }
      return internal(capability, ids, `${capability.id} was stopped: ${error.message}`, forced, null);
    case "worker_lost":
      // The pool's message is a sentence of its own: wrapped in another, it said everything twice.
      if (error.exit_code === undefined) return internal(capability, ids, error.message, forced, null, { reason: "worker_lost" });
      return internal(
        capability,
        ids,
        `${capability.id} failed at stage run: the thread running its handler ended (exit code ${error.exit_code}) before the handler finished.`,
        forced,
        error.message,
        { reason: "worker_lost", exit_code: error.exit_code },
        "A handler that calls process.exit() ends the thread it runs on: return the output, or throw, instead. Otherwise the correlation id finds what ended it in the server's log.",
      );
    case "output_too_large":
      // As an output that fails its schema: the handler ran to its end; what it returned is refused.
      return refusedOutput(
        capability,
        ids,
        `returned an output of ${error.at_least ? `more than ${error.limit} characters of JSON (the output_bytes limit)` : `${error.bytes} characters of JSON, more than the output_bytes limit of ${error.limit}`}; it was not kept.`,
        "Write a large result as an artifact (ctx.artifacts.write, in an execution) and return its name, or raise the limit (docket serve --output-bytes; DOCKET_OUTPUT_BYTES, which docket run reads too).",
        { capability: capability.id, reason: "output_too_large", bytes: error.bytes, limit: error.limit },
      );
    case "output_not_json": {
      // Found in the worker, on the output as returned: said as the main thread says a Map.
      const refused = notJsonCheck("too_deep" in error ? { reason: "too_deep" } : { reason: "not_json", path: error.path, what: error.what }, false);
      return refusedOutput(capability, ids, `returned an output that ${refused.message}`, refused.suggestion, refused.context);
    }
    case "internal":
      // A package with a compiled addon (better-sqlite3, bcrypt, sharp): not a bug of anyone's
      // code, and not one a user can find from "a bug in the capability or in docket".
      if (/\bERR_DLOPEN_FAILED$/.test(error.error_class)) {
        return internal(
          capability,
          ids,
          `${capability.id} failed at stage run: its handler loaded a native addon (a compiled .node module of an npm package), which docket's runtime could not load (ERR_DLOPEN_FAILED).`,
          capability.effect === "write" ? forced : { retryability: "never", outcome_certainty: "not_applied" },
          error.stack ?? error.message,
          { error_class: error.error_class, reason: "native_addon" },
          "docket runs capabilities on Bun, which loads many but not all Node addons: use a package without native code (bun:sqlite for better-sqlite3, bcryptjs for bcrypt), or run that tool as a command with ctx.exec. The server's log names the module.",
        );
      }
      // docket's guard refused a call that would end or signal the process (docs/containment.md):
      // "threw an Error EPERM" was true, and told nobody what to change.
      if (error.refused) {
        return internal(
          capability,
          ids,
          `${capability.id} failed at stage run: its handler called ${error.refused}, which docket refuses in capability code (it would end or signal the process that runs every execution); the call threw ${articled(error.error_class)}.`,
          capability.effect === "write" ? forced : { retryability: "never", outcome_certainty: "not_applied" },
          error.stack ?? error.message,
          { error_class: error.error_class, reason: "own_process", call: error.refused },
          "End the handler's work by returning its output or throwing (a CapabilityError for a failure the client should read); signal child processes by their own pid.",
        );
      }
      // The class only: the thrown message, cause and stack go to the log (docs/security.md).
      return internal(
        capability,
        ids,
        `${capability.id} failed at stage run: ${error.note ? `${error.note}; ` : ""}its handler threw ${articled(error.error_class)}.`,
        capability.effect === "write" ? forced : { retryability: "never", outcome_certainty: "not_applied" },
        error.stack ?? error.message,
        { error_class: error.error_class },
      );
  }
}

/** A task whose handler never began because no worker would run it: `unavailable` at stage queue, nothing applied, `context.reason` saying why. */
function unbegun(capability: RegisteredCapability, ids: { request_id: string; trace_id: string }, message: string, reason: "no_worker" | "worker_lost", suggestion: string): Completion {
  return {
    state: "failed",
    failure: buildFailure({
      ...ids,
      error_code: "unavailable",
      stage: "queue",
      message,
      retryability: "after_delay",
      outcome_certainty: "not_applied",
      suggestion,
      context: { capability: capability.id, stage: "queue", reason },
    }),
    stack: message,
  };
}

/**
 * A task whose capability's file failed in its worker before the handler was called: the
 * failure is the file's (a load error), at stage `queue` as any task that never began, and
 * nothing was applied, whatever the capability writes (docs/containment.md).
 */
function loadFailed(capability: RegisteredCapability, ids: { request_id: string; trace_id: string }, error: Extract<TaskError, { kind: "load_failed" }>): Completion {
  const memory = error.cause === "memory_exceeded";
  const failed = (why: string) => `${capability.id} did not run: its file failed while its worker imported it, before the handler began (${why.replace(/\.$/, "")}).`;
  const message = failed(error.message);
  // What the file threw goes to the server's log only, under the failure's correlation id.
  const said = failed(error.detail ?? error.message);
  return {
    state: "failed",
    failure: buildFailure({
      ...ids,
      error_code: memory ? "memory_exceeded" : "internal",
      stage: "queue",
      message,
      // A slow top level may be quick on the next import; one that threw, exited or outgrew the
      // limit will do it again until the file (or the limit) changes.
      retryability: error.cause === "load_timeout" ? "after_delay" : "never",
      outcome_certainty: "not_applied",
      // A package or module gone from the disk (uninstalled while serving): its message says what to
      // do, and the file's top level is not at fault (authoring tester, session 41).
      suggestion: error.outside ? OUTSIDE_SUGGESTION : LOAD_FAILED_SUGGESTION[error.cause],
      context: { capability: capability.id, stage: "queue", reason: "load_failed", load: error.cause, ...(memory ? { limit_mb: error.limit_mb, used_mb: error.used_mb } : {}) },
    }),
    stack: said,
  };
}

/** What to do about a file whose import failed for what is on disk beside it (a package uninstalled). */
const OUTSIDE_SUGGESTION = "Nothing ran. Do what the message says (install the package again, or put the module back), then start it again; the capability file needs no change.";

/** What to do about a file that failed to load in a worker, by what it did; nothing ran either way. */
const LOAD_FAILED_SUGGESTION: Record<LoadFailureCause, string> = {
  threw: "Nothing ran. Fix what the file's top level does (keep it to declarations; do the work in the handler), then start it again.",
  exited: "Nothing ran. Remove the process.exit() (or what ends the thread) from the file's top level, then start it again.",
  load_timeout: "Nothing ran. Make the file's top level quick (do slow work in the handler), or raise DOCKET_LOAD_TIMEOUT_MS (docket serve --load-timeout-ms); then start it again.",
  memory_exceeded: "Nothing ran. Take the work out of the file's top level, or raise the limit: DOCKET_WORKER_MEMORY_MB or docket serve --worker-memory-mb.",
};

/** A handler that ran to its end and returned what is refused (its schema, its size): failed at stage complete. */
function refusedOutput(capability: RegisteredCapability, ids: { request_id: string; trace_id: string }, what: string, suggestion: string, context?: Record<string, unknown>, returned = false): Completion {
  // A write whose output does not fit may have done its work or not; one whose handler returned an
  // output that fit until a secret in it was masked (returned) did it.
  const certainty = capability.effect !== "write" ? "not_applied" : returned ? "applied" : "unknown";
  return {
    state: "failed",
    failure: buildFailure({
      ...ids,
      error_code: "internal",
      stage: "complete",
      message: `${capability.id} ${what}`,
      outcome_certainty: certainty,
      // An unknown outcome is settled by a person, as every other one (docs/reconciliation.md).
      ...(certainty === "unknown" ? { retryability: "manual_reconcile" as const } : {}),
      suggestion,
      context,
    }),
  };
}

/** "a TypeError", "an Error ENOENT", and the class descriptions that already carry their article. */
function articled(errorClass: string): string {
  if (/^(a|an) /.test(errorClass) || errorClass === "null" || errorClass === "undefined") return errorClass;
  return `${/^[AEIOU]/.test(errorClass) ? "an" : "a"} ${errorClass}`;
}

function deadlineText(stop: StopCircumstances): string {
  if (stop.deadlineSource === "deadline_ms") return `its deadline_ms of ${stop.deadlineMs} ms (counted from admission, queue time included)`;
  if (stop.deadlineSource === "timeout_ms") return `its timeout_ms of ${stop.deadlineMs} ms`;
  if (stop.deadlineSource === "direct_deadline_ms") return `the direct-call deadline of ${stop.deadlineMs} ms (direct_deadline_ms)`;
  return `its deadline of ${stop.deadlineMs} ms`;
}

/** What to do about a handler the bound named by `stop.deadlineSource` stopped. */
function deadlineSuggestion(stop: StopCircumstances, capability: RegisteredCapability): string {
  if (stop.deadlineSource === "deadline_ms") return "Start it again with a larger deadline_ms (it counts from admission, queue time included), or make the work smaller.";
  if (stop.deadlineSource === "timeout_ms") return "Raise the capability's timeout_ms in its declaration, or make the work smaller.";
  if (stop.deadlineSource === "direct_deadline_ms") {
    const asExecution = capability.execution === "never" ? "" : "Start it as an execution instead (docket run, POST /api/v1/executions/start), which direct_deadline_ms does not bound, or raise it";
    return `${asExecution || "Raise direct_deadline_ms"} (--direct-deadline-ms, DOCKET_DIRECT_DEADLINE_MS), or make the work smaller.`;
  }
  return "Give it more time or make the work smaller.";
}

function internal(
  capability: RegisteredCapability,
  ids: { request_id: string; trace_id: string },
  message: string,
  certainty: Pick<FailureDescriptor, "retryability" | "outcome_certainty">,
  stack: string | null,
  context: Record<string, unknown> = {},
  suggestion?: string,
): Completion {
  return {
    state: "failed",
    failure: buildFailure({ ...ids, error_code: "internal", stage: "run", message, suggestion, ...certainty, context: { capability: capability.id, stage: "run", ...context } }),
    stack: stack ?? message,
  };
}

/** The output as checked, or what is wrong with it (a complete sentence's end). */
type OutputCheck = { ok: true; value: unknown } | { ok: false; message: string; suggestion: string; context?: Record<string, unknown> };

/** What to do about an output JSON cannot hold as it is, whoever made it. */
const PLAIN_JSON_SUGGESTION = "Return plain JSON values: strings, finite numbers, booleans, null, arrays and plain objects (a Map as Object.fromEntries(map), a Set as [...set], a BigInt as a string).";

/** The output as checked by its schema, or what is wrong with it. */
function outputProblem(capability: RegisteredCapability, output: unknown, parsed: boolean): OutputCheck {
  // A plane capability answers with what the engine and the store made, JSON by construction and
  // nested as deep as what they took in (bounded at the edge) plus their own envelope: walking it
  // again cost ~7 % of an HTTP start. Its schema is still checked: that shapes what clients see.
  if (capability.plane) return schemaProblem(capability, output);
  // The output as returned, whatever its schema takes: a Map, a Set or an Infinity that a
  // `v.record`, `v.any()` or `v.number()` lets through would be stored as `{}` or null, and the
  // execution "succeed" with what the handler never returned (docs/handler-api.md). The handler's
  // worker checked it already, as returned; its thread runs the handler's code, so it is checked
  // again as it arrived — unless it arrived as JSON text whose depth and numbers were looked at as
  // it was parsed (`parsed`, worker/_messages.ts): JSON.parse made it, plain JSON by construction
  // (re-checking 2M empty objects held the main thread 335 ms).
  if (parsed) return schemaProblem(capability, output);
  const written = asJson(output, false);
  return written.ok ? schemaProblem(capability, written.value) : written;
}

/**
 * An output as JSON writes it (docs/handler-api.md: what has a `toJSON` as it returns), or what
 * keeps it from being the JSON it will be stored as, as the end of "returned an output that …";
 * `transformed` when a transform of the output schema made it.
 */
function asJson(output: unknown, transformed: boolean): OutputCheck {
  const written = writtenJson(output, MAX_INPUT_DEPTH, "output");
  return written.ok ? { ok: true, value: written.value } : notJsonCheck(written.problem, transformed);
}

/** What `asJson` says of a problem found, and the worker's `output_not_json` too. */
function notJsonCheck(problem: PlainJsonProblem, transformed: boolean): OutputCheck & { ok: false } {
  const made = transformed ? "is made, by a transform of its output schema, into a value that " : "";
  if (problem.reason === "too_deep") {
    return { ok: false, message: `${made}nests deeper than ${MAX_INPUT_DEPTH} levels, or holds itself (a cycle); it cannot be stored or shown.`, suggestion: "Return a flatter output, with no object inside itself.", context: { reason: "not_json", limit: MAX_INPUT_DEPTH } };
  }
  return { ok: false, message: `${made}JSON cannot hold as it is: ${problem.path} is ${problem.what}.`, suggestion: PLAIN_JSON_SUGGESTION, context: { reason: "not_json", path: problem.path } };
}

/** The output as its schema checks it, or what is wrong with it. */
function schemaProblem(capability: RegisteredCapability, output: unknown): OutputCheck {
  // What the parse would give back unchanged needs no parse (a new copy of every object it walks).
  if (parsesUnchanged(capability.def.output, output)) return { ok: true, value: output };
  // No value of the output is quoted: a handler's output may hold what no input mask knows (a
  // token read from a file), and an internal failure names the capability, the stage and the kind only.
  const checked = checkValue(capability.def.output, output, "output", () => true, "(the value returned is not shown)");
  // What a transform of the schema made must still be JSON: it is stored and sent as such (a
  // transform adding a cycle or a BigInt failed the answer of a write whose handler had run).
  if (checked.ok && !capability.plane && checked.value !== output) {
    const made = asJson(checked.value, true);
    return made.ok ? made : { ...made, suggestion: "Make the output schema's transforms return plain JSON values (never an async function)." };
  }
  if (checked.ok) return checked;
  return {
    ok: false,
    message: `does not match its output schema: ${describeProblems(checked.problems)}`,
    suggestion: "Fix the handler so that it returns what its output schema declares.",
    context: { problems: checked.problems.slice(0, 20) },
  };
}
