import { statCpuMs, statMinorFaults, threadStat } from "./memory-watchdog.ts";

/**
 * A thread a handler starts itself (`new Worker`) and leaves running after it returned is on no
 * worker's own counters. Each pool worker says which OS threads its handlers started and are
 * alive (_own-process.ts); while it has no task, this look reads those threads' CPU time and page
 * faults, as the idle watch reads the worker's own thread: busy for `strikes` periods in a row (or
 * `windowShare` of the last `windowLooks`), or grown past the memory limit while the process grew
 * as much, and the worker is replaced — which ends the threads it started (docs/containment.md).
 * A look spanning a task of the worker is not the same idle spell: what its threads did then was
 * that task's.
 */
export interface NestedSlot {
  /** Tasks that ended on the slot: a look spanning one is not the same idle spell. */
  tasksEnded: number;
  /** The OS threads (`<pid>/task/<tid>`) handlers started on the worker that are alive, as it last said. */
  nestedThreads: string[];
}

/** CPU time and minor page faults of a thread. */
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
  /** A thread's use since it began; default from /proc. */
  use?: (thread: string) => ThreadUse | null;
  /** The process's resident bytes. */
  rss: () => number;
}

const MIB = 1024 * 1024;
const PAGE_BYTES = 4096;

interface Spell {
  tasksEnded: number;
  /** Each thread's use when first seen in this spell, and at the last look. */
  first: Map<string, ThreadUse>;
  last: Map<string, ThreadUse>;
  rssAtStart: number;
  at: number;
  strikes: number;
  /** CPU milliseconds the threads ran since the spell began, at each of the last looks. */
  ranMs: number;
  window: Array<{ ranMs: number; at: number }>;
}

export class NestedThreadsLook<S extends NestedSlot> {
  private readonly spells = new WeakMap<S, Spell>();
  private readonly use: (thread: string) => ThreadUse | null;

  constructor(private readonly options: NestedThreadsOptions<S>) {
    this.use = options.use ?? useOf;
  }

  /** One look at an idle slot's threads; a slot with none is forgotten. */
  look(now: number, slot: S): void {
    if (slot.nestedThreads.length === 0) {
      this.spells.delete(slot);
      return;
    }
    const uses = new Map<string, ThreadUse>();
    for (const thread of slot.nestedThreads) {
      const use = this.use(thread);
      if (use !== null) uses.set(thread, use);
    }
    const before = this.spells.get(slot);
    if (before === undefined || before.tasksEnded !== slot.tasksEnded) {
      this.spells.set(slot, { tasksEnded: slot.tasksEnded, first: new Map(uses), last: uses, rssAtStart: this.options.rss(), at: now, strikes: 0, ranMs: 0, window: [{ ranMs: 0, at: now }] });
      return;
    }
    // A thread first seen now counts from now; one that ended counts no more.
    const first = new Map([...uses].map(([thread, use]) => [thread, before.first.get(thread) ?? use]));
    let grownPages = 0;
    let ranMs = 0;
    for (const [thread, use] of uses) {
      grownPages += use.faults - first.get(thread)!.faults;
      ranMs += use.cpuMs - (before.last.get(thread) ?? use).cpuMs;
    }
    const { limitMb, windowLooks, windowShare } = this.options;
    const grownMb = (grownPages * PAGE_BYTES) / MIB;
    if (limitMb !== undefined && grownMb > limitMb && (this.options.rss() - before.rssAtStart) / MIB > limitMb) {
      this.spells.delete(slot);
      this.options.onGrew(slot, grownMb);
      return;
    }
    const busy = ranMs >= this.options.busyShare * (now - before.at);
    const strikes = busy ? before.strikes + 1 : 0;
    const total = before.ranMs + ranMs;
    const window = [...before.window.slice(1 - windowLooks), { ranMs: total, at: now }];
    const oldest = window[0]!;
    const windowRanMs = total - oldest.ranMs;
    const windowBusy = window.length === windowLooks && windowRanMs >= windowShare * (now - oldest.at);
    if (strikes >= this.options.strikes || windowBusy) {
      this.spells.delete(slot);
      this.options.onBusy(slot, windowBusy ? windowRanMs : strikes * (now - before.at));
      return;
    }
    this.spells.set(slot, { ...before, first, last: uses, at: now, strikes, ranMs: total, window });
  }
}

/** A thread's use from its stat; null when unreadable (it ended). */
function useOf(thread: string): ThreadUse | null {
  const fields = threadStat(thread);
  const cpuMs = statCpuMs(fields);
  const faults = statMinorFaults(fields);
  return cpuMs !== null && faults !== null ? { cpuMs, faults } : null;
}
