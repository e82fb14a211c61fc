// `docket run --format json` whose stdout is a pipe nobody reads (a consumer that stopped for good
// and keeps its end open) ends about 10 s after its end, exit 1, saying the document did not get
// through: it waited for the reader for good, past its end (CLI tester).
import { afterAll, expect, test } from "bun:test";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, fromSource, removeTempDirs, tempCheckout, tempDir, watchStream, writeFiles } from "./_harness.ts";
import { STOP_SIGNAL_ECHO_MS } from "../../runtime/adapter/stop-signals.ts";
import { READER_STALL_MS } from "../../runtime/cli/fd-writer.ts";

afterAll(removeTempDirs);

const BIG = `import { capability } from "docket";
import * as v from "valibot";
export default capability({ id: "t.big", title: "Big", description: "Returns an output larger than a pipe holds.", effect: "read",
  input: v.object({}), output: v.object({ big: v.string() }), handler: () => ({ big: "y".repeat(1 << 20) }) });
`;

/**
 * `docket run t.big --format json` whose stdout is a FIFO held open for reading and writing and
 * never read (it fills at 64 KiB and stays full), given to `body`; answers how it ended: its exit
 * code, or "still running" READER_STALL_MS + 20 s on (then killed), and its stderr.
 */
async function runIntoUnreadPipe(body: (run: ReturnType<typeof Bun.spawn>, stderr: ReturnType<typeof watchStream>) => Promise<void> = async () => {}) {
  const checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/t.big.ts": BIG });
  const fifo = join(tempDir("fifo"), "stdout");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const holder = openSync(fifo, "r+");
  const stdout = openSync(fifo, "w");
  try {
    const run = Bun.spawn([...fromSource.argv(), "run", "t.big", "--format", "json"], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout, stderr: "pipe" });
    closeSync(stdout);
    const said = watchStream(run.stderr as ReadableStream<Uint8Array>);
    await body(run, said);
    const ended = await Promise.race([run.exited, Bun.sleep(READER_STALL_MS + 20_000).then(() => "still running" as const)]);
    if (ended === "still running") run.kill("SIGKILL");
    return { ended, stderr: await said.done };
  } finally {
    closeSync(holder);
  }
}

test.skipIf(process.platform !== "linux")("a run whose stdout reader takes nothing gives it up READER_STALL_MS after its end: exit 1, and stderr says the document is incomplete", async () => {
  const { ended, stderr } = await runIntoUnreadPipe();
  expect(ended).toBe(1);
  expect(stderr).toContain("succeeded");
  expect(stderr).toContain("could not write stdout: its reader took nothing for 10 s and kept it open");
}, READER_STALL_MS + 40_000);

test.skipIf(process.platform !== "linux")("a second stop signal while the run's end waits for a stdout reader that takes nothing gives the reader up at once: exit 1, said as the write's failure (checking tester, session 36)", async () => {
  const { ended, stderr } = await runIntoUnreadPipe(async (run, said) => {
    await said.until(/succeeded/);
    // Its end is being written now, into a pipe that is full.
    await Bun.sleep(300);
    run.kill("SIGINT");
    await Bun.sleep(STOP_SIGNAL_ECHO_MS + 100);
    run.kill("SIGINT");
  });
  expect(ended).toBe(1);
  expect(stderr).toContain("stopping now");
  // Given up by the signal, not by the reader's 10 s of silence.
  expect(stderr).toContain("could not write stdout: a second stop signal came while its reader took nothing");
  expect(stderr).not.toContain("took nothing for 10 s");
}, READER_STALL_MS + 40_000);
