import type * as v from "valibot";
import type { PlaneHandle } from "../execution/plane.ts";

/** A valibot schema, as docket's declarations accept it. */
export type AnySchema = v.GenericSchema<any, any>;

/** Severity of a diagnostic: a finding about the work, not about the run. */
export type DiagnosticSeverity = "error" | "warning" | "info";

/** One diagnostic as a handler reports it (SPEC §2.2). */
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

/** Where a handler writes files that outlive it (SPEC §4.8). */
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
  load_errors: Array<{ file: string; line: number | null; column: number | null; reason: string }>;
  store: {
    kind: string;
    counts: Record<string, number>;
    /** Why the store cannot write now (its own words, may name a path), and since when; null when it can. */
    fault?: { reason: string; since: string } | null;
    /** `.docket/` against its storage budget, measured after expiry. */
    storage?: { bytes: number; budget_bytes: number; over_budget: boolean };
  };
  limits: Record<string, number>;
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
   * The execution plane, given only to built-in plane capabilities (`execution: "never"`),
   * which run in the main thread. Work capabilities and user files never receive it.
   */
  plane?: PlaneHandle;
}

/** What a user writes: one capability, declaration and handler together (SPEC §2.1). */
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
}

/** Declares a capability. An identity helper: it returns its argument, typed for inference. */
export function capability<I extends AnySchema, O extends AnySchema>(def: CapabilityDef<I, O>): CapabilityDef<I, O> {
  return def;
}
