// `docket run` end to end, written once and run against the source entry and the compiled binary.
import { beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ECHO, SHOUT, SPLIT, GREET, IGNORES_TERM, LOOSE, NESTED, SLEEPS, SLOW_LOAD, SPIN, DEFAULTED_SECRET, DEFAULTED_ONLY, STUBBORN_SLEEPS, THROWING_SCHEMA, NOT_JSON_TRANSFORMS } from "./_fixtures.ts";
import { obeyedCommands } from "../_support/workflow-commands.ts";
import { STOP_SIGNAL_ECHO_MS } from "../../runtime/adapter/stop-signals.ts";
import { docket, oneJsonDocument, spawnDocket, watchStream, tempCheckout, tempDir, writeFiles, type DocketRunner } from "./_harness.ts";

/** Registers the run cases; `runner` is read when each test runs (the binary is built in a beforeAll). */
export function defineRunCases(runner: () => DocketRunner): void {
  // The user's capability files live outside the checkout and the repository, with no node_modules
  // anywhere above them: "docket" and "valibot" can only come from docket itself.
  let userDir = "";
  let checkout = "";
  beforeAll(() => {
    userDir = tempDir("user");
    writeFiles(userDir, { "demo.greet.ts": GREET, "demo.echo.ts": ECHO, "demo.shout.ts": SHOUT, "demo.split.ts": SPLIT, "demo.spin.ts": SPIN, "demo.sleeps.ts": SLEEPS, "demo.stubborn.ts": STUBBORN_SLEEPS, "demo.ignores.ts": IGNORES_TERM, "demo.loose.ts": LOOSE, "demo.nested.ts": NESTED, "demo.throwing.ts": THROWING_SCHEMA, "demo.notjson.ts": NOT_JSON_TRANSFORMS, "demo.slowload.ts": SLOW_LOAD, "demo.envdef.ts": DEFAULTED_SECRET, "demo.defonly.ts": DEFAULTED_ONLY, "input.json": '{"message":"from a file"}' });
    checkout = tempCheckout();
  });
  const run = (args: string[], options: { env?: Record<string, string>; stdin?: string } = {}) => docket(runner(), ["run", ...args], { cwd: checkout, ...options });
  const file = (name: string) => join(userDir, name);

  test("docket run of a user file prints its output on stdout and its progress on stderr, exit 0", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"Ada"}']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ greeting: "Hello, Ada!" });
    expect(result.stderr).toMatch(/^\d\d:\d\d:\d\d ▸ step compose — Composing the greeting$/m);
    expect(result.stderr).toMatch(/^\d\d:\d\d:\d\d \[1\/2\] half way$/m);
    expect(result.stderr).toMatch(/^\d\d:\d\d:\d\d warn +about to greet$/m);
    expect(result.stderr).toMatch(/^\d\d:\d\d:\d\d error src\/a,b\.ts:3:7 a finding, with a comma: and 100% \[demo_finding\]$/m);
    expect(result.stderr).toMatch(/✔ succeeded in /);
    // No server serves this temporary checkout: said once, on stderr (docs/protocol.md).
    expect(result.stderr.match(/no server serves this checkout, so this execution is visible to this process alone/g)).toHaveLength(1);
  });

  test("docket run of a CapabilityError exits 1 with its code, message and suggestion on stderr", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"typed"}']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("error no_such_person: Nobody is called typed.");
    expect(result.stderr).toContain("Greet Ada instead.");
    expect(result.stderr).toMatch(/correlation id c-[0-9a-f]+/);
  });

  test("docket run of a handler that throws exits 1 with internal and a correlation id; the stack stays on stderr", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"boom"}', "--format", "json"]);
    expect(result.code).toBe(1);
    const document = oneJsonDocument(result.stdout);
    expect(document.failure.error_code).toBe("internal");
    expect(document.failure.correlation_id).toMatch(/^c-[0-9a-f]+$/);
    expect(document.execution.state).toBe("failed");
    expect(result.stdout).not.toMatch(/\n\s+at /);
    expect(result.stdout).not.toContain("worker-entry");
    // The process log on stderr holds the stack, findable by the correlation id.
    expect(result.stderr).toContain(document.failure.correlation_id);
    expect(result.stderr).toMatch(/kaboom from the handler\n\s+at /);
  });

  test("docket run of a capability whose output check throws fails internal and exits 1, quoting nothing; one whose input transform throws is refused, exit 2", async () => {
    // Before, the exception escaped the check: the execution stayed running and the run spun at 100 % CPU for ever.
    const failed = await run([file("demo.throwing.ts"), "--input", '{"link":"not a url /home/me/.ssh/id_rsa"}', "--format", "json"]);
    expect(failed.code).toBe(1);
    const document = oneJsonDocument(failed.stdout);
    expect(document.execution.state).toBe("failed");
    expect(document.failure).toMatchObject({ error_code: "internal", stage: "complete" });
    expect(document.failure.message).toContain("one of its checks or transforms threw TypeError");
    // The input is in the snapshot as given (it is no secret); no failure text quotes it.
    expect(JSON.stringify(document.failure)).not.toContain("id_rsa");
    expect(failed.stderr).not.toContain("id_rsa");
    const refused = await run([file("demo.throwing.ts"), "--input", '{"link":"https://x","cfg":"hunter2TRANSFORMsecret"}']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("error invalid_input:");
    expect(refused.stderr).toContain("threw SyntaxError");
    expect(refused.stdout + refused.stderr).not.toContain("hunter2TRANSFORMsecret");
  }, 30_000);

  test("docket run of a capability whose schema transforms make what JSON cannot hold: an input refused (exit 2), an output failed internal (exit 1), never docket's own crash", async () => {
    // A BigInt, one made through v.lazy, and a Promise (an async transform) alike.
    for (const input of ['{"big":"xyz","mode":"m"}', '{"lazyBig":"xyz","mode":"m"}', '{"later":"xyz","mode":"m"}']) {
      const refused = await run([file("demo.notjson.ts"), "--input", input]);
      expect(`${input}: ${refused.code}`).toBe(`${input}: 2`);
      // Where, and what it became (a type: never the value).
      expect(refused.stderr).toMatch(/a transform of its input schema made input\.(big a BigInt|lazyBig a BigInt|later a Promise)/);
      expect(refused.stderr).not.toContain("unexpected error");
    }
    // A cycle, a Promise (an async transform), a Map and an Infinity alike: JSON would have stored `{}` or null for the last three.
    for (const mode of ["cycle", "promise", "map", "infinite"]) {
      const failed = await run([file("demo.notjson.ts"), "--input", JSON.stringify({ mode }), "--format", "json"]);
      expect(`${mode}: ${failed.code}`).toBe(`${mode}: 1`);
      expect(oneJsonDocument(failed.stdout).failure).toMatchObject({ error_code: "internal", stage: "complete" });
      expect(failed.stderr).toContain("a transform of its output schema");
      expect(failed.stderr).not.toContain("unexpected error");
    }
    // What says how JSON writes it (a Date) is plain enough.
    const plain = await run([file("demo.notjson.ts"), "--input", '{"mode":"plain"}', "--format", "json"]);
    expect(plain.code).toBe(0);
    expect(oneJsonDocument(plain.stdout).output).toEqual({ a: "plain", at: "1970-01-01T00:00:00.000Z" });
  }, 30_000);

  test("docket run of a handler returning the wrong output shape exits 1", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"shape"}']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/error internal: demo\.greet returned an output that does not match its output schema: output\.greeting/);
  });

  test("docket run with input failing the schema exits 2 and names the field", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":5}']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Cannot start demo.greet: input.name");
  });

  test("docket run of an unknown capability exits 2 and says how to list them", async () => {
    const result = await run(["no.such", "--format", "json"]);
    expect(result.code).toBe(2);
    const document = oneJsonDocument(result.stdout);
    expect(document).toMatchObject({ execution: null, failure: { error_code: "not_found" } });
    expect(result.stderr).toContain('No capability "no.such" is loaded.');
    expect(result.stderr).toContain("docket capabilities list");
  });

  test("docket run with --input that is not JSON exits 2 and names the problem", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":tenSECRETten}']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--input is not valid JSON");
    // Where, never what: the text may hold a secret.
    expect(result.stderr).toContain("at line 1, column 10");
    expect(result.stderr).not.toContain("SECRET");
  });

  test("docket run --format json writes exactly one JSON document with the final snapshot and the output", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"Ada"}', "--format", "json"]);
    expect(result.code).toBe(0);
    const document = oneJsonDocument(result.stdout);
    expect(Object.keys(document).sort()).toEqual(["execution", "output"]);
    expect(document.output).toEqual({ greeting: "Hello, Ada!" });
    expect(document.execution).toMatchObject({ capability: "demo.greet", state: "succeeded", actor: { kind: "cli" }, repository: checkout });
    expect(document.execution.id).toMatch(/^x-\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    expect(document.execution.request_id).toMatch(/^r-/);
    expect(document.execution.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  test("docket run --input @file reads the file, and a string output is printed as it is", async () => {
    const result = await run([file("demo.echo.ts"), "--input", `@${file("input.json")}`]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("from a file\n");
  });

  test("docket run --input - reads stdin", async () => {
    const result = await run([file("demo.echo.ts"), "--input", "-"], { stdin: '{"message":"from stdin"}' });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("from stdin\n");
  });

  test("docket run refuses an --input larger than input_bytes, read no further than the limit: an endless file, and stdin", async () => {
    const env = { DOCKET_INPUT_BYTES: "1024" };
    const endless = await run([file("demo.echo.ts"), "--input", "@/dev/zero"], { env });
    expect(endless.code).toBe(2);
    expect(endless.stderr).toContain("--input @/dev/zero is larger than the input limit of 1 KiB (input_bytes, 1024 bytes); it was not read past that. Give a smaller input, or raise the limit with DOCKET_INPUT_BYTES");
    const piped = await run([file("demo.echo.ts"), "--input", "-"], { env, stdin: JSON.stringify({ message: "x".repeat(2000) }) });
    expect(piped.code).toBe(2);
    expect(piped.stderr).toContain("--input - (stdin) is larger than the input limit of 1 KiB");
  });

  test("docket run --input @missing exits 2 naming the file", async () => {
    const result = await run([file("demo.echo.ts"), "--input", "@nowhere.json"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Cannot read --input @nowhere.json: the file does not exist");
  });

  test("docket run --run-id carries the run id into the execution", async () => {
    const result = await run([file("demo.echo.ts"), "--input", '{"message":"x"}', "--run-id", "release-42", "--format", "json"]);
    expect(result.code).toBe(0);
    expect(oneJsonDocument(result.stdout).execution.run_id).toBe("release-42");
  });

  test("docket run --input-env to a field the capability's input does not have exits 2 naming it, and runs nothing (it ran without the value)", async () => {
    const result = await run([file("demo.echo.ts"), "--input-env", "mesage=ECHO_TEXT", "--format", "json"], { env: { ECHO_TEXT: "from the environment" } });
    expect(result.code).toBe(2);
    expect(oneJsonDocument(result.stdout).failure.message).toContain('--input-env mesage: the input has no field "mesage" (did you mean "message"?)');
    expect(result.stdout).not.toContain("from the environment");
    // Its variable not set either: the field is the mistake said first (fixing the variable alone would not do).
    const unset = await run([file("demo.echo.ts"), "--input-env", "mesage=NOT_SET_FOR_DOCKET", "--format", "json"]);
    expect(unset.code).toBe(2);
    const refused = oneJsonDocument(unset.stdout).failure;
    expect(refused.message).toContain('--input-env mesage: the input has no field "mesage" (did you mean "message"?)');
    expect(refused.suggestion).toContain("Correct --input-env as the message says");
    const unsetRight = await run([file("demo.echo.ts"), "--input-env", "message=NOT_SET_FOR_DOCKET", "--format", "json"]);
    expect(unsetRight.code).toBe(2);
    expect(oneJsonDocument(unsetRight.stdout).failure.message).toContain("the environment variable NOT_SET_FOR_DOCKET is not set");
    const right = await run([file("demo.echo.ts"), "--input-env", "message=ECHO_TEXT", "--format", "json"], { env: { ECHO_TEXT: "from the environment" } });
    expect(right.code).toBe(0);
    // An input that keeps fields it does not name (a looseObject) takes any: its check keeps the value.
    const loose = await run([file("demo.loose.ts"), "--input-env", "extra=ECHO_TEXT", "--format", "json"], { env: { ECHO_TEXT: "kept" } });
    expect(loose.code).toBe(0);
    expect(oneJsonDocument(loose.stdout).output).toEqual({ keys: ["extra"] });
  });

  test("docket run says which --input fields the capability's input does not have (its check drops them), with the one meant", async () => {
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"Ada","nmae":"x"}']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('note: demo.greet has no input field "nmae" (did you mean "name"?); it was ignored');
    expect((await run([file("demo.greet.ts"), "--input", '{"name":"Ada"}'])).stderr).not.toContain("has no input field");
    // Inside a nested object too, by its dotted path.
    const nested = await run([file("demo.nested.ts"), "--input", '{"auth":{"token":"t","tokn":"x"}}']);
    expect(nested.code).toBe(0);
    expect(nested.stderr).toContain('note: demo.nested has no input field "auth.tokn" (did you mean "token"?); it was ignored');
    // A secret kept whole is stored redacted whole: nothing of it was dropped, and no note says so.
    writeFiles(userDir, {
      "demo.secretobj.ts": 'import { capability, sensitive } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "demo.secretobj", title: "S", description: "S.", effect: "read", input: v.object({ auth: sensitive(v.object({ token: v.string(), extra: v.optional(v.string()) })) }), output: v.object({ ok: v.boolean() }), handler: () => ({ ok: true }) });\n',
    });
    const secret = await run([file("demo.secretobj.ts"), "--input", '{"auth":{"token":"abcdefgh","extra":"zzzzzzzz"}}']);
    expect({ code: secret.code, noted: secret.stderr.includes("has no input field") }).toEqual({ code: 0, noted: false });
  });

  test("docket run --run-id of a bad shape exits 2", async () => {
    const result = await run([file("demo.echo.ts"), "--input", '{"message":"x"}', "--run-id", "no spaces allowed"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("run_id must match");
  });

  test("docket run --deadline-ms stops a handler that ignores cancellation: failed deadline_exceeded", async () => {
    // Long enough for the handler to begin on a busy machine: one not begun by its deadline never runs (stage queue).
    const result = await run([file("demo.spin.ts"), "--input", '{"cooperative":false}', "--deadline-ms", "500", "--format", "json"], { env: { DOCKET_GRACE_MS: "50" } });
    expect(result.code).toBe(1);
    const document = oneJsonDocument(result.stdout);
    expect(document.execution.state).toBe("failed");
    expect(document.failure).toMatchObject({ error_code: "deadline_exceeded", stage: "run", context: { deadline_ms: 500, terminated: true } });
    // The deadline's passing is a line of the run's log, as a cancel asked is (lifecycle tester, session 42).
    expect(result.stderr).toContain("deadline_ms passed: the handler is asked to stop");
  });

  test("docket run --deadline-ms that is not a number of milliseconds from 1 exits 2, saying how to give the flag (not \"correct the input\")", async () => {
    for (const given of ["soon", "-1", "0"]) {
      const result = await run([file("demo.spin.ts"), "--deadline-ms", given]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`--deadline-ms must be a whole number of milliseconds from 1 to 2147483647 (about 24.8 days), got ${JSON.stringify(given)}`);
      expect(result.stderr).toContain("Give --deadline-ms the milliseconds the run may take, like --deadline-ms 60000");
      expect(result.stderr).not.toContain("Correct the input");
    }
  });

  // SIGTERM names a second SIGTERM, not a Ctrl-C nobody pressed (authoring tester, session 41).
  for (const [signal, said] of [["SIGINT", "cancelling… press Ctrl-C again to stop now"], ["SIGTERM", "cancelling… a second SIGTERM stops it now"]] as const) {
    test(`docket run exits 130 when ${signal === "SIGINT" ? "Ctrl-C" : signal} cancels a cancellable run, and says what stops it at once`, async () => {
      const child = spawnDocket(runner(), ["run", file("demo.spin.ts")], { cwd: checkout });
      const stderr = watchStream(child.stderr);
      await stderr.until(/step spin — Spinning/);
      child.kill(signal);
      expect(await child.exited).toBe(130);
      const text = await stderr.done;
      expect(text).toContain(said);
      expect(text).toMatch(/■ cancelled in /);
      if (signal === "SIGTERM") expect(text).not.toContain("Ctrl-C");
    });
  }

  /**
   * Lets the echo window of the last press pass: a press within it is taken as the same request
   * arriving twice (adapter/stop-signals.ts), and a person's second press always comes later.
   */
  const pastEcho = () => Bun.sleep(STOP_SIGNAL_ECHO_MS + 50);

  test("docket run: a Ctrl-C that arrives twice (to the group, and passed on by a parent) asks once", async () => {
    // A grace long enough that only a second press can stop the handler, which ignores the first.
    const child = spawnDocket(runner(), ["run", file("demo.spin.ts"), "--input", '{"cooperative":false}'], { cwd: checkout, env: { DOCKET_GRACE_MS: "60000" } });
    const stderr = watchStream(child.stderr);
    await stderr.until(/step spin — Spinning/);
    child.kill("SIGINT");
    await stderr.until(/press Ctrl-C again/);
    // The echo, a moment after docket handled the first (sent together, the kernel would merge them).
    child.kill("SIGINT");
    await pastEcho();
    // Had the echo counted as a second press, docket would be stopping the handler by now.
    expect(await stderr.until(/press Ctrl-C again/)).not.toContain("stopping now");
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    const text = await stderr.done;
    expect(text.match(/press Ctrl-C again/g)).toHaveLength(1);
    expect(text.match(/stopping now/g)).toHaveLength(1);
  });

  test("docket run: a second Ctrl-C stops a handler that ignores the first, exit 130", async () => {
    const child = spawnDocket(runner(), ["run", file("demo.spin.ts"), "--input", '{"cooperative":false}'], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    await stderr.until(/step spin — Spinning/);
    child.kill("SIGINT");
    await stderr.until(/press Ctrl-C again/);
    await pastEcho();
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    expect(await stderr.done).toContain("stopping now");
  });

  /**
   * `docket run` of a fixture whose ctx.exec child is `sleep <seconds>` (a duration no other test
   * uses, to find that child among the machine's processes), once the child runs.
   */
  const runSleeping = async (fixture: string, seconds: string, env: Record<string, string> = {}) => {
    const sleeping = () => Bun.spawnSync(["pgrep", "-f", `sleep ${seconds}`]).stdout.toString().trim() !== "";
    const child = spawnDocket(runner(), ["run", file(fixture), "--input", JSON.stringify({ seconds })], { cwd: checkout, env });
    const stderr = watchStream(child.stderr);
    await stderr.until(/step sleep — Sleeping/);
    for (let i = 0; i < 100 && !sleeping(); i++) await Bun.sleep(20);
    expect(sleeping()).toBe(true);
    return { child, stderr, sleeping };
  };

  test("docket run: a second Ctrl-C ends the stopped handler's ctx.exec child too, before the process exits", async () => {
    const { child, stderr, sleeping } = await runSleeping("demo.stubborn.ts", `43.${process.pid}`);
    child.kill("SIGINT");
    await stderr.until(/press Ctrl-C again/);
    await pastEcho();
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    expect(await stderr.done).toContain("stopping now");
    // Ended before the process left (a moment for the kernel to take a killed child off the list).
    for (let i = 0; i < 10 && sleeping(); i++) await Bun.sleep(20);
    expect(sleeping()).toBe(false);
  });

  test("docket run: a third Ctrl-C while it waits for a child that ignores TERM kills the child and leaves, exit 130", async () => {
    // A grace long enough that only the third press can end the wait within the test.
    const { child, stderr, sleeping } = await runSleeping("demo.ignores.ts", `44.${process.pid}`, { DOCKET_GRACE_MS: "60000" });
    child.kill("SIGINT");
    await stderr.until(/press Ctrl-C again/);
    await pastEcho();
    child.kill("SIGINT");
    await stderr.until(/cancelled in /);
    await pastEcho();
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    for (let i = 0; i < 25 && sleeping(); i++) await Bun.sleep(20);
    expect(sleeping()).toBe(false);
  });

  // Linux only: elsewhere docket cannot tell whether it was started under nohup, and leaves hang-ups alone (stop-signals.ts).
  test.skipIf(process.platform !== "linux")("docket run stops on a hang-up (its terminal went away) as on Ctrl-C: its child is ended, its result written, exit 130", async () => {
    // A duration no other test uses, to find this child among the machine's processes.
    const seconds = `41.${process.pid}`;
    const resultFile = join(tempDir("hang-up"), "result.json");
    const child = spawnDocket(runner(), ["run", file("demo.sleeps.ts"), "--input", JSON.stringify({ seconds }), "--result-file", resultFile], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    await stderr.until(/step sleep — Sleeping/);
    const sleeping = () => Bun.spawnSync(["pgrep", "-f", `sleep ${seconds}`]).stdout.toString().trim() !== "";
    for (let i = 0; i < 100 && !sleeping(); i++) await Bun.sleep(20);
    expect(sleeping()).toBe(true);
    child.kill("SIGHUP");
    expect(await child.exited).toBe(130);
    expect(JSON.parse(readFileSync(resultFile, "utf8")).execution.state).toBe("cancelled");
    for (let i = 0; i < 100 && sleeping(); i++) await Bun.sleep(20);
    expect(sleeping()).toBe(false);
  });

  test("docket run stopped by Ctrl-C before its execution exists (its file still loading) exits 130 with its one JSON document, result file and step outputs: nothing ran", async () => {
    const dir = tempDir("early-stop");
    const [resultFile, outputs] = [join(dir, "result.json"), join(dir, "outputs.txt")];
    const mark = join(dir, "loading.mark");
    const child = spawnDocket(runner(), ["run", file("demo.slowload.ts"), "--input", '{"message":"m"}', "--format", "json", "--result-file", resultFile], { cwd: checkout, env: { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: outputs, LOADING_MARK: mark } });
    const stdout = watchStream(child.stdout);
    for (let i = 0; i < 500 && !existsSync(mark); i++) await Bun.sleep(20);
    expect(existsSync(mark)).toBe(true);
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    const document = oneJsonDocument(await stdout.done);
    expect(document).toMatchObject({ execution: null, failure: { error_code: "cancelled", stage: "admit", outcome_certainty: "not_applied" } });
    expect(document.failure.message).toContain("stopped before");
    expect(JSON.parse(readFileSync(resultFile, "utf8"))).toEqual(document);
    expect(readFileSync(outputs, "utf8")).toMatch(/^state<<(ghadelimiter_[0-9a-f-]+)\ncancelled\n\1$/m);
  }, 30_000);

  test("docket run in GitHub Actions writes groups, annotations and a step summary", async () => {
    const summary = join(tempDir("summary"), "summary.md");
    const result = await run([file("demo.greet.ts"), "--input", '{"name":"typed"}'], { env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("::group::Composing the greeting (compose)");
    expect(result.stderr).toContain("::endgroup::");
    // `,` and `:` escaped in properties, `%` in the message (GitHub's workflow-command rules).
    expect(result.stderr).toContain("::error file=src/a%2Cb.ts,line=3,col=7,title=demo_finding::a finding, with a comma: and 100%25");
    expect(existsSync(summary)).toBe(true);
    const markdown = readFileSync(summary, "utf8");
    expect(markdown).toContain("docket run `demo.greet` — failed");
    expect(markdown).toContain("| error | src/a,b.ts:3:7 | a finding, with a comma: and 100% | demo_finding |");
    expect(markdown).toContain("**no_such_person**: Nobody is called typed.");
  });

  test("docket run in GitHub Actions prints an output, a failure or a stack holding workflow commands as it is, and the runner obeys none of them", async () => {
    const forged = "line1\n::error title=forged::from the output\n  ##[error]the older form\r::stop-commands::tok\nafter";
    const input = JSON.stringify({ message: forged });
    const env = { GITHUB_ACTIONS: "true" };
    const echoed = await run([file("demo.echo.ts"), "--input", input], { env });
    expect(echoed.code).toBe(0);
    expect(echoed.stdout).toContain(`\n${forged}\n`);
    expect(obeyedCommands(echoed.stdout)).toEqual([]);
    // Outside GitHub Actions the output is printed as it is, and so is JSON (no line of it can start a command).
    expect((await run([file("demo.echo.ts"), "--input", input])).stdout).toBe(`${forged}\n`);
    expect(oneJsonDocument((await run([file("demo.echo.ts"), "--input", input, "--format", "json"], { env })).stdout).output).toBe(forged);
    const thrown = await run([file("demo.greet.ts"), "--input", '{"name":"forge"}'], { env });
    expect(thrown.code).toBe(1);
    expect(thrown.stderr).toContain("kaboom\n::error title=forged::from a stack\n");
    // docket's own commands still work.
    expect(obeyedCommands(thrown.stderr)).toEqual(["::group::Composing the greeting (compose)", "::error file=src/a%2Cb.ts,line=3,col=7,title=demo_finding::a finding, with a comma: and 100%25", "::endgroup::"]);
  });

  test("docket run masks and announces with ::add-mask:: a secret its input defaulted to and a transform moved (tester: s.envdef)", async () => {
    const token = "ghp_ENVTOKEN_abcdef123";
    const result = await run([file("demo.envdef.ts"), "--input", '{"repo":"x/y"}', "--format", "json"], { env: { GITHUB_ACTIONS: "true", MY_API_TOKEN: token } });
    expect(result.code).toBe(0);
    expect(result.stderr.startsWith(`::add-mask::${token}\n`)).toBe(true);
    expect(result.stderr).toContain('calling with {"authorization":"[redacted]"}');
    expect(result.stderr.replace(`::add-mask::${token}\n`, "")).not.toContain(token);
    expect(oneJsonDocument(result.stdout).output).toEqual({ sent: "[redacted]" });
  });

  test.skipIf(process.platform !== "linux")("step outputs that cannot be written fail a run that succeeded, as a result file does: a later step would read an empty state (CLI tester)", async () => {
    const result = await run([file("demo.echo.ts"), "--input", '{"message":"hi"}'], { env: { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: "/dev/full" } });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("hi\n");
    expect(result.stderr).toContain("docket: cannot write the step outputs to /dev/full: ENOSPC");
    // A pipe nobody reads held the run past its end for good (checking tester): refused at once.
    const fifo = join(tempDir("fifo"), "outputs");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const piped = await run([file("demo.echo.ts"), "--input", '{"message":"hi"}'], { env: { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: fifo, GITHUB_STEP_SUMMARY: fifo } });
    expect(piped.code).toBe(1);
    expect(piped.stderr).toContain(`docket: cannot write the step outputs to ${fifo}: ${fifo} is a pipe, not a file`);
    expect(piped.stderr).toContain(`warning: cannot write the step summary to ${fifo}`);
  });

  test("a value --input-env gives a field the capability does not mark sensitive is announced with ::add-mask:: in GitHub Actions, and the run says docket itself does not mask it (CLI tester)", async () => {
    const value = "Zq9-topsecret-env";
    const env = { GITHUB_ACTIONS: "true", ECHO_THIS: value };
    const result = await run([file("demo.echo.ts"), "--input-env", "message=ECHO_THIS"], { env });
    expect(result.code).toBe(0);
    expect(result.stderr.startsWith(`::add-mask::${value}\n`)).toBe(true);
    expect(result.stderr).toContain("note: --input-env fills message, which demo.echo does not mark sensitive(): its value is printed and stored like any other field (this job's log masks it)");
    expect(result.stdout).toContain(value);
    // A sensitive field's value is docket's own to mask: announced once, no note.
    const masked = await run([file("demo.defonly.ts"), "--input-env", "token=ECHO_THIS"], { env });
    expect(masked.code).toBe(0);
    expect(masked.stderr.startsWith(`::add-mask::${value}\n`)).toBe(true);
    expect(masked.stderr.split(`::add-mask::${value}`)).toHaveLength(2);
    expect(masked.stderr).not.toContain("note: --input-env");
    // The form the schema hands on (trimmed, upper-cased) is the one printed: announced too.
    const shouted = await run([file("demo.shout.ts"), "--input-env", "message=ECHO_THIS"], { env: { ...env, ECHO_THIS: `  ${value}\n` } });
    expect(shouted.code).toBe(0);
    expect(shouted.stdout).toBe(`${value.toUpperCase()}\n`);
    expect(shouted.stderr).toContain(`::add-mask::${value.toUpperCase()}\n`);
    expect(shouted.stderr).toContain("(this job's log masks it)");
    // Made into a list, each of its texts is printed (checking tester).
    const split = await run([file("demo.split.ts"), "--input-env", "message=ECHO_THIS"], { env: { ...env, ECHO_THIS: "firstsecret,secondsecret" } });
    expect(split.code).toBe(0);
    expect(split.stdout).toBe('["firstsecret","secondsecret"]\n');
    expect(split.stderr).toContain("::add-mask::firstsecret\n");
    expect(split.stderr).toContain("::add-mask::secondsecret\n");
  });

  test("docket run with no --input announces with ::add-mask:: a secret its schema defaults to, before anything else (tester, session 33)", async () => {
    const result = await run([file("demo.defonly.ts")], { env: { GITHUB_ACTIONS: "true" } });
    expect(result.code).toBe(0);
    expect(result.stderr.startsWith("::add-mask::s3cr3t-default-9f2\n")).toBe(true);
    // Written straight to fd 2, past every mask of docket's: only the runner's mask, announced first, blanks it.
    expect(result.stderr).toContain("RAW:s3cr3t-default-9f2");
  });

  test("docket run by id loads only that id's file: a broken file and one whose top level never finishes elsewhere neither stop nor slow it; a built-in (capabilities.verify) and an unknown id load every file", async () => {
    const repo = tempCheckout();
    writeFiles(repo, { "capabilities/demo.echo.ts": ECHO, "capabilities/broken.one.ts": "export default 5;\n", "capabilities/hangs.forever.ts": "await new Promise(() => {});\n" });
    // A minute to load each file: a run that waited for the hanging one would pass the test's own timeout.
    const env = { DOCKET_LOAD_TIMEOUT_MS: "60000" };
    const result = await docket(runner(), ["run", "demo.echo", "--input", '{"message":"by id"}'], { cwd: join(repo), env });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("by id\n");
    expect(result.stderr).not.toContain("broken.one.ts");
    expect(result.stderr).not.toContain("hangs.forever.ts");
    // By path, the same.
    expect((await docket(runner(), ["run", "./capabilities/demo.echo.ts", "--input", '{"message":"by path"}'], { cwd: join(repo), env })).stdout).toBe("by path\n");
    // A built-in loads every file (capabilities.verify checks them all, in CI), and so does an id
    // no file is named after, to say what exists and what did not load.
    writeFiles(repo, { "capabilities/hangs.forever.ts": "export default 6;\n" });
    const verify = await docket(runner(), ["run", "capabilities.verify"], { cwd: join(repo) });
    expect(verify.code).toBe(1);
    expect(verify.stderr).toContain("broken.one.ts");
    // Once, as verify's own error: not also as the run's "did not load" warning (in CI, two annotations each).
    expect(verify.stderr).not.toContain("did not load (the run goes on");
    const inCi = await docket(runner(), ["run", "capabilities.verify"], { cwd: join(repo), env: { GITHUB_ACTIONS: "true", CI: "true" } });
    expect(inCi.stderr.split("\n").filter((line) => line.startsWith("::") && line.includes("broken.one.ts"))).toHaveLength(1);
    // A built-in that reads nothing of the checkout loads none of it: the hanging file would hold
    // it for a minute (DOCKET_LOAD_TIMEOUT_MS), and the broken one is no note of its run.
    writeFiles(repo, { "capabilities/hangs.forever.ts": "await new Promise(() => {});\n" });
    const demo = await docket(runner(), ["run", "executions.demonstrate", "--input", '{"steps":1,"delay_ms":0}'], { cwd: join(repo), env });
    expect(demo.code).toBe(0);
    expect(demo.stderr).not.toContain("broken.one.ts");
    expect(demo.stderr).not.toContain("hangs.forever.ts");
    writeFiles(repo, { "capabilities/hangs.forever.ts": "export default 6;\n" });
    const unknown = await docket(runner(), ["run", "demo.ech"], { cwd: join(repo) });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("demo.echo");
    expect(unknown.stderr).toContain("broken.one.ts");
  }, 30_000);

  test("docket run prints no escape a handler's failure holds (its message, suggestion, the stack on stderr), a window title included (tester, session 33)", async () => {
    const repo = tempCheckout();
    writeFiles(repo, {
      "capabilities/team.escapes.ts": `import { capability, CapabilityError } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.escapes", title: "Escapes", description: "Fails with escapes.", effect: "read",
  input: v.object({ plain: v.boolean() }), output: v.object({}),
  handler(input) {
    if (input.plain) throw new Error("plainerr \\u001b[31mred\\u001b]0;TITLE\\u0007");
    throw new CapabilityError("boom", "cap \\u001b[31mred\\u001b]0;TITLE\\u0007", { suggestion: "sugg \\u001b[32mgreen" });
  },
});
`,
    });
    for (const plain of [true, false]) {
      const result = await docket(runner(), ["run", "team.escapes", "--input", JSON.stringify({ plain })], { cwd: join(repo), env: { NO_COLOR: "1" } });
      expect(result.code).toBe(1);
      expect(result.stderr).not.toContain("\u001b");
      expect(result.stderr).not.toContain("\u0007");
      expect(result.stderr).toContain(plain ? "plainerr red" : "error boom: cap red");
    }
  }, 30_000);

  test("docket run capabilities.verify --capabilities DIR checks DIR too, as the CI step for that folder (tester, session 33)", async () => {
    const repo = tempCheckout();
    writeFiles(repo, { "capabilities/demo.echo.ts": ECHO, "checks/broken.syntax.ts": "export default {\n", "checks/demo.greet.ts": GREET });
    const verify = await docket(runner(), ["run", "capabilities.verify", "--capabilities", "checks", "--format", "json"], { cwd: join(repo) });
    expect(verify.code).toBe(1);
    const document = oneJsonDocument(verify.stdout);
    expect(document.failure.error_code).toBe("verification_failed");
    expect(verify.stderr).toContain("checks/broken.syntax.ts");
    // Without the folder named, it is not this process's, and verify checks capabilities/ alone.
    expect((await docket(runner(), ["run", "capabilities.verify"], { cwd: join(repo) })).code).toBe(0);
  }, 30_000);

  test("docket run --capabilities DIR (repeatable) runs capabilities by id from folders outside the checkout", async () => {
    const [first, second] = [tempDir("first"), tempDir("second")];
    writeFiles(first, { "demo.echo.ts": ECHO });
    writeFiles(second, { "demo.greet.ts": GREET });
    const flags = ["--capabilities", first, `--capabilities=${second}`];
    const echoed = await run(["demo.echo", ...flags, "--input", '{"message":"from the first"}']);
    expect(echoed).toMatchObject({ code: 0, stdout: "from the first\n" });
    const greeted = await run(["demo.greet", ...flags, "--input", '{"name":"Ada"}']);
    expect(greeted.code).toBe(0);
    expect(JSON.parse(greeted.stdout)).toEqual({ greeting: "Hello, Ada!" });
    const missing = await run(["demo.echo", "--capabilities", join(first, "nowhere")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("is not a folder");
    // A capability found elsewhere (a built-in) does not make the mistyped folder pass unseen (hostile tester, session 39).
    const builtin = await run(["health.report", "--capabilities", join(first, "nowhere")]);
    expect(builtin.code).toBe(2);
    expect(builtin.stderr).toContain(`--capabilities ${join(first, "nowhere")} is not a folder`);
  });

  test("docket run reads neither the checkout's .env nor its bunfig.toml (a preload), from source as from the binary (tester A)", async () => {
    const team = tempCheckout();
    writeFiles(team, {
      ".env": "TEAM_ENV=dotenv\n",
      "bunfig.toml": 'preload = ["./preload.ts"]\n',
      "preload.ts": 'await Bun.write(new URL("./preloaded", import.meta.url), "the checkout\'s preload ran");\n',
      "capabilities/team.env.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "team.env", title: "Env", description: "Says what it sees.", effect: "read", input: v.object({}), output: v.object({ env: v.string() }), handler: () => ({ env: process.env.TEAM_ENV ?? "none" }) });\n',
    });
    const result = await docket(runner(), ["run", "team.env"], { cwd: team });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ env: "none" });
    expect(existsSync(join(team, "preloaded"))).toBe(false);
  });

  test("docket run of a file that does not load exits 2 with its line and reason", async () => {
    const dir = tempDir("broken");
    writeFiles(dir, { "demo.bad.ts": 'import { capability } from "docket";\nexport default capability({ id: "demo.bad",, });\n' });
    const result = await run([join(dir, "demo.bad.ts")]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Cannot run .*demo\.bad\.ts: line 2/);
    // The file is what to correct, not the input.
    expect(result.stderr).toContain("Correct the capability file as the message says");
    expect(result.stderr).not.toContain("Correct the input");
  });
}

