import { readFileSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import { statCpuMs, threadMinorFaults, threadStat } from "./memory-watchdog.ts";
import { NestedThreadsLook, type NestedSlot, type ThreadUse } from "./_nested-threads-look.ts";

/**
 * A handler can return and leave work running on its worker's thread: a timer that loops, a
 * callback that computes or allocates. The next task handed to that worker finds it busy and is taken back
 * (pool.ts), but with no next task the thread would hold a core for as long as the work lasts.
 * This watch looks at idle workers' threads (their times under /proc, Linux only) once a
 * period from the first task's end on, and names one that stayed busy — most of each of `strikes`
 * periods in a row, or WINDOW_SHARE of the last WINDOW_LOOKS, with no task to run (ran for it, or,
 * never once asleep, ran or waited for a CPU for it: see busyFor) — or one that
 * grew the process past the memory limit since its task ended, so the pool can replace it
 * (docs/containment.md).
 */
export interface IdleWatchOptions<S extends IdleSlot> {
  /** The workers to look at: ready, with no task. */
  idle: () => Iterable<S>;
  /** A worker that kept busy with no task (or whose threads a handler started did: `nested`); the pool replaces it. */
  onBusy: (slot: S, busyMs: number, nested: boolean) => void;
  /** How often to look while any worker may be busy; default 1000 ms. */
  intervalMs?: number;
  /** The share of a period a thread must have run to count as busy; default 0.5. */
  busyShare?: number;
  /** Busy periods in a row before `onBusy`; default 2. */
  strikes?: number;
  /** A thread's (`<pid>/task/<tid>`) times, or null when unknown; default from /proc (threadTimes). */
  times?: (thread: string) => ThreadTimes | null;
  /**
   * MiB an idle worker may grow the process by (`worker_memory_mb`): past it — its thread faulted
   * in that much since its task ended, and the process grew by as much — `onGrew` (the pool
   * replaces it). Absent: memory is not looked at.
   */
  limitMb?: number;
  onGrew?: (slot: S, grownMb: number, nested: boolean) => void;
  /** Minor page faults of a thread; default from /proc (memory-watchdog.ts). */
  faults?: (thread: string) => number | null;
  /** The process's resident bytes; default `process.memoryUsage.rss()`. */
  rss?: () => number;
  /** A thread's use, for the threads handlers started (_nested-threads-look.ts); default from /proc. */
  threadUse?: (thread: string) => ThreadUse | null;
}

/**
 * Looks kept per idle worker for the long window: a leftover that works in bursts (spins a second,
 * rests a second) never shows two busy looks in a row, but holds a core all the same.
 */
const WINDOW_LOOKS = 10;
/** The share of the long window a thread must have run to count as busy. */
const WINDOW_SHARE = 0.4;

/** What the watch reads of a thread at a look. */
export interface ThreadTimes {
  /** Milliseconds it ran on a CPU. */
  cpuMs: number;
  /** Milliseconds it ran or waited on a run queue for a CPU; null when the kernel keeps no such time. */
  runnableMs: number | null;
  /** Times it went to sleep of its own accord (waited for an event, a lock, a timer); null when unknown. */
  sleeps: number | null;
}

/** What the watch reads of a pool's slot. */
export interface IdleSlot extends NestedSlot {
  worker: Worker;
  /** The worker's OS thread under /proc, or null (not known, or not Linux). */
  thread: string | null;
}

interface Look {
  worker: Worker;
  tasksEnded: number;
  times: ThreadTimes;
  at: number;
  strikes: number;
  /** Page faults of its thread at this look, and when its idle spell began (null: unknown). */
  faults: number | null;
  faultsAtIdle: number | null;
  /** The process's resident bytes when its idle spell began. */
  rssAtIdle: number;
  /** Thread times and time of its last looks, oldest first (at most WINDOW_LOOKS). */
  window: Array<{ times: ThreadTimes; at: number }>;
}

const MIB = 1024 * 1024;
const PAGE_BYTES = 4096;

export class IdleWatch<S extends IdleSlot> {
  private readonly looks = new WeakMap<S, Look>();
  private readonly intervalMs: number;
  private readonly busyShare: number;
  private readonly strikes: number;
  private readonly times: (thread: string) => ThreadTimes | null;
  private readonly faults: (thread: string) => number | null;
  private readonly rss: () => number;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private readonly nested: NestedThreadsLook<S>;

  constructor(private readonly options: IdleWatchOptions<S>) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.busyShare = options.busyShare ?? 0.5;
    this.strikes = options.strikes ?? 2;
    this.times = options.times ?? threadTimes;
    this.faults = options.limitMb === undefined ? () => null : (options.faults ?? threadMinorFaults);
    this.rss = options.rss ?? (() => process.memoryUsage.rss());
    this.nested = new NestedThreadsLook<S>({
      limitMb: options.limitMb,
      busyShare: this.busyShare,
      strikes: this.strikes,
      windowLooks: WINDOW_LOOKS,
      windowShare: WINDOW_SHARE,
      onBusy: (slot, busyMs) => options.onBusy(slot, busyMs, true),
      onGrew: (slot, grownMb) => options.onGrew?.(slot, grownMb, true),
      use: options.threadUse,
      rss: this.rss,
    });
  }

  /** A task ended on some worker: look at the idle ones next period. No system call (the hot path). */
  taskEnded(): void {
    // Once armed, the looks go on by themselves (see look).
    if (this.timer === null && !this.closed) this.arm();
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    this.timer = setTimeout(() => this.look(), this.intervalMs);
    this.timer.unref?.();
  }

  /**
   * One look at every idle worker. Once a task has ended the watch goes on looking for as long as
   * the pool lives (a timer that never keeps the process alive): what a handler left may begin
   * its work long after it returned.
   */
  private look(): void {
    this.timer = null;
    try {
      this.lookAtEach();
    } catch {
      // The system could not be read (every file descriptor taken): this look is skipped, the next one tries again.
    }
    if (!this.closed) this.arm();
  }

  private lookAtEach(): void {
    const now = performance.now();
    const { limitMb } = this.options;
    let rss: number | null = null;
    for (const slot of this.options.idle()) {
      // Replaced for what its threads did, its thread is no longer known: the look below passes it.
      this.nested.look(now, slot);
      if (slot.thread === null) continue;
      const times = this.times(slot.thread);
      if (times === null) continue;
      const faults = this.faults(slot.thread);
      rss ??= limitMb === undefined ? 0 : this.rss();
      const before = this.looks.get(slot);
      const comparable = before !== undefined && before.worker === slot.worker && before.tasksEnded === slot.tasksEnded;
      if (!comparable) {
        this.looks.set(slot, { worker: slot.worker, tasksEnded: slot.tasksEnded, times, at: now, strikes: 0, faults, faultsAtIdle: faults, rssAtIdle: rss, window: [{ times, at: now }] });
        continue;
      }
      const grownMb = faults === null || before.faultsAtIdle === null ? 0 : ((faults - before.faultsAtIdle) * PAGE_BYTES) / MIB;
      if (limitMb !== undefined && grownMb > limitMb && (rss - before.rssAtIdle) / MIB > limitMb) {
        this.looks.delete(slot);
        this.options.onGrew?.(slot, grownMb, false);
        continue;
      }
      const busy = busyFor(before.times, times) >= this.busyShare * (now - before.at);
      const strikes = busy ? before.strikes + 1 : 0;
      const window = [...before.window.slice(1 - WINDOW_LOOKS), { times, at: now }];
      const oldest = window[0]!;
      const windowBusyMs = busyFor(oldest.times, times);
      const windowBusy = window.length === WINDOW_LOOKS && windowBusyMs >= WINDOW_SHARE * (now - oldest.at);
      if (strikes >= this.strikes || windowBusy) {
        this.looks.delete(slot);
        this.options.onBusy(slot, windowBusy ? windowBusyMs : strikes * (now - before.at), false);
        continue;
      }
      this.looks.set(slot, { ...before, times, at: now, strikes, faults, window });
    }
  }
}

/**
 * For how long a thread was busy between two looks. A thread that never slept meanwhile wanted
 * its CPU all along: the time it ran or waited for one counts, however little of the CPU a loaded
 * machine gave it (by CPU time alone, a spinning leftover that shared a core with other work ran
 * for under half of each look and was never found). A thread that slept counts the time it ran
 * only: an idle worker woken by a timer waits long for a CPU on a loaded machine, and is not busy.
 */
function busyFor(before: ThreadTimes, after: ThreadTimes): number {
  const ran = after.cpuMs - before.cpuMs;
  const neverSlept = before.sleeps !== null && after.sleeps === before.sleeps;
  return neverSlept && before.runnableMs !== null && after.runnableMs !== null ? Math.max(ran, after.runnableMs - before.runnableMs) : ran;
}

/** A thread's times from /proc/<pid>/task/<tid>/{stat,schedstat,status}; null when its CPU time is unreadable. */
function threadTimes(thread: string): ThreadTimes | null {
  const cpuMs = threadCpuMs(thread);
  if (cpuMs === null) return null;
  return { cpuMs, runnableMs: threadRunnableMs(thread), sleeps: threadSleeps(thread) };
}

/** Milliseconds a thread ran or waited on a run queue (schedstat: nanoseconds on a CPU, then waiting for one); null when unreadable. */
function threadRunnableMs(thread: string): number | null {
  try {
    const [run, waited] = readFileSync(`/proc/${thread}/schedstat`, "utf8").split(" ");
    const ms = (Number(run) + Number(waited)) / 1e6;
    return Number.isFinite(ms) ? ms : null;
  } catch {
    return null;
  }
}

/** How often a thread gave up its CPU of its own accord (status: voluntary_ctxt_switches); null when unreadable. */
function threadSleeps(thread: string): number | null {
  try {
    const found = /^voluntary_ctxt_switches:\s*(\d+)$/m.exec(readFileSync(`/proc/${thread}/status`, "utf8"));
    return found ? Number(found[1]) : null;
  } catch {
    return null;
  }
}

/** User + system CPU time of a thread from /proc/<pid>/task/<tid>/stat, in milliseconds; null when unreadable. */
function threadCpuMs(thread: string): number | null {
  return statCpuMs(threadStat(thread));
}
