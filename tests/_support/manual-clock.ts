import type { Clock } from "../../runtime/execution/clock.ts";

/** A clock the test moves by hand: deadlines, heartbeats and backoff run in microseconds. */
export class ManualClock implements Clock {
  private time = 0;
  private wall: number;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;

  constructor(start = Date.UTC(2026, 8, 8, 1, 2, 3)) {
    this.wall = start;
  }

  now(): Date {
    return new Date(this.wall + this.time);
  }

  monotonic(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const handle = this.next++;
    this.timers.set(handle, { at: this.time + Math.max(0, ms), fn });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | null = null;
      for (const entry of this.timers) if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry;
      if (!due) break;
      this.timers.delete(due[0]);
      // A timer overdue after stall() fires late, at the time it is now.
      this.time = Math.max(this.time, due[1].at);
      due[1].fn();
    }
    this.time = target;
  }

  /**
   * The process is stopped (SIGSTOP) or starved for `ms`: time passes and no timer fires. The next
   * advance() fires what fell due meanwhile, late, as a process that resumes does.
   */
  stall(ms: number): void {
    this.time += ms;
  }

  get pending(): number {
    return this.timers.size;
  }

  /** How many timers were ever set: a test waits for it to grow to know a callback it cannot see has run. */
  get scheduled(): number {
    return this.next - 1;
  }
}
