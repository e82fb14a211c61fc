import type { EventDraft } from "../../../runtime/execution/protocol.ts";
import type { RunTaskOptions, TaskHandle, TaskOutcome, WorkerFault, WorkerPool, WorkerTask } from "../../../runtime/worker/task.ts";

/** A task the test drives by hand: what the handler emits and how it ends. */
export class FakeTask implements TaskHandle {
  readonly outcome: Promise<TaskOutcome>;
  cancelRequested = false;
  terminated = false;
  settled = false;
  /** When its handler began, on the pool's clock; null while it has not (see FakePool.beginsAtOnce). */
  begunAt: number | null = null;
  private resolve!: (outcome: TaskOutcome) => void;

  constructor(readonly task: WorkerTask, private readonly options: RunTaskOptions, private readonly clock: Monotonic) {
    this.outcome = new Promise((resolve) => (this.resolve = resolve));
  }

  /** Its worker calls its handler now (after a slow import, say, or on a new worker after a take-back). */
  begin(): void {
    this.begunAt = this.clock.monotonic();
  }

  begunAgo(): number | null {
    return this.begunAt === null || this.settled ? null : this.clock.monotonic() - this.begunAt;
  }

  emit(...drafts: EventDraft[]): void {
    if (!this.settled) this.options.onEvents?.(drafts);
  }

  end(outcome: TaskOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(outcome);
  }

  succeed(output: unknown): void {
    this.end({ ok: true, output });
  }

  cancel(): void {
    this.cancelRequested = true;
  }

  /** Takes it back while its handler has not begun (see begin), as the pool does. */
  withdraw(): boolean {
    if (this.settled || this.begunAt !== null) return false;
    this.cancelRequested = true;
    this.end({ ok: false, error: { kind: "cancelled", message: "Cancelled before the handler started.", never_began: true } });
    return true;
  }

  terminate(): void {
    this.terminated = true;
    this.end({ ok: false, error: { kind: "terminated", message: "terminated by the pool" } });
  }
}

/** The time a fake pool notes a handler's start in: the test's clock, where it has one. */
interface Monotonic {
  monotonic(): number;
}

/** A pool whose tasks never run by themselves: every step is the test's decision. */
export class FakePool implements WorkerPool {
  readonly tasks: FakeTask[] = [];
  /** Whether a task's handler begins as it is handed over, as on a ready worker; false: the test calls begin(). */
  beginsAtOnce = true;

  constructor(private readonly clock: Monotonic = { monotonic: () => performance.now() }) {}

  run(task: WorkerTask, options: RunTaskOptions): TaskHandle {
    const fake = new FakeTask(task, options, this.clock);
    if (this.beginsAtOnce) fake.begin();
    this.tasks.push(fake);
    return fake;
  }

  async warm(): Promise<void> {}

  async close(): Promise<void> {
    for (const task of this.tasks) task.terminate();
  }

  /** What workerFault() answers; a test sets it. */
  fault: WorkerFault | null = null;

  workerFault(): WorkerFault | null {
    return this.fault;
  }

  stats() {
    return { execution_workers: 2, direct_workers: 1, busy: this.tasks.filter((t) => !t.settled).length, replaced: 0, memory_stops: 0 };
  }

  /** The running task of an execution id. */
  of(id: string): FakeTask | undefined {
    return this.tasks.find((t) => t.task.execution?.id === id);
  }
}

/** Lets queued microtasks (the engine's pump, outcome handlers) run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
  await new Promise((resolve) => setImmediate(resolve));
}
