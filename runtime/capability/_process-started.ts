/**
 * When this process started, as file modification times count: what tells a package installed
 * while docket runs (which the runtime may not see until a restart) from one installed before.
 * `process.uptime()` is the age of the thread asking in a worker, not of the process (measured:
 * 0.01 s in a worker against 1.5 s on the main thread), so a worker is told the main thread's
 * answer when it boots (worker/_messages.ts, WorkerBoot.process_started_ms).
 */
let startedMs = Date.now() - process.uptime() * 1000;

export function processStartedMs(): number {
  return startedMs;
}

/** Called once by a worker as it boots, with the main thread's processStartedMs(). */
export function setProcessStartedMs(ms: number): void {
  startedMs = ms;
}
