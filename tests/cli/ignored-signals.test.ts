// A command started with SIGINT ignored (a script's `docket run … &`, which the shell starts so)
// keeps it ignored when its stdout is a pipe, as it does writing to a file: the handler that puts
// blocking pipes back at a signal listened to SIGINT anyway, and ended the run mid-handler with
// exit 130 and no document (checking tester).
import { afterAll, expect, test } from "bun:test";
import { cleanEnv, fromSource, oneJsonDocument, removeTempDirs, tempCheckout, watchStream } from "./_harness.ts";

afterAll(removeTempDirs);

test.skipIf(process.platform !== "linux")("docket run started with SIGINT ignored, its stdout a pipe, runs on through a SIGINT to its end and its document", async () => {
  const checkout = tempCheckout();
  const argv = [...fromSource.argv(), "run", "executions.demonstrate", "--format", "json", "--input", JSON.stringify({ steps: 6, delay_ms: 150 })];
  const run = Bun.spawn(["sh", "-c", 'trap "" INT; exec "$@"', "sh", ...argv], { cwd: checkout, env: cleanEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const stdout = new Response(run.stdout).text();
  await watchStream(run.stderr).until(/step-2|\[2\/6\]|step 2/);
  run.kill("SIGINT");
  expect(await run.exited).toBe(0);
  expect(oneJsonDocument(await stdout)).toMatchObject({ execution: { state: "succeeded" } });
}, 60_000);
