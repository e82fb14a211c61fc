import type * as v from "valibot";
import type { PlaneHandle } from "../execution/plane.ts";

/** A valibot schema, as docket's declarations accept it. */
export type AnySchema = v.GenericSchema<any, any>;

/** Severity of a diagnostic: a finding about the work, not about the run. */
export type DiagnosticSeverity = "error" | "warning" | "info";

/** One diagnostic as a handler reports it (docs/handler-api.md). */
export interface DiagnosticInput {
  severity: DiagnosticSeverity;
  message: string;
  code?: string;
  file?: string;
  line?: number;
  column?: number;
}

/** Log levels of `ctx.progress.log`. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** The reporting half of a handler's context. Every method is free to call outside an execution. */
export interface ProgressReporter {
  step(id: string, title: string): void;
  stepDone(id: string, ok: boolean, message?: string): void;
  progress(current: number, total?: number, message?: string): void;
  log(message: string, level?: LogLevel): void;
  stream(name: string, chunk: string): void;
  diagnostic(diagnostic: DiagnosticInput): void;
  /** True once cancellation (or a deadline) was requested. Cheap enough for a busy loop. */
  cancelled(): boolean;
  /** The error to throw when the handler stops because it was cancelled. */
  cancellation(): Error;
}

/** Where a handler writes files that outlive it (docs/handler-api.md). */
export interface ArtifactWriter {
  write(name: string, data: string | Uint8Array): Promise<{ name: string; bytes: number; sha256: string }>;
}

/** The identity of the execution a handler runs in; `null` in a direct call. */
export interface ExecutionIdentity {
  id: string;
  run_id: string | null;
  session_key: string | null;
  attempt: number;
}

/** What `ctx.host()` answers: the serving process as health checks see it. JSON-safe. */
export interface HostFacts {
  root: string;
  runtime: { docket_version: string; bun: string | null; node: string; platform: string; arch: string; pid: number; uptime_ms: number };
  capabilities: Array<{ id: string; effect: "read" | "write"; execution: "allowed" | "never" | "always"; source: string }>;
  load_errors: Array<{ file: string; line: number | null; column: number | null; reason: string; kept_out?: string }>;
  /** The folders of capability files this process loads besides the checkout's capabilities/ (`--capabilities`), absolute. */
  capability_folders?: string[];
  store: {
    kind: string;
    counts: Record<string, number>;
    /** Why the store cannot write now (its own words, may name a path), and since when; null when it can. */
    fault?: { reason: string; since: string } | null;
    /** `.docket/` against its storage budget, measured after expiry. */
    storage?: { bytes: number; budget_bytes: number; over_budget: boolean; disk_free_bytes: number | null; disk_free_floor_bytes: number; disk_low: boolean };
    /** Bytes of events a memory store holds against executions_retained_bytes; null for a store that keeps them on disk. */
    retained_bytes?: number | null;
  };
  /**
   * The workers that run handlers, by lane: how many can take a task now, and a lane none of
   * whose workers could start (it is tried again after a wait), or null.
   */
  workers?: { execution: number; direct: number; fault: { lanes: Array<"execution" | "direct">; reason: string; since: string } | null };
  limits: Record<string, number>;
}

/** Options of `ctx.exec` (docs/authoring.md, "Running a command"). */
export interface ExecOptions {
  /** A folder inside the checkout to run in (relative to it, or absolute inside it); default the checkout. */
  cwd?: string;
  /** Variables added to (or replacing those of) docket's own environment. */
  env?: Record<string, string>;
  /** Text (or bytes) written to the child's stdin, which is then closed; default: no stdin. */
  stdin?: string | Uint8Array;
  /** Resolve with a non-zero exit instead of throwing `exec_failed`; default false. */
  allowFailure?: boolean;
  /** Stream stdout and stderr line by line as `ctx.progress.stream("stdout" | "stderr", …)`; default true. */
  stream?: boolean;
  /** Bytes of each of stdout and stderr kept in the result (the tail); default 256 KiB, at most 16 MiB. */
  maxOutputBytes?: number;
}

/** What `ctx.exec` resolves with once the child has exited. */
export interface ExecResult {
  /** The exit code, or null when a signal ended the child. */
  exitCode: number | null;
  /** The signal that ended the child (`SIGKILL`…), or null. */
  signal: string | null;
  /** The tail of stdout, at most `maxOutputBytes` bytes. */
  stdout: string;
  stderr: string;
  /** True when stdout or stderr was longer than what is kept. */
  truncated: boolean;
  durationMs: number;
  pid: number;
}

/** What `handler(input, ctx)` receives. */
export interface CapabilityContext {
  progress: ProgressReporter;
  signal: AbortSignal;
  /** The checkout this process serves. Read-only: no client can name another. */
  root: string;
  artifacts: ArtifactWriter;
  execution: ExecutionIdentity | null;
  /** Facts about the process serving the checkout (capabilities, load errors, store, limits). */
  host(): Promise<HostFacts>;
  /**
   * Runs a program from an argv list (no shell) in the checkout, streaming its output line by
   * line; resolves when it exits, throws `exec_failed` on a non-zero exit unless `allowFailure`.
   * Cancel, deadline and a forced stop end its whole process group (docs/authoring.md).
   */
  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /**
   * The execution plane, given only to built-in plane capabilities (`execution: "never"`),
   * which run in the main thread. Work capabilities and user files never receive it.
   */
  plane?: PlaneHandle;
}

/**
 * What a capability's `reconcile(input, ctx)` answers after checking the world
 * (docs/reconciliation.md): whether the interrupted work took effect, and what it saw.
 * `unknown` records nothing: the execution stays unsettled, for a person to decide.
 */
export interface ReconcileResult {
  outcome: "applied" | "not_applied" | "unknown";
  /** What the check saw, recorded with the reconciliation: small JSON (a few KiB). */
  evidence?: unknown;
  /** One sentence for the people reading the execution later. */
  note?: string;
}

/** What a user writes: one capability, declaration and handler together (docs/handler-api.md). */
export interface CapabilityDef<I extends AnySchema = AnySchema, O extends AnySchema = AnySchema> {
  id: string;
  title: string;
  description: string;
  effect: "read" | "write";
  input: I;
  output: O;
  cancellable?: boolean;
  timeout_ms?: number;
  cache?: { ttl_ms: number };
  /**
   * How it may run: `allowed` (default) as a direct call or an execution; `always` only as an
   * execution (no direct-call route, tool or Run button); `never` only directly (plane capabilities).
   */
  execution?: "allowed" | "never" | "always";
  examples?: Array<v.InferInput<I>>;
  /** Codes this capability raises through `CapabilityError` (lower snake case). */
  errors?: string[];
  handler(input: v.InferOutput<I>, ctx: CapabilityContext): Promise<v.InferInput<O>> | v.InferInput<O>;
  /**
   * Checks whether an execution whose outcome is unknown took effect, given the input it ran
   * with and `ctx.execution` naming it; runs on a worker when `executions.reconcile` is asked
   * without an outcome. It reads the world and changes nothing.
   */
  reconcile?(input: v.InferOutput<I>, ctx: CapabilityContext): Promise<ReconcileResult> | ReconcileResult;
}

/** Declares a capability. An identity helper: it returns its argument, typed for inference. */
export function capability<I extends AnySchema, O extends AnySchema>(def: CapabilityDef<I, O>): CapabilityDef<I, O> {
  return def;
}

/** The longest `timeout_ms` a capability may declare, as the longest deadline: a timer waits at most 2^31 − 1 ms (about 24.8 days). */
export const MAX_TIMEOUT_MS = 2_147_483_647;
