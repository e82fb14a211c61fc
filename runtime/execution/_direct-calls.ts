import type { HostFacts } from "../capability/declaration.ts";
import { callsDirectly, type RegisteredCapability } from "../capability/registered.ts";
import type { TaskOutcome, WorkerPool, WorkerTask } from "../worker/task.ts";
import type { Clock } from "./clock.ts";
import type { Limits } from "./limits.ts";
import type { EdgeInfo, PlaneHandle } from "./plane.ts";
import { buildFailure, CHECK_FIRST_DIRECT, FailureError, RECONCILE_FIRST, type FailureDescriptor } from "./failure.ts";
import { canonicalJson } from "./canonical-json.ts";
import { completionOf, type StopCircumstances } from "./_completion.ts";
import { armHandlerTimeout } from "./_handler-timeout.ts";
import { mainThreadContext } from "./_main-context.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import type { SecretMask } from "./secret-mask.ts";
import { thrownClass, thrownDetail } from "./thrown.ts";
import { boundFailureTexts } from "./text-limits.ts";
import { sanitizeLine } from "./text-sanitize.ts";
import { StoreDamagedError, storeDamagedRemedy } from "../store/store.ts";

/** What direct calls need from the engine. */
export interface DirectCallsOptions {
  pool: WorkerPool;
  limits: Limits;
  root: string;
  clock: Clock;
  log: (line: string) => void;
  /** The capability and its checked input; `runs` throws first when the capability never runs this way. */
  admitInput(id: string, input: unknown, edge: EdgeInfo, verb: string, runs: (capability: RegisteredCapability) => void): AdmittedInput;
  handle(edge: EdgeInfo): PlaneHandle;
  hostFacts(): HostFacts;
}

/** An input the engine took, as a call or an execution needs it. */
export interface AdmittedInput {
  capability: RegisteredCapability;
  /** What the handler gets: the input as its schema's check, transforms included, gave it back. */
  input: unknown;
  /** The input as the client sent it, checked: what the input schema describes, and what is redacted and stored (docs/security.md). */
  sent: unknown;
  /** Its sensitive values, sent and transformed: masked in every text the run produces. */
  secrets: string[];
  /** The mask of those values. */
  mask: SecretMask;
  /** The input exactly as the client gave it, before any default or transform: a run's identity. */
  given: unknown;
}

/** The signal of a call without a caller that can leave; nothing ever aborts it. */
const NEVER_ABORTED = new AbortController().signal;

/** What `admit` found: the capability, its checked input, and the mask of its secrets. */
interface Admitted {
  capability: RegisteredCapability;
  input: unknown;
  mask: SecretMask;
  secrets: string[];
}

/** How a plane call stopped: never by the engine (see callInMain). */
const NOT_STOPPED: StopCircumstances = Object.freeze({ cancelRequested: false, deadlineExpired: false, forced: false, deadlineMs: null });

/** Bounded so that a cached capability called with ever-new inputs cannot grow memory without end. */
const CACHE_ENTRIES = 1000;

/**
 * Direct calls (docs/architecture.md): no identity, no events. Plane capabilities run here in the main thread;
 * work capabilities on the pool's direct lane, so they never wait behind long executions.
 */
export class DirectCalls {
  private readonly cache = new Map<string, { expires: number; output: unknown }>();
  /** How each call on a worker now is stopping: the engine's close marks them interrupted. */
  private readonly running = new Set<StopCircumstances>();

  constructor(private readonly options: DirectCallsOptions) {}

  /**
   * The process is stopping: every call on a worker now ends `interrupted` (503), as an execution
   * does — not `internal`, "a bug", when the pool closes under it (API tester, session 43).
   */
  interrupt(): void {
    for (const stop of this.running) stop.interrupted = true;
  }

  /**
   * Calls a capability; `signal` aborts when the caller went away, which cancels the call. Not an
   * async function: a plane call (an HTTP `executions.start`) settles in as few promise turns as
   * its handler needs; every failure is still a rejection, never a throw.
   */
  call(id: string, rawInput: unknown, edge: EdgeInfo, signal?: AbortSignal): Promise<unknown> {
    let admitted: Admitted;
    try {
      admitted = this.admit(id, rawInput, edge);
    } catch (error) {
      return Promise.reject(error instanceof FailureError ? this.bounded(error.failure) : error);
    }
    const { capability, input, mask, secrets } = admitted;
    if (capability.plane) return this.callInMain(capability, input, edge, mask, signal);
    return this.callWork(capability, input, edge, mask, secrets, signal);
  }

  /** The capability, its checked input and the mask of its secrets; throws what refuses the call. */
  private admit(id: string, rawInput: unknown, edge: EdgeInfo): Admitted {
    const { capability, input, secrets, mask } = this.options.admitInput(id, rawInput, edge, "call", (found) => {
      if (callsDirectly(found)) return;
      throw new FailureError(
        buildFailure({
          error_code: "not_runnable",
          stage: "validate",
          message: `${found.id} runs only as an execution (execution: "always"); it has no direct call.`,
          suggestion: `Start it as an execution: executions.start {"capability":"${found.id}"} (docket run ${found.id}).`,
          context: { capability: found.id },
          request_id: edge.request_id,
          trace_id: edge.trace_id,
        }),
      );
    });
    return { capability, input, mask, secrets };
  }

  /** A work capability: from the cache when its declaration allows and its input holds no secret, else on the direct lane. */
  private async callWork(capability: RegisteredCapability, input: unknown, edge: EdgeInfo, mask: SecretMask, secrets: string[], signal?: AbortSignal): Promise<unknown> {
    // The version is part of the key: an edited file's output is never served from its old code.
    // A call whose input holds a secret is never answered from the cache nor kept in it: how soon
    // the answer came would tell whether a guessed secret was used in the last ttl_ms, and the key
    // would hold the secret (docs/handler-api.md).
    const key = capability.cache && secrets.length === 0 ? `${capability.id}\n${capability.version}\n${canonicalJson(input)}` : null;
    if (key) {
      const hit = this.cache.get(key);
      if (hit && hit.expires > this.options.clock.monotonic()) return structuredClone(hit.output);
      this.cache.delete(key);
    }
    const output = await this.callOnWorker(capability, input, edge, mask, secrets, signal);
    if (key && capability.cache) {
      if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { expires: this.options.clock.monotonic() + capability.cache.ttl_ms, output: structuredClone(output) });
    }
    return output;
  }

  /**
   * A plane capability, in the main thread. Its answer is settled in the turn its handler's promise
   * settles (a synchronous handler's at once): the async functions that wrapped it cost an HTTP
   * start promise turns and allocations, and code the JIT had to warm up in every new server.
   */
  private callInMain(capability: RegisteredCapability, input: unknown, edge: EdgeInfo, mask: SecretMask, signal?: AbortSignal): Promise<unknown> {
    const settled = (outcome: TaskOutcome) => this.settle(capability, outcome, NOT_STOPPED, edge, mask);
    let result: unknown;
    try {
      // A plane handler runs in the main thread and cannot be stopped by force; it is told, that is
      // all: the caller's own signal says it (a mirror of it cost a controller and a listener per call).
      result = capability.def.handler(input as never, mainThreadContext(this.options.handle(edge), this.options.hostFacts, signal ?? NEVER_ABORTED));
    } catch (error) {
      return settledPromise(() => settled(outcomeOfThrown(error, edge)));
    }
    if (!isThenable(result)) return settledPromise(() => settled({ ok: true, output: result }));
    return Promise.resolve(result).then(
      (output) => settled({ ok: true, output }),
      (error) => settled(outcomeOfThrown(error, edge)),
    );
  }

  /**
   * A work capability on the direct lane, bounded like an execution (docs/containment.md): past
   * its deadline (`direct_deadline_ms` from the call, or the capability's `timeout_ms` from its
   * handler's start, the earlier), or once its caller went away, it is cancelled; `grace_ms` later
   * its worker is terminated and replaced, so a handler that never returns cannot hold the lane.
   */
  private async callOnWorker(capability: RegisteredCapability, input: unknown, edge: EdgeInfo, mask: SecretMask, secrets: string[], signal?: AbortSignal): Promise<unknown> {
    const { pool, root, clock, limits } = this.options;
    // Two bounds, the earlier wins: direct_deadline_ms from the call (the caller's wait, time spent
    // waiting for the direct worker included), the capability's timeout_ms from its handler's start
    // (_handler-timeout.ts) — which can win only when it is the shorter.
    const timeoutMs = capability.timeout_ms !== null && capability.timeout_ms < limits.direct_deadline_ms ? capability.timeout_ms : null;
    const task: WorkerTask = {
      capability: capability.id,
      source: capability.source,
      version: capability.version,
      input,
      secrets,
      execution: null,
      root,
      artifacts_dir: null,
      artifact_limits: { files: limits.artifacts_per_execution, bytes: limits.artifact_bytes, total_bytes: limits.artifacts_total_bytes, disk_free_floor: 0 },
      // Half the handler's grace: a child is killed while the handler still has time to end on its own.
      kill_grace_ms: Math.floor(limits.grace_ms / 2),
      output_bytes: limits.output_bytes,
    };
    // Its worker notes when the handler begins, which timeout_ms counts from.
    if (timeoutMs !== null) task.timed = true;
    const handle = pool.run(task, { lane: "direct" });
    const stop: StopCircumstances = { cancelRequested: false, deadlineExpired: false, forced: false, deadlineMs: limits.direct_deadline_ms, deadlineSource: "direct_deadline_ms" };
    const timers: unknown[] = [];
    let stopping = false;
    const stopHandler = () => {
      handle.cancel();
      if (stopping) return;
      stopping = true;
      timers.push(
        clock.setTimeout(() => {
          stop.forced = true;
          handle.terminate();
        }, limits.grace_ms),
      );
    };
    const expire = (source: "direct_deadline_ms" | "timeout_ms", ms: number) => {
      if (stop.deadlineExpired) return;
      stop.deadlineExpired = true;
      stop.deadlineMs = ms;
      stop.deadlineSource = source;
      stopHandler();
    };
    timers.push(clock.setTimeout(() => expire("direct_deadline_ms", limits.direct_deadline_ms), limits.direct_deadline_ms));
    if (timeoutMs !== null) armHandlerTimeout(clock, handle, timeoutMs, timers, () => expire("timeout_ms", timeoutMs));
    const callerGone = () => {
      stop.cancelRequested = true;
      stopHandler();
    };
    if (signal?.aborted) callerGone();
    else signal?.addEventListener("abort", callerGone, { once: true });
    this.running.add(stop);
    try {
      return this.settle(capability, await handle.outcome, stop, edge, mask);
    } finally {
      this.running.delete(stop);
      for (const timer of timers) clock.clearTimeout(timer);
      signal?.removeEventListener("abort", callerGone);
    }
  }

  /** Output checked, or the failure thrown: the same conversion as an execution's completion. */
  private settle(capability: RegisteredCapability, outcome: TaskOutcome, stop: StopCircumstances, edge: EdgeInfo, mask: SecretMask): unknown {
    const completion = completionOf(capability, outcome, stop, edge, mask);
    if (completion.state === "succeeded") return completion.output;
    if (completion.stack) this.options.log(`[docket] ${completion.failure.correlation_id} ${capability.id} (direct call): ${completion.stack}`);
    throw this.bounded(completion.failure);
  }

  /** A call's failure as it leaves the plane: its texts within failure_message_bytes, as an execution's are. */
  private bounded(failure: FailureDescriptor): FailureError {
    const told = failure.suggestion === RECONCILE_FIRST ? { ...failure, suggestion: CHECK_FIRST_DIRECT } : failure;
    return new FailureError(boundFailureTexts(told, this.options.limits.failure_message_bytes));
  }
}

/** What a plane handler threw, as an outcome; a FailureError is the answer itself and is thrown on, as is a damaged store's (unavailable, not a bug). */
function outcomeOfThrown(error: unknown, edge: EdgeInfo): TaskOutcome {
  if (error instanceof FailureError) throw error;
  if (error instanceof StoreDamagedError) {
    throw new FailureError(
      buildFailure({
        error_code: "unavailable",
        stage: "run",
        message: error.message,
        retryability: "never",
        suggestion: storeDamagedRemedy(error.path),
        context: { reason: "store_damaged" },
        request_id: edge.request_id,
        trace_id: edge.trace_id,
      }),
    );
  }
  if (CapabilityError.is(error)) {
    const { code, message, context, retryability, suggestion, outcome_certainty } = error;
    // Safe to print before its secrets are masked, as in a worker (worker-entry.ts).
    return { ok: false, error: { kind: "capability", code, message: sanitizeLine(message), context, retryability, suggestion: suggestion === undefined ? undefined : sanitizeLine(suggestion), outcome_certainty } };
  }
  return { ok: false, error: { kind: "internal", error_class: thrownClass(error), message: thrownDetail(error), stack: null } };
}

/** `value()` as a promise: resolved with what it returns, rejected with what it throws. */
function settledPromise<T>(value: () => T): Promise<T> {
  try {
    return Promise.resolve(value());
  } catch (error) {
    return Promise.reject(error);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}
