import { createRequire } from "node:module";

/** waitpid(2)'s "do not wait": answers 0 for a child still running. */
const WNOHANG = 1;

type WaitPid = (pid: number, status: null, options: number) => number;

/** The C library's waitpid through Bun's FFI; null off Linux, or where it cannot be opened (Node). */
let waitpid: WaitPid | null | undefined;

function openWaitpid(): WaitPid | null {
  if (process.platform !== "linux" || typeof Bun === "undefined") return null;
  try {
    const { dlopen } = createRequire(import.meta.url)("bun:ffi") as typeof import("bun:ffi");
    // glibc, then musl (Alpine) by the names their loaders know.
    for (const name of ["libc.so.6", `libc.musl-${process.arch === "arm64" ? "aarch64" : "x86_64"}.so.1`]) {
      try {
        const { symbols } = dlopen(name, { waitpid: { args: ["i32", "ptr", "i32"], returns: "i32" } });
        return (pid, status, options) => symbols.waitpid(pid, status, options);
      } catch {
        // Not this C library: the next name.
      }
    }
  } catch {
    // No FFI here.
  }
  return null;
}

/**
 * Reaps `pid` if it is a child of this process that has exited: true once it is gone from the
 * process table (reaped now, or by someone else before), false while it still runs or where it
 * cannot be asked (off Linux, under Node). For the children of a worker thread that was
 * terminated: the thread that started them would have reaped them, and no other code knows them
 * (docs/containment.md), so each killed one would stay a zombie for the server's life.
 */
export function reapChild(pid: number): boolean {
  waitpid ??= openWaitpid();
  if (waitpid === null) return true;
  // pid when reaped now, 0 while it runs, -1 when it is not (or no longer) a child of ours.
  return waitpid(pid, null, WNOHANG) !== 0;
}
