import type { HostFacts } from "../capability/declaration.ts";
import { callsDirectly, type RegisteredCapability } from "../capability/registered.ts";
import type { TaskOutcome, WorkerPool } from "../worker/task.ts";
import type { Clock } from "./clock.ts";
import type { Limits } from "./limits.ts";
import type { EdgeInfo, PlaneHandle } from "./plane.ts";
import { buildFailure, FailureError } from "./failure.ts";
import { canonicalJson } from "./canonical-json.ts";
import { completionOf, type StopCircumstances } from "./_completion.ts";
import { mainThreadContext } from "./_main-context.ts";
import { CapabilityError } from "../capability/capability-error.ts";
import { maskForInput, type SecretMask } from "./secret-mask.ts";
import { thrownClass, thrownDetail } from "./thrown.ts";

/** What direct calls need from the engine. */
export interface DirectCallsOptions {
  pool: WorkerPool;
  limits: Limits;
  root: string;
  clock: Clock;
  log: (line: string) => void;
  admitInput(id: string, input: unknown, edge: EdgeInfo, verb: string): { capability: RegisteredCapability; input: unknown };
  handle(edge: EdgeInfo): PlaneHandle;
  hostFacts(): HostFacts;
}

/** The signal of a call without a caller that can leave; nothing ever aborts it. */
const NEVER_ABORTED = new AbortController().signal;

/** Bounded so that a cached capability called with ever-new inputs cannot grow memory without end. */
const CACHE_ENTRIES = 1000;

/**
 * Direct calls (docs/architecture.md): no identity, no events. Plane capabilities run here in the main thread;
 * work capabilities on the pool's direct lane, so they never wait behind long executions.
 */
export class DirectCalls {
  private readonly cache = new Map<string, { expires: number; output: unknown }>();

  constructor(private readonly options: DirectCallsOptions) {}

  /** Calls a capability; `signal` aborts when the caller went away, which cancels the call. */
  async call(id: string, rawInput: unknown, edge: EdgeInfo, signal?: AbortSignal): Promise<unknown> {
    const { capability, input } = this.options.admitInput(id, rawInput, edge, "call");
    if (!callsDirectly(capability)) {
      throw new FailureError(
        buildFailure({
          error_code: "not_runnable",
          stage: "validate",
          message: `${capability.id} runs only as an execution (execution: "always"); it has no direct call.`,
          suggestion: `Start it as an execution: executions.start {"capability":"${capability.id}"} (docket run ${capability.id}).`,
          context: { capability: capability.id },
          request_id: edge.request_id,
          trace_id: edge.trace_id,
        }),
      );
    }
    const { mask, secrets } = maskForInput(capability.input_schema, input);
    if (capability.plane) return this.callInMain(capability, input, edge, mask, signal);
    // The version is part of the key: an edited file's output is never served from its old code.
    const key = capability.cache ? `${capability.id}\n${capability.version}\n${canonicalJson(input)}` : null;
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

  private async callInMain(capability: RegisteredCapability, input: unknown, edge: EdgeInfo, mask: SecretMask, signal?: AbortSignal): Promise<unknown> {
    // A plane handler runs in the main thread and cannot be stopped by force; it is told, that is
    // all: the caller's own signal says it (a mirror of it cost a controller and a listener per call).
    const ctx = mainThreadContext(this.options.handle(edge), this.options.hostFacts, signal ?? NEVER_ABORTED);
    let outcome: TaskOutcome;
    try {
      outcome = { ok: true, output: await capability.def.handler(input as never, ctx) };
    } catch (error) {
      if (error instanceof FailureError) throw error;
      if (CapabilityError.is(error)) {
        const { code, message, context, retryability, suggestion, outcome_certainty } = error;
        outcome = { ok: false, error: { kind: "capability", code, message, context, retryability, suggestion, outcome_certainty } };
      } else {
        outcome = { ok: false, error: { kind: "internal", error_class: thrownClass(error), message: thrownDetail(error), stack: null } };
      }
    }
    return this.settle(capability, outcome, { cancelRequested: false, deadlineExpired: false, forced: false, deadlineMs: null }, edge, mask);
  }

  /**
   * A work capability on the direct lane, bounded like an execution (docs/containment.md): past
   * its deadline (the capability's `timeout_ms` or `direct_deadline_ms`, the shorter), or once its
   * caller went away, it is cancelled; `grace_ms` later its worker is terminated and replaced, so
   * a handler that never returns cannot hold the lane.
   */
  private async callOnWorker(capability: RegisteredCapability, input: unknown, edge: EdgeInfo, mask: SecretMask, secrets: string[], signal?: AbortSignal): Promise<unknown> {
    const { pool, root, clock, limits } = this.options;
    const handle = pool.run(
      {
        capability: capability.id,
        source: capability.source,
        version: capability.version,
        input,
        secrets,
        execution: null,
        root,
        artifacts_dir: null,
        artifact_limits: { files: limits.artifacts_per_execution, bytes: limits.artifact_bytes, total_bytes: limits.artifacts_total_bytes },
      // Half the handler's grace: a child is killed while the handler still has time to end on its own.
      kill_grace_ms: Math.floor(limits.grace_ms / 2),
      },
      { lane: "direct" },
    );
    // The capability's own timeout_ms wins when it is the shorter bound.
    const own = capability.timeout_ms !== null && capability.timeout_ms <= limits.direct_deadline_ms;
    const deadlineMs = own ? capability.timeout_ms! : limits.direct_deadline_ms;
    const stop: StopCircumstances = { cancelRequested: false, deadlineExpired: false, forced: false, deadlineMs, deadlineSource: own ? "timeout_ms" : "direct_deadline_ms" };
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
    timers.push(
      clock.setTimeout(() => {
        stop.deadlineExpired = true;
        stopHandler();
      }, deadlineMs),
    );
    const callerGone = () => {
      stop.cancelRequested = true;
      stopHandler();
    };
    if (signal?.aborted) callerGone();
    else signal?.addEventListener("abort", callerGone, { once: true });
    try {
      return this.settle(capability, await handle.outcome, stop, edge, mask);
    } finally {
      for (const timer of timers) clock.clearTimeout(timer);
      signal?.removeEventListener("abort", callerGone);
    }
  }

  /** Output checked, or the failure thrown: the same conversion as an execution's completion. */
  private settle(capability: RegisteredCapability, outcome: TaskOutcome, stop: StopCircumstances, edge: EdgeInfo, mask: SecretMask): unknown {
    const completion = completionOf(capability, outcome, stop, edge, mask);
    if (completion.state === "succeeded") return completion.output;
    if (completion.stack) this.options.log(`[docket] ${completion.failure.correlation_id} ${capability.id} (direct call): ${completion.stack}`);
    throw new FailureError(completion.failure);
  }
}
