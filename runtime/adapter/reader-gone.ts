// Bun only: asks the kernel whether the reader of a pipe or socket we write has closed its end.
import { libcSymbols } from "./_libc.ts";

/** How often a command that may not write for a while (`events --follow`, `docket mcp`) asks whether its reader left. */
export const READER_LOOK_MS = 1000;

const POLLERR = 0x8;
const POLLHUP = 0x10;

/**
 * Whether nobody is left to read what `fd` is written into (the reader of a pipe or socket closed
 * its end: `docket executions events … --follow | head -1` once head has its line), asked without
 * writing anything: poll(2) with no events asked for still answers POLLERR or POLLHUP then. A
 * write would say it too (EPIPE), but a command following a quiet execution may not write for
 * minutes, holding its connection to the server all that time. Null where it cannot be asked
 * (no libc through bun:ffi: Node, Windows) or the answer is not known.
 */
export function readerGone(fd: number): boolean | null {
  const poll = libcPoll();
  if (poll === null) return null;
  // struct pollfd { int fd; short events; short revents; }: events 0, revents filled in.
  const entry = new Int32Array(2);
  entry[0] = fd;
  const ready = poll(entry, 1, 0);
  if (ready < 0) return null;
  const revents = (entry[1]! >>> 16) & 0xffff;
  return (revents & (POLLERR | POLLHUP)) !== 0;
}

let found: ((entry: Int32Array, count: number, timeoutMs: number) => number) | null | undefined;

/** libc's poll through bun:ffi, looked up once; null where it cannot be had. */
function libcPoll(): ((entry: Int32Array, count: number, timeoutMs: number) => number) | null {
  if (found !== undefined) return found;
  const symbols = libcSymbols((ffi) => ({ poll: { args: [ffi.FFIType.ptr, ffi.FFIType.u64, ffi.FFIType.i32], returns: ffi.FFIType.i32 } }));
  found = symbols === null ? null : (symbols.poll as (entry: Int32Array, count: number, timeoutMs: number) => number);
  return found;
}
