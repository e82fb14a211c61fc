import type { Actor, ExecutionEvent } from "./protocol.ts";
import type { ExecutionSnapshot, ExpiredExecution, ReconciliationSnapshot } from "./snapshot.ts";
import type { Limits } from "./limits.ts";
import type { ExecutionState } from "./state-machine.ts";
import type { ExecutionStore } from "../store/store.ts";
import type { MarkedRunAnswer, NotHeld } from "./marked-run-answer.ts";
import type { LoadError, RegisteredCapability } from "../capability/registered.ts";
import type { LookalikeFile } from "../capability/_lookalike-files.ts";
import type { ProtocolDocument } from "./protocol-document.ts";
import type { ExecutionReport, ReportAnswer } from "./report-protocol.ts";
import type { WorkerFault } from "../worker/task.ts";

/** Who asked, as the edge (HTTP, MCP, CLI, cockpit) established it. The engine never invents these. */
export interface EdgeInfo {
  actor: Actor;
  request_id: string;
  trace_id: string;
}

/** `executions.start`'s request. */
export interface StartRequest {
  capability: string;
  input: unknown;
  run_id?: string;
  session_key?: string;
  deadline_ms?: number;
}

/** Options of a direct call. */
export interface CallOptions {
  /** Aborted when the caller went away (HTTP client disconnected, MCP request cancelled): the call is cancelled. */
  signal?: AbortSignal;
}

/** `executions.start`'s answer. */
export interface StartResult {
  /** The new execution (queued), or the original one of a known run_id — only its identity when its details are gone. */
  execution: ExecutionSnapshot | ExpiredExecution;
  deduplicated: boolean;
  /** Set on a deduplicated start whose original execution is known by its identity alone (docs/limits.md). */
  details_expired?: true;
}

/** `executions.cancel`'s receipt: what is true now; the terminal state is observed, not promised. */
export interface CancelReceipt {
  id: string;
  /** The execution's state; while `recorded` is false, the last one the store wrote. */
  state: ExecutionState;
  cancellable: boolean;
  requested: boolean;
  /**
   * False while the store cannot write (docs/durability.md, "Storage faults"): the handler was
   * asked already, and the request is written once the store can; a crash before then takes it back.
   */
  recorded: boolean;
  message: string;
}

/** `executions.reconcile`'s request: with `outcome` a person settles it; without, the capability's `reconcile()` checks. */
export interface ReconcileRequest {
  id: string;
  outcome?: "applied" | "not_applied";
  note?: string;
}

/** What `executions.reconcile` answers: whether it is settled now, and how. */
export interface ReconcileReceipt {
  id: string;
  state: ExecutionState;
  /** True when this call recorded `execution.reconciled`. */
  reconciled: boolean;
  /** The reconciliation the execution holds now (this call's, or none when the check could not tell). */
  reconciliation: ReconciliationSnapshot | null;
  /** What the capability's check found, also when it could not tell (`outcome: "unknown"`). */
  check: { outcome: "applied" | "not_applied" | "unknown"; evidence?: unknown; note?: string } | null;
  message: string;
}

/**
 * The execution plane as projections and plane capabilities see it: the registry, the engine's
 * operations and the store's read side. Nothing here hands out engine internals.
 */
export interface ExecutionPlane {
  readonly root: string;
  readonly limits: Limits;
  readonly store: ExecutionStore;
  capabilities(): RegisteredCapability[];
  capability(id: string): RegisteredCapability | null;
  loadErrors(): LoadError[];
  /** Files of the capability folders that look like capability files but are not loaded (a subfolder, a .tsx), and why. */
  lookalikes?(): LookalikeFile[];
  /**
   * Calls `listener` after the capabilities were reloaded (docs/authoring.md, "Live reload"), once
   * every surface already reads the new ones; returns the unsubscribe. Absent: they never change.
   */
  onCapabilitiesChanged?(listener: () => void): () => void;
  /** Validates, redacts, admits and queues; answers at once. Throws FailureError. */
  start(request: StartRequest, edge: EdgeInfo): StartResult;
  cancel(id: string, edge: EdgeInfo): CancelReceipt;
  /**
   * A direct call: validated input → handler (worker lane for work capabilities) → validated
   * output, within `direct_deadline_ms`. Throws FailureError.
   */
  call(capability: string, input: unknown, edge: EdgeInfo, options?: CallOptions): Promise<unknown>;
  /** The same plane bound to one caller, as plane capabilities receive it. */
  handle(edge: EdgeInfo): PlaneHandle;
  /** A lane none of whose workers could start, or null (`/healthz`). Absent: the plane runs no workers of its own. */
  workerFault?(): WorkerFault | null;
  /** An execution a `docket run` ran without a server, as its mark tells it (marked-run-answer.ts); null for any other. */
  ranWithoutServer?(id: string): MarkedRunAnswer | null;
  /** Why this server cannot do what was asked (`cannot`: "has none of its events") of an execution it knows only as a run without a server (marked-run-answer.ts); null for any other. */
  whyNotHeld?(id: string, cannot: string): NotHeld | null;
}

export type { ExecutionEvent };

/** One artifact of an execution, as `executions.artifacts` lists it. */
export interface ArtifactInfo {
  name: string;
  bytes: number;
  /** Null for a file larger than artifact_bytes (not written by ctx.artifacts.write): not hashed. */
  sha256: string | null;
}

/**
 * What a built-in plane capability gets as `ctx.plane`: the plane with the caller's edge already
 * bound, so a handler cannot act as someone else.
 */
export interface PlaneHandle {
  readonly root: string;
  readonly limits: Limits;
  readonly edge: EdgeInfo;
  readonly store: ExecutionStore;
  /** An execution a `docket run` ran without a server, as its mark tells it (marked-run-answer.ts); null for any other. */
  ranWithoutServer?(id: string): MarkedRunAnswer | null;
  /** Why this server cannot do what was asked (`cannot`: "has none of its events") of an execution it knows only as a run without a server (marked-run-answer.ts); null for any other. */
  whyNotHeld?(id: string, cannot: string): NotHeld | null;
  capabilities(): RegisteredCapability[];
  capability(id: string): RegisteredCapability | null;
  loadErrors(): LoadError[];
  /** What to tell someone who named a capability that is not loaded: the id as sent, and the file that did not load and why, a look-alike file, or the closest ids. */
  unknownCapability(id: string): { message: string; suggestion: string };
  /** Answers once what it acknowledges is committed (docs/durability.md); so do cancel and report. */
  start(request: StartRequest): Promise<StartResult>;
  cancel(id: string): Promise<CancelReceipt>;
  /** Takes a `docket run`'s report (docs/protocol.md): its new events applied once and in order; throws FailureError. */
  report(report: ExecutionReport): Promise<ReportAnswer>;
  /** The whole event contract: schemas derived from the valibot definitions, limits in force. */
  protocol(): ProtocolDocument;
  artifacts(id: string): ArtifactInfo[];
  /** Deletes a terminal execution's artifacts; refused while running and for an unknown outcome not yet reconciled. */
  release(id: string): { id: string; released: number };
  /** Settles an unknown outcome (docs/reconciliation.md); throws FailureError for anything else. */
  reconcile(request: ReconcileRequest): Promise<ReconcileReceipt>;
}
