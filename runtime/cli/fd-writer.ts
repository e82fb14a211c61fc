import { constants, fstatSync, openSync, writeSync } from "node:fs";
import { formatBytes } from "../execution/storage-gate.ts";

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
   * Aborted once what is written can no longer all arrive: the reader closed its end (EPIPE:
   * `docket … | head -1`; later writes are dropped) or a write failed (later ones are still tried).
   * A command may stop producing output.
   */
  readonly closed: AbortSignal;
  /** Writes from now on go to `fd` (stdout-claim moves the reader's stdout to a private descriptor). */
  moveTo(fd: number): void;
  /** How long the reader has taken nothing while something waits (0 with nothing waiting). */
  readonly idleMs: number;
  /** Writes what waits as far as the reader takes it now, without waiting: for a process that exits at once. */
  flushNow(): void;
  /** Gives up on what waits (a reader that stopped for good, `why`): dropped, kept as the failure, writing ends. */
  abandon(why: string): void;
  /**
   * Asks `probe` every `everyMs` whether the reader closed its end while nothing is written (a
   * command that follows something quiet); once it did, `closed` is aborted as an EPIPE would.
   * Answers the stop of the asking.
   */
  watchReader(probe: (fd: number) => boolean | null, everyMs: number): () => void;
}

interface Pending {
  bytes: Uint8Array;
  offset: number;
  done(): void;
}

/**
 * A writer on `fd`. Each chunk is written in order and whole. A file, a terminal or a device takes
 * it at once. A pipe is written (Linux) through a descriptor of its own that never waits: one whose
 * reader is behind (or never reads: a supervisor that keeps a server's stderr and reads nothing)
 * would otherwise hold the main thread, and with it a server, until it reads; what it does not take
 * waits in the queue and is tried again shortly. Bun's own process.stdout and process.stderr buffer
 * a pipe's backlog in memory and drop it at exit, and report neither a full disk nor a lost write:
 * the CLI writes through this instead (see routeStream and writerOf).
 */
export function createFdWriter(fd: number, name: string, maxQueuedBytes = Infinity): FdWriter {
  const queue: Pending[] = [];
  const waiters: Array<() => void> = [];
  const closed = new AbortController();
  let failure: NodeJS.ErrnoException | null = null;
  let busy = false;
  let target = ownDescriptor(fd);
  let progressAt = performance.now();
  /** Bytes waiting in the queue, and bytes dropped past maxQueuedBytes since the last note of them. */
  let queued = 0;
  let dropped = 0;

  const dropAll = () => {
    queued = 0;
    for (const pending of queue.splice(0)) pending.done();
  };
  const wake = () => {
    if (queue.length === 0) for (const resolve of waiters.splice(0)) resolve();
  };
  // The reader closed its end (EPIPE): nobody is left to read anything, which is no failure of ours.
  let gone = false;
  /** Nobody reads any more (or nobody is waited for): what waits is dropped, and so is what comes. */
  const readerLeft = () => {
    gone = true;
    closed.abort();
    dropAll();
    wake();
  };
  /**
   * After a write of the queue's head failed: a full non-blocking pipe is tried again; a reader
   * gone drops everything. Any other failure (a full disk, an I/O error) loses that chunk, is kept
   * as the failure, and later chunks are still tried: a server's log goes on once the disk has
   * room again, while its exit code says what was lost.
   */
  const failed = (error: NodeJS.ErrnoException): "retry" | "dropped" => {
    const code = error.code;
    if (code === "EAGAIN" || code === "EWOULDBLOCK" || code === "EINTR") return "retry";
    if (code === "EPIPE") gone = true;
    else {
      failure ??= error;
      const head = queue.shift();
      if (head) queued -= head.bytes.length;
      head?.done();
    }
    closed.abort();
    return "dropped";
  };
  const wrote = (head: Pending, count: number) => {
    head.offset += count;
    if (count > 0) progressAt = performance.now();
    if (head.offset < head.bytes.length) return;
    queue.shift();
    queued -= head.bytes.length;
    head.done();
  };
  /** Writes what waits, in order, until nothing does (true) or the pipe takes no more now (false). */
  const writeWhatFits = (): boolean => {
    while (queue.length > 0) {
      if (gone) {
        dropAll();
        break;
      }
      const head = queue[0]!;
      try {
        wrote(head, writeSync(target, head.bytes, head.offset, head.bytes.length - head.offset));
      } catch (error) {
        if (failed(error as NodeJS.ErrnoException) === "retry") return false;
      }
    }
    return true;
  };
  const pump = () => {
    busy = false;
    if (writeWhatFits()) return wake();
    busy = true;
    setTimeout(pump, RETRY_MS);
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
      // Past the bound (a reader that stopped for good) what comes is dropped, counted, and said
      // where it was once there is room again; it is a failure, as a lost write is.
      if (queued + bytes.length > maxQueuedBytes) {
        dropped += bytes.length;
        failure ??= Object.assign(new Error(`its reader fell more than ${formatBytes(maxQueuedBytes)} behind, and what came beyond that was dropped`), { code: "EDROPPED" });
        return Promise.resolve();
      }
      const idle = queue.length === 0;
      if (idle) progressAt = performance.now();
      if (dropped > 0) {
        const note = Buffer.from(`[docket] ${dropped} bytes of ${name} were dropped here: its reader fell more than ${formatBytes(maxQueuedBytes)} behind.\n`);
        dropped = 0;
        queue.push({ bytes: note, offset: 0, done: () => undefined });
        queued += note.length;
      }
      return new Promise((done) => {
        queue.push({ bytes, offset: 0, done });
        queued += bytes.length;
        if (idle && !busy) pump();
      });
    },
    settled() {
      return queue.length === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve));
    },
    moveTo(next) {
      target = ownDescriptor(next);
    },
    flushNow() {
      if (writeWhatFits()) wake();
    },
    abandon(why) {
      if (queue.length === 0) return;
      failure ??= Object.assign(new Error(why), { code: "ESTALLED" });
      readerLeft();
    },
    watchReader(probe, everyMs) {
      const look = setInterval(() => {
        if (gone || probe(target) !== true) return;
        clearInterval(look);
        readerLeft();
      }, everyMs);
      look.unref?.();
      return () => clearInterval(look);
    },
  };
}

/**
 * The descriptor a writer writes `fd` through: for a pipe (Linux), a new open of the same pipe,
 * through /proc, that never waits (O_NONBLOCK on it is not the flag shared with a child that
 * inherited stderr, which would then see EAGAIN); anything else as it is. Elsewhere a pipe is
 * written as it is, and a reader that is behind holds the write.
 */
function ownDescriptor(fd: number): number {
  if (process.platform !== "linux") return fd;
  try {
    if (!fstatSync(fd).isFIFO()) return fd;
    const own = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK);
    // Never made to wait (adapter/bun-stdio-blocking.ts leaves it be at exit): what is flushed at
    // exit to a reader that takes nothing would otherwise hold the exit for good.
    privateDescriptors().add(own);
    return own;
  } catch {
    // No /proc, or a pipe that cannot be opened so (no reader left): written as it is.
    return fd;
  }
}

/** The descriptors this process opened for itself on a shared pipe: no one else's mode to give back. */
function privateDescriptors(): Set<number> {
  const global = globalThis as unknown as Record<symbol, Set<number> | undefined>;
  return (global[PRIVATE_DESCRIPTORS] ??= new Set());
}
const PRIVATE_DESCRIPTORS = Symbol.for("docket.private-descriptors");

const ROUTED = Symbol.for("docket.fd-writer");
/** The most stderr keeps for a reader that is behind; more is dropped, and said so once it reads. */
export const STDERR_QUEUE_BYTES = 64 << 20;

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

/**
 * The writer behind `process.stdout` or `process.stderr`, routing the stream through one first if
 * none does yet. `log` (first routing only): stdout is a log too, bounded as stderr is.
 */
export function writerOf(stream: NodeJS.WriteStream, options: { log?: boolean } = {}): FdWriter {
  const held = stream as unknown as Record<symbol, FdWriter | undefined>;
  const fd = stream === process.stderr ? 2 : 1;
  const routed = held[ROUTED];
  if (routed) return routed;
  // stdout holds a command's document, kept whole however far behind its reader is; stderr, a
  // log that a server may write for days to a reader that stopped for good, is bounded. A
  // server's stdout carries no document, only what handlers of direct calls print: a handler
  // printing gigabytes to a reader that took nothing grew the server by as much (containment tester, session 45).
  const bounded = fd === 2 || options.log === true;
  const writer = routeStream(stream, createFdWriter(fd, fd === 2 ? "stderr" : "stdout", bounded ? STDERR_QUEUE_BYTES : Infinity));
  // A command that exits without waiting (a server's stop, a second Ctrl-C) still hands over
  // what waits, as far as the reader takes it then: a write that does not wait cannot hold the exit.
  process.once("exit", () => writer.flushNow());
  return writer;
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
