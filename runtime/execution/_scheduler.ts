/** Something waiting to run, with the session it must not overlap. */
export interface Schedulable {
  id: string;
  session_key: string | null;
}

/**
 * The admission queue: FIFO, at most `concurrency` running, and at most one running per
 * session_key — a later execution of a busy session waits while others may pass it.
 */
export class Scheduler<T extends Schedulable> {
  private readonly waiting: T[] = [];
  private readonly running = new Map<string, T>();
  private readonly busySessions = new Set<string>();

  constructor(private readonly concurrency: number) {}

  get queued(): number {
    return this.waiting.length;
  }

  get active(): number {
    return this.running.size;
  }

  enqueue(item: T): void {
    this.waiting.push(item);
  }

  /** Removes a waiting item (cancel while queued); false when it is not waiting. */
  remove(id: string): boolean {
    const index = this.waiting.findIndex((item) => item.id === id);
    if (index < 0) return false;
    this.waiting.splice(index, 1);
    return true;
  }

  /** The items that may start now, in admission order; they count as running from here. */
  takeRunnable(): T[] {
    const taken: T[] = [];
    for (let i = 0; i < this.waiting.length && this.running.size < this.concurrency; ) {
      const item = this.waiting[i]!;
      if (item.session_key !== null && this.busySessions.has(item.session_key)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.running.set(item.id, item);
      if (item.session_key !== null) this.busySessions.add(item.session_key);
      taken.push(item);
    }
    return taken;
  }

  /** Frees the slot (and the session) of a finished item. */
  finish(id: string): void {
    const item = this.running.get(id);
    if (!item) return;
    this.running.delete(id);
    if (item.session_key !== null) this.busySessions.delete(item.session_key);
  }

  /** Everything admitted and not finished: what a shutdown must account for. */
  pending(): { waiting: T[]; running: T[] } {
    return { waiting: [...this.waiting], running: [...this.running.values()] };
  }

  get(id: string): T | undefined {
    return this.running.get(id) ?? this.waiting.find((item) => item.id === id);
  }
}
