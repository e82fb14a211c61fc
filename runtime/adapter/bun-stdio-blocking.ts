// Bun only: gives the process's stdin, stdout and stderr back in the blocking mode it found them in.
import { fstatSync, readdirSync } from "node:fs";
import { fcntlCaller, fcntlDeclaration, libcSymbols } from "./_libc.ts";
import { signalOwnProcess } from "../worker/_own-process.ts";
import { ignoredFromStart } from "./stop-signals.ts";

const F_GETFL = 3;
const F_SETFL = 4;
const O_NONBLOCK: Record<string, number> = { linux: 0x800, darwin: 0x4 };

/**
 * Once `process.stdout` is used, Bun puts a pipe behind it in non-blocking mode, and leaves it so
 * when the process exits. The mode belongs to the pipe's open file description, which the shell
 * that started docket shares with whatever it runs next: in a CI step (`docket run check && make
 * build`) the next program's large write then fails with EAGAIN ("Resource temporarily
 * unavailable") and the step fails for nothing docket did. So the modes of fds 0–2 are read before
 * anything touches them, and at exit every descriptor of those same files (fd 1 may have been moved
 * aside, stdout-claim.ts) is given back the mode it had. Nothing where libc cannot be reached
 * through bun:ffi (Node, Windows).
 */
export function restoreStdioBlockingAtExit(): void {
  // Only a pipe or a socket is shared this way and made non-blocking (a terminal is not, a file
  // cannot be): a command run from a terminal pays nothing here, not even the libc lookup.
  if (![0, 1, 2].some(isPipeOrSocket)) return;
  const fcntl = libcFcntl();
  const nonblock = O_NONBLOCK[process.platform];
  if (fcntl === null || nonblock === undefined) return;
  const found = new Map<string, boolean>();
  for (const fd of [0, 1, 2]) {
    const key = fileKey(fd);
    const flags = fcntl(fd, F_GETFL, 0);
    if (key !== null && flags >= 0 && !found.has(key)) found.set(key, (flags & nonblock) !== 0);
  }
  if (![...found.values()].includes(false)) return;
  const restore = () => {
    // A descriptor the CLI opened for itself (cli/fd-writer.ts) shares its mode with no one, and is
    // written at exit without waiting: made blocking, a full pipe whose reader never reads held the
    // exit (a server's second stop signal) for good.
    const own = (globalThis as unknown as Record<symbol, Set<number> | undefined>)[Symbol.for("docket.private-descriptors")];
    for (const fd of openDescriptors()) {
      if (own?.has(fd)) continue;
      const key = fileKey(fd);
      if (key === null || found.get(key) !== false) continue;
      const flags = fcntl(fd, F_GETFL, 0);
      if (flags >= 0 && (flags & nonblock) !== 0) fcntl(fd, F_SETFL, flags & ~nonblock);
    }
  };
  process.on("exit", restore);
  // A signal nothing else of the command handles ends the process without "exit" (a Ctrl-C or a
  // CI step's timeout on `executions events --follow`): restored first, then the signal is given
  // its default end again. A command that handles the signal itself exits through "exit".
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const) {
    // One the process was started with ignored (`docket run … &` in a script, `nohup`) stays
    // ignored: listened to here, it ended the run mid-handler (checking tester).
    if (ignoredFromStart(signal)) continue;
    const onSignal = () => {
      if (process.listenerCount(signal) > 1) return;
      restore();
      process.off(signal, onSignal);
      signalOwnProcess(signal);
    };
    process.on(signal, onSignal);
  }
}

function isPipeOrSocket(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

/** The file a descriptor is open on, as device and inode (a pipe's inode is its own); null when it is not open. */
function fileKey(fd: number): string | null {
  try {
    const stat = fstatSync(fd);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return null;
  }
}

/** The process's open descriptors (Linux: /proc/self/fd; elsewhere the first 64 numbers, closed ones skipped by fileKey). */
function openDescriptors(): number[] {
  try {
    return readdirSync("/proc/self/fd").map(Number).filter(Number.isInteger);
  } catch {
    return Array.from({ length: 64 }, (_, fd) => fd);
  }
}

/** libc's fcntl through bun:ffi, kept open for the exit; null where it cannot be had. */
function libcFcntl(): ((fd: number, command: number, argument: number) => number) | null {
  const symbols = libcSymbols((ffi) => ({ fcntl: fcntlDeclaration(ffi.FFIType.i32) }));
  return symbols === null ? null : fcntlCaller(symbols.fcntl);
}
