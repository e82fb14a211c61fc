import { toWire, type FromWorker, type ToWorker } from "./_messages.ts";
import { WorkerSlot, type WorkerSlotOptions } from "./_worker-slot.ts";
import type { WorkerTask } from "./task.ts";

/** Options of `createLoadProbe`. */
export interface LoadProbeOptions {
  /** The worker entry (the pool's: it serves the `docket` module to the files it imports). */
  workerUrl: URL;
  /** How long a file's trial load may take (`load_timeout_ms`). */
  timeoutMs: number;
  /** Problems of the probe's own worker, for the server log. */
  report?: (line: string) => void;
}

/**
 * Trial loads of capability files in a worker of their own, before the main thread imports them
 * (docs/containment.md, "Loading"). Importing a file runs its top level, and on the main thread a
 * synchronous loop there would hold the whole server; in a worker it is ended by terminating the
 * worker. A file whose trial load does not finish in time, or ends its thread, is not imported
 * by the main thread at all.
 */
export interface LoadProbe {
  /**
   * Why this version of the file must not be imported on the main thread, or null: import it
   * (a trial load that failed with an error is null too, so that the main thread's own import
   * describes the error with its line, as it always did). A version is tried once: its verdict
   * stands until the file's text changes.
   */
  check(file: string, version: string): Promise<string | null>;
  /**
   * Ends the probe's worker once a discovery pass is over: what the files' top levels left
   * running (timers, servers) ends with it. The next check starts a new worker.
   */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** The trial load in progress: its task id and how it settles. */
interface Trial {
  id: number;
  settle(reason: string | null): void;
}

export function createLoadProbe(options: LoadProbeOptions): LoadProbe {
  const { timeoutMs } = options;
  const report = options.report ?? (() => {});
  /** Versions whose trial load finished: the main thread has imported them, and may again at once. */
  const passed = new Set<string>();
  /** Versions refused, with why: the same text is not tried (nor its top level run) again on a later reload. */
  const refused = new Map<string, string>();
  let slot: WorkerSlot<Trial> | null = null;
  let nextId = 1;
  let closed = false;
  /** One trial at a time: the worker has one task slot, and discovery loads file after file anyway. */
  let turn: Promise<unknown> = Promise.resolve();

  const slotOptions: WorkerSlotOptions<Trial> = {
    workerUrl: options.workerUrl,
    // The worker's own bound on an import comes after ours: this side decides, by the same clock.
    loadTimeoutMs: timeoutMs * 2,
    report,
    childGraceMs: 0,
    onMessage(from, message: FromWorker) {
      if (message.type === "outcome" && from.job?.id === message.id) from.job.settle(null);
      else if (message.type === "problem") report(message.message);
    },
    onExit(from, code) {
      from.job?.settle(
        `loading the file ended its thread (exit code ${code}) when docket tried it in a worker first — process.exit() or a crash at its top level — so the server did not import it; take that out of its top level and save it again`,
      );
    },
    onReplaced() {},
    onGaveUp() {},
  };

  /** Stops the current worker without waiting for it: one stuck in a loop ends when its thread next checks. */
  const drop = () => {
    const old = slot;
    slot = null;
    if (!old) return Promise.resolve();
    old.worker.unref();
    return old.stop().catch(() => undefined);
  };

  const trial = (worker: WorkerSlot<Trial>, file: string, version: string) =>
    new Promise<string | null>((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        trialOf.settle(
          `the file did not finish loading within ${timeoutMs} ms when docket tried it in a worker first (a synchronous loop or slow work at its top level, or a top-level await that never settles), so the server did not import it; make its top level quick and save it again, or raise DOCKET_LOAD_TIMEOUT_MS`,
        );
        if (slot === worker) void drop();
      }, timeoutMs);
      const trialOf: Trial = {
        id,
        settle(reason) {
          if (worker.job !== trialOf) return;
          clearTimeout(timer);
          worker.job = null;
          if (slot === worker && worker.isReady) worker.worker.unref();
          resolve(reason);
        },
      };
      const task: WorkerTask = {
        capability: "",
        source: { kind: "file", file },
        version,
        input: null,
        execution: null,
        root: "",
        artifacts_dir: null,
        artifact_limits: { files: 0, bytes: 0, total_bytes: 0 },
        entry: "load",
      };
      worker.job = trialOf;
      worker.worker.ref();
      // The worker begins only a task it can claim (WorkerBoot).
      Atomics.store(worker.claim, 0, id);
      worker.worker.postMessage(toWire<ToWorker>({ type: "run", id, task }));
    });

  return {
    check(file, version) {
      const checked = turn.then(() => checkNow(file, version));
      turn = checked;
      return checked;
    },
    async idle() {
      await turn;
      if (!slot?.job) await drop();
    },
    async close() {
      closed = true;
      slot?.job?.settle(null);
      await drop();
    },
  };

  async function checkNow(file: string, version: string): Promise<string | null> {
    const key = `${file}\n${version}`;
    if (closed || passed.has(key)) return null;
    const known = refused.get(key);
    if (known !== undefined) return known;
    slot ??= new WorkerSlot<Trial>("direct", slotOptions);
    const worker = slot;
    try {
      await worker.warm();
    } catch (error) {
      // No worker to try it in: the file loads as it did before trial loads existed.
      report(`docket could not start a worker to try ${file} in first (${(error as Error)?.message ?? error}); importing it directly.`);
      if (slot === worker) slot = null;
      return null;
    }
    if (slot !== worker) return null;
    const reason = await trial(worker, file, version);
    if (reason === null) passed.add(key);
    else refused.set(key, reason);
    return reason;
  }
}
