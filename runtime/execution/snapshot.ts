import type { Actor, CancelReason } from "./protocol.ts";
import type { ExecutionState } from "./state-machine.ts";
import type { FailureDescriptor } from "./failure.ts";
import type { DiagnosticInput, LogLevel } from "../capability/declaration.ts";

/** One step as a snapshot shows it. */
export type StepSnapshot = {
  id: string;
  title: string;
  state: "running" | "succeeded" | "failed";
  message: string | null;
  started_at: string;
  finished_at: string | null;
}

/** One log line kept in a snapshot's bounded tail. */
export type LogLineSnapshot = {
  sequence: number;
  timestamp: string;
  level: LogLevel;
  message: string;
  truncated?: boolean;
}

/**
 * How an unknown outcome was settled (docs/reconciliation.md): by a person (`manual`), by the
 * capability's own `reconcile()` (`check`), or by the run that came back (`run`).
 */
export type ReconciliationSnapshot = {
  outcome: "applied" | "not_applied";
  method: "manual" | "check" | "run";
  actor: Actor;
  note: string | null;
  /** When it was settled: the timestamp of its `execution.reconciled` event. */
  at: string;
  /** What the check or the run found, as they said it (bounded JSON). */
  evidence?: unknown;
}

/** What reading one execution returns (docs/protocol.md). */
export type ExecutionSnapshot = {
  id: string;
  capability: string;
  state: ExecutionState;
  actor: Actor;
  repository: string;
  run_id: string | null;
  session_key: string | null;
  request_id: string;
  trace_id: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
  cancellable: boolean;
  effect: "read" | "write";
  input: unknown;
  /** A digest of the code that ran (`sha256:…`, `docket@<version>` for a built-in); null when not known. */
  capability_version: string | null;
  output?: unknown;
  failure: FailureDescriptor | null;
  steps: StepSnapshot[];
  progress: { current: number; total: number | null; message: string | null } | null;
  diagnostics: DiagnosticInput[];
  diagnostics_dropped: number;
  /** Steps dropped from `steps` past the `steps_retained` bound: the oldest finished first, the oldest running once none is finished. */
  steps_dropped: number;
  /** How many of the `steps_dropped` had failed (absent from snapshots stored before it was counted). */
  steps_dropped_failed?: number;
  log: LogLineSnapshot[];
  log_dropped: number;
  last_sequence: number;
  retained_from: number;
  truncated: boolean;
  /**
   * Present once the execution was asked to stop (its `execution.cancel_requested`, kept when
   * retention lets the event go): by whom, when, and why when nobody asked — a deadline passed,
   * or the handler stopped itself (absent from snapshots stored before it was kept).
   */
  cancel_requested?: { actor: Actor; at: string; reason?: CancelReason };
  /** Present once an unknown outcome was settled; the state itself never moves after completion. */
  reconciliation?: ReconciliationSnapshot;
  /** True once the durable store dropped the details of a long-finished execution; identity stays. */
  details_expired?: boolean;
  links: { self: string; events: string; socket: string; cockpit: string };
}

/** The links every snapshot carries, relative to the server's origin. */
export function executionLinks(id: string): ExecutionSnapshot["links"] {
  const q = encodeURIComponent(id);
  return {
    self: `/api/v1/executions/get?id=${q}`,
    events: `/api/v1/executions/events?id=${q}`,
    socket: `/events?execution=${q}`,
    cockpit: `/cockpit/executions/${q}`,
  };
}

/**
 * What is left of an execution known only by its run identity: forgotten past
 * `executions_retained`, so neither its state nor its details are kept (docs/limits.md).
 */
export type ExpiredExecution = {
  id: string;
  capability: string;
  run_id: string;
  details_expired: true;
  links: ExecutionSnapshot["links"];
}

/** The identity-only answer for a run whose execution is gone. */
export function expiredExecution(identity: { execution_id: string; capability: string; run_id: string }): ExpiredExecution {
  return { id: identity.execution_id, capability: identity.capability, run_id: identity.run_id, details_expired: true, links: executionLinks(identity.execution_id) };
}
