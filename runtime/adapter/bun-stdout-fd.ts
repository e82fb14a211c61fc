// Bun only: moves file descriptor 1 aside with libc's dup/dup2 through bun:ffi (runtime/cli/stdout-claim.ts).
import { fcntlCaller, fcntlDeclaration, LIBC } from "./_libc.ts";

/** fcntl's commands and flag; the same numbers on Linux and macOS. */
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/**
 * Keeps the process's stdout for its caller alone: duplicates fd 1 to a private descriptor (closed
 * on exec, so a child never holds the reader's pipe open), then points fd 1 at stderr. Whatever
 * else writes to fd 1 afterwards (console.log, `fs.writeSync(1, …)`, `Bun.stdout`, a worker thread,
 * a child started with inherited stdio) lands on stderr. Answers the private descriptor, or null
 * where libc cannot be reached through bun:ffi (Windows, Node, a libc not found): the caller then
 * keeps its JS-level guard alone.
 */
export async function moveStdoutAside(): Promise<number | null> {
  const names = LIBC[process.platform];
  if (!names || typeof (globalThis as { Bun?: unknown }).Bun === "undefined") return null;
  let ffi: typeof import("bun:ffi");
  try {
    ffi = await import("bun:ffi");
  } catch {
    return null;
  }
  const { dlopen, FFIType } = ffi;
  const i32 = FFIType.i32;
  const symbols = {
    dup: { args: [i32], returns: i32 },
    dup2: { args: [i32, i32], returns: i32 },
    fcntl: fcntlDeclaration(i32),
  } as const;
  for (const name of names) {
    let lib: ReturnType<typeof dlopen<typeof symbols>>;
    try {
      lib = dlopen(name, symbols);
    } catch {
      continue;
    }
    try {
      const { dup, dup2 } = lib.symbols as unknown as { dup(fd: number): number; dup2(from: number, to: number): number };
      const fcntl = fcntlCaller(lib.symbols.fcntl);
      const saved = dup(1);
      if (saved < 0) return null;
      fcntl(saved, F_SETFD, FD_CLOEXEC);
      if (dup2(2, 1) < 0) return null;
      return saved;
    } finally {
      // The symbols are only needed for the three calls above.
      lib.close();
    }
  }
  return null;
}
