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

/** Starts `docket serve` on `files` with its stderr a pipe held open and never read; answers its URL, or null if it never served. */
async function serveUnread(files: Record<string, string>): Promise<{ url: string | null; server: ReturnType<typeof Bun.spawn>; close(): void }> {
  const checkout = tempCheckout();
  writeFiles(checkout, files);
  const fifo = join(tempDir("fifo"), "stderr");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  // Held open for reading and writing, and never read: the pipe fills at 64 KiB and stays full.
  const holder = openSync(fifo, "r+");
  const stderr = openSync(fifo, "w");
  const server = Bun.spawn([...fromSource.argv(), "serve", "--store", "memory", "--port", "0"], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: "ignore", stderr });
  closeSync(stderr);
  const lease = join(checkout, ".docket", "lease.json");
  for (let i = 0; i < 300 && !existsSync(lease); i++) await Bun.sleep(50);
  const url = existsSync(lease) ? (JSON.parse(readFileSync(lease, "utf8")).url as string) : null;
  return {
    url,
    server,
    close() {
      server.kill("SIGKILL");
      closeSync(holder);
    },
  };
}

/** Two SIGTERMs, past the window in which the second counts as the first one's echo: answers how it ended. */
async function stopTwice(server: ReturnType<typeof Bun.spawn>): Promise<number | string> {
  server.kill("SIGTERM");
  await Bun.sleep(1500);
  server.kill("SIGTERM");
  return await Promise.race([server.exited, Bun.sleep(15_000).then(() => "still running")]);
}

test.skipIf(process.platform !== "linux")("a second SIGTERM ends a server whose stderr pipe is full and never read: exit 130, not a write that waits for ever", async () => {
  const served = await serveUnread({ "capabilities/t.boom.ts": BOOM });
  try {
    expect(served.url).not.toBeNull();
    // Each failed call logs a line of about 1 KB: far more than the pipe holds.
    for (let i = 0; i < 150; i++) await fetch(`${served.url}/api/v1/t/boom`).then((r) => r.arrayBuffer());
    expect((await fetch(`${served.url}/healthz`)).status).toBe(200);
    expect(await stopTwice(served.server)).toBe(130);
  } finally {
    served.close();
  }
}, 60_000);

test.skipIf(process.platform !== "linux")("a file whose top level prints 300 KB, imported on the server's main thread, holds neither the server nor its stop when nobody reads its stderr (tester)", async () => {
  const LOUD = `import { capability } from "docket";
import * as v from "valibot";
console.error("N".repeat(300_000));
export default capability({ id: "t.loud", title: "Loud", description: "Prints at its top level.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });
`;
  const served = await serveUnread({ "capabilities/t.loud.ts": LOUD });
  try {
    expect(served.url).not.toBeNull();
    expect((await fetch(`${served.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${served.url}/api/v1/t/loud`)).status).toBe(200);
    expect(await stopTwice(served.server)).toBe(130);
  } finally {
    served.close();
  }
}, 60_000);
