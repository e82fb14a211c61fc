// A server whose stderr is a pipe nobody reads (a supervisor that keeps it and reads nothing)
// still stops on a second stop signal (a tester: it hung for good in a blocking write at exit).
import { afterAll, expect, test } from "bun:test";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, fromSource, removeTempDirs, tempCheckout, tempDir, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

/** Throws a long error: each direct call writes a long line to the server's stderr. */
const BOOM = `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "t.boom", title: "Boom", description: "Throws a long error.", effect: "read", input: v.object({}), output: v.object({}),
  handler() { throw new Error("boom ".repeat(200)); } });
`;

test.skipIf(process.platform !== "linux")("a second SIGTERM ends a server whose stderr pipe is full and never read: exit 130, not a write that waits for ever", async () => {
  const checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/t.boom.ts": BOOM });
  const fifo = join(tempDir("fifo"), "stderr");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  // Held open for reading and writing, and never read: the pipe fills at 64 KiB and stays full.
  const holder = openSync(fifo, "r+");
  const stderr = openSync(fifo, "w");
  const server = Bun.spawn([...fromSource.argv(), "serve", "--store", "memory", "--port", "0"], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: "ignore", stderr });
  closeSync(stderr);
  try {
    const lease = join(checkout, ".docket", "lease.json");
    for (let i = 0; i < 300 && !existsSync(lease); i++) await Bun.sleep(50);
    const url = JSON.parse(readFileSync(lease, "utf8")).url as string;
    // Each failed call logs a line of about 1 KB: far more than the pipe holds.
    for (let i = 0; i < 150; i++) await fetch(`${url}/api/v1/t/boom`).then((r) => r.arrayBuffer());
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    server.kill("SIGTERM");
    // Past the window in which a second signal counts as the first one's echo.
    await Bun.sleep(1500);
    server.kill("SIGTERM");
    expect(await Promise.race([server.exited, Bun.sleep(15_000).then(() => "still running")])).toBe(130);
  } finally {
    server.kill("SIGKILL");
    closeSync(holder);
  }
}, 60_000);
