// Bun only: how many threads the process's asynchronous file work may take (docs/containment.md,
// "Blocking reads").
import { promises as fs } from "node:fs";
import { libcSymbols } from "./_libc.ts";

/**
 * Threads Bun's file work may take in a server (`docket serve`, `docket mcp`). Bun runs every
 * asynchronous file call (`fs.promises.readFile`, a module import in a new worker) on one thread
 * pool the whole process shares, as many threads as cores: 2 here. A handler's own
 * `readFile` of a FIFO nobody writes holds a pool thread for good (no thread is interrupted in a
 * system call), so two such calls stopped every direct call, `health.report` and every import of
 * a capability file until a restart (containment tester, session 45). Threads are started only
 * as work needs them, so a larger bound costs nothing until then.
 */
export const FILE_THREADS = 256;

/**
 * Sets the bound before the pool exists: Bun reads it once, from the C environment
 * (`UV_THREADPOOL_SIZE`, which `process.env` does not reach), when the pool is first used. The
 * variable is then taken out again, so that no child process is started with it. One the user
 * set is kept as it is; nothing happens where libc cannot be reached through bun:ffi.
 */
export async function widenFileThreads(threads = FILE_THREADS): Promise<void> {
  if (process.env.UV_THREADPOOL_SIZE !== undefined) return;
  const libc = libcSymbols((ffi) => ({
    setenv: { args: [ffi.FFIType.cstring, ffi.FFIType.cstring, ffi.FFIType.i32], returns: ffi.FFIType.i32 },
    unsetenv: { args: [ffi.FFIType.cstring], returns: ffi.FFIType.i32 },
  }));
  if (libc === null) return;
  const { ptr } = require("bun:ffi") as typeof import("bun:ffi");
  const name = Buffer.from("UV_THREADPOOL_SIZE\0");
  const value = Buffer.from(`${threads}\0`);
  if ((libc.setenv as (name: unknown, value: unknown, overwrite: number) => number)(ptr(name), ptr(value), 1) !== 0) return;
  try {
    // The pool's first use makes it, with the bound just set.
    await fs.stat(process.execPath).catch(() => undefined);
  } finally {
    (libc.unsetenv as (name: unknown) => number)(ptr(name));
  }
}
