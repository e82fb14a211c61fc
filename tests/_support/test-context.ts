import { createHash } from "node:crypto";
import { createExec } from "../../runtime/worker/exec.ts";
import { spawnHere } from "../../runtime/worker/spawn-child.ts";
import * as v from "valibot";
import type { CapabilityContext, CapabilityDef, DiagnosticInput, HostFacts, LogLevel } from "../../runtime/capability/declaration.ts";

/** One call a handler made on `ctx.progress`, in order. */
export type RecordedEvent =
  | { type: "step"; id: string; title: string }
  | { type: "step_done"; id: string; ok: boolean; message?: string }
  | { type: "progress"; current: number; total?: number; message?: string }
  | { type: "log"; message: string; level: LogLevel }
  | { type: "stream"; name: string; chunk: string }
  | { type: "diagnostic"; diagnostic: DiagnosticInput };

/** Options of `createTestContext`. */
export interface TestContextOptions {
  root: string;
  /** Run as an execution: `ctx.execution` is set and artifacts are kept. Default: a direct call. */
  execution?: boolean;
  /** Facts `ctx.host()` answers, over fixed defaults. */
  host?: Partial<HostFacts>;
  /** Requests cancellation as soon as this returns true for a just-recorded event (no timers involved). */
  cancelWhen?: (event: RecordedEvent, events: readonly RecordedEvent[]) => boolean;
}

/** A handler's context for tests, with everything it reported. */
export interface TestContext {
  ctx: CapabilityContext;
  events: RecordedEvent[];
  /** Artifacts written through `ctx.artifacts.write`, by name. */
  artifacts: Map<string, Uint8Array>;
  /** Requests cancellation: `cancelled()` turns true and `ctx.signal` aborts. */
  cancel(): void;
  diagnostics(): DiagnosticInput[];
  progress(): Array<Extract<RecordedEvent, { type: "progress" }>>;
  steps(): Array<Extract<RecordedEvent, { type: "step_done" }>>;
  logs(): Array<Extract<RecordedEvent, { type: "log" }>>;
}

/** What `ctx.progress.cancellation()` gives in tests; recognisable in assertions. */
export class TestCancellation extends Error {
  constructor() {
    super("The execution was cancelled");
    this.name = "CancelledError";
  }
}

/** Host facts that look like a freshly started process serving `root`. */
export function defaultHostFacts(root: string): HostFacts {
  return {
    root,
    runtime: { docket_version: "0.0.0-test", bun: "1.4.5", node: "22.0.0", platform: "linux", arch: "x64", pid: 4242, uptime_ms: 1000 },
    capabilities: [{ id: "files.digest", effect: "read", execution: "allowed", source: "builtin" }],
    load_errors: [],
    store: { kind: "memory", counts: { executions: 0 } },
    limits: { max_concurrent: 2, max_queued: 256, events_retained: 10_000, input_bytes: 8 * 1024 * 1024, artifacts_per_execution: 64, artifact_bytes: 8 * 1024 * 1024, artifacts_total_bytes: 16 * 1024 * 1024 },
  };
}

/** Builds a context that records events, keeps artifacts in memory and cancels on demand. */
export function createTestContext(options: TestContextOptions): TestContext {
  const events: RecordedEvent[] = [];
  const artifacts = new Map<string, Uint8Array>();
  const controller = new AbortController();
  let cancelled = false;
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    controller.abort(new TestCancellation());
  };
  const record = (event: RecordedEvent) => {
    events.push(event);
    if (options.cancelWhen?.(event, events)) cancel();
  };
  const ctx: CapabilityContext = {
    progress: {
      step: (id, title) => record({ type: "step", id, title }),
      stepDone: (id, ok, message) => record({ type: "step_done", id, ok, ...(message === undefined ? {} : { message }) }),
      progress: (current, total, message) => record({ type: "progress", current, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) }),
      log: (message, level = "info") => record({ type: "log", message, level }),
      stream: (name, chunk) => record({ type: "stream", name, chunk }),
      diagnostic: (diagnostic) => record({ type: "diagnostic", diagnostic }),
      cancelled: () => cancelled,
      cancellation: () => new TestCancellation(),
    },
    signal: controller.signal,
    root: options.root,
    artifacts: {
      async write(name, data) {
        if (!options.execution) throw new Error("ctx.artifacts.write called in a direct call (ctx.execution is null)");
        if (name === "" || name === "." || name === ".." || /[\\/]/.test(name)) throw new Error(`artifact name must be one path segment, got ${JSON.stringify(name)}`);
        const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
        artifacts.set(name, bytes);
        return { name, bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
      },
    },
    execution: options.execution ? { id: "x-20260101T000000Z-0a1b2c3d", run_id: null, session_key: null, attempt: 1 } : null,
    host: async () => ({ ...defaultHostFacts(options.root), ...options.host }),
    // The real one: its lines land in `events` as streams, like an execution's.
    exec: (argv, execOptions) =>
      createExec({ root: options.root, progress: ctx.progress, signal: () => controller.signal, killGraceMs: 500, spawn: spawnHere }).exec(argv, execOptions),
  };
  const of = <T extends RecordedEvent["type"]>(type: T) => events.filter((e): e is Extract<RecordedEvent, { type: T }> => e.type === type);
  return {
    ctx,
    events,
    artifacts,
    cancel,
    diagnostics: () => of("diagnostic").map((e) => e.diagnostic),
    progress: () => of("progress"),
    steps: () => of("step_done"),
    logs: () => of("log"),
  };
}

/**
 * Calls a handler as the engine would: the input parsed (defaults applied) by the input schema
 * first, and the output checked against the output schema, so a drift between them fails a test.
 */
export async function runHandler(def: CapabilityDef<any, any>, input: unknown, ctx: CapabilityContext): Promise<any> {
  const output = await def.handler(v.parse(def.input, input), ctx);
  return v.parse(def.output, output);
}
