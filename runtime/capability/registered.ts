import type { LookalikeFile } from "./_lookalike-files.ts";
import type { CapabilityDef } from "./declaration.ts";

/** A JSON Schema object as @valibot/to-json-schema emits it. */
export type JsonSchema = Record<string, unknown>;

/** Where a capability came from: bundled with docket, or a file of the checkout / --capabilities. */
export type CapabilitySource = { kind: "builtin"; file: string } | { kind: "file"; file: string };

/**
 * How a capability may run: `allowed` as a direct call or an execution; `never` as an execution
 * (plane capabilities); `always` as an execution only (work that writes artifacts, long runs).
 */
export type ExecutionMode = "allowed" | "never" | "always";

/** True when the capability answers direct calls (HTTP route, MCP tool, the cockpit's Run). */
export function callsDirectly(c: Pick<RegisteredCapability, "execution">): boolean {
  return c.execution !== "always";
}

/** True when the capability can be started as an execution. */
export function runsAsExecution(c: Pick<RegisteredCapability, "execution" | "plane">): boolean {
  return c.execution !== "never" && !c.plane;
}

/** How a person reads the execution mode: "a direct call or an execution", … */
export function runsAsText(c: Pick<RegisteredCapability, "execution">): string {
  return c.execution === "never" ? "a direct call only" : c.execution === "always" ? "an execution only" : "a direct call or an execution";
}

/** One loaded capability as every projection reads it; schemas converted once, at load. */
export interface RegisteredCapability {
  id: string;
  title: string;
  description: string;
  effect: "read" | "write";
  cancellable: boolean;
  timeout_ms: number | null;
  cache: { ttl_ms: number } | null;
  execution: ExecutionMode;
  examples: unknown[];
  errors: string[];
  input_schema: JsonSchema;
  output_schema: JsonSchema;
  source: CapabilitySource;
  /** A digest of the code (`sha256:…` of the file's text) or `docket@<version>` for a built-in. */
  version: string;
  /** A built-in with `execution: "never"`: runs in the main thread and gets `ctx.plane`. */
  plane: boolean;
  def: CapabilityDef;
}

/** A capability file that did not load; it never stops the process (docs/architecture.md). */
export interface LoadError {
  file: string;
  line: number | null;
  column: number | null;
  reason: string;
  /**
   * Its trial load in a worker refused it, for this reason (`load_timeout`, `import_failed`): a top
   * level that loops, exits or leaves work running, never imported on a main thread.
   */
  kept_out?: string;
  /**
   * The reason with what the file threw (its message may hold a URL with its password, or a path):
   * for the process's own log only. A symbol key, so that no JSON (an answer, an event, a stored
   * row) and no message to a thread carries it, while a copy (`{ ...error }`) keeps it.
   */
  [LOAD_ERROR_DETAIL]?: string;
}

/** The key of a load error's {@link LoadError} detail. */
export const LOAD_ERROR_DETAIL = Symbol("docket.loadErrorDetail");

/** A load error as the process's own log says it: with what the file threw. */
export function loadErrorReason(error: LoadError): string {
  return error[LOAD_ERROR_DETAIL] ?? error.reason;
}

/** The public, JSON-safe description of a capability (capabilities.list / get, OpenAPI, MCP). */
export function describeCapability(c: RegisteredCapability) {
  return {
    id: c.id,
    title: c.title,
    description: c.description,
    effect: c.effect,
    cancellable: c.cancellable,
    timeout_ms: c.timeout_ms,
    cache: c.cache,
    execution: c.execution,
    examples: c.examples,
    errors: c.errors,
    input_schema: c.input_schema,
    output_schema: c.output_schema,
    source: c.source.kind === "builtin" ? { kind: "builtin" as const } : c.source,
    version: c.version,
  };
}

/** The registry as the engine and projections read it. */
export interface CapabilityCatalog {
  list(): RegisteredCapability[];
  get(id: string): RegisteredCapability | null;
  loadErrors(): LoadError[];
  /**
   * The files a reload's read left with their trial load still running (worker/load-probe.ts),
   * each with the promise of its verdict: a reload keeps what it served of them until then.
   */
  parked?(): ReadonlyMap<string, Promise<void>>;
  /** Calls `listener` whenever the catalog is replaced (a live reload); returns the unsubscribe. */
  subscribe?(listener: () => void): () => void;
  /** Files of the capability folders that look like capability files but are not loaded (_lookalike-files.ts). */
  lookalikes?(): LookalikeFile[];
}
