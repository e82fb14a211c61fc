// The worker layer's public exports: the pool the engine runs handlers on, and its contract.
export { createWorkerPool, DEFAULT_WORKER_URL } from "./pool.ts";
export type { WorkerPoolOptions } from "./pool.ts";
export type { WorkerTask, TaskHandle, TaskOutcome, TaskError, WorkerPool, Lane, RunTaskOptions, HostFacts } from "./task.ts";
