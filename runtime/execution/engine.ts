import { runsAsExecution, type CapabilityCatalog, type RegisteredCapability } from "../capability/registered.ts";
import { MAX_TIMEOUT_MS, type HostFacts } from "../capability/declaration.ts";
import { unknownCapabilityHint } from "../capability/unknown-capability.ts";
import { quotedText } from "./text-sanitize.ts";
import type { ExecutionStore } from "../store/store.ts";
import type { TaskHandle, WorkerPool, WorkerTask } from "../worker/task.ts";
import type { EventDraft } from "./protocol.ts";
import type { ExecutionReport } from "./report-protocol.ts";
import type { Limits } from "./limits.ts";
import { boundFailureTexts, textLimitsOf } from "./text-limits.ts";
import type { CancelReceipt, EdgeInfo, ExecutionPlane, PlaneHandle, StartRequest, StartResult } from "./plane.ts";
import { systemClock, type Clock } from "./clock.ts";
import { buildFailure, FailureError, forcedStopCertainty, newCorrelationId, type FailureDescriptor } from "./failure.ts";
import { isExecutionId, newExecutionId, RUN_ID_PATTERN } from "./execution-id.ts";
import { isTerminal } from "./state-machine.ts";
import { expiredExecution } from "./snapshot.ts";
import { executionNotFound, markedRunAnswer, markedRunNotHeld, type MarkedRun } from "./marked-run-answer.ts";
import { canonicalHash } from "./canonical-json.ts";
import { redact, hasSensitive, secretKeyPaths, sensitivePaths } from "./redaction.ts";
import { transformedSecrets } from "./before-transforms.ts";
import { admissionMask, MAX_SENSITIVE_VALUES, NO_MASK, sensitiveValues, type SecretMask } from "./secret-mask.ts";
import { AUTOMATON_MAX_UNITS } from "./_secret-index.ts";
import { thrownClass, thrownDetail } from "./thrown.ts";
import { checkValue, describeProblems, maskProblems, SENSITIVE_NOTE, transforms, type Checked } from "./validate.ts";
import { parsesUnchanged } from "./_parses-unchanged.ts";
import { inputShapeProblem, MAX_INPUT_DEPTH, PLANE_ENVELOPE_DEPTH } from "./json-depth.ts";
import { isPlainJson, plainJsonProblem } from "./plain-json.ts";
import { declaredOnly, droppedFieldText, undeclaredFields } from "./undeclared-fields.ts";
import { Scheduler } from "./_scheduler.ts";
import { completionOf, type Completion, type StopCircumstances } from "./_completion.ts";
import { DirectCalls, type AdmittedInput } from "./_direct-calls.ts";
import { armHandlerTimeout } from "./_handler-timeout.ts";
import { artifactsDir, listArtifacts, removeArtifacts } from "./artifact-files.ts";
import { protocolDocument, type ProtocolDocument } from "./protocol-document.ts";
import { createReportLedger, runIdentitiesFull } from "./report-ledger.ts";
import { createReconciler } from "./reconciliation.ts";
import { createStorageGate } from "./storage-gate.ts";
import { toolNameOf } from "../capability/taken-ids.ts";
import { DOCKET_VERSION } from "../version.ts";

/** What the engine is built from; everything is passed in (no module-level state). */
export interface EngineOptions {
  registry: CapabilityCatalog;
  store: ExecutionStore;
  pool: WorkerPool;
  limits: Limits;
  root: string;
  /** Name of the store kind, for health facts ("memory", "sqlite"). */
  storeKind: string;
  /** The folders of capability files loaded besides the checkout's capabilities/ (--capabilities), absolute; default none. */
  capabilityFolders?: string[];
  clock?: Clock;
  /** Where stacks and internal errors go: this process's stderr, never a client. */
  log?: (line: string) => void;
  /** Bytes of state the store keeps under `.docket/` (the sqlite file's pages in use); default 0, as in memory. */
  storedBytes?: () => number;
  /** Expires what may expire in the store before the storage budget is judged (the durable store's details). */
  expireDetails?: () => void;
  /** Bytes free on the disk holding `.docket/` (storage-gate.ts), for a store kept there; absent: not looked at. */
  diskFree?: () => number | null;
  /**
   * Whether a process of this machine is alive: a run that reports with a run_id and has exited
   * gave up on its report, and never started (report-ledger.ts). Absent: every reporter counts as alive.
   */
  processAlive?: (pid: number) => boolean;
  /**
   * This process's pid namespace (lease.ts `ownPidNamespace`): `processAlive` is asked only about
   * reporters that name the same one, the pids this process can see. Absent: null, as on a system
   * without namespaces, where a reporter that names none is looked up.
   */
  pidNamespace?: string | null;
  /**
   * The reports a run left in the checkout when its server did not answer at its end
   * (store/left-reports.ts), checked as a report over HTTP is; `forget` removes them. Taken when a
   * reported run's process is found gone, before it is judged by its silence.
   */
  leftReports?: (id: string) => { reports: ExecutionReport[]; forget(): void } | null;
}

/** One execution the engine admitted and has not finished. */
interface Active {
  id: string;
  session_key: string | null;
  capability: RegisteredCapability;
  input: unknown;
  edge: EdgeInfo;
  run_id: string | null;
  /** The start request's deadline, counted from `admitted` (queue time included). */
  deadline_ms: number | null;
  /** The declaration's `timeout_ms`, counted from when its handler begins (_handler-timeout.ts). */
  timeout_ms: number | null;
  /** The input's sensitive values, masked in every text the run produces (docs/security.md). */
  mask: SecretMask;
  secrets: string[];
  handle: TaskHandle | null;
  admitted: number;
  started: number;
  stop: StopCircumstances;
  timers: unknown[];
  completed: boolean;
  /** Settles once `execution.completed` is written (or could not be). */
  done: Promise<void> | null;
  /** True once its creation (and run identity) is committed: only then may its handler act. */
  durable: boolean;
  /** Its handler waits for this (StartOptions.hold); null once it let go, or when there was none. */
  hold: Promise<void> | null;
  /** How to refuse the starts waiting for its creation to be written, should a write fault take it back (see withdrawUnwritten). */
  refusals: Array<{ edge: EdgeInfo; refuse: (error: FailureError) => void }> | null;
}

/** What a caller of the engine itself (not a client) may add to a start. */
export interface StartOptions {
  /**
   * The handler does not begin before this settles; until then the execution is queued and takes
   * its slot. `docket run` holds its execution while the server serving its checkout says whether
   * the run_id is already another run's (docs/protocol.md); if it is, the hold never settles and
   * the run ends without running.
   */
  hold?: Promise<void>;
}

/** The execution plane's engine: validate · redact · admit · queue · run on a worker · catch · complete. */
export interface Engine extends ExecutionPlane {
  start(request: StartRequest, edge: EdgeInfo, options?: StartOptions): StartResult;
  /** Stops a running execution at once: its worker is terminated (a second Ctrl-C). */
  forceStop(id: string): void;
  /** Facts about this process, as `ctx.host()` answers them. */
  hostFacts(): HostFacts;
  /**
   * Takes the reports a gone run left for an execution this server does not hold, as if it had
   * sent them (report-ledger.ts `takeUnheld`): a server starting does, for each file it finds.
   */
  takeLeftReports(id: string): boolean;
  /**
   * The runs without a server whose marks the server recorded as it started (server/marked-runs.ts):
   * a start with one of their run_ids, and a read of their execution, answer from the mark.
   */
  knowRunsWithoutServer(lookup: (executionId: string) => MarkedRun | null): void;
  close(): Promise<void>;
}

/** The longest deadline a timer can hold (2^31 − 1 ms); a longer one would fire at once. */
export const MAX_DEADLINE_MS = MAX_TIMEOUT_MS;

/** How often a start the store could not note is tried again (see begin). */
export const NOTE_RETRY_MS = 1000;

/** Creates the engine over a registry, a store and a worker pool. */
export function createEngine(options: EngineOptions): Engine {
  const { registry, store, pool, limits, root } = options;
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const scheduler = new Scheduler<Active>(limits.max_concurrent);
  const textLimits = textLimitsOf(limits);
  const bootedAt = clock.monotonic();
  let closed = false;

  /** The runs without a server a server knows of (knowRunsWithoutServer); none until told. */
  let runsWithoutServer: (executionId: string) => MarkedRun | null = () => null;
  const markedRunAnswerOf = (id: string) => {
    const marked = runsWithoutServer(id);
    return marked === null ? null : markedRunAnswer(marked);
  };
  const whyNotHeld = (id: string, cannot: string) => {
    const answer = markedRunAnswerOf(id);
    return answer === null ? null : markedRunNotHeld(id, answer, cannot);
  };
  /** Not found: said so, and why when the execution ran in a `docket run` without a server. */
  const noExecution = (edge: EdgeInfo, id: string, cannot: string) => failure(edge, { stage: "validate", ...executionNotFound(id, whyNotHeld(id, cannot)) });
  // What the engine refuses may quote what the caller sent (an id of megabytes): cut as any failure message is.
  const failure = (edge: EdgeInfo, rest: Omit<Parameters<typeof buildFailure>[0], "request_id" | "trace_id">): FailureError =>
    new FailureError(boundFailureTexts(buildFailure({ ...rest, request_id: edge.request_id, trace_id: edge.trace_id }), limits.failure_message_bytes));

  /** Shared by start and direct calls: the capability, its input checked and its size bounded (see AdmittedInput). */
  function admitInput(id: string, input: unknown, edge: EdgeInfo, verb: string, runs: (capability: RegisteredCapability) => void): AdmittedInput {
    const capability = registry.get(id);
    if (!capability) {
      throw failure(edge, {
        error_code: "not_found",
        stage: "validate",
        message: `No capability ${quotedText(id)} is loaded.`,
        suggestion: unknownCapabilityHint(id, registry),
        context: { capability: id },
      });
    }
    // A capability that never runs this way is refused before its input is looked at: a caller
    // who corrected the input would only be refused again (README.md, `execution`).
    runs(capability);
    // A plane capability's input may carry another's a few levels down (executions.start's `input`,
    // a report's events): that one is held to MAX_INPUT_DEPTH where it is admitted, not its envelope.
    const depth = capability.plane ? MAX_INPUT_DEPTH + PLANE_ENVELOPE_DEPTH : MAX_INPUT_DEPTH;
    const shape = inputShapeProblem(input, depth);
    if (shape?.reason === "too_deep") {
      // A start too deep for its envelope is a start of the capability it names, whose input is
      // held to MAX_INPUT_DEPTH: said as such, not as executions.start's 136 (checking tester, session 44).
      const named = id === "executions.start" && typeof (input as { capability?: unknown }).capability === "string" ? String((input as { capability: string }).capability) : null;
      const [what, bound] = named !== null ? [`start ${quotedText(named)}`, MAX_INPUT_DEPTH] : [`${verb} ${id}`, depth];
      throw failure(edge, {
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot ${what}: the input nests deeper than ${bound} levels.`,
        // docket's own bound, not the schema's: a schema that requires deeper nesting can never be met (foundation tester, session 44).
        suggestion: `docket reads an input at most ${bound} levels deep, whatever the capability's schema says: send a flatter input; a capability whose schema requires deeper nesting cannot be called until its schema is made flatter.`,
        context: { reason: "too_deep", limit: bound },
      });
    }
    if (shape?.reason === "not_finite") {
      throw failure(edge, {
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot ${verb} ${id}: ${shape.path} is a number too large for JSON to hold (it reads as ${shape.value}).`,
        suggestion: "Send a number within ±1.8e308, or the value as a string if it must be that large.",
        context: { reason: "not_finite", path: shape.path },
      });
    }
    const bytes = Buffer.byteLength(JSON.stringify(input ?? null));
    if (bytes > limits.input_bytes) {
      throw failure(edge, {
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot ${verb} ${id}: the input is ${bytes} bytes, more than the limit of ${limits.input_bytes}.`,
        context: { reason: "too_large", bytes, limit: limits.input_bytes },
      });
    }
    // Absent input is the empty object (a GET with no parameters); null or an array for an object
    // schema is a mistake to name, not to paper over (valibot's object check lets arrays through).
    const given = input === undefined ? {} : input;
    if (capability.input_schema.type === "object" && (given === null || typeof given !== "object" || Array.isArray(given))) {
      throw failure(edge, {
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot ${verb} ${id}: input must be a JSON object, got ${given === null ? "null" : Array.isArray(given) ? "an array" : typeof given}.`,
        context: { problems: [{ path: "input", message: "Expected an object" }] },
      });
    }
    // A plane handler gets its input as given when the parse would give it back unchanged: its
    // callers (HTTP, MCP) hand over values they parsed themselves, and the parse is the largest
    // part of an HTTP executions.start beyond the engine's own work.
    const checked: Checked<unknown> =
      capability.plane && parsesUnchanged(capability.def.input, given)
        ? { ok: true, value: given }
        : hasSensitive(capability.input_schema)
          ? checkValue(capability.def.input, given, "input", sensitivePaths(given, capability.input_schema), SENSITIVE_NOTE, secretKeyPaths(given, capability.input_schema))
          : checkValue(capability.def.input, given, "input");
    if (!checked.ok) {
      // A check of the whole input (`v.check((o) => …, (i) => \`… ${i.input.token}\`)`) may quote
      // a secret from any path: every problem is masked by the values of the input's sensitive
      // fields, as a log line is (docs/security.md). Counted first, as a valid input's are below,
      // so that masking stays bounded.
      const secrets = hasSensitive(capability.input_schema) ? sensitiveValues(given, capability.input_schema) : [];
      refuseTooManySecrets(id, edge, verb, new Set(secrets).size);
      const mask = secrets.length === 0 ? NO_MASK : admissionMask(secrets);
      if (!("text" in mask)) refuseMaskTooLarge(id, edge, verb, mask.units);
      const problems = maskProblems(checked.problems, mask);
      throw failure(edge, {
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot ${verb} ${id}: ${describeProblems(problems)}`,
        context: { problems: problems.slice(0, 50) },
      });
    }
    // A write never runs with a field of its input dropped: `dryRun` for `dry_run` (an agent's
    // guess, a typo in a script) would be a real change; the check strips what it does not know.
    // Nor does docket's own API answer without one (`afterr=12` replayed from the start, as
    // /events refuses a misspelt parameter). A capability file's read runs, as it would have
    // anyway (docket run notes what was dropped).
    if ((capability.effect === "write" || capability.plane) && checked.value !== given) {
      const dropped = undeclaredFields(given, checked.value, capability.input_schema, { exact: !transforms(capability.def.input) });
      if (dropped.length > 0) {
        const why = capability.effect === "write" ? "a write is never run with part of its input left out" : "the built-ins that answer about the server never answer with part of the question left out";
        throw failure(edge, {
          error_code: "invalid_input",
          stage: "validate",
          message: `Cannot ${verb} ${id}: its input has no field ${dropped.map((field) => droppedFieldText(field, capability.input_schema)).join(", no field ")}; ${why}.`,
          suggestion: "Remove the field or correct its name; the capability's input schema lists its fields.",
          context: { reason: "unknown_fields", fields: dropped },
        });
      }
    }
    // A transform of the schema may make what JSON cannot hold (a cycle, a BigInt): the input is
    // stored and sent to the worker as JSON, so it is refused here, not failed later as docket's own.
    if (checked.value !== given && !capability.plane && transforms(capability.def.input) && !isPlainJson(checked.value, depth)) {
      // Where and what (a type, never the value: it may be a secret's), looked for only once refused.
      const found = plainJsonProblem(checked.value, depth, "input");
      // A path through a transform's making may hold a key made of a secret (`{ [token]: … }`):
      // named only where the input has no sensitive field.
      const problem = found?.reason === "not_json" && hasSensitive(capability.input_schema) ? { ...found, path: null } : found;
      const made = problem?.reason !== "not_json" ? "made a value nested too deep for JSON (or a cycle)" : problem.path === null ? `made a value ${problem.what}` : `made ${problem.path} ${problem.what}`;
      throw failure(edge, {
        error_code: "invalid_input",
        stage: "validate",
        message: `Cannot ${verb} ${id}: a transform of its input schema ${made}; the input is kept and handed over as JSON.`,
        suggestion: "Send a value the transform turns into plain JSON (a number it can read, say); the capability's file should check what it transforms (v.pipe(v.string(), v.decimal(), v.transform(Number))).",
        context: { reason: "transform_not_json", ...(problem?.reason === "not_json" && problem.path !== null ? { path: problem.path } : {}) },
      });
    }
    // The input schema describes what clients send, up to the first transform: a transform that
    // moves a secret (`v.transform((o) => ({ auth: { bearer: o.tok } }))`) leaves it where the
    // schema no longer points. So redaction, the run identity and the secrets to mask read the
    // input as sent (docs/security.md); the handler gets what the transforms made.
    const sent = checked.value !== given && transforms(capability.def.input) ? declaredOnly(given, capability.input_schema) : checked.value;
    // Masked are the secrets sent, the input as the schema saw it before its transforms (a secret
    // from a default, never sent, that a transform then moves) and what the transforms made at
    // their places (a secret trimmed or upper-cased). An input without transforms is read once.
    const secrets = hasSensitive(capability.input_schema)
      ? [...new Set([...sensitiveValues(sent, capability.input_schema), ...(sent === checked.value ? [] : transformedSecrets(capability.def.input, capability.input_schema, given, checked.value))])]
      : [];
    refuseTooManySecrets(id, edge, verb, secrets.length);
    const mask = secrets.length === 0 ? NO_MASK : admissionMask(secrets);
    if (!("text" in mask)) refuseMaskTooLarge(id, edge, verb, mask.units);
    return { capability, input: checked.value, sent, secrets, mask, given };
  }

  /** Refuses an input holding more distinct secrets than a run's texts can be searched for. */
  function refuseTooManySecrets(id: string, edge: EdgeInfo, verb: string, secrets: number): void {
    if (secrets <= MAX_SENSITIVE_VALUES) return;
    throw failure(edge, {
      error_code: "invalid_input",
      stage: "validate",
      message: `Cannot ${verb} ${id}: the input holds ${secrets} sensitive values, more than the ${MAX_SENSITIVE_VALUES} docket masks in what a run prints.`,
      suggestion: "Pass fewer secrets in one input (one credential per field), or split the work.",
      context: { reason: "too_many_secrets", count: secrets, limit: MAX_SENSITIVE_VALUES },
    });
  }

  /** Refuses an input whose secrets, in all the forms masked, are more than a run's texts can be searched for in bounded time. */
  function refuseMaskTooLarge(id: string, edge: EdgeInfo, verb: string, units: number): never {
    throw failure(edge, {
      error_code: "invalid_input",
      stage: "validate",
      message: `Cannot ${verb} ${id}: the input's sensitive values, in every form docket masks them in (each value, each of its lines, as JSON, console.log and URLs write them), come to ${units.toLocaleString("en-US")} characters or more, more than the ${AUTOMATON_MAX_UNITS.toLocaleString("en-US")} docket searches a run's texts for.`,
      suggestion: "Pass a large secret (a certificate bundle over about 0.9 MB, many long multi-line values) as a path to a file the handler reads, or split the work.",
      context: { reason: "secrets_too_large", units, limit: AUTOMATON_MAX_UNITS },
    });
  }

  const redactInput = (capability: RegisteredCapability, input: unknown) =>
    hasSensitive(capability.input_schema) ? redact(input, capability.input_schema) : input;

  // A store that cannot write, or a .docket/ over its budget, refuses new executions (docs/limits.md).
  const storage = createStorageGate({
    root,
    limits,
    clock,
    fault: () => store.storageFault(),
    stateBytes: options.storedBytes ?? (() => 0),
    expire: options.expireDetails,
    diskFree: options.diskFree,
  });

  // Runs of `docket run` reported by other processes (docs/protocol.md): kept in the store, never run here.
  const reports = createReportLedger({
    storageRefusal: (verb) => storage.refusal(verb),
    store,
    limits,
    root,
    clock,
    log,
    processAlive: options.processAlive,
    pidNamespace: options.pidNamespace ?? null,
    leftReports: options.leftReports,
    redactInput: (id, input) => {
      const capability = registry.get(id);
      return capability ? redactInput(capability, input) : input;
    },
  });

  // Settles unknown outcomes (docs/reconciliation.md): by a person, or by the capability's own check.
  const reconciler = createReconciler({ store, registry, pool, limits, root, clock, log, whyNotHeld });

  function start(request: StartRequest, edge: EdgeInfo, options: StartOptions = {}): StartResult {
    return admit(request, edge, options).result;
  }

  /** A start's result, with the execution it made (null for a known run_id). */
  function admit(request: StartRequest, edge: EdgeInfo, options: StartOptions = {}): { result: StartResult; active: Active | null } {
    if (closed) throw failure(edge, { error_code: "unavailable", stage: "admit", message: "The engine is shutting down.", suggestion: "Start it again once the server serves again: nothing ran." });
    const { capability, input, sent, secrets, mask, given } = admitInput(request.capability, request.input, edge, "start", (found) => {
      if (runsAsExecution(found)) return;
      throw failure(edge, {
        error_code: "not_runnable",
        stage: "validate",
        message: `${found.id} cannot run as an execution (execution: "never"); call it directly.`,
        // Over MCP there is no tool for every capability to call directly (MCP/CLI tester, session 44): where it can be called is said.
        suggestion:
          found.id === "executions.report"
            ? "executions.report is what docket run sends to report a run it runs itself; no one calls it to run work. Start the capability you want to run instead."
            : `Call it directly: POST /api/v1/${found.id.split(".").join("/")}${found.plane ? "" : `, or the MCP tool ${toolNameOf(found.id)}`} (docket run starts executions only).`,
        context: { capability: found.id },
      });
    });
    const run_id = request.run_id ?? null;
    const stored = redactInput(capability, sent);
    // A run's identity is its capability and its input as the client sent it (the fields its
    // schema declares), secrets redacted (docs/security.md, "Secrets are not part of a run's
    // identity"): the same run_id with another secret is that run, never a conflict, so that no
    // answer and no stored hash tells whether a guessed secret was the real one. A default the
    // schema fills in is not part of it: one computed at each start (a timestamp) would make the
    // same request sent again a conflict. Only a run identity keeps it: sorting the keys of a
    // large input is not free (docs/limits.md).
    const hash = run_id === null ? "" : canonicalHash(redactInput(capability, declaredOnly(given, capability.input_schema)));
    if (run_id !== null) {
      if (!RUN_ID_PATTERN.test(run_id)) {
        throw failure(edge, { error_code: "invalid_input", stage: "validate", message: `run_id must match [A-Za-z0-9._:-]{1,128}, got ${JSON.stringify(run_id)}.` });
      }
      const known = store.findRun(run_id);
      if (known) {
        if (known.capability !== capability.id || known.input_hash !== hash) {
          throw failure(edge, {
            error_code: "run_id_conflict",
            stage: "admit",
            message: `run_id "${run_id}" was already used for ${known.execution_id} with ${known.capability === capability.id ? "a different input" : `capability ${known.capability}`}.`,
            context: { run_id, execution_id: known.execution_id },
          });
        }
        // The original may be long gone (forgotten past executions_retained) or only its identity
        // left (details expired): still the same run, never a second one. Its current state (the
        // answer waits until it is committed: docs/durability.md).
        const original = store.current(known.execution_id);
        if (original !== null && !original.details_expired) return { result: { execution: original, deduplicated: true }, active: null };
        // Run by a `docket run` without a server: its end as its mark tells it, or why there is none yet.
        const marked = original === null ? runsWithoutServer(known.execution_id) : null;
        if (marked !== null) {
          const answer = markedRunAnswer(marked);
          if ("failure" in answer) throw failure(edge, { ...answer.failure, stage: "admit" });
          return { result: { execution: answer.ended, deduplicated: true, details_expired: true }, active: null };
        }
        return { result: { execution: original ?? expiredExecution(known), deduplicated: true, details_expired: true }, active: null };
      }
    }
    const refused = storage.refusal(`start ${capability.id}`);
    if (refused) throw failure(edge, { ...refused, stage: "admit" });
    // Items queued this tick may still take a free slot, so only the ones that will wait count.
    const waiting = scheduler.queued - Math.max(0, limits.max_concurrent - scheduler.active);
    if (waiting >= limits.max_queued) {
      throw failure(edge, {
        error_code: "capacity",
        stage: "admit",
        message:
          limits.max_queued === 0
            ? `Cannot start ${capability.id}: ${limits.max_concurrent === 1 ? "the one execution this server runs at once is running" : `the ${limits.max_concurrent} executions this server runs at once are running`}, and it queues none (max_queued 0).`
            : `Cannot start ${capability.id}: ${waiting === 1 ? "1 execution is" : `${waiting} executions are`} already waiting (limit ${limits.max_queued}).`,
        context: { queued: waiting, limit: limits.max_queued, retry_after_s: 1 },
      });
    }
    // Two bounds, the earlier wins (docs/security.md, Deadlines): deadline_ms from admission, so it bounds the
    // caller's wait, queue included; the declaration's timeout_ms from the handler's start.
    const deadline = request.deadline_ms ?? null;
    const timeout = capability.timeout_ms ?? null;
    for (const [bound, value] of [["deadline_ms", deadline], ["timeout_ms", timeout]] as const) {
      if (value !== null && (!Number.isSafeInteger(value) || value <= 0 || value > MAX_DEADLINE_MS)) {
        throw failure(edge, {
          error_code: "invalid_input",
          stage: "validate",
          message: `${bound} must be a whole number of milliseconds from 1 to ${MAX_DEADLINE_MS} (about 24.8 days), got ${JSON.stringify(value)}${bound === "timeout_ms" ? ` (the timeout_ms of ${capability.id})` : ""}.`,
          context: { field: bound },
        });
      }
    }
    // 32 random bits per second of the stamp: at 10k starts a second, two ids of one second meet
    // about every 90 s, and the store refuses the second one (its client got a 500).
    let id = newExecutionId(clock.now());
    while (store.current(id) !== null) id = newExecutionId(clock.now());
    if (run_id !== null && !store.recordRun({ run_id, execution_id: id, capability: capability.id, input_hash: hash })) {
      throw failure(edge, runIdentitiesFull(run_id, limits.run_identities, "Start without a run_id"));
    }
    const session_key = request.session_key ?? null;
    const snapshot = store.create({
      id,
      capability: capability.id,
      input: stored,
      actor: edge.actor,
      repository: root,
      run_id,
      session_key,
      request_id: edge.request_id,
      trace_id: edge.trace_id,
      cancellable: capability.cancellable,
      effect: capability.effect,
      capability_version: capability.version,
    });
    const active: Active = {
      id,
      session_key,
      capability,
      input,
      edge,
      run_id,
      deadline_ms: deadline,
      timeout_ms: timeout,
      mask,
      secrets,
      handle: null,
      admitted: clock.monotonic(),
      started: 0,
      stop: { cancelRequested: false, deadlineExpired: false, forced: false, deadlineMs: deadline ?? timeout },
      timers: [],
      completed: false,
      done: null,
      durable: false,
      hold: options.hold ?? null,
      refusals: null,
    };
    scheduler.enqueue(active);
    if (deadline !== null) active.timers.push(clock.setTimeout(() => expire(active, "deadline_ms"), deadline));
    // The answer is the truth at admission (queued); running starts right after, never before.
    queueMicrotask(pump);
    return { result: { execution: snapshot, deduplicated: false }, active };
  }

  function pump(): void {
    if (closed) return;
    for (const active of scheduler.takeRunnable()) begin(active);
  }

  /**
   * Starts a taken execution — once its creation and run identity are committed (docs/durability.md):
   * a handler that acted for an execution a crash then took back would act again when its
   * run_id is sent again. Usually they were committed long ago, while it waited its turn: then it
   * starts now, not a write later — unless the store cannot write at the moment, when nothing
   * starts that the store could not record (it waits the fault out instead).
   *
   * The store notes each start before the handler is posted (`starting`), so a crash before its
   * `execution.started` is committed is never passed off as an execution that did not run. A
   * note the store cannot take (a disk too full for it) holds the execution, still queued, and is
   * tried again every NOTE_RETRY_MS.
   */
  function begin(active: Active): void {
    if (closed || active.completed) return;
    if (active.hold !== null) {
      const hold = active.hold;
      active.hold = null;
      void hold.then(
        () => begin(active),
        () => undefined,
      );
      return;
    }
    if (active.durable || (store.storageFault() === null && store.creationCommitted(active.id))) {
      if (store.starting(active.id)) return dispatch(active);
      const retry = clock.setTimeout(() => {
        active.timers.splice(active.timers.indexOf(retry), 1);
        begin(active);
      }, NOTE_RETRY_MS);
      active.timers.push(retry);
      return;
    }
    store.durable().then(
      () => {
        active.durable = true;
        begin(active);
      },
      () => {
        // The store closed first: the engine is closing too, and the execution never ran.
      },
    );
  }

  /** A taken execution held before its handler (see begin) gives its slot back; false when it holds none. */
  function letGo(active: Active): boolean {
    if (scheduler.get(active.id) === undefined) return false;
    scheduler.finish(active.id);
    queueMicrotask(pump);
    return true;
  }

  function dispatch(active: Active): void {
    store.append(active.id, [{ type: "execution.started", data: {} }]);
    active.started = clock.monotonic();
    const task: WorkerTask = {
      capability: active.capability.id,
      source: active.capability.source,
      version: active.capability.version,
      input: active.input,
      secrets: active.secrets,
      execution: { id: active.id, run_id: active.run_id, session_key: active.session_key, attempt: 1 },
      root,
      artifacts_dir: artifactsDir(root, active.id),
      // The free-space floor holds for artifacts too where the store keeps one (docs/limits.md).
      artifact_limits: { files: limits.artifacts_per_execution, bytes: limits.artifact_bytes, total_bytes: limits.artifacts_total_bytes, disk_free_floor: options.diskFree ? limits.disk_free_floor_bytes : 0 },
      // Half the handler's grace: a child is killed while the handler still has time to end on its own.
      kill_grace_ms: Math.floor(limits.grace_ms / 2),
      text_limits: textLimits,
      output_bytes: limits.output_bytes,
    };
    // Its worker notes when the handler begins, which timeout_ms counts from.
    if (active.timeout_ms !== null) task.timed = true;
    active.handle = pool.run(task, { lane: "execution", onEvents: (drafts) => appendHandlerEvents(active, drafts) });
    if (active.timeout_ms !== null) armHandlerTimeout(clock, active.handle, active.timeout_ms, active.timers, () => expire(active, "timeout_ms"));
    active.done = active.handle.outcome.then(
      (outcome) => complete(active, completionOf(active.capability, outcome, active.stop, active.edge, active.mask)),
      (error) =>
        complete(active, completionOf(active.capability, { ok: false, error: { kind: "internal", error_class: thrownClass(error), message: thrownDetail(error), stack: null } }, active.stop, active.edge, active.mask)),
    );
  }

  /**
   * A bound ran out. Still queued: the execution never starts and ends `cancelled` with
   * `deadline_exceeded` (nothing ran, so nothing was applied; queued → failed is no move of the
   * lifecycle). Running: cancelled cooperatively, and its worker terminated `grace_ms` later.
   */
  function expire(active: Active, bound: "deadline_ms" | "timeout_ms"): void {
    // Asked to stop already (its grace running): that cancel, not the bound, is why it ends.
    if (active.completed || active.stop.deadlineExpired || active.stop.cancelRequested) return;
    const ms = bound === "deadline_ms" ? active.deadline_ms : active.timeout_ms;
    active.stop.deadlineExpired = true;
    active.stop.deadlineMs = ms;
    active.stop.deadlineSource = bound;
    if (!active.handle) {
      // Queued, or taken and held before its handler (see begin): it never ran.
      if (!scheduler.remove(active.id) && !letGo(active)) return;
      active.completed = true;
      for (const timer of active.timers) clock.clearTimeout(timer);
      const failure = buildFailure({
        error_code: "deadline_exceeded",
        stage: "queue",
        message: `${active.id} did not start within its deadline_ms of ${ms} ms (counted from admission): it waited in the queue the whole time, so nothing ran.`,
        retryability: "safe",
        outcome_certainty: "not_applied",
        suggestion: "Start it again with a longer deadline_ms, or when fewer executions are running.",
        context: { deadline_ms: ms, bound, terminated: false },
        request_id: active.edge.request_id,
        trace_id: active.edge.trace_id,
      });
      writeCompleted(active.id, { state: "cancelled", failure }, 0);
      return;
    }
    // Cancelling from here, as after a request, so that every client sees the bound pass (the
    // handler may still finish within the grace: then it succeeded after all). Not again after a
    // request, and a store that cannot write does not keep the handler from being asked.
    if (store.current(active.id)?.state === "running") {
      try {
        store.append(active.id, [{ type: "execution.cancel_requested", data: { actor: active.edge.actor, reason: bound } }]);
      } catch (error) {
        log(`[docket] could not store that ${active.id} passed its ${bound}: ${(error as Error).message}`);
      }
    }
    active.handle.cancel();
    terminateAfterGrace(active);
  }

  /** A handler that does not stop within grace_ms of being asked has its worker terminated (and replaced). */
  function terminateAfterGrace(active: Active): void {
    active.timers.push(
      clock.setTimeout(() => {
        if (active.completed) return;
        active.stop.forced = true;
        active.handle?.terminate();
      }, limits.grace_ms),
    );
  }

  // The worker masked these already (worker/_worker-context.ts); this is where they enter the store.
  function appendHandlerEvents(active: Active, drafts: EventDraft[]): void {
    if (active.completed) return;
    try {
      store.append(active.id, drafts);
    } catch (error) {
      // Ended by the store (what it reported could not be written: docs/durability.md): the
      // handler's work is no longer recorded anywhere, so it is stopped.
      if (isTerminal(store.current(active.id)?.state ?? "running")) {
        active.handle?.terminate();
        return;
      }
      log(`[docket] could not store events of ${active.id}: ${(error as Error).message}`);
    }
  }

  function complete(active: Active, completion: Completion): void {
    if (active.completed) return;
    active.completed = true;
    for (const timer of active.timers) clock.clearTimeout(timer);
    if (completion.state !== "succeeded" && completion.stack) {
      log(`[docket] ${completion.failure.correlation_id} ${active.capability.id} ${active.id}: ${completion.stack}`);
    }
    const duration_ms = Math.max(0, Math.round((clock.monotonic() - active.started) * 1000) / 1000);
    try {
      // Already ended by the store (see appendHandlerEvents): its end stands.
      if (isTerminal(store.current(active.id)?.state ?? "running")) return;
      // A handler may stop as cancelled without anyone asking (it threw its own cancellation):
      // the lifecycle still passes through cancelling, so the move is one mayMoveTo allows, and
      // the event says the handler did it, not its starter.
      if (completion.state === "cancelled" && store.current(active.id)?.state === "running") {
        store.append(active.id, [{ type: "execution.cancel_requested", data: { actor: active.edge.actor, reason: "handler" } }]);
      }
      writeCompleted(active.id, completion, duration_ms);
      rememberForCheck(active, completion);
    } catch (error) {
      // The completion itself could not be stored: the execution still ends, never a ghost.
      const correlation = newCorrelationId();
      log(`[docket] ${correlation} could not complete ${active.id}: ${(error as Error).stack ?? error}`);
      try {
        const fallback = buildFailure({
          error_code: "internal",
          stage: "complete",
          message: `${active.capability.id} ended, but its result could not be stored.`,
          correlation_id: correlation,
          request_id: active.edge.request_id,
          trace_id: active.edge.trace_id,
          ...forcedStopCertainty(active.capability.effect),
        });
        writeCompleted(active.id, { state: "failed", failure: fallback }, duration_ms);
      } catch (again) {
        log(`[docket] ${correlation} could not end ${active.id} at all: ${(again as Error).message}`);
      }
    } finally {
      scheduler.finish(active.id);
      pump();
    }
  }

  /**
   * An unknown outcome that its capability can check: the real input stays in this process for
   * that check when the stored one lost its sensitive fields (docs/reconciliation.md).
   */
  function rememberForCheck(active: Active, completion: Completion): void {
    if (completion.state === "succeeded" || completion.failure.outcome_certainty !== "unknown") return;
    if (typeof active.capability.def.reconcile === "function" && hasSensitive(active.capability.input_schema)) reconciler.remember(active.id, active.input, active.secrets);
  }

  function writeCompleted(id: string, completion: Completion, duration_ms: number): void {
    const data =
      completion.state === "succeeded"
        ? { state: completion.state, output: completion.output, duration_ms }
        : { state: completion.state, failure: completion.failure, duration_ms };
    store.append(id, [{ type: "execution.completed", data } as EventDraft]);
  }

  function cancel(id: string, edge: EdgeInfo): CancelReceipt {
    if (!isExecutionId(id)) {
      throw failure(edge, { error_code: "invalid_input", stage: "validate", message: `"${id}" is not an execution id (x-<yyyymmddThhmmssZ>-<8 hex>).` });
    }
    const snapshot = store.current(id);
    if (!snapshot) throw noExecution(edge, id, "cannot cancel it");
    const receipt = (requested: boolean, message: string): CancelReceipt => ({
      id,
      state: store.current(id)!.state,
      cancellable: snapshot.cancellable,
      requested,
      recorded: true,
      message,
    });
    if (isTerminal(snapshot.state)) return receipt(false, `${id} has already ended (${snapshot.state}); nothing to cancel.`);
    if (snapshot.state === "cancelling") {
      const bound = scheduler.get(id)?.stop;
      const passed = bound?.deadlineExpired && !bound.cancelRequested ? `${id} passed its ${bound.deadlineSource} of ${bound.deadlineMs} ms and was asked to stop already` : `Cancellation of ${id} was already requested`;
      return receipt(true, `${passed}; follow its events for the outcome.`);
    }
    const active = scheduler.get(id);
    // Queued, or taken and held before its handler (see begin): it never ran.
    if (snapshot.state === "queued" && active && !active.handle && (scheduler.remove(id) || letGo(active))) {
      active.completed = true;
      for (const timer of active.timers) clock.clearTimeout(timer);
      const completion: Completion = {
        state: "cancelled",
        failure: buildFailure({
          error_code: "cancelled",
          stage: "queue",
          message: `${id} was cancelled before it started.`,
          retryability: "safe",
          outcome_certainty: "not_applied",
          request_id: edge.request_id,
          trace_id: edge.trace_id,
          // Who asked: a queued execution ends at once, with no execution.cancel_requested to say it (checking tester).
          context: { cancelled_by: edge.actor },
        }),
      };
      writeCompleted(id, completion, 0);
      return receipt(true, `${id} was cancelled before it started.`);
    }
    if (!snapshot.cancellable) {
      // Handed to a worker and not begun (busy with a leftover, importing the file): nothing of it
      // ran, so it is taken back whatever its declaration says, as it is while queued.
      if (active?.handle && !active.completed && !active.stop.cancelRequested && active.handle.withdraw()) {
        active.stop.cancelRequested = true;
        store.append(id, [{ type: "execution.cancel_requested", data: { actor: edge.actor } }]);
        return receipt(true, `${id} is taken back before its handler began: it ends cancelled, never run; follow its events for the outcome.`);
      }
      return receipt(false, `${snapshot.capability} is not cancellable: it does not check for cancellation, so ${id} runs to its end.`);
    }
    if (!active || !active.handle) {
      // Not run by this engine: a run reported by another process (docs/protocol.md). The ledger
      // stores the request (durable before this answer, like any cancel) and it reaches the run in
      // its next report's answer, by this server or by the next one after a crash.
      const reported = reports.requestCancel(id, edge.actor);
      if (reported) {
        return receipt(true, `Cancellation of ${id} was passed to docket run (pid ${reported.pid}), which runs it and stops it when its next report is answered; follow its events for the outcome.`);
      }
      // An event of this server's own would break the run's numbering, and no run is heard to ask.
      return receipt(false, `${id} is not run by this server and no process reports it now, so there is nobody to ask to stop it.`);
    }
    active.stop.cancelRequested = true;
    store.append(id, [{ type: "execution.cancel_requested", data: { actor: edge.actor } }]);
    active.handle.cancel();
    // A handler that cannot notice (blocked in a read, or never checking) does not keep the
    // execution cancelling for ever: grace_ms later its worker is terminated and replaced.
    terminateAfterGrace(active);
    return receipt(true, `Cancellation of ${id} was requested; follow its events for the outcome.`);
  }

  function forceStop(id: string): void {
    const active = scheduler.get(id);
    if (!active || active.completed) return;
    if (!active.handle) {
      cancel(id, active.edge);
      return;
    }
    if (!active.stop.cancelRequested && store.current(id)?.state === "running") {
      store.append(id, [{ type: "execution.cancel_requested", data: { actor: active.edge.actor } }]);
    }
    active.stop.cancelRequested = true;
    active.stop.forced = true;
    active.handle.terminate();
  }

  function workersNow(): NonNullable<HostFacts["workers"]> {
    const { execution_workers, direct_workers } = pool.stats();
    return { execution: execution_workers, direct: direct_workers, fault: pool.workerFault() };
  }

  function hostFacts(): HostFacts {
    return {
      root,
      runtime: {
        docket_version: DOCKET_VERSION,
        bun: process.versions.bun ?? null,
        node: process.versions.node,
        platform: process.platform,
        arch: process.arch,
        pid: process.pid,
        uptime_ms: Math.round(clock.monotonic() - bootedAt),
      },
      capabilities: registry.list().map((c) => ({ id: c.id, effect: c.effect, execution: c.execution, source: c.source.kind === "builtin" ? "builtin" : c.source.file })),
      load_errors: registry.loadErrors(),
      capability_folders: options.capabilityFolders ?? [],
      store: { kind: options.storeKind, counts: store.list({ limit: 1 }).counts, fault: storage.fault(), storage: storage.usage(), retained_bytes: store.retainedBytes?.() ?? null },
      workers: workersNow(),
      limits: { ...limits },
    };
  }

  let protocolCache: ProtocolDocument | null = null;

  /**
   * The plane bound to one caller, as plane capabilities get it (`ctx.plane`). A class: every
   * direct call of a plane capability (each HTTP executions.start) makes one, and its methods are
   * shared instead of fifteen closures made per call.
   */
  class BoundPlane implements PlaneHandle {
    readonly root = root;
    readonly limits = limits;
    readonly store = store;

    constructor(readonly edge: EdgeInfo) {}

    ranWithoutServer(id: string) {
      return markedRunAnswerOf(id);
    }

    whyNotHeld(id: string, cannot: string) {
      return whyNotHeld(id, cannot);
    }

    capabilities() {
      return registry.list();
    }

    capability(id: string) {
      return registry.get(id);
    }

    loadErrors() {
      return registry.loadErrors();
    }

    unknownCapability(id: string) {
      return { message: `No capability ${quotedText(id)} is loaded.`, suggestion: unknownCapabilityHint(id, registry) };
    }

    // What these answers acknowledge is committed before they are sent (docs/durability.md).
    start(request: StartRequest) {
      return startAcknowledged(admit(request, this.edge), this.edge);
    }

    cancel(id: string) {
      const receipt = cancel(id, this.edge);
      const edge = this.edge;
      // Asked of the handler already: a disk that cannot take it yet does not make the caller wait.
      return acknowledgedUnlessFault<CancelReceipt | FailureError>(receipt, () => {
        // What a reader is shown while the store cannot write: what the file holds.
        const written = store.get(id)?.state;
        if (written === receipt.state) return receipt;
        // A refusal that names a state the store has not written ("already succeeded"), or an
        // execution it has not written at all, would show what a crash can still take back.
        if (!receipt.requested || written === undefined) return notRecordedYet(edge, `cancel ${id}`);
        // Asked of the handler, not written: the receipt names the state a crash would leave.
        const fault = store.storageFault();
        const since = fault === null ? "" : ` (since ${fault.since}; health.report says why)`;
        return {
          ...receipt,
          state: written,
          recorded: false,
          message: `${receipt.message} The execution store cannot write at the moment${since}: this request is recorded once it can, and until then its state stays ${written}.`,
        };
      }).then((answer) => {
        if (answer instanceof FailureError) throw answer;
        return answer;
      });
    }

    report(report: Parameters<PlaneHandle["report"]>[0]) {
      if (closed) throw failure(this.edge, { error_code: "unavailable", stage: "report", message: "The server is shutting down; the run goes on and keeps its own history." });
      return acknowledged(reports.ingest(report, this.edge));
    }

    protocol() {
      return (protocolCache ??= protocolDocument(limits));
    }

    artifacts(id: string) {
      requireExecution(id, this.edge, "cannot list its artifacts");
      return listArtifacts(root, id, limits.artifact_bytes);
    }

    release(id: string) {
      const edge = this.edge;
      const snapshot = requireExecution(id, edge, "cannot release its artifacts");
      if (!isTerminal(snapshot.state)) {
        throw failure(edge, {
          error_code: "invalid_input",
          stage: "admit",
          message: `${id} is ${snapshot.state}; its artifacts can be released once it is terminal.`,
          suggestion: `Wait for it to end (docket executions show ${id}), or cancel it first (docket executions cancel ${id}), then release.`,
        });
      }
      if (snapshot.failure?.outcome_certainty === "unknown" && !snapshot.reconciliation) {
        throw failure(edge, {
          error_code: "invalid_input",
          stage: "admit",
          message: `${id} ended with an unknown outcome; its artifacts are kept as evidence until the outcome is reconciled (executions.reconcile).`,
          retryability: "manual_reconcile",
          suggestion: `Settle it first: docket executions reconcile ${id} --applied|--not-applied --note "what you found", or without an outcome to run the capability's own check.`,
        });
      }
      return { id, released: removeArtifacts(root, id) };
    }

    reconcile(request: Parameters<PlaneHandle["reconcile"]>[0]) {
      if (closed) return Promise.reject(failure(this.edge, { error_code: "unavailable", stage: "admit", message: "The engine is shutting down." }));
      const edge = this.edge;
      return reconciler.reconcile(request, edge).then(acknowledged, (error) => refusedWhenWritten(error, edge, `reconcile ${request.id}`));
    }
  }

  /** 503 `unavailable`: an answer that depends on a state the store cannot write yet. */
  function notRecordedYet(edge: EdgeInfo, what: string): FailureError {
    const fault = store.storageFault();
    return failure(edge, {
      error_code: "unavailable",
      stage: "admit",
      // The store's own words may name a path: they go to health.report, never into an answer.
      message: `Cannot ${what} now: the execution store cannot write at the moment${fault ? ` (since ${fault.since})` : ""}, and the state this answer depends on is not recorded yet.`,
      suggestion: "Ask again once the store can write (health.report says when); nothing was changed by this request.",
      retryability: "after_delay",
      outcome_certainty: "not_applied",
      context: { reason: "storage_fault" },
    });
  }

  /**
   * A refusal decided on the live view of an execution (already reconciled, outcome known, not
   * finished): given once that view is committed, as any answer; while the store cannot write,
   * `unavailable` instead — a crash could still take the view back (docs/durability.md).
   * Refusals of the request itself (a malformed id) are given at once.
   */
  function refusedWhenWritten(error: unknown, edge: EdgeInfo, what: string): Promise<never> {
    if (!(error instanceof FailureError) || error.failure.stage === "validate") return Promise.reject(error);
    return acknowledgedUnlessFault<FailureError | null>(null, () => notRecordedYet(edge, what)).then((fault) => {
      throw fault ?? error;
    });
  }

  const handle = (edge: EdgeInfo): PlaneHandle => new BoundPlane(edge);

  /** The answer, once everything stored so far (what it acknowledges included) is committed. */
  function acknowledged<T>(answer: T): Promise<T> {
    return store.durable().then(() => answer);
  }

  /**
   * `answer` once everything stored so far is committed (see acknowledged) — or, while the store
   * cannot write (now, or from a write that fails meanwhile), what `instead` answers then, unless
   * that is null: an answer that acknowledges nothing the fault holds back is not kept waiting.
   */
  function acknowledgedUnlessFault<T>(answer: T, instead: () => T | null): Promise<T> {
    const now = store.storageFault() === null ? null : instead();
    if (now !== null) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const stop = store.onStorageFault(() => {
        const other = instead();
        if (other === null) return;
        stop();
        resolve(other);
      });
      store.durable().then(
        () => (stop(), resolve(answer)),
        (error) => (stop(), reject(error)),
      );
    });
  }

  // A write that fails for the moment takes back the executions whose starts wait for their
  // creation and refuses those answers, instead of leaving them unanswered while the disk is full.
  const stopWithdrawing = store.onStorageFault(withdrawUnwritten);

  /**
   * A start's answer (see acknowledged), or its refusal when its execution is taken back first: a
   * start waiting for its creation to be written notes how to refuse it on the execution (a
   * deduplicated one, on its original's).
   */
  function startAcknowledged({ result, active }: { result: StartResult; active: Active | null }, edge: EdgeInfo): Promise<StartResult> {
    const id = result.execution.id;
    if (result.deduplicated && (result.details_expired || store.creationCommitted(id))) {
      // A known run_id acknowledges nothing new: while the store cannot write, what is committed
      // of the original answers at once (a client retrying for its lost answer is not kept waiting).
      return acknowledgedUnlessFault(result, () => {
        if (result.details_expired) return result;
        const committed = store.get(id);
        return committed === null ? null : { ...result, execution: committed };
      });
    }
    if (store.creationCommitted(id)) return acknowledged(result);
    const owner = active ?? scheduler.get(id);
    if (owner === undefined) return acknowledged(result);
    return new Promise((resolve, reject) => {
      (owner.refusals ??= []).push({ edge, refuse: reject });
      store.durable().then(() => resolve(result), reject);
    });
  }

  /**
   * After a write that failed for the moment: each execution whose start waits for its creation
   * to be written is taken back (ExecutionStore.withdraw) — its handler cannot have begun, nothing
   * begins before its creation is committed (see begin) — and its starts are refused
   * `unavailable`, as the ones the fault refuses from now on. Kept instead, it would be written
   * and run whenever the disk frees, after its caller gave up on an answer and perhaps started it
   * again.
   */
  function withdrawUnwritten(): void {
    const { waiting, running } = scheduler.pending();
    for (const active of [...waiting, ...running]) {
      const refusals = active.refusals;
      // A committed creation is never taken back (withdraw refuses it): its answers come with the write.
      if (refusals === null || active.handle !== null || active.completed || !store.withdraw(active.id)) continue;
      if (!scheduler.remove(active.id)) letGo(active);
      active.completed = true;
      active.refusals = null;
      for (const timer of active.timers) clock.clearTimeout(timer);
      const refused = storage.withdrawn(`start ${active.capability.id}`, active.id, active.run_id === null ? null : `run_id ${active.run_id}`);
      for (const { edge, refuse } of refusals) refuse(failure(edge, { ...refused, stage: "admit", retryability: "safe", outcome_certainty: "not_applied" }));
    }
  }

  function requireExecution(id: string, edge: EdgeInfo, cannot: string) {
    if (!isExecutionId(id)) throw failure(edge, { error_code: "invalid_input", stage: "validate", message: `"${id}" is not an execution id.` });
    const snapshot = store.get(id);
    if (!snapshot) throw noExecution(edge, id, cannot);
    return snapshot;
  }

  const direct = new DirectCalls({ pool, limits, root, clock, log, admitInput, handle, hostFacts });

  return {
    root,
    limits,
    store,
    capabilities: () => registry.list(),
    capability: (id) => registry.get(id),
    loadErrors: () => registry.loadErrors(),
    lookalikes: () => registry.lookalikes?.() ?? [],
    onCapabilitiesChanged: (listener) => registry.subscribe?.(listener) ?? (() => undefined),
    start,
    cancel,
    call: (id, input, edge, callOptions) => direct.call(id, input, edge, callOptions?.signal),
    handle,
    forceStop,
    hostFacts,
    takeLeftReports: (id) => reports.takeUnheld(id),
    knowRunsWithoutServer(lookup) {
      runsWithoutServer = lookup;
    },
    ranWithoutServer: (id) => markedRunAnswerOf(id),
    whyNotHeld,
    workerFault: () => pool.workerFault(),
    /**
     * Stops the engine: what waits is cancelled (nothing was applied), what runs is stopped and
     * ends `interrupted` with the certainty of its effect — never silently success, never gone.
     */
    async close() {
      if (closed) return;
      closed = true;
      stopWithdrawing();
      // Reported runs go on in their own processes; only their silence timers end here.
      reports.close();
      const { waiting, running } = scheduler.pending();
      // Taken but not dispatched yet (its creation was not committed): it never ran either.
      const held = running.filter((item) => item.handle === null && !item.completed);
      for (const item of [...waiting, ...held]) {
        scheduler.remove(item.id);
        scheduler.finish(item.id);
        item.completed = true;
        for (const timer of item.timers) clock.clearTimeout(timer);
        const failure = buildFailure({
          error_code: "cancelled",
          stage: "queue",
          message: `${item.id} did not start: the process running the engine shut down first.`,
          retryability: "safe",
          outcome_certainty: "not_applied",
          request_id: item.edge.request_id,
          trace_id: item.edge.trace_id,
        });
        writeCompleted(item.id, { state: "cancelled", failure }, 0);
      }
      for (const item of running) item.stop.interrupted = true;
      direct.interrupt();
      await pool.close();
      await Promise.allSettled(running.map((item) => item.done));
    },
  };
}

export type { FailureDescriptor };
