import { dirname, relative } from "node:path";
import type { CapabilitySources } from "../capability/capability-sources.ts";
import type { ParkedTrial } from "../capability/inspect.ts";
import type { FromWorker, ToWorker } from "./_messages.ts";
import { WorkerSlot, type WorkerSlotOptions } from "./_worker-slot.ts";
import { MemoryWatchdog } from "./memory-watchdog.ts";
import { UNSAID } from "../execution/thrown.ts";
import { plainText } from "../execution/text-sanitize.ts";
import { handTask } from "./_task-claim.ts";
import type { TaskOutcome, WorkerTask } from "./task.ts";

/** Options of `createLoadProbe`. */
export interface LoadProbeOptions {
  /** The worker entry (the pool's: it serves the `docket` module to the files it imports). */
  workerUrl: URL;
  /** How long a file's trial load may take (`load_timeout_ms`). */
  timeoutMs: number;
  /** Problems of the probe's own worker, for the server log. */
  report?: (line: string) => void;
  /** MiB a trial may grow the process by (`worker_memory_mb`), as a handler may; default 1024. */
  memoryLimitMb?: number;
  /** How often the memory watchdog looks during a trial; default 100 ms. */
  memorySampleMs?: number;
  /** Time allowed per MiB of text a trial hands its worker, beyond `timeoutMs`, before its import begins; default PREPARE_MS_PER_MIB. */
  prepareMsPerMib?: number;
}

/**
 * Trial loads of capability files in a worker of their own, before the main thread imports them
 * (docs/containment.md, "Loading"). Importing a file runs its top level, and on the main thread a
 * synchronous loop there would hold the whole server; in a worker it is ended by terminating the
 * worker. A file whose trial load does not finish in time, ends its thread or throws is not
 * imported by the main thread at all: its load error says why, as the main thread's import would.
 */
export interface LoadProbe {
  /**
   * Why this source of a capability file (the file's text and its local modules', as read; its
   * `version` digests them) must not be imported on the main thread, or null: import it. A source
   * is tried once: its verdict stands until the file or a local module it imports changes.
   *
   * With `patienceMs` (a reload's), a trial still running after that long is parked: the check
   * answers {@link ParkedTrial} and the next check starts, while the trial goes on in its worker
   * until its verdict, which the next check of that source answers at once. Without it, the check
   * waits for the verdict.
   */
  check(sources: CapabilitySources): Promise<LoadProblem | null>;
  check(sources: CapabilitySources, patienceMs: number): Promise<LoadProblem | null | ParkedTrial>;
  /**
   * The read of the folders is over: the worker kept for the next trial is ended, so that the
   * next read's trials import packages as they are installed then, not as a worker imported
   * them before (an uninstalled package is a load error, not a module cached there).
   */
  rest(): void;
  close(): Promise<void>;
}

/**
 * How many trials may be parked at once. Each is a top level still running (a loop burns a core
 * until `load_timeout_ms`); past this many, a check waits for its verdict as without patience.
 */
export const MAX_PARKED = 4;

/**
 * How long a reload waits for one file's trial before parking it: far longer than a trial takes
 * (a worker starting, about 30 ms, and the file's import), far shorter than `load_timeout_ms`.
 */
export const TRIAL_PATIENCE_MS = 1000;

/**
 * How many trials one worker runs, one after the other, while each passes: a top level that
 * passed left nothing of its own running there (the trial refuses a timer, a server, a
 * listener), and a worker takes some 30–70 ms to start, most of a trial's time. A refused file's
 * worker is ended at once.
 */
export const TRIALS_PER_WORKER = 32;

/** How long the worker of a trial that passed waits for the next trial before it is ended (a read of the folders ends it at once: `rest`). */
export const SPARE_IDLE_MS = 2000;

/** Why a trial refused a file: its load error, as discovery reports it. */
export interface LoadProblem {
  code: "load_timeout" | "import_failed";
  reason: string;
  line: number | null;
  column: number | null;
  /** The reason with what the file threw, for the server's log only (capability/_import-failure.ts). */
  detail?: string;
}

const problem = (code: LoadProblem["code"], reason: string): LoadProblem => ({ code, reason, line: null, column: null });

/** Why a file is not loaded once the probe is closed: untried, it must not reach the main thread. */
const stopping = () => problem("import_failed", "the server is stopping, so the file was not tried, nor loaded");

/** The trial load in progress: its task id, how it settles, and the start of its import (its top level timed from then). */
interface Trial {
  id: number;
  settle(verdict: Verdict): void;
  importing(): void;
  /** What the file's top level printed: its last PRINTED_CHARS characters, and one more when it printed more. */
  printed: string;
}

/**
 * How much of what a refused file's top level printed the server's log shows, from its end: the
 * reason a file gives before `process.exit(1)` or a throw is its last words.
 */
export const PRINTED_CHARS = 2000;

/**
 * The problem, with what the file's top level printed before it was refused: the server's log
 * shows it (`detail`), a client reads that it is there. The trial's worker is the only place it
 * went: docket never imported the file, so nothing else printed it.
 */
function withPrinted(found: LoadProblem, printed: string): LoadProblem {
  // Kept one character past the bound: more than the bound was printed, and its first line is cut.
  const cut = printed.length > PRINTED_CHARS;
  let shown = cut ? printed.slice(1) : printed;
  let lead: string[] = [];
  if (cut) {
    // The cut line is dropped when a whole line follows it, else shown from where it was cut.
    const firstEnd = shown.indexOf("\n");
    if (firstEnd !== -1 && shown.slice(firstEnd + 1).trim() !== "") {
      shown = shown.slice(firstEnd + 1);
      lead = ["…"];
    } else shown = `…${shown}`;
  }
  // Shown as text, never as the terminal's commands (colours, cursor moves, a title change).
  const text = plainText(shown).replace(/\s+$/, "");
  if (text === "" || text === "…") return found;
  const lines = [...lead, ...text.split("\n")].map((line) => `  | ${line}`).join("\n");
  return { ...found, reason: `${found.reason} (the server's log shows what its top level printed before)`, detail: `${found.detail ?? found.reason}. Its top level printed:\n${lines}` };
}

/**
 * How long handing a trial its texts and parsing the data they import may take, per MiB of
 * text, beyond `load_timeout_ms`: measured about 70 ms per MiB on a loaded 2-core machine
 * (23 MB of JSON: 1.5 s); the margin is for a machine far busier. Only a worker that never got
 * to the import at all meets it — nothing of the file ran.
 */
export const PREPARE_MS_PER_MIB = 1000;

/**
 * A trial's outcome as a verdict: loaded (null), or the import's failure as the worker described
 * it. A task that failed is an error the file's top level left uncaught (an unhandled rejection,
 * a throw from a timer it set): the file is refused too, never passed.
 */
function verdictOf(outcome: TaskOutcome): Verdict {
  if (!outcome.ok) {
    const error = outcome.error;
    // The worker's note ("it failed outside its own call") says what the reason already says.
    const said = (error.kind === "internal" ? `${error.error_class}: ${error.note && error.message.startsWith(`${error.note}: `) ? error.message.slice(error.note.length + 2) : error.message}` : error.message).split("\n")[0]!;
    // A client reads the class of what was left uncaught; what it said, only the server's log.
    const uncaught = (what: string) => `loading the file left an error uncaught (${what}) when docket tried it in a worker first, so docket did not import it; await or catch what its top level starts`;
    if (error.kind !== "internal") return { problem: problem("import_failed", uncaught(said)), keep: false };
    return { problem: { ...problem("import_failed", `${uncaught(error.error_class)}${UNSAID}`), detail: uncaught(said) }, keep: false };
  }
  if (outcome.output === null || typeof outcome.output !== "object") return { problem: null, keep: true };
  const failure = outcome.output as { reason?: unknown; line?: unknown; column?: unknown; outside?: unknown; detail?: unknown; spent?: unknown; held_ms?: unknown };
  if (typeof failure.reason !== "string") return { problem: null, keep: true, spent: failure.spent === true, ...(typeof failure.held_ms === "number" ? { heldMs: failure.held_ms } : {}) };
  // An import that did not resolve, or a package that was uninstalled, depends on what is
  // installed, not on the text alone: an install (which the watch sees in package.json or
  // node_modules) must try the file again (_import-failure.ts says which failures are so).
  const keep = failure.outside !== true;
  const detail = typeof failure.detail === "string" ? { detail: failure.detail } : {};
  return { problem: { code: "import_failed", reason: failure.reason, line: typeof failure.line === "number" ? failure.line : null, column: typeof failure.column === "number" ? failure.column : null, ...detail }, keep };
}

/**
 * A trial's verdict, and whether it stands for that text on later reloads: a timeout, an exit or
 * a thrown error does; a refusal that may have come from outside the file (memory the process
 * grew meanwhile, an error left uncaught) is tried again on the next reload.
 */
interface Verdict {
  problem: LoadProblem | null;
  keep: boolean;
  /** Passed, in a worker no further trial may run in (a package's timer left pending, a built-in replaced). */
  spent?: boolean;
  /** Passed, its top level holding its thread this long (a second or more): said in the log. */
  heldMs?: number;
}

/** The log line of a file whose top level held its thread `heldMs` when tried: the server's main thread waits as long at each import. */
function slowTopLevel(file: string, heldMs: number): string {
  return `warning: ${file}: its top level held its thread for ${(heldMs / 1000).toFixed(1)} s when docket tried it in a worker first; it is loaded, but importing it holds docket's main thread as long (a server's requests, its cockpit and live channel wait meanwhile), at start and again at each save. Move slow work into the handler, or do it once on first use.`;
}

/** Where else a top level that did not finish may be: the local modules the file imports, a few by name. */
function helpersOf(sources: CapabilitySources): string {
  // Data (JSON, text) runs nothing: only the local modules that run are named.
  const helpers = sources.modules.filter((module) => module.path !== sources.file && module.data === undefined).map((module) => relative(dirname(sources.file), module.path));
  if (helpers.length === 0) return "";
  const named = helpers.slice(0, 3).join(", ");
  return ` or at the top of a module it imports: ${named}${helpers.length > 3 ? ` and ${helpers.length - 3} more` : ""}`;
}

export function createLoadProbe(options: LoadProbeOptions): LoadProbe {
  const { timeoutMs } = options;
  const prepareMsPerMib = options.prepareMsPerMib ?? PREPARE_MS_PER_MIB;
  const report = options.report ?? (() => {});
  /** Versions whose trial load finished: the main thread has imported them, and may again at once. */
  const passed = new Set<string>();
  /** Versions refused, with why: the same text is not tried (nor its top level run) again on a later reload. */
  const refused = new Map<string, LoadProblem>();
  /** Each trial's worker, until it is dropped: the one of the check in turn, and those parked. */
  const running = new Set<WorkerSlot<Trial>>();
  /** The worker of the last trial that passed, idle, kept for the next trial; with how many trials it ran, and its idle timer. */
  let spare: { worker: WorkerSlot<Trial>; trials: number; idle: ReturnType<typeof setTimeout> } | null = null;
  /** The parked trials, by source: settled once their verdict is known (and recorded). */
  const parkedTrials = new Map<string, Promise<void>>();
  /** A parked trial's refusal that is not kept (memory, an uncaught error): answered to the next check of its source, once. */
  const unread = new Map<string, LoadProblem>();
  const memoryLimitMb = options.memoryLimitMb ?? 1024;
  // A top level that allocates without end is stopped as a handler would be (memory-watchdog.ts).
  const watchdog = new MemoryWatchdog({
    limitMb: memoryLimitMb,
    intervalMs: options.memorySampleMs,
    // Only the trial's own thread counts: the handlers running meanwhile are not watched here, and
    // what they grow must not be charged to the file.
    ownFaultsOnly: true,
    onExceeded(id, usedMb) {
      const trial = [...running].find((worker) => worker.job?.id === id)?.job;
      trial?.settle({
        problem: problem(
          "import_failed",
          `loading the file grew past the memory limit of ${memoryLimitMb} MiB (about ${usedMb} MiB) when docket tried it in a worker first, so docket did not import it; take the work out of its top level and save it again, or raise DOCKET_WORKER_MEMORY_MB`,
        ),
        keep: false,
      });
    },
  });
  let nextId = 1;
  let closed = false;
  /** One check at a time, each trial in a worker of its own: discovery loads file after file anyway (a parked trial goes on beside). */
  let turn: Promise<unknown> = Promise.resolve();

  const slotOptions: WorkerSlotOptions<Trial> = {
    workerUrl: options.workerUrl,
    // The worker's own bound on an import comes after ours: this side decides, by the same clock.
    loadTimeoutMs: timeoutMs * 2,
    report,
    childGraceMs: 0,
    onMessage(from, message: FromWorker) {
      if (message.type === "outcome" && from.job?.id === message.id) from.job.settle(verdictOf(message.outcome));
      else if (message.type === "importing" && from.job?.id === message.id) from.job.importing();
      else if (message.type === "output" && from.job) from.job.printed = (from.job.printed + message.text).slice(-PRINTED_CHARS - 1);
      else if (message.type === "problem") report(message.message);
    },
    onExit(from, code) {
      from.job?.settle({
        problem: problem(
          "import_failed",
          `loading the file ended its thread (exit code ${code}) when docket tried it in a worker first — process.exit() or a crash at its top level — so docket did not import it; take that out of its top level and save it again`,
        ),
        keep: true,
      });
    },
    onReplaced() {},
    onGaveUp() {},
    onRevived() {},
    // A trial's slot given up is dropped (checkNow): the next trial starts one of its own.
    restartAfterMs: null,
  };

  /**
   * Ends a trial's worker, waiting at most a second for it: a port a refused file's top level
   * opened is free again before the next trial, while a thread stuck in a system call (which
   * nothing can interrupt) does not hold discovery.
   */
  const drop = async (old: WorkerSlot<Trial>) => {
    if (!running.delete(old)) return;
    old.worker.unref();
    const stopped = old.stop().catch(() => undefined);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([stopped, new Promise((resolve) => (timer = setTimeout(resolve, 1000)))]);
    clearTimeout(timer);
  };

  const trial = (worker: WorkerSlot<Trial>, sources: CapabilitySources) =>
    new Promise<Verdict>((resolve) => {
      const id = nextId++;
      // Until the worker imports the file: its texts crossing over and its data parsed, which
      // take time in proportion to their size, never the file's top level.
      const mib = Math.ceil(sources.modules.reduce((sum, module) => sum + module.served.length, sources.text.length) / (1024 * 1024));
      const prepareMs = timeoutMs + mib * prepareMsPerMib;
      let timer = setTimeout(() => {
        trialOf.settle({
          problem: problem(
            "load_timeout",
            `docket could not hand the file and the ${mib} MiB of text and data it imports to a worker (and parse that data) within ${prepareMs} ms to try it there first — the machine is too busy, nothing of the file ran — so docket did not import it; save it again to try again`,
          ),
          // Not the text's fault: the next reload tries it again.
          keep: false,
        });
      }, prepareMs);
      const trialOf: Trial = {
        id,
        printed: "",
        settle(verdict) {
          if (worker.job !== trialOf) return;
          clearTimeout(timer);
          watchdog.unwatch(id);
          worker.job = null;
          resolve(verdict.problem === null ? verdict : { ...verdict, problem: withPrinted(verdict.problem, trialOf.printed) });
        },
        importing() {
          if (worker.job !== trialOf) return;
          clearTimeout(timer);
          timer = setTimeout(() => {
            trialOf.settle({
              problem: problem(
                "load_timeout",
                `the file did not finish loading within ${timeoutMs} ms when docket tried it in a worker first (a synchronous loop or slow work at its top level${helpersOf(sources)}, or a top-level await that never settles), so docket did not import it; make its top level quick and save it again, or raise DOCKET_LOAD_TIMEOUT_MS`,
              ),
              keep: true,
            });
          }, timeoutMs);
        },
      };
      const task: WorkerTask = {
        capability: "",
        source: { kind: "file", file: sources.file },
        version: sources.version,
        // The texts the main thread read: the worker runs exactly them, whatever a later save wrote.
        // Helpers go without their texts as read (the served ones are what is imported); the file
        // keeps its own, which a failure is described from.
        input: { ...sources, modules: sources.modules.map((module) => (module.path === sources.file ? module : { ...module, text: "" })) },
        execution: null,
        root: "",
        artifacts_dir: null,
        artifact_limits: { files: 0, bytes: 0, total_bytes: 0, disk_free_floor: 0 },
        entry: "load",
      };
      worker.job = trialOf;
      worker.worker.ref();
      watchdog.watch(id, () => worker.thread);
      // The worker begins only a task handed to it (WorkerBoot).
      handTask(worker.claim, id);
      // By structured clone, not as JSON (toWire): the texts are most of it, and a string is
      // copied across whole, where JSON escapes it here and parses it there (23 MB of JSON
      // data: 0.6 s against 2 s).
      worker.worker.postMessage({ type: "run", id, task } satisfies ToWorker);
    });

  return {
    check: ((sources: CapabilitySources, patienceMs?: number) => {
      const checked = turn.then(() => checkNow(sources, patienceMs));
      turn = checked;
      return checked;
    }) as LoadProbe["check"],
    rest() {
      const idle = spare;
      spare = null;
      if (idle === null) return;
      clearTimeout(idle.idle);
      void drop(idle.worker);
    },
    async close() {
      closed = true;
      watchdog.close();
      if (spare !== null) clearTimeout(spare.idle);
      spare = null;
      const workers = [...running];
      for (const worker of workers) worker.job?.settle({ problem: stopping(), keep: false });
      await Promise.all(workers.map(drop));
    },
  };

  /**
   * Keeps the worker of a trial that passed for the next trial, idle (it holds nothing open), up
   * to TRIALS_PER_WORKER trials and SPARE_IDLE_MS; ends it otherwise.
   */
  function keepSpare(worker: WorkerSlot<Trial>, trials: number): void {
    if (closed || spare !== null || trials >= TRIALS_PER_WORKER) return void drop(worker);
    worker.worker.unref();
    const idle = setTimeout(() => {
      if (spare?.worker !== worker) return;
      spare = null;
      void drop(worker);
    }, SPARE_IDLE_MS);
    (idle as { unref?: () => void }).unref?.();
    spare = { worker, trials, idle };
  }

  /**
   * One trial, in a worker that ran only trials that passed, or a new one; a refused file's is
   * ended after it: nothing its top level left there (a timer, a rejection, a loop, an open port)
   * reaches the next trial or the main thread's import.
   */
  async function checkNow(sources: CapabilitySources, patienceMs: number | undefined): Promise<LoadProblem | null | ParkedTrial> {
    const key = `${sources.file}\n${sources.version}`;
    if (passed.has(key)) return null;
    // Untried, a text must not reach the main thread, not even while the server stops.
    if (closed) return stopping();
    const known = refused.get(key) ?? unread.get(key);
    unread.delete(key);
    if (known !== undefined) return { ...known };
    // Being tried already: the same text is not run twice at once.
    const tried = parkedTrials.get(key);
    if (tried !== undefined) return { parked: tried };
    const reused = spare;
    spare = null;
    if (reused !== null) clearTimeout(reused.idle);
    const first = reused === null ? await readyWorker() : { worker: reused.worker, trials: reused.trials + 1 };
    if ("problem" in first) return first.problem;
    const judged = judgeIn(first.worker, first.trials, sources).then(async ({ verdict, worker, trials }) => {
      // Loaded all the same (a heavy package takes a while): the main thread's import holds it as long, at each load (foundation tester, session 44).
      if (verdict.problem === null && verdict.heldMs !== undefined) report(slowTopLevel(sources.file, verdict.heldMs));
      if (verdict.problem === null) passed.add(key);
      else if (verdict.keep) refused.set(key, { ...verdict.problem });
      else if (parkedTrials.has(key)) unread.set(key, { ...verdict.problem });
      // A file that passed left nothing of its own running in its worker (the trial refuses a
      // server, a timer, a listener): the next trial may run there, unless a package left a timer
      // or the file replaced a built-in (`spent`). A parked trial's verdict comes between reads:
      // its worker is not the next read's.
      if (verdict.problem === null && !verdict.spent && !parkedTrials.has(key)) keepSpare(worker, trials);
      else if (verdict.problem === null) void drop(worker);
      else await drop(worker);
      parkedTrials.delete(key);
      return verdict;
    });
    if (patienceMs === undefined || parkedTrials.size >= MAX_PARKED) return (await judged).problem;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outlasted = new Promise<null>((resolve) => (timer = setTimeout(resolve, patienceMs, null)));
    const verdict = await Promise.race([judged, outlasted]);
    clearTimeout(timer);
    if (verdict !== null) return verdict.problem;
    const parked = judged.then(() => undefined);
    parkedTrials.set(key, parked);
    return { parked };
  }

  /** A new worker, started, for a trial; or why there is none (the probe closed, or no worker could start). */
  async function readyWorker(): Promise<{ worker: WorkerSlot<Trial>; trials: number } | { problem: LoadProblem }> {
    const worker = new WorkerSlot<Trial>("direct", slotOptions);
    running.add(worker);
    try {
      await worker.warm();
    } catch (error) {
      running.delete(worker);
      if (closed) return { problem: stopping() };
      // No worker to try it in: untried, it is not imported either.
      return { problem: problem("import_failed", `docket could not start a worker to try the file in first (${(error as Error)?.message ?? error}), so docket did not import it; save it again to retry`) };
    }
    return running.has(worker) ? { worker, trials: 1 } : { problem: stopping() };
  }

  /**
   * The trial of `sources` in `worker`, which ran `trials - 1` trials before. A refusal there may
   * be another file's doing (what an earlier top level left running that the trial cannot see: a
   * child's callback, a socket's), so it is the verdict only from a worker that ran nothing
   * before: the file is tried again in a new one.
   */
  async function judgeIn(worker: WorkerSlot<Trial>, trials: number, sources: CapabilitySources): Promise<{ verdict: Verdict; worker: WorkerSlot<Trial>; trials: number }> {
    const verdict = await trial(worker, sources);
    if (verdict.problem === null || trials === 1 || closed) return { verdict, worker, trials };
    await drop(worker);
    const fresh = await readyWorker();
    if ("problem" in fresh) return { verdict: { problem: fresh.problem, keep: false }, worker, trials };
    return judgeIn(fresh.worker, 1, sources);
  }

}
