import { afterAll, expect, test } from "bun:test";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createFdWriter, settleOutput, writeFailureText } from "../../runtime/cli/fd-writer.ts";
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
