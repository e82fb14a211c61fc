import { closeSync, constants, openSync } from "node:fs";

/** A lock held on a file until `release()` (or the process's end, however it ends). */
export interface HeldFileLock {
  release(): void;
}

const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;
/** EWOULDBLOCK: another open file description holds the lock. */
const HELD_ERRNO: Partial<Record<NodeJS.Platform, number>> = { linux: 11, darwin: 35, freebsd: 35 };
const LIBC: Partial<Record<NodeJS.Platform, { file: string; errno: string }>> = {
  linux: { file: "libc.so.6", errno: "__errno_location" },
  darwin: { file: "libc.dylib", errno: "__error" },
  freebsd: { file: "libc.so.7", errno: "__error" },
};

/**
 * Takes an exclusive `flock(2)` lock on `path` (a file, created 0600 when missing, or a folder), without waiting:
 * the lock, "held" when another holder has it, or null where flock cannot be had here (no
 * bun:ffi, no such libc, a file system without it) and the caller relies on its other lock.
 * `shared` takes a shared one instead, which only an exclusive holder keeps away (see fileLockHeld).
 *
 * Why flock and not only SQLite's lock: SQLite locks with `fcntl`, whose locks belong to the
 * process and are all let go when *any* descriptor of the file is closed — a handler (or
 * `files.digest` of `.docket`) that opens and closes `serve.lock` or `state.db` dropped the
 * checkout's lock, and a second server started beside a frozen first one (a tester's finding).
 * A flock belongs to the one open file description held here: closing any other descriptor of
 * the file, in this process or another, leaves it held (docs/durability.md, "One writer").
 */
export function takeFileLock(path: string, options: { directory?: boolean; shared?: boolean } = {}): HeldFileLock | "held" | null {
  const libc = LIBC[process.platform];
  if (libc === undefined) return null;
  let ffi: typeof import("bun:ffi");
  try {
    ffi = require("bun:ffi") as typeof import("bun:ffi");
  } catch {
    return null;
  }
  let lib: { symbols: Record<string, (...args: number[]) => unknown>; close(): void };
  try {
    const { FFIType } = ffi;
    lib = ffi.dlopen(libc.file, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 }, [libc.errno]: { args: [], returns: FFIType.ptr } }) as unknown as typeof lib;
  } catch {
    return null;
  }
  try {
    // A folder is locked through a descriptor of its own (flock takes any): a folder is not deleted by `git clean`.
    const fd = options.directory ? openSync(path, constants.O_RDONLY | constants.O_DIRECTORY) : openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    if (lib.symbols.flock!(fd, (options.shared ? LOCK_SH : LOCK_EX) | LOCK_NB) === 0) {
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          // Closing the one description that holds it lets the lock go.
          closeSync(fd);
        },
      };
    }
    // Read at once, before anything else can set it.
    const errno = ffi.read.i32(lib.symbols[libc.errno]!() as import("bun:ffi").Pointer, 0);
    closeSync(fd);
    return errno === HELD_ERRNO[process.platform] ? "held" : null;
  } finally {
    lib.close();
  }
}

/**
 * Whether another open file description holds an exclusive flock on the folder `path`: a shared
 * lock is tried on a descriptor of its own and let go at once. Undefined where flock cannot be
 * had here. Unlike /proc/locks, this tells across pid namespaces: /proc/locks lists only the
 * locks of processes its namespace sees, and a server outside it was taken for none. A server
 * that starts in the instant the shared lock is held finds its lock taken: it tries again
 * (checkout-lock.ts), so a look never turns it away.
 */
export function fileLockHeld(path: string): boolean | undefined {
  let taken: HeldFileLock | "held" | null;
  try {
    taken = takeFileLock(path, { directory: true, shared: true });
  } catch {
    return undefined;
  }
  if (taken === null) return undefined;
  if (taken === "held") return true;
  taken.release();
  return false;
}
