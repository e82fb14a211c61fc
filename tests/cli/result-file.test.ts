// docket run --result-file, and the step outputs a run sets in GitHub Actions (docs/distribution.md).
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseOutputs } from "../distribution/_composite-runner.ts";
import { GREET } from "./_fixtures.ts";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, tempDir, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

function checkout(): string {
  const dir = tempCheckout();
  writeFiles(dir, { "capabilities/demo.greet.ts": GREET });
  return dir;
}

describe("docket run --result-file", () => {
  test("--result-file writes the JSON document while stdout keeps the text output", async () => {
    const cwd = checkout();
    const result = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "out/../result.json"], { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('{\n  "greeting": "Hello, Ada!"\n}\n');
    const document = JSON.parse(readFileSync(join(cwd, "result.json"), "utf8"));
    expect(document.execution.state).toBe("succeeded");
    expect(document.output).toEqual({ greeting: "Hello, Ada!" });
  });

  test("--result-file that is a link, a FIFO or a file of its own mode is written as it is: the link stays a link, the mode stays (tester R1)", async () => {
    const cwd = checkout();
    const target = join(cwd, "target");
    writeFiles(target, { "real.json": "old\n" });
    symlinkSync(join(target, "real.json"), join(cwd, "link.json"));
    writeFileSync(join(cwd, "private.json"), "old\n", { mode: 0o600 });
    chmodSync(join(cwd, "private.json"), 0o600);
    for (const name of ["link.json", "private.json"]) {
      const result = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", name], { cwd });
      expect(`${name}: ${result.code}`).toBe(`${name}: 0`);
    }
    expect(lstatSync(join(cwd, "link.json")).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(join(target, "real.json"), "utf8")).output).toEqual({ greeting: "Hello, Ada!" });
    expect(statSync(join(cwd, "private.json")).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(cwd, "private.json"), "utf8")).execution.state).toBe("succeeded");
    // A FIFO (as /dev/stdout may be) is written through, never replaced by a file.
    const fifo = join(cwd, "result.fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const reading = Bun.spawn(["cat", fifo], { stdout: "pipe" });
    const result = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", fifo], { cwd });
    expect(result.code).toBe(0);
    expect(JSON.parse(await new Response(reading.stdout).text()).execution.state).toBe("succeeded");
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(readdirSync(cwd).filter((entry) => entry.includes("partial"))).toEqual([]);
  });

  test("a FIFO nobody reads yet is written once a reader comes, and waiting for one never holds the run past a SIGTERM (round-2 checking tester, session 48: a blocking open, for good)", async () => {
    const cwd = checkout();
    const late = join(cwd, "late.fifo");
    expect(Bun.spawnSync(["mkfifo", late]).exitCode).toBe(0);
    const run = spawnDocket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", late], { cwd });
    await Bun.sleep(1_500);
    const reading = Bun.spawn(["cat", late], { stdout: "pipe" });
    expect(JSON.parse(await new Response(reading.stdout).text()).execution.state).toBe("succeeded");
    expect(await run.exited).toBe(0);
    // Nobody reads: a SIGTERM ends the wait (the run itself has ended by then).
    const unread = join(cwd, "unread.fifo");
    expect(Bun.spawnSync(["mkfifo", unread]).exitCode).toBe(0);
    const waiting = spawnDocket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", unread], { cwd });
    await Bun.sleep(2_000);
    waiting.kill("SIGTERM");
    const ended = await Promise.race([waiting.exited.then(() => "ended"), Bun.sleep(10_000).then(() => "held")]);
    // Never left behind, whatever the verdict.
    if (waiting.exitCode === null) waiting.kill("SIGKILL");
    expect(ended).toBe("ended");
  }, 30_000);

  test("--result-file in a folder that does not exist is refused with exit 2 before anything runs", async () => {
    const cwd = checkout();
    const result = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "missing/result.json"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--result-file "missing/result.json" cannot be written: its folder ${join(cwd, "missing")} does not exist; make it first, or give a file path in a folder that exists.`);
    expect(result.stderr).not.toContain("demo.greet x-");
    // A folder, and nothing, are said as what they are (MCP/CLI tester, session 48: "/tmp" was told to be in a folder that exists).
    const folder = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "."], { cwd });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain('--result-file "." cannot be written: it names a folder; give a file path, e.g. --result-file result.json.');
    // Under a file, or ending in a separator: refused before anything runs (checking tester, session 48: the write ran, then exit 1).
    writeFileSync(join(cwd, "afile.json"), "{}");
    const underFile = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "afile.json/r.json"], { cwd });
    expect(underFile.code).toBe(2);
    expect(underFile.stderr).toContain(`${join(cwd, "afile.json")} is a file, not a folder; give a file path in a folder that exists.`);
    const slash = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "newdir/"], { cwd });
    expect(slash.code).toBe(2);
    expect(slash.stderr).toContain("it names a folder");
    expect(existsSync(join(cwd, "newdir"))).toBe(false);
    // Round 2: `out/.` and a link to nothing are refused before anything runs.
    const dot = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "out/."], { cwd });
    expect([dot.code, dot.stderr.includes("it names a folder")]).toEqual([2, true]);
    symlinkSync("nowhere/x", join(cwd, "dangling"));
    const dangling = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"Ada"}', "--result-file", "dangling"], { cwd });
    expect([dangling.code, dangling.stderr.includes("it is a symbolic link to nothing")]).toEqual([2, true]);

    const empty = await docket(fromSource, ["run", "demo.greet", "--input", "@", "--result-file", "r.json"], { cwd });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("--input @ names no file: give its path after the @, e.g. --input @input.json, or - to read stdin.");
  });

  test("in GitHub Actions a run sets the outputs execution-id, state and result-file, refusals included", async () => {
    const cwd = checkout();
    const outputs = join(tempDir("gh"), "output");
    writeFileSync(outputs, "");
    const env = { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: outputs };
    const failed = await docket(fromSource, ["run", "demo.greet", "--input", '{"name":"typed"}', "--result-file", "r.json"], { cwd, env });
    expect(failed.code).toBe(1);
    const first = parseOutputs(readFileSync(outputs, "utf8"));
    expect(first).toEqual({ "execution-id": expect.stringMatching(/^x-/), state: "failed", "result-file": join(cwd, "r.json") });
    writeFileSync(outputs, "");
    const refused = await docket(fromSource, ["run", "no.such.capability"], { cwd, env });
    expect(refused.code).toBe(2);
    expect(parseOutputs(readFileSync(outputs, "utf8"))).toEqual({ "execution-id": "", state: "refused", "result-file": "" });
    expect(existsSync(join(cwd, "r.json"))).toBe(true);
  });

  test("a command line refused (exit 2) is a refused run: the result file, and in GitHub Actions state=refused and the step summary", async () => {
    const cwd = checkout();
    const gh = tempDir("gh");
    const outputs = join(gh, "output");
    const summary = join(gh, "summary");
    const env = { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: outputs, GITHUB_STEP_SUMMARY: summary };
    for (const mistake of [["--format", "jsn"], ["--bogus"], ["--run-id", "a", "--run-id", "b"]]) {
      writeFileSync(outputs, "");
      writeFileSync(summary, "");
      rmSync(join(cwd, "r.json"), { force: true });
      const refused = await docket(fromSource, ["run", "demo.greet", ...mistake, "--result-file", "r.json"], { cwd, env });
      expect(refused.code).toBe(2);
      expect(parseOutputs(readFileSync(outputs, "utf8"))).toEqual({ "execution-id": "", state: "refused", "result-file": join(cwd, "r.json") });
      const document = JSON.parse(readFileSync(join(cwd, "r.json"), "utf8"));
      expect(document).toMatchObject({ execution: null, failure: { error_code: "invalid_input", stage: "validate", context: { reason: "usage" } } });
      expect(document.failure.message).toContain(mistake[0]);
      expect(readFileSync(summary, "utf8")).toContain("docket run `demo.greet` — refused");
      // The usage error is still the last word on stderr, once.
      expect(refused.stderr.trimEnd()).toEndWith("See docket run --help.");
    }
    // A --result-file that cannot be written is not written; the outputs still say refused.
    writeFileSync(outputs, "");
    const nowhere = await docket(fromSource, ["run", "demo.greet", "--result-file", "missing/r.json"], { cwd, env });
    expect(nowhere.code).toBe(2);
    expect(parseOutputs(readFileSync(outputs, "utf8"))).toEqual({ "execution-id": "", state: "refused", "result-file": "" });
  });

  test("a stray token of a refused command line (a secret passed unquoted) is left out of the step summary and the result file; the log has the message (tester R1)", async () => {
    const cwd = checkout();
    const gh = tempDir("gh");
    const summary = join(gh, "summary");
    const env = { GITHUB_ACTIONS: "true", GITHUB_OUTPUT: join(gh, "output"), GITHUB_STEP_SUMMARY: summary };
    // `--input {"s": "s3cr3t-value"}` unquoted: the shell splits it, and the second half is a stray argument.
    const refused = await docket(fromSource, ["run", "demo.greet", "--input", '{"s":', '"s3cr3t-value"}', "--result-file", "r.json"], { cwd, env });
    expect(refused.code).toBe(2);
    expect(readFileSync(join(cwd, "r.json"), "utf8")).not.toContain("s3cr3t-value");
    expect(readFileSync(summary, "utf8")).not.toContain("s3cr3t-value");
    expect(JSON.parse(readFileSync(join(cwd, "r.json"), "utf8")).failure.context).toEqual({ reason: "usage" });
  });

  test("a command line refused with --format json prints its one document on stdout, as every refusal does; the message stays on stderr (tester T8)", async () => {
    const cwd = checkout();
    // The last: refused once the run has claimed stdout for its document (tester R4 read it on stderr).
    for (const mistake of [["--bogus", "--format", "json"], ["--format=json", "--format", "json"], ["--format", "json", "--run-id", "--deadline-ms", "5"], ["--format", "json", "--result-file", "missing/r.json"]]) {
      const refused = await docket(fromSource, ["run", "demo.greet", ...mistake], { cwd });
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stdout)).toMatchObject({ execution: null, failure: { error_code: "invalid_input", context: { reason: "usage" } } });
      expect(refused.stderr.trimEnd()).toEndWith("See docket run --help.");
    }
    // Asked for text, stdout stays empty.
    expect((await docket(fromSource, ["run", "demo.greet", "--bogus"], { cwd })).stdout).toBe("");
  });

  test("outside GitHub Actions a command line refused still writes the result file it names", async () => {
    const cwd = checkout();
    const refused = await docket(fromSource, ["run", "demo.greet", "--bogus", "--result-file", "r.json"], { cwd });
    expect(refused.code).toBe(2);
    expect(JSON.parse(readFileSync(join(cwd, "r.json"), "utf8"))).toMatchObject({ execution: null, failure: { error_code: "invalid_input" } });
  });
});
