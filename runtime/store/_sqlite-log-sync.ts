import { close, fdatasync, openSync } from "node:fs";

/** How often, at most, the log is synced while writes go on. */
const SYNC_EVERY_MS = 25;

/** Options of {@link createLogSync}. */
export interface LogSyncOptions {
  /** At most one sync begins in this many milliseconds; default SYNC_EVERY_MS. */
  everyMs?: number;
  /** Syncs a file's data without blocking the caller; default `fs.fdatasync` (tests pass their own). */
  sync?: (fd: number, done: (error: Error | null) => void) => void;
}

/** Keeps the write-ahead log on disk while writes go on (see {@link createLogSync}). */
export interface LogSync {
  /** Notes a commit: a sync of the log follows soon, off the main thread. */
  wrote(): void;
  /** Stops syncing; the file is let go once a sync in flight has ended. */
  stop(): void;
}

/**
 * Syncs the store's write-ahead log (`<db>-wal`) in the background after commits: `fdatasync` on
 * the runtime's I/O threads, one at a time, at most every SYNC_EVERY_MS.
 *
 * Why: with `synchronous = NORMAL` a commit is not synced, a checkpoint is — it first syncs the
 * whole log, on the main thread, inside the commit that crosses `wal_autocheckpoint`. Writing
 * back megabytes of log there held every answer in flight (64 MiB: ~40 ms; measured 243 ms → 4–12
 * ms for a 530 MiB log synced beforehand). Synced as it grows, the log is on disk when the
 * checkpoint comes, and the checkpoint only copies pages.
 *
 * It changes no promise (docs/durability.md): a sync only puts on disk sooner what a crash of the
 * process keeps anyway. A failed sync ends the background syncs and is left to SQLite's own, at
 * the checkpoint, to report.
 */
export function createLogSync(logPath: string, options: LogSyncOptions = {}): LogSync {
  const everyMs = options.everyMs ?? SYNC_EVERY_MS;
  const sync = options.sync ?? fdatasync;
  let fd: number | null = null;
  let syncing = false;
  let pending = false;
  let stopped = false;
  let lastStart = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | null = null;

  function letGo(): void {
    if (fd !== null) close(fd, () => undefined);
    fd = null;
  }

  function start(): void {
    if (stopped || syncing || timer !== null) return;
    const wait = lastStart + everyMs - performance.now();
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = null;
        start();
      }, wait);
      // Housekeeping: it never keeps a process alive.
      timer.unref?.();
      return;
    }
    if (fd === null) {
      try {
        fd = openSync(logPath, "r");
      } catch {
        // No log yet (nothing written since it was removed): the next commit tries again.
        return;
      }
    }
    pending = false;
    syncing = true;
    lastStart = performance.now();
    sync(fd, (error) => {
      syncing = false;
      // Where a read-only handle cannot be synced (Windows wants write access), it is left to the
      // checkpoint, as before.
      if (error) stopped = true;
      if (stopped) return letGo();
      if (pending) start();
    });
  }

  return {
    wrote() {
      pending = true;
      start();
    },
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      if (!syncing) letGo();
    },
  };
}
