import { fstatSync, write as writeAsync, writeSync } from "node:fs";

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
  /** How long the reader has taken nothing while something waits (0 with nothing waiting). */
  readonly idleMs: number;
  /** Gives up on what waits (a reader that stopped for good, `why`): dropped, kept as the failure, writing ends. */
  abandon(why: string): void;
}

interface Pending {
  bytes: Uint8Array;
  offset: number;
  done(): void;
}

/**
 * A writer on `fd`. Each chunk is written in order and whole. A file, a terminal or a device takes
 * it at once, synchronously (so a line written while the process exits still arrives). A pipe or a
 * socket is written on the runtime's I/O threads, one chunk at a time: a blocking pipe whose reader
 * is behind (or never reads: a supervisor that keeps a server's stderr and reads nothing) would
 * otherwise hold the main thread, and with it a server, until it reads. What it has not taken waits
 * in the queue. Bun's own process.stdout and process.stderr buffer a pipe's backlog in memory and
 * drop it at exit, and report neither a full disk nor a lost write: the CLI writes through this
 * instead (see routeStream).
 */
export function createFdWriter(fd: number, name: string): FdWriter {
  const queue: Pending[] = [];
  const waiters: Array<() => void> = [];
  const closed = new AbortController();
  let failure: NodeJS.ErrnoException | null = null;
  let busy = false;
  let target = fd;
  let streamed = isStream(fd);
  let progressAt = performance.now();

  const dropAll = () => {
    for (const pending of queue.splice(0)) pending.done();
  };
  const wake = () => {
    if (queue.length === 0) for (const resolve of waiters.splice(0)) resolve();
  };
  /** After a write of `head` failed: a full non-blocking pipe is tried again; a reader gone or a failure ends writing. */
  const failed = (error: NodeJS.ErrnoException): "retry" | "closed" => {
    const code = error.code;
    if (code === "EAGAIN" || code === "EWOULDBLOCK" || code === "EINTR") return "retry";
    // The reader closed its end: nobody is left to read the rest, which is no failure of ours.
    if (code !== "EPIPE") failure = error;
    closed.abort();
    return "closed";
  };
  const wrote = (head: Pending, count: number) => {
    head.offset += count;
    if (count > 0) progressAt = performance.now();
    if (head.offset < head.bytes.length) return;
    queue.shift();
    head.done();
  };
  const pump = () => {
    busy = false;
    while (queue.length > 0) {
      if (closed.signal.aborted) return dropAll(), wake();
      const head = queue[0]!;
      if (streamed) {
        busy = true;
        writeAsync(target, head.bytes, head.offset, head.bytes.length - head.offset, null, (error, count) => {
          if (error && failed(error) === "retry") return void setTimeout(pump, RETRY_MS);
          if (!error) wrote(head, count);
          pump();
        });
        return;
      }
      try {
        wrote(head, writeSync(target, head.bytes, head.offset, head.bytes.length - head.offset));
      } catch (error) {
        if (failed(error as NodeJS.ErrnoException) === "retry") {
          busy = true;
          setTimeout(pump, RETRY_MS);
          return;
        }
      }
    }
    wake();
  };

  return {
    name,
    get failure() {
      return failure;
    },
    closed: closed.signal,
    get idleMs() {
      return queue.length === 0 ? 0 : performance.now() - progressAt;
    },
    write(chunk) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
      return new Promise((done) => {
        if (queue.length === 0) progressAt = performance.now();
        queue.push({ bytes, offset: 0, done });
        if (!busy && queue.length === 1) pump();
      });
    },
    settled() {
      return queue.length === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve));
    },
    moveTo(next) {
      target = next;
      streamed = isStream(next);
    },
    abandon(why) {
      if (queue.length === 0) return;
      failure ??= Object.assign(new Error(why), { code: "ESTALLED" });
      closed.abort();
      dropAll();
      wake();
    },
  };
}

/** True for a pipe or a socket: what a reader may leave unread, so that a write to it can wait. */
function isStream(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
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

/** How long the end of a command waits for a reader that takes nothing at all before it gives up on it. */
export const READER_STALL_MS = 10_000;

/**
 * The end of a command: waits until stdout and stderr have taken everything (or failed), then
 * answers the exit code. A write that failed is said on stderr in one line and never exits 0:
 * `docket … > out.json` on a full disk must not pass for a whole document (README.md). A reader
 * that is slow is waited for however long it takes; one that took nothing for `stallMs` (it
 * stopped reading for good, and keeps its end open) is given up on, as a failed write: a stopped
 * server or `docket mcp` must still end.
 */
export async function settleOutput(code: number, stdout: FdWriter, stderr: FdWriter, stallMs = READER_STALL_MS): Promise<number> {
  const writers = [stdout, stderr];
  await new Promise<void>((resolve) => {
    const look = setInterval(() => {
      for (const writer of writers) if (writer.idleMs >= stallMs) writer.abandon(`its reader took nothing for ${Math.round(stallMs / 100) / 10} s and kept it open`);
    }, Math.max(1, Math.min(1000, stallMs / 4)));
    void Promise.all(writers.map((writer) => writer.settled())).then(() => (clearInterval(look), resolve()));
  });
  const failed = writers.filter((writer) => writer.failure !== null);
  if (failed.length === 0) return code;
  for (const writer of failed) if (stderr.failure === null) await stderr.write(`docket: ${writeFailureText(writer)}\n`);
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
