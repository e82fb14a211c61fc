import { afterAll, expect, test } from "bun:test";
import { closeSync, constants, openSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { createFdWriter, settleOutput, writeFailureText } from "../../runtime/cli/fd-writer.ts";
import { readerGone } from "../../runtime/adapter/reader-gone.ts";
import { removeTempDirs, tempDir } from "./_harness.ts";

afterAll(removeTempDirs);

test("createFdWriter writes every chunk whole and in order, and settles once the file has them", async () => {
  const path = join(tempDir("fd-writer"), "out.txt");
  const fd = openSync(path, "w");
  try {
    const writer = createFdWriter(fd, "stdout");
    const chunks = Array.from({ length: 500 }, (_, i) => `${i} ${"é".repeat(300)}\n`);
    for (const chunk of chunks) void writer.write(chunk);
    await writer.settled();
    expect(readFileSync(path, "utf8")).toBe(chunks.join(""));
    expect(writer.failure).toBeNull();
    expect(writer.closed.aborted).toBe(false);
  } finally {
    closeSync(fd);
  }
});

test("createFdWriter on a full disk keeps the failure, closes, and settleOutput turns exit 0 into 1 with one line on stderr", async () => {
  const full = openSync("/dev/full", "w");
  const path = join(tempDir("fd-writer"), "err.txt");
  const err = openSync(path, "w");
  try {
    const stdout = createFdWriter(full, "stdout");
    await stdout.write("a document\n");
    expect(stdout.failure?.code).toBe("ENOSPC");
    expect(stdout.closed.aborted).toBe(true);
    expect(writeFailureText(stdout)).toBe("could not write stdout: no space left on device (ENOSPC); what it holds is incomplete");
    const stderr = createFdWriter(err, "stderr");
    expect(await settleOutput(0, stdout, stderr)).toBe(1);
    // A command that failed already keeps its own code.
    expect(await settleOutput(130, stdout, stderr)).toBe(130);
    expect(readFileSync(path, "utf8")).toBe(`docket: ${writeFailureText(stdout)}\n`.repeat(2));
  } finally {
    closeSync(full);
    closeSync(err);
  }
});

test("watchReader closes a writer whose pipe's reader left while nothing was written, as a write's EPIPE would", async () => {
  const fifo = join(tempDir("fd-writer"), "pipe");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const read = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const write = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    const writer = createFdWriter(write, "stdout");
    const stop = writer.watchReader(readerGone, 5);
    expect(readerGone(write)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(writer.closed.aborted).toBe(false);
    closeSync(read);
    expect(readerGone(write)).toBe(true);
    await new Promise((resolve) => writer.closed.addEventListener("abort", resolve, { once: true }));
    // A reader that left is no failure; what comes after is dropped without waiting.
    expect(writer.failure).toBeNull();
    await writer.write("nobody reads this\n");
    await writer.settled();
    stop();
  } finally {
    closeSync(write);
  }
});

test("settleOutput answers the command's code when every write arrived", async () => {
  const devnull = openSync("/dev/null", "w");
  try {
    const writer = createFdWriter(devnull, "stdout");
    void writer.write("x".repeat(1 << 20));
    expect(await settleOutput(0, writer, writer)).toBe(0);
  } finally {
    closeSync(devnull);
  }
});

/** A FIFO opened at both ends in this process: a pipe whose reader reads only when the test says. */
function fifo(): { writeFd: number; readFd: number; path: string; close(): void } {
  const path = join(tempDir("fd-writer"), `pipe-${Math.random().toString(16).slice(2)}`);
  expect(Bun.spawnSync(["mkfifo", path]).exitCode).toBe(0);
  const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(path, constants.O_WRONLY);
  return { path, readFd, writeFd, close: () => (closeSync(writeFd), closeSync(readFd)) };
}

/** Reads what the FIFO holds now (its read end does not wait). */
function drain(readFd: number): Buffer {
  const pieces: Buffer[] = [];
  const buffer = Buffer.alloc(1 << 16);
  for (;;) {
    try {
      const read = readSync(readFd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      pieces.push(Buffer.from(buffer.subarray(0, read)));
    } catch {
      break;
    }
  }
  return Buffer.concat(pieces);
}

test.skipIf(process.platform === "win32")("createFdWriter never holds the main thread on a pipe whose reader is behind: what it has not taken waits, in order, until it reads", async () => {
  const pipe = fifo();
  try {
    const writer = createFdWriter(pipe.writeFd, "stderr");
    const chunks = Array.from({ length: 64 }, (_, i) => `${String(i).padStart(4, "0")}${"x".repeat(16 * 1024)}\n`);
    // 1 MiB into a 64 KiB pipe nobody reads yet: a blocking write would hold this thread here.
    for (const chunk of chunks) void writer.write(chunk);
    let turns = 0;
    const ticking = setInterval(() => turns++, 1);
    while (turns < 5) await Bun.sleep(1);
    clearInterval(ticking);
    expect(writer.idleMs).toBeGreaterThan(0);
    const got: Buffer[] = [];
    let done = false;
    void writer.settled().then(() => (done = true));
    while (!done) {
      got.push(drain(pipe.readFd));
      await Bun.sleep(1);
    }
    got.push(drain(pipe.readFd));
    expect(Buffer.concat(got).toString("utf8")).toBe(chunks.join(""));
    expect(writer.failure).toBeNull();
  } finally {
    pipe.close();
  }
});

test.skipIf(process.platform === "win32")("settleOutput gives up on a reader that took nothing for the stall bound and keeps its end open: the command still ends, never with 0", async () => {
  const pipe = fifo();
  const path = join(tempDir("fd-writer"), "err-stall.txt");
  const err = openSync(path, "w");
  try {
    const stdout = createFdWriter(pipe.writeFd, "stdout");
    void stdout.write("y".repeat(1 << 20));
    const stderr = createFdWriter(err, "stderr");
    expect(await settleOutput(0, stdout, stderr, 100)).toBe(1);
    expect(stdout.closed.aborted).toBe(true);
    expect(readFileSync(path, "utf8")).toBe("docket: could not write stdout: its reader took nothing for 0.1 s and kept it open (ESTALLED); what it holds is incomplete\n");
  } finally {
    pipe.close();
    closeSync(err);
  }
});

test.skipIf(process.platform !== "linux")("flushNow writes what waits as far as the pipe takes it now, never waiting: what a process that exits at once still hands over", async () => {
  const pipe = fifo();
  try {
    const writer = createFdWriter(pipe.writeFd, "stderr");
    const chunks = Array.from({ length: 8 }, (_, i) => `${i}${"z".repeat(32 * 1024)}\n`);
    for (const chunk of chunks) void writer.write(chunk);
    // The pipe (64 KiB) is full and nobody reads: flushNow returns at once, the rest still waits.
    writer.flushNow();
    expect(writer.idleMs).toBeGreaterThanOrEqual(0);
    let got = drain(pipe.readFd);
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(chunks.join("").length);
    // Room again: flushNow hands over the next part at once, without a turn of the loop.
    writer.flushNow();
    const more = drain(pipe.readFd);
    expect(more.length).toBeGreaterThan(0);
    got = Buffer.concat([got, more]);
    expect(chunks.join("").startsWith(got.toString("utf8"))).toBe(true);
  } finally {
    pipe.close();
  }
});

test("a failed write loses its chunk and is kept as the failure, and later chunks are still written: a server's log goes on once the disk has room", async () => {
  const full = openSync("/dev/full", "w");
  const path = join(tempDir("fd-writer"), "after.txt");
  const file = openSync(path, "w");
  try {
    const writer = createFdWriter(full, "stderr");
    await writer.write("lost\n");
    expect(writer.failure?.code).toBe("ENOSPC");
    expect(writer.closed.aborted).toBe(true);
    // Room again (here: the same writer on a file that takes it).
    writer.moveTo(file);
    await writer.write("kept\n");
    expect(readFileSync(path, "utf8")).toBe("kept\n");
    expect(writer.failure?.code).toBe("ENOSPC");
  } finally {
    closeSync(full);
    closeSync(file);
  }
});

test.skipIf(process.platform !== "linux")("past its bound a writer drops what comes, counts it, says so where it was once its reader took what waited, and keeps it as a failure", async () => {
  const pipe = fifo();
  try {
    const writer = createFdWriter(pipe.writeFd, "stderr", 256 * 1024);
    const line = `${"y".repeat(1023)}\n`;
    // 1 MiB to a reader that reads nothing: a pipe's 64 KiB, then 256 KiB waiting; the rest dropped.
    for (let i = 0; i < 1024; i++) void writer.write(line);
    expect(writer.failure?.code).toBe("EDROPPED");
    // The reader comes back and takes what waited; the next line follows the note of what was dropped.
    const got: Buffer[] = [];
    let settled = false;
    void writer.settled().then(() => (settled = true));
    while (!settled) {
      got.push(drain(pipe.readFd));
      await Bun.sleep(1);
    }
    let written = false;
    void writer.write("after\n").then(() => (written = true));
    while (!written) {
      got.push(drain(pipe.readFd));
      await Bun.sleep(1);
    }
    got.push(drain(pipe.readFd));
    const text = Buffer.concat(got).toString("utf8");
    const kept = text.split("\n").filter((l) => l.startsWith("y")).length;
    expect(kept).toBeGreaterThan(255);
    expect(kept).toBeLessThan(400);
    const tail = text.slice(text.lastIndexOf("y\n") + 2);
    expect(tail).toBe(`[docket] ${(1024 - kept) * 1024} bytes of stderr were dropped here: its reader fell more than 256 KiB behind.\nafter\n`);
  } finally {
    pipe.close();
  }
});
