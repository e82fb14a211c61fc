import { createRequire } from "node:module";
import type { Worker } from "node:worker_threads";
import { adoptOrphans, killThreadDescendants } from "./_thread-children.ts";
import { fromWorkerWire, type FromWorker, type WorkerBoot } from "./_messages.ts";
import { workerChildren } from "./_worker-children.ts";
import { childGroups } from "./process-groups.ts";
import type { ChildLedger } from "./child-ledger.ts";
import { laneWorker, type Lane } from "./task.ts";
import { createBacklog, turnBoundReceiver } from "./event-backlog.ts";
import { begunAgo, beginTimeOf, clockStep, newClaim } from "./_task-claim.ts";
import { processStartedMs } from "../capability/_process-started.ts";

// Required, not imported, and taken as the module loads: the first ESM import of node:worker_threads
// in a thread fixes what capability files importing it later get, and the main thread replaces its
// Worker (worker/_own-process.ts) after this module is loaded; the pool's own workers need no guard
// preloaded, their entry installs it.
const { Worker: ThreadWorker } = createRequire(import.meta.url)("node:worker_threads") as typeof import("node:worker_threads");

/** How long `stop()` waits for a worker to end before it leaves it to end with the process. */
const STOP_WAIT_MS = 2000;

/**
 * A worker that dies before it is ready this many times in a row is given up: its script is
 * broken, or the process cannot start threads now (too many, too little memory). The slot tries
 * again after a wait (`restartAfterMs`), doubled at each give-up in a row up to MAX_RESTART_AFTER_MS.
 */
const MAX_START_FAILURES = 3;
const MAX_RESTART_AFTER_MS = 300_000;
/** When the orphans of an ended worker thread are looked for a second time (adoptOrphans). */
const ORPHANS_AGAIN_MS = 250;

/** What a slot needs from its pool. Every hook is called for the slot's current worker only, never after `stop()`. */
export interface WorkerSlotOptions<J> {
  workerUrl: URL;
  /** How long a worker waits for a capability file to load (WorkerBoot). */
  loadTimeoutMs: number;
  /** Problems of the slot's worker, for the pool's log. */
  report: (message: string) => void;
  /** A message of the worker other than "ready", which the slot handles itself. */
  onMessage: (slot: WorkerSlot<J>, message: FromWorker) => void;
  /** The worker exited; runs before the slot counts a start failure and then replaces the worker or gives up. */
  onExit: (slot: WorkerSlot<J>, code: number, why: string) => void;
  /** A new worker was started in the slot (after an exit, or by `replace()`). */
  onReplaced: (slot: WorkerSlot<J>) => void;
  /** The slot is given up (`dead`): its worker failed to start MAX_START_FAILURES times in a row, or it is suspended. */
  onGaveUp: (slot: WorkerSlot<J>) => void;
  /** A given-up slot's worker started after all (see MAX_START_FAILURES): the slot runs tasks again. */
  onRevived: (slot: WorkerSlot<J>) => void;
  /** How long a given-up slot waits before it tries to start a worker again (doubled at each give-up in a row); null: never. */
  restartAfterMs: number | null;
  /** TERM → KILL wait for the process groups of `ctx.exec` children a worker leaves behind. */
  childGraceMs: number;
  /** Where the `ctx.exec` children of this process are recorded (child-ledger.ts). */
  childLedger?: ChildLedger;
}

/**
 * One place of a lane where a worker runs, through its replacements: it starts the worker, knows
 * when it is ready, routes its messages and exit to the pool, and gives up on a worker that cannot
 * start. `job` is the pool's task running there; the slot only asks whether there is one.
 */
export class WorkerSlot<J> {
  /** Shared with the worker: the id of the task whose cancel was requested (see WorkerBoot). */
  readonly flag = new Int32Array(new SharedArrayBuffer(4));
  /**
   * Shared with the current worker: the task handed to it and not begun yet (see WorkerBoot). Each
   * worker has its own: one replaced while stuck must never claim a task handed to its successor.
   */
  claim!: Int32Array;
  /** When the current worker began the handler of the task its claim holds (see _task-claim.ts), and the wall clock's step as it started. */
  private begunAt!: Float64Array;
  private clockStep = 0;
  /** When the current worker said it was ready (performance.now); 0 before. */
  readyAt = 0;
  /** The capability of the last task that ended here: what left work behind, if the worker stays busy. */
  lastCapability: string | null = null;
  /** Tasks that ended here, through replacements (the idle watch compares its looks by it). */
  tasksEnded = 0;
  /** Tasks that ended on the current worker: none on a fresh one, where no handler's leftover can run. */
  tasksHere = 0;
  /**
   * The worker thread's minor page faults when it last collected its garbage (or when first
   * counted), and the tasks ended since it was last looked at: what it faulted in across its tasks
   * decides when it collects and is asked what it still holds (pool.ts, lookAtRetained).
   */
  faultsAtCollect: number | null = null;
  tasksSinceLook = 0;
  /** The worker held more than the memory limit between its tasks: it is replaced once its task ends. */
  heldOver = false;
  /** The version of each capability file the current worker was handed a task of (the pool's to keep). */
  imported = new Map<string, string>();
  /** The current worker imported two versions of one file: it is retired once its task ends (pool.ts). */
  outdated = false;
  job: J | null = null;
  worker!: Worker;
  ready!: Promise<void>;
  isReady = false;
  /** The worker's OS thread under /proc, once ready (null off Linux): what the memory watchdog reads. */
  thread: string | null = null;
  /** The OS threads handlers started on the current worker (`new Worker`) that are alive, as it last said (the idle watch's). */
  nestedThreads: string[] = [];
  /** The capability whose task was running, or ran last, when the current worker last said a thread started: the log's culprit. */
  nestedBy: string | null = null;
  /** Since when (ISO time) and why it is given up (MAX_START_FAILURES), or null while it is not. */
  deadSince: string | null = null;
  deadReason: string | null = null;
  private startFailures = 0;
  private giveUps = 0;
  /** Given up by `suspend`, not for failed starts. */
  private suspended = false;
  /** Callers of warm() waiting for this slot's worker (a server starting). */
  private warmers = 0;
  private restartTimer: ReturnType<typeof setTimeout> | null = null;
  private lastError: string | null = null;
  private stopped = false;
  /** Ending the process groups that exited workers left behind; `stop()` waits for them. */
  private readonly endings = new Set<Promise<void>>();
  private markReady!: () => void;
  private failStart!: (error: Error) => void;

  constructor(readonly lane: Lane, private readonly options: WorkerSlotOptions<J>) {
    this.start();
  }

  /** Starts a new worker in the slot (the old one, if any, is the caller's to terminate) and tells the pool. */
  replace(): void {
    this.suspended = false;
    this.start();
    this.options.onReplaced(this);
  }

  /**
   * Runs no worker for now, for `reason` (too many threads of terminated workers have not ended:
   * the pool's replaceWorker): the slot is `dead`, its worker (being terminated) is not replaced,
   * and it starts one again at `resume()`, or once that worker's thread ends after all.
   */
  suspend(reason: string): void {
    this.suspended = true;
    this.deadSince ??= new Date().toISOString();
    this.deadReason = reason;
    this.options.onGaveUp(this);
  }

  /** Whether `suspend` gave it up (not failed starts). */
  get isSuspended(): boolean {
    return this.suspended;
  }

  /** A suspended slot starts a worker again; any other is left as it is. */
  resume(): void {
    if (this.suspended && !this.stopped) this.replace();
  }

  /** Milliseconds since the current worker began task `id`'s handler, or null when it has not (a `timed` task's only). */
  begunAgo(id: number): number | null {
    return begunAgo(this.claim, this.begunAt, id, this.clockStep);
  }

  /** Given up after MAX_START_FAILURES: its lane runs on the other slots until it starts again. */
  get dead(): boolean {
    return this.deadSince !== null;
  }

  /** Resolves once the slot's worker is ready, through restarts; rejects when it is given up or stopped. */
  async warm(): Promise<void> {
    this.warmers++;
    try {
      for (;;) {
        try {
          return await this.ready;
        } catch (error) {
          if (this.dead || this.stopped) throw error;
        }
      }
    } finally {
      this.warmers--;
    }
  }

  /** Terminates the worker for good (the pool is closing): a pending start fails and the exit is ignored. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    this.failStart(new Error("The worker pool closed."));
    const terminated = this.worker.terminate().catch(() => undefined);
    // A thread waiting in execSync ends (and lets the stop finish) once its child does.
    killThreadDescendants(this.thread);
    // A thread blocked in a call nothing ends (a read of a pipe a grandchild holds open, say) is
    // not waited for past STOP_WAIT_MS: it ends with the process.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const gaveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)));
    await Promise.race([terminated, gaveUp]);
    clearTimeout(timer);
    this.worker.unref();
    await Promise.all(this.endings);
  }

  /** Starts a worker in the slot (first or replacement); the shared flag stays the slot's own. */
  private start(): void {
    this.faultsAtCollect = null;
    this.tasksSinceLook = 0;
    this.tasksHere = 0;
    this.heldOver = false;
    // The backlog is this worker's alone: a terminated one's unreceived batches must not hold up its replacement.
    const backlog = createBacklog();
    const received = turnBoundReceiver(backlog);
    this.claim = newClaim();
    this.begunAt = beginTimeOf(this.claim);
    this.clockStep = clockStep();
    const boot: WorkerBoot = {
      lane: this.lane,
      cancel: this.flag.buffer as SharedArrayBuffer,
      backlog: backlog.buffer as SharedArrayBuffer,
      claim: this.claim.buffer as SharedArrayBuffer,
      load_timeout_ms: this.options.loadTimeoutMs,
      process_started_ms: processStartedMs(),
    };
    const worker = new ThreadWorker(this.options.workerUrl, { workerData: boot });
    this.worker = worker;
    this.imported = new Map();
    this.outdated = false;
    this.isReady = false;
    this.thread = null;
    this.nestedThreads = [];
    this.nestedBy = null;
    this.lastError = null;
    this.ready = new Promise<void>((resolve, reject) => ((this.markReady = resolve), (this.failStart = reject)));
    // warm() may reject; a pool nobody warms must not crash the process with an unhandled rejection.
    this.ready.catch(() => {});
    // Every listener first checks that this worker is still the slot's: a replaced or terminated
    // worker's late messages and exit must not touch the slot's next task.
    // This worker's `ctx.exec` children, served even after it is replaced: a terminated worker's
    // children are exactly the ones to end.
    const children = workerChildren(worker, this.options.childLedger);
    let junkSaid = false;
    worker.on("message", (data: string | FromWorker) => {
      const message = fromWorkerWire(data);
      if (message === null) {
        // Posted by handler code on the worker's own port: ignored, said once a worker.
        if (!junkSaid && this.worker === worker) this.options.report(`${laneWorker(this.lane)} sent a message of no shape docket sends (handler code posting on node:worker_threads' parentPort?); it and any like it from this worker are ignored.`);
        junkSaid = true;
        return;
      }
      if (message.type === "events") received(message.json.length);
      if (message.type === "spawn") children.spawn(message.ref, message.request);
      else if (message.type === "child_taken") children.taken(message.ref, message.bytes);
      else if (message.type === "child_stdin") children.stdin(message.ref, message.part);
      else if (this.worker === worker) this.received(message);
    });
    worker.on("error", (error: Error) => {
      if (this.worker === worker) this.lastError = error?.stack ?? String(error);
    });
    worker.on("exit", (code: number) => {
      // Terminated, crashed or closed: the worker can no longer end its children; the main thread does.
      const ending = children.end(this.options.childGraceMs);
      // What its thread started itself and left is the main thread's now, to reap when it exits;
      // looked for again a moment later, in case the thread was still ending.
      adoptOrphans(childGroups);
      (setTimeout(() => adoptOrphans(childGroups), ORPHANS_AGAIN_MS) as { unref?: () => void }).unref?.();
      this.endings.add(ending);
      void ending.finally(() => this.endings.delete(ending));
      if (this.worker === worker && !this.stopped) this.exited(code);
    });
  }

  private received(message: FromWorker): void {
    if (message.type !== "ready") return this.options.onMessage(this, message);
    // A worker says it is ready once: another "ready" is a handler's, posted on the worker's port.
    if (this.isReady) return;
    this.isReady = true;
    this.readyAt = performance.now();
    this.thread = message.thread ?? null;
    this.startFailures = 0;
    if (this.dead) this.revived();
    // Referenced while starting or busy, so an awaited task keeps the process alive; idle
    // workers are unreferenced, so a forgotten pool never holds the process open.
    if (!this.job) this.worker.unref();
    this.markReady();
  }

  private exited(code: number): void {
    const why = `exit code ${code}${this.lastError ? `; ${this.lastError}` : ""}`;
    this.options.onExit(this, code, why);
    if (!this.isReady) {
      this.startFailures++;
      this.failStart(new Error(`${laneWorker(this.lane)} could not start from ${this.options.workerUrl.href} (${why}).`));
      if (this.startFailures >= MAX_START_FAILURES) return this.giveUp(why);
      // Not while the slot waits to try again: its give-up said so.
      if (!this.dead) this.options.report(`${laneWorker(this.lane)} could not start (${why.split("\n")[0]}); starting another (${this.startFailures} of ${MAX_START_FAILURES} tries).`);
    }
    this.replace();
  }

  /** No worker started MAX_START_FAILURES times in a row: none is started again until a wait has passed. */
  private giveUp(why: string): void {
    const after = this.options.restartAfterMs;
    const waitMs = after === null ? null : Math.min(after * 2 ** this.giveUps, MAX_RESTART_AFTER_MS);
    this.giveUps++;
    this.deadSince ??= new Date().toISOString();
    this.deadReason = `${laneWorker(this.lane)} failed to start ${this.startFailures} times in a row (${why.split("\n")[0]})`;
    // A warm-up waiting for it (the server starting) fails now: its caller decides what follows.
    const next = this.warmers > 0 ? "giving up its start" : waitMs === null ? "not starting it again" : `trying again in ${waitMs >= 1000 ? `${Math.round(waitMs / 1000)} s` : `${waitMs} ms`}`;
    this.options.report(`${this.deadReason}; ${next}.`);
    this.options.onGaveUp(this);
    if (waitMs === null) return;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopped) return;
      this.startFailures = 0;
      this.replace();
    }, waitMs);
    // A pool nobody closes must not be held open by a slot waiting to try again.
    (this.restartTimer as { unref?: () => void }).unref?.();
  }

  private revived(): void {
    this.options.report(`${laneWorker(this.lane)} started again, ${Math.round((Date.now() - Date.parse(this.deadSince!)) / 1000)} s after it was given up.`);
    this.deadSince = null;
    this.deadReason = null;
    this.giveUps = 0;
    this.options.onRevived(this);
  }
}
