// Bun only: asks the kernel whether the writer of a socket or pipe we read shut its end and
// nothing it wrote is left unread. Bun 1.4 never emits "end" for a socket stdin (what Node gives a
// child) that was paused when its writer ended it: `docket mcp` answered everything, then waited
// for an end that never came, spinning a core (docs: README, "MCP"). A pipe (what Python's
// subprocess and its MCP SDK give a child) does the same when written in small pieces (MCP
// tester, session 48: 60,000 pings written 8 KiB at a time hung 3 runs of 3).
import { fstatSync } from "node:fs";
import { libcSymbols } from "./_libc.ts";

const POLLIN = 0x1;
const POLLHUP = 0x10;
const POLLRDHUP = 0x2000;
/** ioctl(2): the bytes waiting to be read (Linux's FIONREAD). */
const FIONREAD = 0x541b;

/**
 * Whether `fd` is a socket or a pipe whose writer shut its end (or closed it: every writer, for a
 * pipe) with nothing left to read; false while it is open or holds unread bytes; null where it
 * cannot be asked (not Linux, no libc through bun:ffi, neither a socket nor a pipe).
 */
export function readToEnd(fd: number): boolean | null {
  if (process.platform !== "linux") return null;
  try {
    const kind = fstatSync(fd);
    if (!kind.isSocket() && !kind.isFIFO()) return null;
  } catch {
    return null;
  }
  const libc = calls();
  if (libc === null) return null;
  // struct pollfd { int fd; short events; short revents; }
  const entry = new Int32Array(2);
  entry[0] = fd;
  entry[1] = POLLIN | POLLRDHUP;
  if (libc.poll(entry, 1, 0) < 0) return null;
  const revents = (entry[1]! >>> 16) & 0xffff;
  if ((revents & (POLLRDHUP | POLLHUP)) === 0) return false;
  const waiting = new Int32Array(1);
  if (libc.ioctl(fd, FIONREAD, waiting) < 0) return null;
  return waiting[0] === 0;
}

type Calls = { poll: (entry: Int32Array, count: number, timeoutMs: number) => number; ioctl: (fd: number, request: number, out: Int32Array) => number };

let found: Calls | null | undefined;

function calls(): Calls | null {
  if (found !== undefined) return found;
  const symbols = libcSymbols((ffi) => ({
    poll: { args: [ffi.FFIType.ptr, ffi.FFIType.u64, ffi.FFIType.i32], returns: ffi.FFIType.i32 },
    ioctl: { args: [ffi.FFIType.i32, ffi.FFIType.u64, ffi.FFIType.ptr], returns: ffi.FFIType.i32 },
  }));
  found = symbols === null ? null : (symbols as unknown as Calls);
  return found;
}
