import { Writable } from "node:stream";
import { moveStdoutAside } from "../adapter/bun-stdout-fd.ts";
import { READER_STALL_MS, writerOf } from "./fd-writer.ts";

/**
 * Keeps stdout for the command's own document or protocol messages (`docket run`, `docket
 * capabilities … --format json`, `docket mcp`): answers the only writer left to it, and sends
 * everything else written there to stderr. Call it before any capability file is imported.
 *
 * Two layers. Where bun:ffi reaches libc (Linux, macOS), fd 1 itself is moved aside
 * (runtime/adapter/bun-stdout-fd.ts), so `fs.writeSync(1, …)`, `Bun.write(Bun.stdout, …)`, worker
 * threads and child processes with inherited stdio land on stderr too. Everywhere (and alone on
 * Windows, where there is no such call), `console.log`/`info`/`debug` of this thread and
 * `process.stdout.write` (the way a worker's output reaches the parent) are sent to stderr. The
 * writer answered is stdout's own (runtime/cli/fd-writer.ts): writes go in order and whole, a
 * reader that left (`docket run … | head -1`) drops the rest quietly, and a failed write (a full
 * disk) is kept for the command's end to report.
 */
export async function claimStdout(): Promise<Writable> {
  // The writer stays the one the command's end waits for (main.ts); it only moves to the private copy.
  const writer = writerOf(process.stdout);
  const saved = await moveStdoutAside();
  if (saved !== null) writer.moveTo(saved);
  // A failed write is the writer's to report at the command's end, not an 'error' that crashes.
  const protocol = new Writable({
    write(chunk, _encoding, callback) {
      void writer.write(chunk).then(() => callback());
    },
  });
  process.stdout.write = ((...args: Parameters<typeof process.stderr.write>) => process.stderr.write(...args)) as typeof process.stdout.write;
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  return protocol;
}

/**
 * Writes `text` to a claimed stdout and resolves once the OS has it, the reader has gone, or
 * writing failed; or once the reader took nothing for `stallMs`, when it is given up on as a
 * failed write (the command's end then says so and exits 1). A reader that stops reading for good
 * and keeps its end open (`docket run … | (sleep 1000)`) held the run there, past its end, until
 * the reader left, and signals with it.
 */
export function writeClaimed(stdout: Writable, text: string, stallMs = READER_STALL_MS): Promise<void> {
  const writer = writerOf(process.stdout);
  return new Promise((resolve) => {
    const look = setInterval(() => {
      if (writer.idleMs >= stallMs) writer.abandon(`its reader took nothing for ${Math.round(stallMs / 100) / 10} s and kept it open`);
    }, Math.max(1, Math.min(1000, stallMs / 4)));
    look.unref?.();
    stdout.write(text, () => {
      clearInterval(look);
      resolve();
    });
  });
}
