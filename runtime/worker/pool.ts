import type { Worker } from "node:worker_threads";
import type { EventDraft } from "../execution/protocol.ts";
import { toWire, type FromWorker, type ToWorker } from "./_messages.ts";
import { thrownClass, thrownDetail } from "../execution/thrown.ts";
import { WorkerSlot, type WorkerSlotOptions } from "./_worker-slot.ts";
import { MemoryWatchdog, threadMinorFaults } from "./memory-watchdog.ts";
import { killThreadDescendants } from "./_thread-children.ts";
import { IdleWatch } from "./_idle-watch.ts";
import type { ChildLedger } from "./child-ledger.ts";
import { endedUnbegun, handTask, isPreparing, isUnreceived, MAX_TASK_ID, takeBackUnbegun, takeBackUnreceived } from "./_task-claim.ts";
import { laneWorker, type HostFacts, type Lane, type RunTaskOptions, type TaskError, type TaskHandle, type TaskOutcome, type WorkerPool, type WorkerTask } from "./task.ts";

/**
 * Where the worker entry is. From source this is the file beside this one. In the compiled binary
 * `import.meta.url` is the binary's own path in Bun's embedded file system (`/$bunfs/root/docket`),
 * and scripts/build.ts lays every entry point out flat beside it, so the same URL finds the bundled
 * worker. It must stay a `new URL(…, import.meta.url)` object: Bun refuses a `file://` string.
 */
export const DEFAULT_WORKER_URL = new URL("./worker-entry.ts", import.meta.url);

/** Options of `createWorkerPool`. */
export interface WorkerPoolOptions {
  /** Workers of the execution lane, 1..8 (the engine runs at most `max_concurrent` executions). */
  executionWorkers: number;
  /** Workers of the direct-call lane, 0..8 (0: direct calls share the execution lane); default 1. */
  directWorkers?: number;
  /** Answers `ctx.host()` from any worker. */
  hostFacts: () => HostFacts | Promise<HostFacts>;
  /** The worker entry; default DEFAULT_WORKER_URL. */
  workerUrl?: URL;
  /** Problems of the pool itself (a worker lost or failing to start) for the server log on stderr. */
  onWorkerError?: (message: string) => void;
  /**
   * What a worker's console and process.stdout/stderr wrote outside any execution (a direct call,
   * a file's top level, work left after its task), already masked; default: this process's own
   * stdout and stderr (worker/_console-capture.ts).
   */
  onOutput?: (stream: "stdout" | "stderr", text: string) => void;
  /** MiB a running handler may add to the process before its worker is terminated (`worker_memory_mb`); default 1024. */
  memoryLimitMb?: number;
  /** How often the memory watchdog samples while a handler runs; default 100 ms. */
  memorySampleMs?: number;
  /** How long a worker waits for a capability file to load (`load_timeout_ms`); default 5000 ms. */
  loadTimeoutMs?: number;
  /** TERM → KILL wait for `ctx.exec` children of a worker that was terminated or lost (default 2000). */
  childGraceMs?: number;
  /** Where `ctx.exec` children are recorded, so that a docket after this one ends those a kill left (child-ledger.ts); default nowhere. */
  childLedger?: ChildLedger;
  /**
   * How long a ready worker may leave a task handed to it unbegun before it counts as stuck on
   * work a previous handler left behind (a timer or callback that outlived it): the task is taken
   * back and runs on a new worker (default START_TIMEOUT_MS).
   */
  startTimeoutMs?: number;
  /**
   * How long a lane's worker that failed to start three times in a row waits before it is tried
   * again, doubled at each give-up in a row up to 5 minutes (default 10 s). Meanwhile, a lane with
   * no worker fails its tasks `no_worker` at once.
   */
  restartAfterMs?: number;
  /**
   * After how long a terminated worker whose thread has not ended counts as stuck (default
   * STUCK_AFTER_MS), and how many threads told to end may be not ended before a worker replaced is
   * not started again (default MAX_STUCK_THREADS): see replaceWorker.
   */
  stuckAfterMs?: number;
  maxStuckThreads?: number;
  /** How often idle workers are looked at after a task ended, for work a handler left running (_idle-watch.ts); default 1000 ms. */
  idleCheckMs?: number;
  /** Minor page faults of a worker's thread (`<pid>/task/<tid>`), or null; default from /proc (tests give their own). */
  threadFaults?: (thread: string) => number | null;
}

/** A terminated worker whose thread has not ended this long after is stuck in a call no termination interrupts. */
export const STUCK_AFTER_MS = 5000;

/**
 * The most threads of terminated workers the pool lets be not ended (stuck, STUCK_AFTER_MS, or not
 * yet known to be). A stuck one keeps what its handler held until its call returns: eight handlers
 * that held 64 MiB and then blocked on a FIFO took the server from 100 to 690 MB, and nothing
 * bounded it (containment tester, session 49). Past the bound, a worker replaced is not started
 * again until one of them ends: its lane stops (its tasks refused once more than this are known
 * stuck), said by /healthz and the log, rather than the server growing until the system kills it.
 */
export const MAX_STUCK_THREADS = 8;

/**
 * A ready worker begins a task within microseconds of being handed it, unless its thread is busy:
 * between tasks only what a previous handler left running (a timer looping, a callback that
 * blocks) can keep it so. Past this, the worker is replaced and the task taken back.
 */
export const START_TIMEOUT_MS = 1000;

/**
 * How much longer than `load_timeout_ms` a worker may hold a task received and not begun before
 * the pool ends it as a load that did not finish (checkStarts): the worker's own load timer
 * answers first whenever its thread is free (an `await` that never settles); only a thread held
 * by a synchronous top level never does. Beyond the margin, a task's time to parse its input, at
 * the slowest JSON.parse measured on a loaded machine (PARSE_CHARS_PER_MS), since the worker marks
 * a task received before that parse.
 */
const PREPARE_MARGIN_MS = 1000;
const PARSE_CHARS_PER_MS = 20_000;

/**
 * Tasks too short for the watchdog to measure (under 5 ms) are looked at together, one /proc read
 * per this many: a handler that keeps a little more at each quick call is still found.
 */
const LOOK_EVERY_TASKS = 64;
const MIB = 1024 * 1024;
/** The page size of x86-64 and most arm64 kernels (as the watchdog counts). */
const PAGE_BYTES = 4096;

interface Job {
  id: number;
  task: WorkerTask;
  /** When it was handed to its slot's worker (performance.now). */
  assignedAt: number;
  /** How long its worker may prepare it (import its file, parse its input) before it counts as a load that never finishes. */
  prepareMs: number;
  /** When the pool first saw its worker preparing it (checkStarts), if it did. */
  preparingSince?: number;
  onEvents?: (drafts: EventDraft[]) => void;
  slot: Slot | null;
  cancelRequested: boolean;
  settled: boolean;
  /** When its worker was last asked to collect garbage because the process outgrew the limit (performance.now). */
  collectAskedAt?: number;
  /**
   * Its worker collected once already for the process outgrowing every allowance: the next time
   * it does, the memory is held outside that worker's heap (a Worker the handler started, native
   * memory), which no collection there gives back, and the handler is stopped.
   */
  collectedForProcess?: boolean;
  /** How many workers stopped before reading it (see onExit), or failed importing its file after other tasks ran there (see retryElsewhere). */
  lostUnread?: number;
  /** Taken back from a worker that may hold a previous handler's leftover: it goes to a fresh worker where one is free (dispatch). */
  fresh?: boolean;
  resolve(outcome: TaskOutcome): void;
}

type Slot = WorkerSlot<Job>;

/** How many workers in turn may stop before reading one task before it ends unbegun (worker_lost, never began). */
const MAX_LOST_UNREAD = 3;

/** A warm pool of worker threads in two lanes; each lane queues FIFO when all its workers are busy. */
export function createWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const executionWorkers = checkCount("executionWorkers", options.executionWorkers);
  const directWorkers = checkCount("directWorkers", options.directWorkers ?? 1, 0);
  const workerUrl = options.workerUrl ?? DEFAULT_WORKER_URL;
  const report = (message: string) => options.onWorkerError?.(message);
  const output = options.onOutput ?? ((stream: "stdout" | "stderr", text: string) => void (stream === "stdout" ? process.stdout : process.stderr).write(text));

  const lanes: Record<Lane, { slots: Slot[]; queue: Job[] }> = {
    execution: { slots: [], queue: [] },
    direct: { slots: [], queue: [] },
  };
  let nextId = 1;
  let replaced = 0;
  let memoryStops = 0;
  /** Set while a slot's worker is retired (retire), which is not counted as a replacement. */
  let retiring = false;
  let closed = false;
  /** Threads of terminated workers that have not ended (watchEnding); `stuck`, those still there after stuckAfterMs. */
  const ending = new Set<Worker>();
  const stuck = new Set<Worker>();
  const stuckAfterMs = options.stuckAfterMs ?? STUCK_AFTER_MS;
  const maxStuckThreads = options.maxStuckThreads ?? MAX_STUCK_THREADS;
  const jobs = new Map<number, Job>();
  const startTimeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS;
  const loadTimeoutMs = options.loadTimeoutMs ?? 5000;
  /** Looks for tasks handed to a worker and not begun (checkStarts); armed while any may be. */
  let startCheck: ReturnType<typeof setTimeout> | null = null;
  const memoryLimitMb = options.memoryLimitMb ?? 1024;
  const memorySampleMs = options.memorySampleMs ?? 100;
  /** A worker whose handlers faulted in this much, one or several, collects garbage after the last (release). */
  const collectAfterMb = Math.min(64, memoryLimitMb / 4);
  const faultsOf = options.threadFaults ?? threadMinorFaults;
  const watchdog = new MemoryWatchdog({
    limitMb: memoryLimitMb,
    intervalMs: memorySampleMs,
    onExceeded(id, usedMb, processWide) {
      const job = jobs.get(id);
      const slot = job?.slot;
      if (!job || !slot || job.settled) return;
      // Growth on no handler's own thread, while a worker with no task has threads a handler left
      // running: theirs first (the idle watch's), not this task's, which started none.
      if (processWide && slot.nestedThreads.length === 0 && idleSlots().some((idle) => idle.nestedThreads.length > 0)) return false;
      if (processWide && job.collectedForProcess && job.collectAskedAt === undefined) return stopForMemory(slot, job, usedMb, true);
      // Page faults count memory freed and allocated again, and garbage is resident until its
      // worker collects: its worker is asked to collect first, and answers what its heap still
      // holds (answeredCollect). One that has not answered two looks later never yields (a
      // synchronous loop) and is stopped.
      const now = performance.now();
      if (job.collectAskedAt === undefined) {
        job.collectAskedAt = now;
        if (processWide) job.collectedForProcess = true;
        slot.worker.postMessage(toWire<ToWorker>({ type: "collect" }));
        return false;
      }
      if (now - job.collectAskedAt <= 2 * memorySampleMs) return false;
      stopForMemory(slot, job, usedMb, processWide);
    },
  });

  function stopForMemory(slot: Slot, job: Job, usedMb: number, processWide = false): void {
    memoryStops++;
    const unbegun = takeBackUnbegun(slot.claim, job.id);
    if (unbegun === "handed") {
      // Never read: what grew is a previous handler's leftover, not this task (docs/containment.md).
      report(`${laneWorker(slot.lane)} grew past the memory limit of ${memoryLimitMb} MiB (about ${usedMb} MiB) before it read ${job.task.capability}'s task: work ${culpritOf(slot)} left running after it returned. It is replaced, and ${job.task.capability} runs on the next free worker.`);
      requeue(slot, job);
      return;
    }
    if (unbegun === "received") {
      // Grown as its worker imported the file: the handler never began. Not retried on a fresh
      // worker as other failures of an import are (retryElsewhere): while the old thread's memory
      // is being freed the process does not grow, so the retry's own growth would go unseen.
      report(`${laneWorker(slot.lane)} importing ${job.task.capability}'s file grew past the memory limit of ${memoryLimitMb} MiB (about ${usedMb} MiB) before its handler began; terminating and replacing it.`);
      stopBy(slot, job, { kind: "load_failed", cause: "memory_exceeded", message: `its top level grew past the memory limit of ${memoryLimitMb} MiB (about ${usedMb} MiB)`, limit_mb: memoryLimitMb, used_mb: usedMb });
      return;
    }
    const outside = processWide ? ", held outside its worker's heap (a Worker it started, or native memory)" : "";
    report(`${laneWorker(slot.lane)} running ${job.task.capability} grew past the memory limit of ${memoryLimitMb} MiB (about ${usedMb} MiB${outside}); terminating and replacing it.`);
    stopBy(slot, job, {
      kind: "memory_exceeded",
      message: processWide
        ? `${job.task.capability} used more memory than its worker's limit of ${memoryLimitMb} MiB: the process grew by about ${usedMb} MiB while it ran${outside}.`
        : `${job.task.capability} used more memory than its worker's limit of ${memoryLimitMb} MiB.`,
      limit_mb: memoryLimitMb,
      used_mb: usedMb,
    });
  }

  /** The workers ready with no task. */
  function* idleSlots(): Generator<Slot> {
    for (const lane of Object.values(lanes)) for (const slot of lane.slots) if (slot.isReady && !slot.job && !slot.dead) yield slot;
  }

  // A worker whose thread stays busy with no task (what a handler left running) is replaced.
  const idleWatch = new IdleWatch<Slot>({
    intervalMs: options.idleCheckMs,
    limitMb: memoryLimitMb,
    idle: idleSlots,
    onBusy(slot, busyMs, nested) {
      const seconds = Math.round(busyMs / 1000);
      report(
        nested
          ? `${laneWorker(slot.lane)} has no task to run, but threads ${slot.nestedBy ?? culpritOf(slot)} started (new Worker) and left running after it returned kept busy for about ${seconds} s. It is replaced, which ends them.`
          : `${laneWorker(slot.lane)} kept its thread busy for about ${seconds} s with no task to run: work ${culpritOf(slot)} left running after it returned (a timer or a callback). It is replaced.`,
      );
      replaceWorker(slot);
    },
    onGrew(slot, grownMb, nested) {
      memoryStops++;
      const about = `the memory limit of ${memoryLimitMb} MiB (about ${Math.round(grownMb)} MiB)`;
      report(
        nested
          ? `${laneWorker(slot.lane)} has no task to run, but threads ${slot.nestedBy ?? culpritOf(slot)} started (new Worker) and left running after it returned grew past ${about}. It is replaced, which ends them.`
          : `${laneWorker(slot.lane)} grew past ${about} with no task to run: work ${culpritOf(slot)} left running after it returned. It is replaced.`,
      );
      replaceWorker(slot);
    },
  });
  /** What left work running on a slot's worker, for the log: the capability whose task ended there last. */
  const culpritOf = (slot: Slot) => (slot.lastCapability === null ? "a previous handler" : slot.lastCapability);

  const slotOptions: WorkerSlotOptions<Job> = {
    workerUrl,
    loadTimeoutMs,
    report,
    childGraceMs: options.childGraceMs ?? 2000,
    childLedger: options.childLedger,
    onMessage,
    onExit,
    onReplaced(slot) {
      if (!retiring) replaced++;
      dispatch(slot.lane);
    },
    onGaveUp(slot) {
      failQueueIfLaneDead(slot.lane);
      dispatch(slot.lane);
    },
    onRevived(slot) {
      dispatch(slot.lane);
    },
    restartAfterMs: options.restartAfterMs ?? 10_000,
  };
  for (let i = 0; i < executionWorkers; i++) lanes.execution.slots.push(new WorkerSlot("execution", slotOptions));
  for (let i = 0; i < directWorkers; i++) lanes.direct.slots.push(new WorkerSlot("direct", slotOptions));

  /** Everything a worker says but "ready", which its slot handles. */
  function onMessage(slot: Slot, message: FromWorker): void {
    const job = slot.job;
    switch (message.type) {
      case "events":
        if (job?.id === message.id && job.onEvents) {
          try {
            job.onEvents(JSON.parse(message.json) as EventDraft[]);
          } catch (error) {
            report(`onEvents failed for ${job.task.capability}: ${(error as Error)?.stack ?? error}`);
          }
        }
        break;
      case "outcome":
        if (job?.id === message.id) release(slot, job, message.outcome);
        break;
      case "host":
        void answerHost(slot.worker, message.request);
        break;
      case "problem":
        report(message.message);
        break;
      case "tainted":
        // Replaced once its task ends (release), or now when none runs: no later task meets them.
        report(message.message);
        if (job) slot.outdated = true;
        else if (slot.isReady) retire(slot);
        break;
      case "output":
        output(message.stream, message.text);
        break;
      case "nested":
        if (message.threads.some((thread) => !slot.nestedThreads.includes(thread))) slot.nestedBy = job?.task.capability ?? slot.lastCapability;
        slot.nestedThreads = message.threads;
        break;
      case "collected":
        if (job && job.collectAskedAt !== undefined) answeredCollect(slot, job, message.held_mb);
        else heldAfterTasks(slot, message.held_mb);
        break;
    }
  }

  /**
   * The worker of a handler found over the memory limit collected its garbage: holding no more
   * than the limit, the handler only churned, and its faults count from now; holding more, it is
   * stopped at once.
   */
  function answeredCollect(slot: Slot, job: Job, heldMb: number): void {
    job.collectAskedAt = undefined;
    if (heldMb <= memoryLimitMb) {
      watchdog.restartCount(job.id);
      // Asked for the process's growth: what its own thread faulted in is garbage now, resident but
      // reused. Growth it did not fault in itself — held outside its heap (a Worker of its own) — stops it.
      if (job.collectedForProcess) watchdog.rebase(job.id);
    }
    else stopForMemory(slot, job, heldMb);
  }

  async function answerHost(worker: Worker, request: number): Promise<void> {
    let reply: ToWorker;
    try {
      reply = { type: "host", request, facts: await options.hostFacts(), error: null };
    } catch (error) {
      reply = { type: "host", request, facts: null, error: `ctx.host() failed in the main thread: ${(error as Error)?.message ?? error}` };
    }
    try {
      worker.postMessage(toWire(reply));
    } catch {
      // The worker was terminated while the facts were gathered; nobody is waiting any more.
    }
  }

  /** The task of a worker that exited; the slot then replaces the worker or gives up on it. */
  function onExit(slot: Slot, code: number, why: string): void {
    const job = slot.job;
    slot.job = null;
    // Where the task stood when the thread ended (it is gone: no race with it).
    const unbegun = job && slot.isReady ? takeBackUnbegun(slot.claim, job.id) : null;
    if (job && !slot.isReady) {
      // A worker posts "ready" before it reads any task, so this one never began the handler:
      // the task goes back to the head of its queue rather than failing for a start-up problem.
      job.slot = null;
      lanes[slot.lane].queue.unshift(job);
    } else if (job && unbegun === "handed") {
      // It never read the task: what ended the thread was a previous handler's leftover (a timer
      // that exits or throws, memory it kept growing). The task never left the pool; it waits for
      // the next worker, at the head of its queue — unless workers keep dying under it, when it
      // ends unbegun (docs/containment.md, "Take back what was never begun").
      job.slot = null;
      job.lostUnread = (job.lostUnread ?? 0) + 1;
      if (job.lostUnread >= MAX_LOST_UNREAD) {
        // Named like each worker before it: the log names the capability whose leftovers ended them (docs/containment.md).
        report(`${laneWorker(slot.lane)} stopped before reading ${job.task.capability}'s task (${why}), left by ${culpritOf(slot)}: ${job.lostUnread} workers in turn stopped under it before reading it, so it did not run.`);
        settle(job, { kind: "worker_lost", never_began: true, message: `${job.lostUnread} workers in turn stopped before reading it (the last: exit code ${code})` });
      } else {
        report(`${laneWorker(slot.lane)} stopped before reading ${job.task.capability}'s task (${why}, left by ${culpritOf(slot)}); replacing it, and the task waits for the new one.`);
        job.fresh = true;
        lanes[slot.lane].queue.unshift(job);
      }
    } else if (job && unbegun === "received" && retryElsewhere(slot, job, `stopped (${why})`)) {
      // Retried on a fresh worker: the slot replaces this one once onExit returns.
    } else if (job && unbegun === "received") {
      // It ended while importing the file, before the handler was called (the thread is gone: no race).
      report(`${laneWorker(slot.lane)} stopped while importing ${job.task.capability}'s file, before its handler began (${why}); replacing it.`);
      settle(job, { kind: "load_failed", cause: "exited", message: `its top level ended the worker's thread (exit code ${code})` });
    } else if (job) {
      report(`${laneWorker(slot.lane)} stopped while running ${job.task.capability} (${why}); replacing it.`);
      settle(job, { kind: "worker_lost", exit_code: code, message: `The worker running ${job.task.capability} stopped (exit code ${code}) before the handler finished.` });
    } else if (slot.isReady) {
      report(`An idle ${slot.lane} worker stopped (${why}); replacing it.`);
    }
  }

  /** Hands queued tasks to free workers in order; a task taken back from a worker that may hold a leftover goes to a fresh one where one is free. */
  function dispatch(lane: Lane): void {
    const { slots, queue } = lanes[lane];
    while (queue.length > 0) {
      const fresh = queue[0]!.fresh === true;
      let chosen: Slot | null = null;
      for (const slot of slots) {
        if (slot.job || slot.dead) continue;
        if (!fresh || slot.tasksHere === 0) {
          chosen = slot;
          break;
        }
        chosen ??= slot;
      }
      if (chosen === null) return;
      assign(chosen, queue.shift()!);
    }
  }

  function assign(slot: Slot, job: Job): void {
    slot.job = job;
    job.slot = slot;
    job.assignedAt = performance.now();
    job.preparingSince = undefined;
    noteImport(slot, job.task);
    // Before the message: the worker begins only a task handed to it (see WorkerBoot).
    handTask(slot.claim, job.id);
    if (startCheck === null) armStartCheck();
    watchdog.watch(job.id, () => (job.slot === slot ? slot.thread : null));
    slot.worker.ref();
    try {
      const run = toWire<ToWorker>({ type: "run", id: job.id, task: job.task });
      job.prepareMs = loadTimeoutMs + PREPARE_MARGIN_MS + Math.ceil((typeof run === "string" ? run.length : 0) / PARSE_CHARS_PER_MS);
      // A task JSON cannot carry goes by structured clone: received first (see the receive message).
      if (typeof run !== "string") slot.worker.postMessage(toWire<ToWorker>({ type: "receive", id: job.id }));
      slot.worker.postMessage(run);
    } catch (error) {
      // Only a task that structured clone cannot copy gets here; the engine sends validated JSON.
      release(slot, job, { ok: false, error: { kind: "internal", error_class: thrownClass(error), note: "its task could not be sent to a worker", message: thrownDetail(error), stack: null } });
    }
  }

  function release(slot: Slot, job: Job, outcome: TaskOutcome): void {
    // A load timer that fired on time gave up on the file's own top-level await; one that fired
    // late, or an uncaught error, may be what an earlier task left running (retryElsewhere).
    const mayBeLeftover = !outcome.ok && outcome.error.kind === "load_failed" && (outcome.error.uncaught || outcome.error.held);
    if (mayBeLeftover && job.cancelRequested && slot.tasksHere > 0) {
      // Cancelled while its import was given up (the worker could no longer take the cancel): it
      // never began, and is not tried again elsewhere; its worker is replaced.
      resolveJob(job, { ok: false, error: { kind: "cancelled", message: "Cancelled before the handler started.", never_began: true } });
      slot.job = null;
      replaceJobWorker(slot, job);
      dispatch(slot.lane);
      return;
    }
    if (mayBeLeftover && retryElsewhere(slot, job, outcome.error.message)) {
      // Perhaps not the file's doing but a previous handler's leftover: it runs on a fresh worker.
      replaceJobWorker(slot, job);
      dispatch(slot.lane);
      return;
    }
    // What a handler allocated outside the heap (Buffers) stays resident after it returns until
    // its worker collects, which an idle worker may never do: held, it would count as the growth
    // of the handlers still running, and stop one of them under its limit. So a worker whose
    // handler faulted in much collects before its next task.
    const faultedMb = watchdog.unwatch(job.id);
    slot.tasksSinceLook++;
    if (!slot.outdated && !slot.heldOver && (faultedMb !== null || slot.tasksSinceLook >= LOOK_EVERY_TASKS)) lookAtRetained(slot, faultedMb);
    slot.job = null;
    slot.lastCapability = job.task.capability;
    slot.tasksEnded++;
    slot.tasksHere++;
    idleWatch.taskEnded();
    if (slot.isReady) slot.worker.unref();
    resolveJob(job, outcome);
    if (!outcome.ok && outcome.error.kind === "load_failed") leftLoading(slot, job, outcome.error);
    else if (slot.heldOver) replaceWorker(slot);
    else if (slot.outdated) retire(slot);
    dispatch(slot.lane);
  }

  /**
   * A task whose file failed as its worker imported it: the worker is replaced (docs/containment.md).
   * A top-level `await` that never settles stays pending in the thread for its life — each later
   * task of the file would wait on that same import for the whole load time, never importing it
   * again — and what the top level started before it failed or stalled (an interval, a child)
   * goes on running with no task to own it.
   */
  function leftLoading(slot: Slot, job: Job, error: Extract<TaskError, { kind: "load_failed" }>): void {
    if (error.cause === "load_timeout") {
      report(`${laneWorker(slot.lane)} did not finish importing ${job.task.capability}'s file within load_timeout_ms (${loadTimeoutMs} ms): a top-level await that never settles, or slow work at its top level. Its task failed before its handler began; the worker is replaced, and what the file's top level left running with it.`);
    }
    replaceJobWorker(slot, job);
  }

  /**
   * Which version of its file a task makes its worker import. A module, once imported, stays in
   * its thread for the thread's life: a worker that ran a capability before and after an edit
   * holds both versions — and their helpers — and every later edit adds one more (measured: about
   * 10 × a helper's source per save). Such a worker is retired once its task ends (retire).
   */
  function noteImport(slot: Slot, task: WorkerTask): void {
    if (task.source.kind !== "file" || task.version === undefined || task.entry === "load") return;
    const before = slot.imported.get(task.source.file);
    if (before !== undefined && before !== task.version) slot.outdated = true;
    slot.imported.set(task.source.file, task.version);
  }

  /**
   * A new worker takes the slot of one that holds code of versions no longer run. Nothing went
   * wrong: what its handlers left running on purpose (a detached process) is left alone, and the
   * replacement is not counted with those made for faults.
   */
  /**
   * After a task that the watchdog measured (or every LOOK_EVERY_TASKS short ones): a worker whose
   * thread faulted in collectAfterMb since it last collected — in this task, or across many —
   * collects now, and answers what its heap still holds (heldAfterTasks). Garbage it collects; what
   * handlers kept reachable between their calls (a module-level cache) it cannot, and that is
   * what the answer shows.
   */
  function lookAtRetained(slot: Slot, faultedMb: number | null): void {
    slot.tasksSinceLook = 0;
    const total = slot.thread === null ? null : faultsOf(slot.thread);
    if (total === null) {
      // No per-thread counters (not Linux): the task's own faults alone, when the watchdog had them.
      if (faultedMb !== null && faultedMb >= collectAfterMb) askCollect(slot);
      return;
    }
    // First counted now: from before this task, as far as the watchdog measured it.
    slot.faultsAtCollect ??= total - Math.round(((faultedMb ?? 0) * MIB) / PAGE_BYTES);
    if (((total - slot.faultsAtCollect) * PAGE_BYTES) / MIB < collectAfterMb) return;
    slot.faultsAtCollect = total;
    askCollect(slot);
  }

  function askCollect(slot: Slot): void {
    slot.worker.postMessage(toWire<ToWorker>({ type: "collect" }));
  }

  /**
   * A worker collected after its tasks ended (lookAtRetained) and still holds more than a handler
   * may add: what its handlers kept between calls. Nothing else would ever bound it — each call
   * adds under the limit, and the watchdog counts a call's growth from when it began — so the
   * worker is replaced (once its current task ends, if one began meanwhile), and its module-level
   * state with it. No task fails: the one that kept the memory had already ended.
   */
  function heldAfterTasks(slot: Slot, heldMb: number): void {
    if (heldMb <= memoryLimitMb || slot.heldOver) return;
    memoryStops++;
    report(`${laneWorker(slot.lane)} still holds about ${heldMb} MiB after its tasks ended, over the memory limit of ${memoryLimitMb} MiB: what ${culpritOf(slot)} (or a handler before it) kept between calls, a module-level cache say. It is replaced${slot.job ? " once its task ends" : ""}, and that state with it.`);
    if (slot.job) slot.heldOver = true;
    else replaceWorker(slot);
  }

  function retire(slot: Slot): void {
    const old = slot.worker;
    retiring = true;
    try {
      slot.replace();
    } finally {
      retiring = false;
    }
    old.unref();
    void old.terminate().catch(() => undefined);
  }

  function resolveJob(job: Job, outcome: TaskOutcome): void {
    if (job.settled) return;
    job.settled = true;
    job.slot = null;
    jobs.delete(job.id);
    watchdog.unwatch(job.id);
    job.resolve(outcome);
  }

  function settle(job: Job, error: TaskError): void {
    resolveJob(job, { ok: false, error });
  }

  /**
   * Replaces the worker `job` was handed to, ending with it only the processes started since then:
   * a process an earlier task left running on purpose is not this task's.
   */
  function replaceJobWorker(slot: Slot, job: Job): void {
    replaceWorker(slot, Date.now() - (performance.now() - job.assignedAt), job.task.capability);
  }

  /**
   * Ends a running job by force: its worker is replaced (replaceWorker), so a thread stuck in a
   * blocking system call never holds its lane (docs/containment.md).
   */
  function stopBy(slot: Slot, job: Job, error: TaskError): void {
    slot.job = null;
    settle(job, error);
    replaceJobWorker(slot, job);
  }

  /**
   * A new worker takes the slot at once and the old one is told to terminate without being waited
   * for: a thread stuck in a blocking system call (which no termination can interrupt) never holds
   * its lane. Unreferenced, such a thread does not keep the process from exiting either. The
   * processes its thread started (those since `childrenSince`, epoch ms, when given) are killed.
   */
  function replaceWorker(slot: Slot, childrenSince?: number, capability?: string): void {
    const old = slot.worker;
    const thread = slot.thread;
    watchEnding(old, slot.lane, capability ?? slot.job?.task.capability ?? null);
    // Every thread told to end and not ended yet counts, stuck or not yet known to be: a burst of
    // replacements inside the 5 s before any counted as stuck went to 64 (checking tester, session 49).
    if (ending.size > maxStuckThreads) slot.suspend(stuckReason());
    else slot.replace();
    old.unref();
    void old.terminate().catch(() => undefined);
    // A thread waiting in execSync ends once its child does.
    killThreadDescendants(thread, childrenSince);
  }

  /**
   * Watches a terminated worker's thread end: one still there after stuckAfterMs is stuck (in a
   * read of a FIFO or a pipe no one writes, a lock) and holds what its handler held; said in the
   * log, counted against maxStuckThreads, and once it ends after all, a lane suspended for them
   * runs again.
   */
  function watchEnding(worker: Worker, lane: Lane, capability: string | null): void {
    ending.add(worker);
    const timer = setTimeout(() => {
      if (!ending.has(worker) || closed) return;
      stuck.add(worker);
      // Past the bound for certain now: what a suspended lane queued meanwhile is refused, saying why.
      if (stuck.size > maxStuckThreads) for (const each of ["execution", "direct"] as const) failQueueIfLaneDead(each);
      const running = capability === null ? "" : `, which ran ${capability},`;
      report(`${lane === "execution" ? "An" : "A"} ${lane} worker${running} terminated ${Math.round(stuckAfterMs / 1000)} s ago has not ended: its thread is blocked in a call no termination interrupts (a read of a FIFO, a pipe or a terminal no one writes to, a lock), and keeps what its handler held until that call returns. ${stuck.size} such thread${stuck.size === 1 ? "" : "s"} now (past ${maxStuckThreads} threads told to end and not ended, a worker replaced is not started again until one ends; restart docket serve to end them).`);
    }, stuckAfterMs);
    (timer as { unref?: () => void }).unref?.();
    worker.once("exit", () => {
      ending.delete(worker);
      clearTimeout(timer);
      if (stuck.delete(worker)) report(`A stuck thread of a terminated ${lane} worker ended after all; ${stuck.size} left.`);
      if (ending.size <= maxStuckThreads) for (const each of [...lanes.execution.slots, ...lanes.direct.slots]) each.resume();
    });
  }

  /**
   * Whether a lane's tasks are refused at once: every slot given up — but a slot suspended while
   * threads told to end have not ended yet (a busy loop's ends within milliseconds) makes its
   * tasks wait, until more than the bound are known to be stuck.
   */
  function refusesNow(lane: Lane): boolean {
    const { slots } = lanes[lane];
    return slots.every((s) => s.dead) && slots.some((s) => !s.isSuspended || stuck.size > maxStuckThreads);
  }

  /** Why a task of a lane with no worker did not run: its workers could not start, or too many threads are stuck (stuckReason). */
  function noWorker(lane: Lane, capability: string): string {
    const suspended = lanes[lane].slots.find((s) => s.isSuspended);
    return suspended !== undefined ? `No ${lane} worker runs now, so ${capability} did not run: ${suspended.deadReason}.` : `No ${lane} worker could start, so ${capability} did not run.`;
  }

  function stuckReason(): string {
    return `more than ${maxStuckThreads} threads of terminated workers have not ended (each blocked in a call no termination interrupts: a read of a FIFO, a pipe or a terminal no one writes to), and they hold what their handlers held; no worker is started in their place until one ends. Restart docket serve to end them, and look for the handler that blocks (the log names the capabilities they ran)`;
  }

  /**
   * A worker that was preparing a task taken back from it is replaced at once: it may stay in
   * the file's top level for up to load_timeout_ms — for ever in a synchronous loop — and no
   * terminate would come for a task already settled. Nothing of the handler ran and nothing
   * failed, so the replacement is not counted with those made for faults.
   */
  function abandonPreparing(slot: Slot, job: Job): void {
    retiring = true;
    try {
      replaceJobWorker(slot, job);
    } finally {
      retiring = false;
    }
  }

  function armStartCheck(): void {
    if (closed) return;
    startCheck = setTimeout(checkStarts, Math.max(1, startTimeoutMs / 2));
    startCheck.unref?.();
  }

  /**
   * Every task handed to a ready worker that has not received it within startTimeoutMs is taken
   * back — unless the worker receives it in the same instant (an atomic swap decides) — and its worker,
   * busy with what a previous handler left running, is replaced; the task runs on the next free
   * worker. A task its worker received and is still preparing past its prepareMs is a file whose
   * top level does not finish (a synchronous loop, which no timer in its worker can end): it fails
   * as a load error and its worker is replaced. Re-armed while some task is still waiting to begin.
   */
  function checkStarts(): void {
    startCheck = null;
    const now = performance.now();
    let waiting = false;
    for (const lane of Object.values(lanes)) {
      for (const slot of lane.slots) {
        const job = slot.job;
        if (!job) continue;
        // A task its worker received is being prepared (its file imported, its input parsed): not
        // stuck on a leftover, but bounded by the load time.
        if (isPreparing(slot.claim, job.id)) {
          waiting = true;
          job.preparingSince ??= now;
          if (now - job.preparingSince >= job.prepareMs && takeBackUnbegun(slot.claim, job.id) === "received") loadNeverFinished(slot, job, now - job.preparingSince);
          continue;
        }
        if (!isUnreceived(slot.claim, job.id)) continue;
        waiting = true;
        // A worker still starting is not stuck: the wait counts from when it was ready.
        const waited = now - Math.max(job.assignedAt, slot.readyAt);
        if (!slot.isReady || waited < startTimeoutMs) continue;
        if (!takeBackUnreceived(slot.claim, job.id)) continue;
        takeBack(slot, job, waited);
      }
    }
    if (waiting && startCheck === null) armStartCheck();
  }

  /** A worker held in a file's top level past the load time, its task taken back: the task fails as the file's, and the worker is replaced. */
  function loadNeverFinished(slot: Slot, job: Job, preparingMs: number): void {
    if (retryElsewhere(slot, job, `was still importing it ${Math.round(preparingMs / 1000)} s after it received the task, its thread too busy for its own load timer`)) return replaceJobWorker(slot, job);
    report(
      `${laneWorker(slot.lane)} was still importing ${job.task.capability}'s file ${Math.round(preparingMs / 1000)} s after it received the task, past load_timeout_ms (${loadTimeoutMs} ms), with its thread too busy for its own load timer (a synchronous loop at the file's top level?). Its task fails before its handler began; the worker is replaced.`,
    );
    stopBy(slot, job, { kind: "load_failed", cause: "load_timeout", message: `it did not finish loading within ${loadTimeoutMs} ms (load_timeout_ms): its top level kept its worker's thread busy (a synchronous loop, or slow work at its top level)` });
  }

  function takeBack(slot: Slot, job: Job, waitedMs: number): void {
    report(
      `${laneWorker(slot.lane)} had not begun ${job.task.capability} ${Math.round(waitedMs)} ms after it was handed the task: its thread is still busy with work ${culpritOf(slot)} left running after it returned (a timer or a callback). It is replaced, and ${job.task.capability} runs on the next free worker.`,
    );
    requeue(slot, job);
  }

  /** A task taken back unread from its worker: first in its queue again, and the worker (held by what a previous handler left) replaced. */
  function requeue(slot: Slot, job: Job): void {
    watchdog.unwatch(job.id);
    slot.job = null;
    job.slot = null;
    // Never cancelled: a cancel of a task not begun takes it back at once (see cancel()).
    job.fresh = true;
    lanes[slot.lane].queue.unshift(job);
    replaceWorker(slot);
  }

  /**
   * A task whose file failed while a worker imported it — ended its thread, kept it busy past the
   * load time, left an error uncaught — on a worker where other tasks ran before: what failed may
   * be what one of them left running (a timer that exits, spins or rejects while the file's top
   * level awaits), not the file. The handler never began,
   * so the task goes back to the head of its queue for a fresh worker, where only its own file
   * runs first (docs/containment.md, "Take back what was never begun"). The caller replaces the
   * worker. False, and nothing done, on a fresh worker (the failure is surely the file's) or once
   * MAX_LOST_UNREAD workers failed under it.
   */
  function retryElsewhere(slot: Slot, job: Job, what: string): boolean {
    if (slot.tasksHere === 0 || (job.lostUnread ?? 0) + 1 >= MAX_LOST_UNREAD) return false;
    job.lostUnread = (job.lostUnread ?? 0) + 1;
    report(`${laneWorker(slot.lane)} importing ${job.task.capability}'s file failed (${what}), perhaps by what ${culpritOf(slot)} left running there; replacing it, and the task waits for a fresh worker, where only its own file runs.`);
    watchdog.unwatch(job.id);
    job.collectAskedAt = undefined;
    job.slot = null;
    job.fresh = true;
    if (slot.job === job) slot.job = null;
    lanes[slot.lane].queue.unshift(job);
    return true;
  }

  function failQueueIfLaneDead(lane: Lane): void {
    const { queue } = lanes[lane];
    if (!refusesNow(lane)) return;
    for (const job of queue.splice(0)) settle(job, { kind: "worker_lost", never_began: true, no_worker: true, message: noWorker(lane, job.task.capability) });
  }

  /**
   * Takes `job` back if its handler has not begun — still queued, or handed to its worker and not
   * begun (it may be busy with a leftover, importing the file, parsing the input): then it never
   * will be, and it settles cancelled, never begun. True too, unsettled, when its worker already
   * ended it unbegun (its file failed to load): the verdict settles it, not retried. False, and
   * nothing done, once it began.
   */
  function withdraw(job: Job): boolean {
    const slot = job.slot;
    if (!slot) {
      if (!unqueue(job)) return false;
      settle(job, { kind: "cancelled", message: "Cancelled before the handler started.", never_began: true });
      return true;
    }
    const unbegun = takeBackUnbegun(slot.claim, job.id);
    // Its worker ended it unbegun (its file failed to load) and the verdict is on its way: nothing
    // of it ran. The caller marks the cancel, which release() then honours instead of trying the
    // task again elsewhere.
    if (unbegun === null) return slot.job === job && endedUnbegun(slot.claim);
    // Settling unwatches it and clears its slot; the slot's own record is cleared here.
    slot.job = null;
    settle(job, { kind: "cancelled", message: "Cancelled before the handler started.", never_began: true });
    if (unbegun === "received") abandonPreparing(slot, job);
    else if (slot.isReady) slot.worker.unref();
    dispatch(slot.lane);
    return true;
  }

  function unqueue(job: Job): boolean {
    for (const lane of Object.values(lanes)) {
      const at = lane.queue.indexOf(job);
      if (at >= 0) {
        lane.queue.splice(at, 1);
        return true;
      }
    }
    return false;
  }

  return {
    run(task: WorkerTask, runOptions: RunTaskOptions): TaskHandle {
      // A pool built without direct workers (`docket run`, which makes no direct calls) sends
      // any direct call to the execution lane rather than letting it wait for ever.
      const laneName: Lane = runOptions.lane === "direct" && lanes.direct.slots.length === 0 ? "execution" : runOptions.lane;
      const lane = lanes[laneName];
      if (!lane) throw new TypeError(`Unknown lane ${JSON.stringify(runOptions.lane)}: use "execution" or "direct".`);
      let resolve!: (outcome: TaskOutcome) => void;
      const outcome = new Promise<TaskOutcome>((r) => (resolve = r));
      const job: Job = { id: nextId, task, assignedAt: 0, prepareMs: 0, onEvents: runOptions.onEvents, slot: null, cancelRequested: false, settled: false, resolve };
      jobs.set(job.id, job);
      // Ids are written into Int32 shared flags; 0 means "no cancel", so they run 1..MAX_TASK_ID.
      nextId = nextId >= MAX_TASK_ID ? 1 : nextId + 1;

      if (closed) settle(job, { kind: "terminated", message: "The worker pool is closed." });
      else if (refusesNow(laneName)) settle(job, { kind: "worker_lost", never_began: true, no_worker: true, message: noWorker(laneName, task.capability) });
      else {
        lane.queue.push(job);
        dispatch(laneName);
      }

      return {
        outcome,
        cancel() {
          if (job.settled || job.cancelRequested) return;
          job.cancelRequested = true;
          if (withdraw(job)) return;
          const slot = job.slot;
          if (slot) {
            // The store is what a busy-looping handler sees; the message aborts ctx.signal.
            Atomics.store(slot.flag, 0, job.id);
            slot.worker.postMessage(toWire<ToWorker>({ type: "cancel", id: job.id }));
          }
        },
        withdraw() {
          if (job.settled || job.cancelRequested) return false;
          const withdrawn = withdraw(job);
          if (withdrawn) job.cancelRequested = true;
          return withdrawn;
        },
        begunAgo() {
          return job.slot === null ? null : job.slot.begunAgo(job.id);
        },
        terminate() {
          if (job.settled) return;
          const slot = job.slot;
          if (!slot) {
            unqueue(job);
            settle(job, { kind: "terminated", message: "Stopped before the handler started." });
            return;
          }
          stopBy(slot, job, { kind: "terminated", message: `The worker running ${task.capability} was terminated.` });
        },
      };
    },

    async warm() {
      await Promise.all([...lanes.execution.slots, ...lanes.direct.slots].map((slot) => slot.warm()));
    },

    async close() {
      if (closed) return;
      closed = true;
      watchdog.close();
      idleWatch.close();
      if (startCheck !== null) clearTimeout(startCheck);
      const stopping: Array<Promise<unknown>> = [];
      for (const lane of Object.values(lanes)) {
        for (const job of lane.queue.splice(0)) settle(job, { kind: "terminated", message: "The worker pool closed before the handler started.", never_began: true });
        for (const slot of lane.slots) {
          if (slot.job) settle(slot.job, { kind: "terminated", message: `The worker pool closed while ${slot.job.task.capability} was running.` });
          slot.job = null;
          stopping.push(slot.stop());
        }
      }
      await Promise.all(stopping);
    },

    workerFault() {
      const dead = (["execution", "direct"] as const).filter((lane) => lanes[lane].slots.length > 0 && lanes[lane].slots.every((s) => s.dead));
      if (dead.length === 0) return null;
      const slots = lanes[dead[0]].slots;
      return { lanes: dead, reason: slots[0].deadReason!, since: slots.map((s) => s.deadSince!).sort()[0] };
    },

    stats() {
      const live = (lane: Lane) => lanes[lane].slots.filter((s) => !s.dead).length;
      const busy = [...lanes.execution.slots, ...lanes.direct.slots].filter((s) => s.job).length;
      return { execution_workers: live("execution"), direct_workers: live("direct"), busy, replaced, memory_stops: memoryStops };
    },
  };
}

function checkCount(name: string, value: unknown, min = 1): number {
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > 8) {
    throw new RangeError(`createWorkerPool: ${name} must be a whole number from ${min} to 8, got ${JSON.stringify(value)}.`);
  }
  return value as number;
}

