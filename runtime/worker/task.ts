import type { CapabilitySource } from "../capability/registered.ts";
import type { ExecutionIdentity, HostFacts } from "../capability/declaration.ts";
import type { EventDraft } from "../execution/protocol.ts";
import type { TextLimits } from "../execution/text-limits.ts";

/** One handler invocation, as the main thread hands it to the pool. Structured-clone safe. */
export interface WorkerTask {
  capability: string;
  /** How the worker finds the declaration: the bundled built-ins map, or an absolute file path. */
  source: CapabilitySource;
  /**
   * The version the main thread registered (`sha256:…` of the file's text). The worker imports
   * that version's own module, so an execution finishes on the code it started with while a newer
   * version of the file runs beside it. Absent: the file as it is imported by plain path.
   */
  version?: string;
  /** Already validated (and defaulted) by the input schema, in the main thread. The real values: no redaction. */
  input: unknown;
  /** The input's sensitive string values: the worker masks them in every event text before posting it (docs/security.md). */
  secrets?: string[];
  execution: ExecutionIdentity | null;
  root: string;
  /** The managed artifact folder (`<root>/.docket/artifacts/<id>`), or null in a direct call. */
  artifacts_dir: string | null;
  /**
   * `disk_free_floor`: bytes the disk holding `.docket/` must keep free after a write (the store's
   * disk_free_floor_bytes; 0: none, as with the memory store).
   */
  artifact_limits: { files: number; bytes: number; total_bytes: number; disk_free_floor: number };
  /**
   * Which function of the declaration runs: its handler (default), or its `reconcile` check; or
   * `load`: none — the file is only imported, with the text `input` holds (a trial load before the
   * main thread imports it, worker/load-probe.ts), whatever it declares.
   */
  entry?: "handler" | "reconcile" | "load";
  /** How long a child of `ctx.exec` gets between TERM and KILL once the task is cancelled (default 2000). */
  kill_grace_ms?: number;
  /**
   * The byte limits of event texts: the worker cuts each text to them once it is masked, so that
   * a handler that emits megabytes per step never pushes them through the process (docs/limits.md).
   * Absent: texts leave the worker whole and only the store cuts them.
   */
  text_limits?: TextLimits;
  /**
   * The most characters of JSON an output may have (`output_bytes`): the worker refuses a larger
   * one itself, so that it never crosses to the main thread. Absent: no bound.
   */
  output_bytes?: number;
  /**
   * Its `timeout_ms` counts from its handler's start: the worker notes when it calls the handler,
   * which TaskHandle.begunAgo reads (worker/_task-claim.ts). Absent: nothing is noted.
   */
  timed?: true;
}

/** Why a handler did not return an output. */
export type TaskError =
  /** `throw new CapabilityError(code, …)` */
  | { kind: "capability"; code: string; message: string; context: Record<string, unknown>; retryability?: string; suggestion?: string; outcome_certainty?: string }
  /**
   * It threw `ctx.progress.cancellation()` (or an AbortError after cancel) — or, `never_began`,
   * the cancel came before its handler began, which then never ran: nothing can have been applied.
   */
  | { kind: "cancelled"; message: string; never_began?: true }
  /**
   * Anything else thrown or rejected. A client learns `error_class` only ("TypeError", "Error
   * ENOENT", see execution/thrown.ts) and docket's own `note` on where it happened; `message` and
   * `stack` go to the process's log, never further. `refused`: the call docket's guard refused
   * (`process.abort()`), when that is what was thrown.
   */
  | { kind: "internal"; error_class: string; message: string; stack: string | null; note?: string; refused?: string }
  /**
   * The worker died (crash, process.exit, out of memory) while running it — or, `never_began`,
   * workers in turn died before reading it (a previous handler's leftovers): nothing of it ran.
   * `exit_code`: the code the thread running it ended with (a handler's `process.exit(3)`: 3).
   * `no_worker`: no worker of its lane could start, so it never left the queue: nothing of it ran.
   */
  | { kind: "worker_lost"; message: string; never_began?: true; exit_code?: number; no_worker?: true }
  /**
   * The pool terminated the worker on request (deadline grace expired, forced stop) — or, closing,
   * stopped it; `never_began`: it was still queued when the pool closed, so nothing of it ran.
   */
  | { kind: "terminated"; message: string; never_began?: true }
  /** The pool terminated the worker because the handler outgrew its memory limit (docs/containment.md). */
  | { kind: "memory_exceeded"; message: string; limit_mb: number; used_mb: number }
  /**
   * Its capability's file failed while the worker imported it, before the handler was called
   * (docs/containment.md, "Take back what was never begun"): the file's top level threw, did not
   * finish loading within `load_timeout_ms`, ended the worker's thread, or outgrew the memory
   * limit. Nothing of the handler ran. `message`: what the file did, as a load error says it.
   * `uncaught`: what failed was an error left uncaught while the file was imported, which may be
   * another's (a previous handler's leftover timer), not one its import threw. `held`: the load
   * time ran out after synchronous code held the thread for part of it (worker-entry.ts,
   * HELD_MS), which may be such a leftover too, not the file's top level.
   */
  | { kind: "load_failed"; cause: LoadFailureCause; message: string; limit_mb?: number; used_mb?: number; uncaught?: true; held?: true; detail?: string; outside?: true }
  /** It returned an output larger than `output_bytes` (characters of its JSON), which the worker kept. */
  /** `bytes`: the output's characters of JSON, or with `at_least`, how far the count got before it stopped past the limit. */
  | { kind: "output_too_large"; message: string; bytes: number; limit: number; at_least?: boolean }
  /**
   * It returned an output JSON cannot hold as it is (a class instance, a Map, an Infinity, a
   * function), found in its worker on the value as returned: `path` names where
   * (`output.callback`), `what` what is there, as execution/plain-json.ts says it; or `too_deep`,
   * nested past the bound or holding itself.
   */
  | { kind: "output_not_json"; message: string; path: string; what: string }
  | { kind: "output_not_json"; message: string; too_deep: true };

/** What a capability's file did that kept its handler from being called. */
export type LoadFailureCause = "threw" | "load_timeout" | "exited" | "memory_exceeded";

export type TaskOutcome = { ok: true; output: unknown } | { ok: false; error: TaskError };

/**
 * The outcomes whose message arrived as JSON text, marked by the main thread as it parses them
 * (never by the worker, whose thread runs handler code), once it saw the text nest no deeper than
 * an output may and hold no number JSON.parse makes Infinity of (1e309): their output is plain
 * JSON by construction, not walked again (execution/_completion.ts).
 */
const arrivedAsText = new WeakSet<object>();

/** Marks `outcome` as parsed from JSON text the worker sent, looked at as fromWorkerWire says (worker/_messages.ts). */
export function markArrivedAsText(outcome: TaskOutcome): void {
  arrivedAsText.add(outcome);
}

/** True when `outcome` arrived from its worker as JSON text, which JSON.parse made, within an output's depth. */
export function arrivedAsJsonText(outcome: TaskOutcome): boolean {
  return arrivedAsText.has(outcome);
}

/** A running task. */
export interface TaskHandle {
  readonly outcome: Promise<TaskOutcome>;
  /** Cooperative cancel: `ctx.progress.cancelled()` turns true at once (even in a busy loop), `ctx.signal` aborts. */
  cancel(): void;
  /**
   * Takes it back only if its handler has not begun (queued, handed, being prepared): then its
   * outcome settles `cancelled` with `never_began` and true is returned; a begun handler is left
   * alone (false). A task nothing of which ran is withdrawn whether or not it could be cancelled.
   * One whose file failed to load is withdrawn too: its outcome is then that failure, or
   * `cancelled` where the failure may be a previous handler's leftover (never tried again).
   */
  withdraw(): boolean;
  /**
   * Milliseconds since its handler began, or null while it has not: still queued, being received
   * or prepared (its file imported, its input parsed), or taken back to run on another worker. Known
   * only for a `timed` task, and only until its outcome is settled.
   */
  begunAgo(): number | null;
  /** Stops the handler by force: the worker is terminated and replaced; outcome resolves `terminated`. */
  terminate(): void;
}

/** Two lanes so that direct calls never starve behind long executions (docs/architecture.md). */
export type Lane = "execution" | "direct";

/** "An execution worker" / "A direct worker", for the log. */
export function laneWorker(lane: Lane): string {
  return lane === "execution" ? "An execution worker" : "A direct worker";
}

export interface RunTaskOptions {
  lane: Lane;
  /** Receives the handler's events in order, in batches; may be called many times before the outcome. */
  onEvents?: (drafts: EventDraft[]) => void;
}

/** The worker pool as the engine uses it. */
export interface WorkerPool {
  run(task: WorkerTask, options: RunTaskOptions): TaskHandle;
  /** Spawns the workers now, so that the first call finds them warm. */
  warm(): Promise<void>;
  /** Terminates every worker; running tasks resolve `terminated`. */
  close(): Promise<void>;
  stats(): { execution_workers: number; direct_workers: number; busy: number; replaced: number; memory_stops: number };
  /** The lanes none of whose workers could start (they are tried again after a wait), or null. */
  workerFault(): WorkerFault | null;
}

/**
 * Lanes with no worker: each of their workers failed to start three times in a row. Their tasks
 * fail `no_worker` at once until one starts again (docs/containment.md); `/healthz` reports it.
 */
export interface WorkerFault {
  /** Every lane with no worker, the execution lane first. */
  lanes: Lane[];
  /** The log's sentence for the first of them: what failed, how often, with the last exit's first line. */
  reason: string;
  /** When the first of them lost its last worker (ISO time). */
  since: string;
}

export type { HostFacts };
