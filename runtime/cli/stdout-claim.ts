import { write as writeFd } from "node:fs";
import { Writable } from "node:stream";
import { moveStdoutAside } from "../adapter/bun-stdout-fd.ts";

/** How long a write waits before trying again when the reader's pipe is full and non-blocking. */
const RETRY_MS = 5;

/**
 * Keeps stdout for the command's own document or protocol messages (`docket run`, `docket
 * capabilities … --format json`, `docket mcp`): answers the only writer left to it, and sends
 * everything else written there to stderr. Call it before any capability file is imported.
 *
 * Two layers. Where bun:ffi reaches libc (Linux, macOS), fd 1 itself is moved aside
 * (runtime/adapter/bun-stdout-fd.ts), so `fs.writeSync(1, …)`, `Bun.write(Bun.stdout, …)`, worker
 * threads and child processes with inherited stdio land on stderr too. Everywhere (and alone on
 * Windows, where there is no such call), `console.log`/`info`/`debug` of this thread and
 * `process.stdout.write` (the way a worker's output reaches the parent) are sent to stderr.
 */
export async function claimStdout(): Promise<Writable> {
  const write = process.stdout.write.bind(process.stdout);
  const saved = await moveStdoutAside();
  const protocol = saved === null ? processStdoutWriter(write) : fdWriter(saved);
  process.stdout.write = ((...args: Parameters<typeof process.stderr.write>) => process.stderr.write(...args)) as typeof process.stdout.write;
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  return protocol;
}

/** Writes `text` to a claimed stdout and resolves once the OS has it, or the reader has gone. */
export function writeClaimed(stdout: Writable, text: string): Promise<void> {
  return new Promise((resolve) => {
    stdout.write(text, () => resolve());
  });
}

/** The fallback: stdout's own writer, kept before `process.stdout.write` is redirected. */
function processStdoutWriter(write: typeof process.stdout.write): Writable {
  return new Writable({
    write(chunk, _encoding, callback) {
      write(chunk, (error) => callback(error ?? null));
    },
  });
}

/**
 * A writer on the private copy of fd 1. Writes go in order (a Writable calls `write` one at a
 * time) and whole: a partial write continues, a full non-blocking pipe is tried again shortly. A
 * reader that left (EPIPE: `docket run … | head -1`) drops the rest quietly instead of crashing,
 * as writing to a closed stdout does.
 */
function fdWriter(fd: number): Writable {
  let gone = false;
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      const from = (offset: number): void => {
        if (gone || offset >= bytes.length) return callback();
        writeFd(fd, bytes, offset, bytes.length - offset, null, (error, written) => {
          if (!error) return from(offset + written);
          if (error.code === "EAGAIN") return void setTimeout(() => from(offset), RETRY_MS);
          if (error.code === "EPIPE" || error.code === "EBADF") {
            gone = true;
            return callback();
          }
          callback(error);
        });
      };
      from(0);
    },
  });
}
