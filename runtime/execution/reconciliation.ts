import { executionNotFound, type NotHeld } from "./marked-run-answer.ts";
import type { CapabilityCatalog, RegisteredCapability } from "../capability/registered.ts";
import type { ExecutionStore } from "../store/store.ts";
import type { WorkerPool } from "../worker/task.ts";
import type { Clock } from "./clock.ts";
import type { Limits } from "./limits.ts";
import type { EdgeInfo, ReconcileReceipt, ReconcileRequest } from "./plane.ts";
import type { EventPayload } from "./protocol.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import { buildFailure, FailureError, type FailureOptions } from "./failure.ts";
import { isExecutionId } from "./execution-id.ts";
import { hasSensitive } from "./redaction.ts";
import { IllegalTransitionError, isTerminal } from "./state-machine.ts";
import { runCheck, type CheckInput } from "./_reconcile-check.ts";
import { checkValue, describeProblems, transforms } from "./validate.ts";

/**
 * Real inputs kept for checks, at most this many and this many bytes: an execution with sensitive
 * fields that ends with an unknown outcome keeps its real input here (in memory only, never
 * stored) until it is settled or pushed out by newer ones.
 */
export const REMEMBERED_INPUTS = 256;
export const REMEMBERED_BYTES = 16 * 1024 * 1024;

/** What the reconciler is built from; the engine passes its own. */
export interface ReconcilerOptions {
  store: ExecutionStore;
  registry: CapabilityCatalog;
  pool: WorkerPool;
  limits: Limits;
  root: string;
  clock: Clock;
  log: (line: string) => void;
  /** Why an execution the store does not hold is not here, when it ran in a `docket run` without a server (marked-run-answer.ts). */
  whyNotHeld?: (id: string, cannot: string) => NotHeld | null;
}

/** Settles unknown outcomes (docs/reconciliation.md): by a person, or by the capability's own check. */
export interface Reconciler {
  /** Records `execution.reconciled`, or runs the capability's `reconcile()` first; throws FailureError when it cannot. */
  reconcile(request: ReconcileRequest, edge: EdgeInfo): Promise<ReconcileReceipt>;
  /** Keeps the real input of an execution that just ended with an unknown outcome, and its secrets to mask, for a later check. */
  remember(id: string, input: unknown, secrets: readonly string[]): void;
}

/** Creates the reconciler. Its only state is the bounded map of remembered inputs and the checks running now. */
export function createReconciler(options: ReconcilerOptions): Reconciler {
  const { store, registry, log } = options;
  const inputs = new Map<string, { input: CheckInput; bytes: number }>();
  let rememberedBytes = 0;
  const forget = (id: string) => {
    const kept = inputs.get(id);
    if (kept === undefined) return;
    rememberedBytes -= kept.bytes;
    inputs.delete(id);
  };
  const checking = new Set<string>();

  const failure = (edge: EdgeInfo, rest: Omit<FailureOptions, "request_id" | "trace_id">) => new FailureError(buildFailure({ ...rest, request_id: edge.request_id, trace_id: edge.trace_id }));

  /** The execution, if it is one whose outcome may be settled now; a clear refusal otherwise. */
  function settleable(id: string, edge: EdgeInfo): ExecutionSnapshot {
    if (!isExecutionId(id)) throw failure(edge, { error_code: "invalid_input", stage: "validate", message: `"${id}" is not an execution id (x-<yyyymmddThhmmssZ>-<8 hex>).` });
    // Decided on the live view; the answer waits until it is committed (docs/durability.md).
    const snapshot = store.current(id);
    if (!snapshot) throw failure(edge, { stage: "validate", ...executionNotFound(id, options.whyNotHeld?.(id, "cannot reconcile it") ?? null) });
    // Nothing in the request is wrong here: the execution is not one to settle (now, or ever), so
    // each refusal says what to do instead of the default "correct the input".
    const refuse = (reason: string, message: string, suggestion: string) => failure(edge, { error_code: "invalid_input", stage: "admit", message, suggestion, context: { id, reason, state: snapshot.state } });
    if (!isTerminal(snapshot.state)) {
      throw refuse("not_finished", `${id} is still ${snapshot.state}; only an execution that ended with an unknown outcome can be reconciled.`, `Wait for it to end (docket executions events ${id} --follow); reconcile it then only if its outcome is unknown.`);
    }
    const settled = snapshot.reconciliation;
    if (settled) {
      throw refuse("already_reconciled", `${id} was already reconciled as ${settled.outcome} (${settled.method}, at ${settled.at}); a reconciliation is never replaced.`, `Nothing to do: the first reconciliation stands (docket executions show ${id} shows it).`);
    }
    const certainty = snapshot.failure?.outcome_certainty ?? (snapshot.state === "succeeded" ? "applied" : "not_applied");
    if (certainty !== "unknown") {
      throw refuse("outcome_known", `${id} ${snapshot.state}${snapshot.failure ? ` (${snapshot.failure.error_code})` : ""} with outcome ${certainty}, not unknown: there is nothing to reconcile.`, "Nothing to do: its outcome is known already.");
    }
    return snapshot;
  }

  function record(snapshot: ExecutionSnapshot, data: EventPayload<"execution.reconciled">, edge: EdgeInfo): ReconcileReceipt["reconciliation"] {
    try {
      store.append(snapshot.id, [{ type: "execution.reconciled", data }]);
    } catch (error) {
      // Someone settled it between the check and now: the first reconciliation stands.
      if (error instanceof IllegalTransitionError) throw failure(edge, { error_code: "invalid_input", stage: "complete", message: `${snapshot.id} cannot be reconciled now: ${error.message}.`, context: { id: snapshot.id, reason: "refused" } });
      throw error;
    }
    forget(snapshot.id);
    log(`[docket] ${snapshot.id} (${snapshot.capability}) reconciled as ${data.outcome} (${data.method}) by ${describeActor(data.actor)}${data.note ? `: ${data.note}` : ""}`);
    return store.current(snapshot.id)?.reconciliation ?? null;
  }

  /** The input the check runs with: the real one this process kept, else the stored one when nothing in it was redacted. */
  function checkInput(snapshot: ExecutionSnapshot, capability: RegisteredCapability, edge: EdgeInfo): CheckInput {
    const kept = inputs.get(snapshot.id);
    if (kept !== undefined) return kept.input;
    const byHand = `Check by hand and settle it: executions.reconcile {"id":"${snapshot.id}","outcome":"applied"|"not_applied","note":"…"}.`;
    const cannot = (why: string, reason: string) =>
      failure(edge, { error_code: "not_runnable", stage: "admit", message: `Cannot run ${capability.id}'s reconcile() for ${snapshot.id}: ${why}`, suggestion: byHand, context: { id: snapshot.id, reason } });
    if (snapshot.details_expired) throw cannot("its details, the input included, expired.", "details_expired");
    if (hasSensitive(capability.input_schema)) {
      throw cannot("its input has sensitive fields, which are never stored, and this process no longer holds the real values (it restarted, or the run was reported by docket run).", "input_not_kept");
    }
    const input = snapshot.input as { withheld?: unknown } | null;
    if (input !== null && typeof input === "object" && "withheld" in input) throw cannot("its input was too large to keep.", "input_withheld");
    // The input is stored as it was sent (docs/security.md): the check gets what the schema's
    // transforms make of it, as the handler did.
    if (!transforms(capability.def.input)) return { value: snapshot.input, secrets: [] };
    const checked = checkValue(capability.def.input, snapshot.input, "input");
    if (!checked.ok) throw cannot(`its stored input no longer passes its input schema (${describeProblems(checked.problems)}).`, "input_refused");
    return { value: checked.value, secrets: [] };
  }

  async function check(snapshot: ExecutionSnapshot, request: ReconcileRequest, edge: EdgeInfo): Promise<ReconcileReceipt> {
    const capability = registry.get(snapshot.capability);
    const byHand = `Settle it by hand: executions.reconcile with outcome "applied" or "not_applied" and a note saying what you found.`;
    if (!capability) throw failure(edge, { error_code: "not_runnable", stage: "admit", message: `Cannot check ${snapshot.id}: ${snapshot.capability} is not loaded in this process.`, suggestion: byHand, context: { id: snapshot.id, reason: "not_loaded" } });
    if (typeof capability.def.reconcile !== "function") {
      throw failure(edge, { error_code: "not_runnable", stage: "admit", message: `Cannot check ${snapshot.id}: ${capability.id} declares no reconcile(input, ctx), so only a person can say whether it took effect.`, suggestion: byHand, context: { id: snapshot.id, reason: "no_reconcile" } });
    }
    const input = checkInput(snapshot, capability, edge);
    if (checking.has(snapshot.id)) throw failure(edge, { error_code: "invalid_input", stage: "admit", message: `A check of ${snapshot.id} is already running; wait for its answer.`, suggestion: `Wait for that check: its answer is recorded on ${snapshot.id} (docket executions show ${snapshot.id}).`, context: { id: snapshot.id, reason: "check_running" } });
    checking.add(snapshot.id);
    let result;
    try {
      result = await runCheck(capability, snapshot, input, edge, options);
    } finally {
      checking.delete(snapshot.id);
    }
    const found = { outcome: result.outcome, ...(result.evidence === undefined ? {} : { evidence: result.evidence }), ...(result.note === undefined ? {} : { note: result.note }) };
    if (result.outcome === "unknown") {
      return { id: snapshot.id, state: snapshot.state, reconciled: false, reconciliation: null, check: found, message: `${capability.id}'s check could not tell whether ${snapshot.id} took effect${result.note ? ` (${result.note})` : ""}; nothing was recorded. ${byHand}` };
    }
    const note = request.note ?? result.note;
    const data: EventPayload<"execution.reconciled"> = { outcome: result.outcome, method: "check", actor: edge.actor, ...(note === undefined ? {} : { note }), ...(result.evidence === undefined ? {} : { evidence: result.evidence }) };
    const reconciliation = record(settleable(snapshot.id, edge), data, edge);
    return { id: snapshot.id, state: snapshot.state, reconciled: true, reconciliation, check: found, message: `${capability.id}'s check found ${snapshot.id} ${result.outcome === "applied" ? "took effect" : "did not take effect"}; recorded as ${result.outcome}.` };
  }

  return {
    async reconcile(request, edge) {
      const snapshot = settleable(request.id, edge);
      if (request.outcome === undefined) return check(snapshot, request, edge);
      const data: EventPayload<"execution.reconciled"> = { outcome: request.outcome, method: "manual", actor: edge.actor, ...(request.note === undefined ? {} : { note: request.note }) };
      const reconciliation = record(snapshot, data, edge);
      return { id: snapshot.id, state: snapshot.state, reconciled: true, reconciliation, check: null, message: `${snapshot.id} is reconciled as ${request.outcome}; its state stays ${snapshot.state}, and its artifacts may now be released.` };
    },
    remember(id, input, secrets) {
      forget(id);
      let bytes: number;
      try {
        bytes = Buffer.byteLength(JSON.stringify(input) ?? "");
      } catch {
        return;
      }
      if (bytes > REMEMBERED_BYTES) return;
      inputs.set(id, { input: { value: input, secrets }, bytes });
      rememberedBytes += bytes;
      // The oldest goes first: a Map iterates in insertion order.
      while (inputs.size > REMEMBERED_INPUTS || rememberedBytes > REMEMBERED_BYTES) forget(inputs.keys().next().value!);
    },
  };
}

/** `http`, `cli (pid 4242)`, `mcp (claude)`: who settled it, for the server's log. */
function describeActor(actor: EdgeInfo["actor"]): string {
  if (actor.kind === "cli") return `cli (pid ${actor.pid})`;
  if (actor.kind === "mcp" && actor.client) return `mcp (${actor.client})`;
  return actor.kind;
}
