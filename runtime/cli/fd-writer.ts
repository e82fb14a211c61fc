import { writeSync } from "node:fs";

/** How long a write waits before trying again when the reader's pipe is full and non-blocking. */
const RETRY_MS = 5;

/**
 * What the CLI writes to one file descriptor (stdout, stderr), in order and whole, with an end
 * that can be awaited: the process must not exit before the reader has taken everything (README.md).
 */
export interface FdWriter {
  /** "stdout" or "stderr": what a failure names. */
  readonly name: string;
  /** Queues a chunk; resolves once the OS has all of it, the reader has gone, or writing failed. */
  write(chunk: string | Uint8Array): Promise<void>;
  /** Resolves once everything queued so far is written (or dropped: a reader gone, a failed write). */
  settled(): Promise<void>;
  /** The error that lost output (ENOSPC, EIO…), or null. A reader that left is not one. */
  readonly failure: NodeJS.ErrnoException | null;
  /**
   * Aborted once nothing more can be written: the reader closed its end (EPIPE: `docket … | head
   * -1`) or a write failed. Later writes are dropped; a command may stop producing output.
   */
  readonly closed: AbortSignal;
  /** Writes from now on go to `fd` (stdout-claim moves the reader's stdout to a private descriptor). */
  moveTo(fd: number): void;
}

interface Pending {
  bytes: Uint8Array;
  offset: number;
  done(): void;
}

/**
 * A writer on `fd`. Each write is tried at once, synchronously (a file or a terminal takes it
 * whole, so a line written while the process exits still arrives); what a full non-blocking pipe
 * does not take waits in a queue, in order, and is tried again shortly. Bun's own process.stdout
 * and process.stderr buffer a pipe's backlog in memory and drop it at exit, and report neither a
 * full disk nor a lost write: the CLI writes through this instead (see routeStream).
 */
export function createFdWriter(fd: number, name: string): FdWriter {
  const queue: Pending[] = [];
  const waiters: Array<() => void> = [];
  const closed = new AbortController();
  let failure: NodeJS.ErrnoException | null = null;
  let retrying = false;
  let target = fd;

  const dropAll = () => {
    for (const pending of queue.splice(0)) pending.done();
  };
  const pump = () => {
    retrying = false;
    while (queue.length > 0) {
      if (closed.signal.aborted) return dropAll(), wake();
      const head = queue[0]!;
      try {
        while (head.offset < head.bytes.length) head.offset += writeSync(target, head.bytes, head.offset, head.bytes.length - head.offset);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EAGAIN" || code === "EWOULDBLOCK" || code === "EINTR") {
          retrying = true;
          setTimeout(pump, RETRY_MS);
          return;
        }
        // The reader closed its end: nobody is left to read the rest, which is no failure of ours.
        if (code !== "EPIPE") failure = error as NodeJS.ErrnoException;
        closed.abort();
        continue;
      }
      queue.shift();
      head.done();
    }
    wake();
  };
  const wake = () => {
    if (queue.length === 0) for (const resolve of waiters.splice(0)) resolve();
  };

  return {
    name,
    get failure() {
      return failure;
    },
    closed: closed.signal,
    write(chunk) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
      return new Promise((done) => {
        queue.push({ bytes, offset: 0, done });
        if (!retrying && queue.length === 1) pump();
      });
    },
    settled() {
      return queue.length === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve));
    },
    moveTo(next) {
      target = next;
    },
  };
}

const ROUTED = Symbol.for("docket.fd-writer");

/**
 * Sends everything written with `stream.write` through `writer`: the callback runs once the
 * chunk is written (or dropped), with the write's error if it failed. Answers `writer`.
 */
export function routeStream(stream: NodeJS.WritableStream, writer: FdWriter): FdWriter {
  const held = stream as unknown as Record<symbol, FdWriter>;
  held[ROUTED] = writer;
  stream.write = ((chunk: string | Uint8Array, encoding?: unknown, callback?: unknown) => {
    const done = typeof encoding === "function" ? encoding : callback;
    const text = typeof chunk === "string" && typeof encoding === "string" && encoding !== "utf8" && encoding !== "utf-8" ? Buffer.from(chunk, encoding as BufferEncoding) : chunk;
    void writer.write(text).then(() => typeof done === "function" && done(writer.failure));
    return true;
  }) as typeof stream.write;
  return writer;
}

/** The writer behind `process.stdout` or `process.stderr`, routing the stream through one first if none does yet. */
export function writerOf(stream: NodeJS.WriteStream): FdWriter {
  const held = stream as unknown as Record<symbol, FdWriter | undefined>;
  const fd = stream === process.stderr ? 2 : 1;
  return held[ROUTED] ?? routeStream(stream, createFdWriter(fd, fd === 2 ? "stderr" : "stdout"));
}

/**
 * The end of a command: waits until stdout and stderr have taken everything (or failed), then
 * answers the exit code. A write that failed is said on stderr in one line and never exits 0:
 * `docket … > out.json` on a full disk must not pass for a whole document (README.md).
 */
export async function settleOutput(code: number, stdout: FdWriter, stderr: FdWriter): Promise<number> {
  await Promise.all([stdout.settled(), stderr.settled()]);
  const failed = [stdout, stderr].filter((writer) => writer.failure !== null);
  if (failed.length === 0) return code;
  for (const writer of failed) await stderr.write(`docket: ${writeFailureText(writer)}\n`);
  return code === 0 ? 1 : code;
}

/** `could not write stdout: no space left on device (ENOSPC); what it holds is incomplete`. */
export function writeFailureText(writer: FdWriter): string {
  const error = writer.failure!;
  const reason = error.code ? `${REASONS[error.code] ?? error.message.replace(/^\w+: /, "").replace(/, write$/, "")} (${error.code})` : error.message;
  return `could not write ${writer.name}: ${reason}; what it holds is incomplete`;
}

const REASONS: Record<string, string> = {
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  EFBIG: "file too large",
  EIO: "input/output error",
  EBADF: "it is closed",
};
