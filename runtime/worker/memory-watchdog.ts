import { readFileSync, readlinkSync } from "node:fs";

/**
 * Bun (1.4) ignores `resourceLimits` of `node:worker_threads`, so a worker's heap cannot be
 * bounded by the runtime, and a handler that allocates without end would grow the process until
 * the OS kills it. This watchdog bounds it from outside instead (docs/containment.md):
 *
 * - the process's resident memory says whether there is anything to stop: it must have grown by
 *   more than the limit since the first running handler began;
 * - each worker thread's minor page faults since its handler began say who grew it: a thread that
 *   touches fresh memory faults it in page by page, while one that computes without allocating
 *   does not, so the culprit is found even when several handlers run at once.
 *
 * Page faults over-count memory that a handler frees and allocates again, so they never stop a
 * handler alone: the process must have grown too, by more than the main thread's own faults
 * explain (it stores what handlers emit: a flood grows it while the handler holds nothing). When per-thread counters are missing (not
 * Linux), every running handler counts the whole growth, and all of them are stopped.
 */
export interface MemoryWatchdogOptions {
  /** MiB a running handler may add to the process (`worker_memory_mb`). */
  limitMb: number;
  /**
   * Called for a watched task that went over; the caller terminates its worker, or returns false
   * to keep watching it (it asked the worker to give memory back first, and looks again next time).
   */
  onExceeded: (key: number, usedMb: number, processWide: boolean) => boolean | void;
  /** How often to sample while a handler runs; default 100 ms. */
  intervalMs?: number;
  /** The process's resident bytes; default `process.memoryUsage.rss()`. */
  rss?: () => number;
  /** Minor page faults of one thread (`<pid>/task/<tid>`), or null when unknown; default from /proc. */
  faults?: (thread: string) => number | null;
  /** Whether threads have counters at all; default: this thread has one (Linux). */
  perThread?: boolean;
  /** The thread that stores what handlers emit (`<pid>/task/<tid>`); default: the one that makes the watchdog. */
  mainThread?: string | null;
  /**
   * Only a watched thread's own faults decide, never the fallback below that stops the one that
   * faulted most: for a watchdog that does not watch every thread that can grow the process
   * (trial loads, while handlers run beside them).
   */
  ownFaultsOnly?: boolean;
}

interface Watched {
  /** Read again until known: a task may be handed to a worker still starting. */
  thread: () => string | null;
  faultsAtStart: number | null;
  /** Its thread's faults when they were first counted: restartCount does not move it. */
  faultsAtWatch?: number | null;
}

const MIB = 1024 * 1024;
/** The page size of x86-64 and most arm64 kernels; a larger page only makes the estimate low, and the growth check still holds. */
const PAGE_BYTES = 4096;

/**
 * A handler shorter than this never costs a sample: the first look (baseline and fault counters,
 * ~40 µs each) is taken this long after the first handler began, so no-op calls, which take
 * ~40 µs in all, stay as fast as without the watchdog. What a handler allocates before it is
 * missed by its counter, never by the process's growth.
 */
const ARM_MS = 5;

/** Samples memory while handlers run and names the one that outgrew the limit. */
export class MemoryWatchdog {
  private readonly watched = new Map<number, Watched>();
  private readonly rss: () => number;
  private readonly faults: (thread: string) => number | null;
  private readonly perThread: boolean;
  private readonly intervalMs: number;
  /** Resident bytes growth counts from; null until the first look after a quiet spell. */
  private baseline: number | null = null;
  private readonly mainThread: string | null;
  /** The main thread's faults when the baseline was taken (null: unknown). */
  private mainFaultsAtBaseline: number | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly options: MemoryWatchdogOptions) {
    this.rss = options.rss ?? (() => process.memoryUsage.rss());
    this.faults = options.faults ?? threadMinorFaults;
    this.perThread = options.perThread ?? currentThread() !== null;
    this.intervalMs = options.intervalMs ?? 100;
    this.mainThread = options.mainThread === undefined ? currentThread() : options.mainThread;
  }

  /** A handler began on a worker whose thread `thread()` names (null: not known yet, or no /proc). Costs no system call. */
  watch(key: number, thread: () => string | null): void {
    // The baseline is what the process held while nothing ran: growth past it is the handlers'.
    if (this.watched.size === 0) this.baseline = null;
    this.watched.set(key, { thread, faultsAtStart: null });
    if (this.timer === null) this.schedule(ARM_MS);
  }

  /**
   * The handler ended (or its worker was stopped). Returns the MiB its thread faulted in while it
   * was counted, or null when it was not (a handler shorter than the first look costs no system
   * call here either) or its thread is unknown.
   */
  unwatch(key: number): number | null {
    const w = this.watched.get(key);
    this.watched.delete(key);
    if (this.watched.size === 0 && this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!w || w.faultsAtStart === null) return null;
    const thread = w.thread();
    const now = thread === null ? null : this.faults(thread);
    return now === null ? null : ((now - w.faultsAtStart) * PAGE_BYTES) / MIB;
  }

  /** Counts a watched handler's faults from now on (it was found to hold less than its faults said). */
  restartCount(key: number): void {
    const w = this.watched.get(key);
    if (w) this.startCounting(w);
  }

  /** One look: every watched handler over the limit is reported (and no longer watched). */
  sample(): void {
    for (const w of this.watched.values()) if (w.faultsAtStart === null) this.startCounting(w);
    const { limitMb } = this.options;
    const rss = this.rss();
    // Memory given back (a stopped worker wound down, a collection) lowers the line growth counts from.
    if (this.baseline === null || rss < this.baseline) this.takeBaseline(rss);
    const grownMb = (rss - this.baseline!) / MIB;
    if (grownMb <= limitMb) return;
    const estimates = [...this.watched].map(([key, w]) => ({ key, mb: this.estimate(w, grownMb) }));
    // What the main thread faulted in meanwhile (storing a flood of events, serving clients) is
    // growth no handler made: a handler that only churns — allocating and freeing as it emits —
    // faults past the limit without holding anything, and the process grows all the same.
    const handlersGrewMb = grownMb - this.mainGrownMb();
    const over = handlersGrewMb > limitMb ? estimates.filter((e) => e.mb > limitMb) : [];
    // Page faults can under-count (huge pages, a larger page size), and miss memory a handler's
    // own threads hold (a Worker it started): when the process holds more than every running
    // handler's allowance together, the one that faulted most is stopped anyway.
    const processWide = !this.options.ownFaultsOnly && over.length === 0 && handlersGrewMb > limitMb * (this.watched.size + 1) && estimates.length > 0;
    if (processWide) over.push(estimates.reduce((a, b) => (b.mb > a.mb ? b : a)));
    let stopped = false;
    for (const { key, mb } of over) {
      if (this.options.onExceeded(key, Math.round(processWide ? handlersGrewMb : Math.max(mb, limitMb)), processWide) === false) continue;
      this.unwatch(key);
      stopped = true;
    }
    // What a stopped worker held is given back only as its thread winds down: until then it
    // must not count as the growth of the handlers still running. So growth counts from here.
    if (stopped) this.takeBaseline(this.rss());
  }

  private takeBaseline(rss: number): void {
    this.baseline = rss;
    this.mainFaultsAtBaseline = this.mainThread === null ? null : this.faults(this.mainThread);
  }

  /** MiB the main thread faulted in since the baseline; 0 when unknown (then handlers count it all). */
  private mainGrownMb(): number {
    if (this.mainThread === null || this.mainFaultsAtBaseline === null) return 0;
    const now = this.faults(this.mainThread);
    return now === null ? 0 : ((now - this.mainFaultsAtBaseline) * PAGE_BYTES) / MIB;
  }

  /**
   * Growth counts from what the process holds now, forgiving what handler `key`'s own thread
   * faulted in since it was first watched (and one allowance more): it collected and holds little,
   * so what it freed is resident and reused. Growth its thread did not fault in — a Worker of its
   * own that took hundreds of MiB at once before the collect was answered (a busy machine answers
   * late) — is not forgiven, and the next look finds it again. Where threads have no counters,
   * all of it is forgiven, as before.
   */
  rebase(key: number): void {
    const rss = this.rss();
    const w = this.watched.get(key);
    const thread = w?.thread() ?? null;
    const now = thread === null ? null : this.faults(thread);
    const ownMb = now === null || w?.faultsAtWatch == null ? null : ((now - w.faultsAtWatch) * PAGE_BYTES) / MIB;
    if (this.baseline === null || ownMb === null) return this.takeBaseline(rss);
    this.takeBaseline(Math.min(rss, this.baseline + (ownMb + this.options.limitMb) * MIB));
  }

  /** Stops sampling for good (the pool closed). */
  close(): void {
    this.watched.clear();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      try {
        this.sample();
      } catch {
        // The system could not be read (with every file descriptor taken, Bun's resident-memory
        // read throws): that look is skipped, never thrown at the server; the next one tries again.
      }
      if (this.watched.size > 0 && this.timer === null) this.schedule(this.intervalMs);
    }, ms);
    // Never what keeps the process alive: the busy worker is.
    (this.timer as { unref?: () => void }).unref?.();
  }

  private startCounting(w: Watched): void {
    const thread = w.thread();
    w.faultsAtStart = thread === null ? null : this.faults(thread);
    if (w.faultsAtWatch == null) w.faultsAtWatch = w.faultsAtStart;
  }

  private estimate(w: Watched, grownMb: number): number {
    const thread = w.thread();
    // Where threads have counters, one not known yet is a worker still starting: it posts "ready"
    // (with its thread) before it reads a task, so no handler has run there to grow anything.
    if (thread === null) return this.perThread ? 0 : grownMb;
    if (w.faultsAtStart === null) return grownMb;
    const now = this.faults(thread);
    if (now === null) return grownMb;
    return ((now - w.faultsAtStart) * PAGE_BYTES) / MIB;
  }
}

/** This thread's name under /proc (`<pid>/task/<tid>`), or null where there is no /proc. */
export function currentThread(): string | null {
  try {
    // `/proc/thread-self` links to `<pid>/task/<tid>` of the thread that reads it.
    const target = readlinkSync("/proc/thread-self");
    return /^\d+\/task\/\d+$/.test(target) ? target : null;
  } catch {
    return null;
  }
}

/** Minor page faults of a thread: field 10 of `/proc/<pid>/task/<tid>/stat`. */
export function threadMinorFaults(thread: string): number | null {
  return statMinorFaults(threadStat(thread));
}

/** Minor page faults in a thread's stat fields (threadStat); null when unreadable. */
export function statMinorFaults(fields: string[] | null): number | null {
  // Field 10 (minflt).
  const minflt = Number(fields?.[7]);
  return Number.isFinite(minflt) ? minflt : null;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux docket runs on). */
const TICKS_PER_SECOND = 100;

/** User + system CPU time in a thread's stat fields (threadStat), in milliseconds; null when unreadable. */
export function statCpuMs(fields: string[] | null): number | null {
  // Fields 14 and 15 (utime, stime).
  const ticks = fields === null ? NaN : Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : null;
}

/**
 * The fields of `/proc/<pid>/task/<tid>/stat` (or of `/proc/<pid>/stat`, given a pid or "self") from the
 * third (state) on, so that field n is at index n - 3; null when it cannot be read (not Linux,
 * the thread gone, no descriptor left).
 */
export function threadStat(thread: string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${thread}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}
