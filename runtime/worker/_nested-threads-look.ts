import { statCpuMs, threadStat } from "./memory-watchdog.ts";

/**
 * A thread a handler starts itself (`new Worker`) and leaves running after it returned is on no
 * worker's counters: its memory and CPU are the process's. While some idle pool worker still has
 * such threads alive (and no busy one has: those are their task's, for the memory watchdog), this
 * look counts what the process used beyond the main thread and the pool's own threads; past the
 * memory limit, or busy for `strikes` periods in a row (or `windowShare` of the last `windowLooks`),
 * an idle worker with such threads is replaced — which ends the threads it started — and the look
 * begins again (docs/containment.md). What the process used cannot be told apart by thread, so of
 * several such workers the one whose thread started last goes first: a pool of threads a file
 * keeps at its top level is older than the leftover that began to spin, and is left alone unless
 * the use goes on without the newer one.
 */
export interface NestedSlot {
  /** The worker's OS thread under /proc, or null (not known, or not Linux). */
  thread: string | null;
  /** Tasks that ended on the slot: a look spanning one is not the same idle spell. */
  tasksEnded: number;
  /** Threads handlers started on the worker that are still alive, as the worker last said. */
  nestedLive: number;
  /** When (performance.now) the worker last said a thread started. */
  nestedSince: number;
}

/** CPU time and minor page faults, of a thread or of several. */
export interface ThreadUse {
  cpuMs: number;
  faults: number;
}

export interface NestedThreadsOptions<S extends NestedSlot> {
  /** MiB the threads may grow the process by; absent: memory is not looked at. */
  limitMb?: number;
  /** As the idle watch counts a worker's own thread busy (_idle-watch.ts). */
  busyShare: number;
  strikes: number;
  windowLooks: number;
  windowShare: number;
  onBusy: (slot: S, busyMs: number) => void;
  onGrew: (slot: S, grownMb: number) => void;
  /** What every thread but the main one and `pool`'s used, since the process began; default from /proc. */
  others?: (pool: string[]) => ThreadUse | null;
  /** The process's resident bytes. */
  rss: () => number;
}

const MIB = 1024 * 1024;
const PAGE_BYTES = 4096;

interface Spell {
  /** The suspects (thread, tasks ended) and the pool's threads: another set is another spell. */
  key: string;
  atStart: ThreadUse;
  rssAtStart: number;
  last: ThreadUse;
  at: number;
  strikes: number;
  window: Array<{ cpuMs: number; at: number }>;
}

export class NestedThreadsLook<S extends NestedSlot> {
  private spell: Spell | null = null;
  private readonly others: (pool: string[]) => ThreadUse | null;

  constructor(private readonly options: NestedThreadsOptions<S>) {
    this.others = options.others ?? othersUse;
  }

  /** One look, given the pool's slots and which of them are idle. */
  look(now: number, all: readonly S[], idle: readonly S[]): void {
    const suspects = idle.filter((slot) => slot.nestedLive > 0);
    const busyWithThreads = all.some((slot) => slot.nestedLive > 0 && !idle.includes(slot));
    if (suspects.length === 0 || busyWithThreads) {
      this.spell = null;
      return;
    }
    const pool = all.flatMap((slot) => (slot.thread === null ? [] : [slot.thread]));
    const use = this.others(pool);
    if (use === null) {
      this.spell = null;
      return;
    }
    const rss = this.options.rss();
    const key = `${suspects.map((slot) => `${slot.thread}:${slot.tasksEnded}`).join(",")}|${pool.join(",")}`;
    const before = this.spell;
    if (before === null || before.key !== key) {
      this.spell = { key, atStart: use, rssAtStart: rss, last: use, at: now, strikes: 0, window: [{ cpuMs: use.cpuMs, at: now }] };
      return;
    }
    const { limitMb } = this.options;
    const grownMb = ((use.faults - before.atStart.faults) * PAGE_BYTES) / MIB;
    if (limitMb !== undefined && grownMb > limitMb && (rss - before.rssAtStart) / MIB > limitMb) {
      this.spell = null;
      this.options.onGrew(newest(suspects), grownMb);
      return;
    }
    const busy = use.cpuMs - before.last.cpuMs >= this.options.busyShare * (now - before.at);
    const strikes = busy ? before.strikes + 1 : 0;
    const { windowLooks, windowShare } = this.options;
    const window = [...before.window.slice(1 - windowLooks), { cpuMs: use.cpuMs, at: now }];
    const oldest = window[0]!;
    const windowBusyMs = use.cpuMs - oldest.cpuMs;
    const windowBusy = window.length === windowLooks && windowBusyMs >= windowShare * (now - oldest.at);
    if (strikes >= this.options.strikes || windowBusy) {
      this.spell = null;
      this.options.onBusy(newest(suspects), windowBusy ? windowBusyMs : strikes * (now - before.at));
      return;
    }
    this.spell = { ...before, last: use, at: now, strikes, window };
  }
}

/** The slot whose thread started last. */
function newest<S extends NestedSlot>(slots: readonly S[]): S {
  return slots.reduce((a, b) => (b.nestedSince > a.nestedSince ? b : a));
}

/** A thread's (or, for "self", the whole process's, ended threads included) use from its stat; null when unreadable. */
function useOf(thread: string): ThreadUse | null {
  const fields = threadStat(thread);
  const cpuMs = statCpuMs(fields);
  // Field 10 (minflt).
  const faults = Number(fields?.[7]);
  return cpuMs !== null && Number.isFinite(faults) ? { cpuMs, faults } : null;
}

/** The process's use less its main thread's and `pool`'s; null off Linux or when unreadable. */
function othersUse(pool: string[]): ThreadUse | null {
  const whole = useOf("self");
  const main = useOf(`${process.pid}/task/${process.pid}`);
  if (whole === null || main === null) return null;
  let { cpuMs, faults } = whole;
  cpuMs -= main.cpuMs;
  faults -= main.faults;
  for (const thread of pool) {
    const own = useOf(thread);
    if (own === null) return null;
    cpuMs -= own.cpuMs;
    faults -= own.faults;
  }
  return { cpuMs, faults };
}
