// What the kernel says of a stdin whose end the runtime may not report (adapter/read-to-end.ts):
// a pipe's, as Python's subprocess gives a child (MCP tester, session 48: `docket mcp` hung after
// answering everything), as well as a socket's.
import { afterAll, expect, test } from "bun:test";
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readToEnd } from "../../runtime/adapter/read-to-end.ts";

const dir = mkdtempSync(join(tmpdir(), "docket-read-to-end-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test.skipIf(process.platform !== "linux")("a pipe is read to its end once every writer closed it and nothing is left unread; not before", () => {
  const fifo = join(dir, "stdin");
  Bun.spawnSync(["mkfifo", fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY);
  try {
    expect(readToEnd(reader)).toBe(false);
    writeSync(writer, "a line\n");
    expect(readToEnd(reader)).toBe(false);
    closeSync(writer);
    // Ended by its writer, but a line is still to read.
    expect(readToEnd(reader)).toBe(false);
    expect(readSync(reader, Buffer.alloc(64))).toBe(7);
    expect(readToEnd(reader)).toBe(true);
  } finally {
    closeSync(reader);
  }
});

test("a file is not asked: its end is the runtime's to report", () => {
  const file = join(dir, "plain");
  const fd = openSync(file, "w");
  try {
    expect(readToEnd(fd)).toBeNull();
  } finally {
    closeSync(fd);
  }
});
