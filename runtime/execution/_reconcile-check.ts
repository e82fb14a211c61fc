import * as v from "valibot";
import type { ReconcileResult } from "../capability/declaration.ts";
import type { RegisteredCapability } from "../capability/registered.ts";
import type { TaskError, WorkerPool } from "../worker/task.ts";
import type { Clock } from "./clock.ts";
import type { Limits } from "./limits.ts";
import type { EdgeInfo } from "./plane.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import { buildFailure, FailureError, newCorrelationId } from "./failure.ts";
import { artifactsDir } from "./artifact-files.ts";
import { maskOf } from "./secret-mask.ts";
import { sanitizeText } from "./text-sanitize.ts";
import { cutText } from "./text-limits.ts";
import { withoutColour } from "./text-colour.ts";

/** The most bytes of evidence kept with a reconciliation; more is recorded as its size only. */
export const EVIDENCE_BYTES = 16 * 1024;

const ResultSchema = v.object({
  outcome: v.picklist(["applied", "not_applied", "unknown"]),
  evidence: v.optional(v.unknown()),
  note: v.optional(v.string()),
});

/** The input a check runs with, and its secrets as the engine collected them when it was admitted (sent and transformed). */
export interface CheckInput {
  value: unknown;
  secrets: readonly string[];
}

/** What running one check needs. */
export interface CheckOptions {
  pool: WorkerPool;
  limits: Pick<Limits, "grace_ms" | "direct_deadline_ms" | "diagnostic_message_bytes">;
  root: string;
  clock: Clock;
  log: (line: string) => void;
}

/**
 * Runs a capability's `reconcile(input, ctx)` for one execution on the pool's direct lane, with
 * the execution's identity in `ctx.execution`, bounded like a direct call: by the capability's
 * `timeout_ms` or `direct_deadline_ms`, the shorter, plus the grace. Answers what it found, bounded
 * as a reconciliation is kept (its evidence and its note), also when nothing is recorded; throws
 * FailureError when the check itself failed.
 */
export async function runCheck(capability: RegisteredCapability, snapshot: ExecutionSnapshot, input: CheckInput, edge: EdgeInfo, options: CheckOptions): Promise<ReconcileResult> {
  const { pool, limits, clock } = options;
  const handle = pool.run(
    {
      capability: capability.id,
      source: capability.source,
      // The code loaded now: a check of a reloaded file runs its current reconcile().
      version: capability.version,
      input: input.value,
      execution: { id: snapshot.id, run_id: snapshot.run_id, session_key: snapshot.session_key, attempt: 1 },
      root: options.root,
      // It reads what the work left behind; it writes nothing (its artifact writes are refused).
      artifacts_dir: artifactsDir(options.root, snapshot.id),
      artifact_limits: { files: 0, bytes: 0, total_bytes: 0, disk_free_floor: 0 },
      entry: "reconcile",
    },
    { lane: "direct" },
  );
  const deadline = Math.min(capability.timeout_ms ?? limits.direct_deadline_ms, limits.direct_deadline_ms);
  let expired = false;
  const timers: unknown[] = [
    clock.setTimeout(() => {
      expired = true;
      handle.cancel();
      timers.push(clock.setTimeout(() => handle.terminate(), limits.grace_ms));
    }, deadline),
  ];
  let outcome;
  try {
    outcome = await handle.outcome;
  } finally {
    for (const timer of timers) clock.clearTimeout(timer);
  }
  // What the check says is stored, shown and logged: a secret of its input never is, wherever it appears (docs/security.md).
  const mask = maskOf(input.secrets);
  if (!outcome.ok) throw new FailureError(mask.value(checkFailure(capability, snapshot, outcome.error, expired, deadline, edge, (line) => options.log(mask.text(line)))));
  const parsed = v.safeParse(ResultSchema, mask.value(outcome.output));
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const where = issue.path?.map((item) => String(item.key)).join(".") ?? "";
    throw new FailureError(
      buildFailure({
        error_code: "internal",
        stage: "run",
        message: `${capability.id}'s reconcile() answered ${describe(outcome.output)}${where ? ` (at ${where}: ${issue.message})` : ""}; it must answer { outcome: "applied" | "not_applied" | "unknown", evidence?, note? }.`,
        suggestion: `Fix reconcile() in ${capability.id}, or settle ${snapshot.id} by hand with an outcome.`,
        request_id: edge.request_id,
        trace_id: edge.trace_id,
      }),
    );
  }
  const result: ReconcileResult = { outcome: parsed.output.outcome };
  if (parsed.output.evidence !== undefined) result.evidence = boundedEvidence(parsed.output.evidence);
  if (parsed.output.note !== undefined) result.note = keptNote(parsed.output.note, limits);
  return result;
}

/**
 * A check's note as the store keeps it in an `execution.reconciled` (sanitizeDraft, then
 * boundDraftTexts: plain, safe to print, cut at `diagnostic_message_bytes`): the answer that
 * shows it, and the message that quotes it, are no larger than what is recorded.
 */
function keptNote(note: string, limits: Pick<Limits, "diagnostic_message_bytes">): string {
  return cutText(withoutColour(sanitizeText(note)), limits.diagnostic_message_bytes).text;
}

/** Evidence as it is kept: itself when its JSON fits EVIDENCE_BYTES, else its size. */
export function boundedEvidence(evidence: unknown): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(evidence);
  } catch {
    return { withheld: "not_json" };
  }
  if (text === undefined) return { withheld: "not_json" };
  const bytes = Buffer.byteLength(text);
  return bytes <= EVIDENCE_BYTES ? JSON.parse(text) : { withheld: "too_large", bytes, limit: EVIDENCE_BYTES };
}

/** The failure of a check that did not answer: the capability's own error, a deadline, or a crash (logged with its stack). */
function checkFailure(capability: RegisteredCapability, snapshot: ExecutionSnapshot, error: TaskError, expired: boolean, deadline: number, edge: EdgeInfo, log: (line: string) => void) {
  const ids = { request_id: edge.request_id, trace_id: edge.trace_id };
  const byHand = `Settle ${snapshot.id} by hand: executions.reconcile with outcome "applied" or "not_applied".`;
  if (!expired && error.kind === "terminated") {
    return buildFailure({ ...ids, error_code: "unavailable", stage: "run", message: `${capability.id}'s reconcile() was stopped: the server is shutting down.`, suggestion: `Ask again once the server is back. ${byHand}` });
  }
  if (expired) {
    return buildFailure({ ...ids, error_code: "deadline_exceeded", stage: "run", message: `${capability.id}'s reconcile() did not answer within ${deadline} ms.`, suggestion: byHand, context: { deadline_ms: deadline } });
  }
  if (error.kind === "capability") {
    return buildFailure({ ...ids, error_code: error.code, stage: "run", message: `${capability.id}'s reconcile() failed: ${error.message}`, suggestion: error.suggestion ?? byHand, context: error.context });
  }
  const correlation_id = newCorrelationId();
  const detail = error.kind === "internal" ? (error.stack ?? error.message) : error.message;
  log(`[docket] ${correlation_id} ${capability.id} reconcile() of ${snapshot.id}: ${detail}`);
  return buildFailure({ ...ids, correlation_id, error_code: "internal", stage: "run", message: `${capability.id}'s reconcile() failed (${error.kind === "internal" ? `it threw ${error.error_class}` : error.kind.replace("_", " ")}).`, suggestion: `${byHand} The correlation id finds the details in the server's log.` });
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}
