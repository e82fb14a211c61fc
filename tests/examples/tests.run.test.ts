import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, REPO, removeTempDirs, spawnDocket, tempDir, watchStream, type DocketRunner } from "../cli/_harness.ts";

// examples/tests.run.ts through the compiled binary, in a checkout outside the repository: a
// suite that passes, one that fails (a diagnostic per failing test, exit 1), and a cancel that
// leaves no test process behind.

const EXAMPLE = join(REPO, "examples", "tests.run.ts");
let binary: DocketRunner;
let root: string;

beforeAll(async () => {
  binary = fromBinary(await buildBinary());
  root = tempDir("tests-run");
  mkdirSync(join(root, ".git"));
  cpSync(join(REPO, "examples", "fixtures", "sample-suite"), join(root, "suite"), { recursive: true });
  mkdirSync(join(root, "broken"));
  writeFileSync(
    join(root, "broken", "fails.test.mjs"),
    'import { test } from "node:test";\nimport assert from "node:assert/strict";\ntest("passes", () => {});\ntest("compares", () => assert.equal(1, 2));\n',
  );
}, 120_000);

afterAll(() => removeTempDirs());

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `target` (a pid, or -pgid for a group) has no process left within `ms`; polls every 20 ms. */
async function gone(target: number, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; ; ) {
    try {
      process.kill(target, 0);
    } catch {
      return true;
    }
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("examples/tests.run.ts", () => {
  test("tests.run runs a passing suite through ctx.exec, streaming node's output, and answers the counts", async () => {
    const run = await docket(binary, ["run", EXAMPLE, "--input", '{"path":"suite"}', "--format", "json"], { cwd: root });
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { execution: { state: string; capability_version: string }; output: { tests: number; passed: number } };
    expect(result).toMatchObject({ execution: { state: "succeeded" }, output: { tests: 3, passed: 3 } });
    expect(result.execution.capability_version).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  test("tests.run fails tests_failed with one diagnostic per failing test, and exit code 1", async () => {
    const run = await docket(binary, ["run", EXAMPLE, "--input", '{"path":"broken"}'], { cwd: root });
    expect(run.code).toBe(1);
    const text = run.stdout + run.stderr;
    expect(text).toContain("test failed: compares");
    expect(text).toContain("tests_failed");
    expect(text).toContain("1 of 2 test(s) failed in broken.");
    // The runner's own lines were streamed as they came.
    expect(text).toMatch(/stdout │ not ok 2 - compares/);
  });

  test("tests.run stops on Ctrl-C: the execution ends cancelled and no node test process is left", async () => {
    const child = spawnDocket(binary, ["run", EXAMPLE, "--input", '{"path":"suite"}'], { cwd: root, env: { SLOW_SUITE_MS: "60000" } });
    const out = watchStream(child.stdout);
    const err = watchStream(child.stderr);
    // The log line of ctx.exec names the child's pid; the group it leads holds node's test workers.
    const started = /exec: node --test .* started \(pid \d+/;
    // Whichever stream carries the line; the other one's wait never settles rather than failing.
    const lineOf = (watch: typeof out) => watch.until(started).catch(() => new Promise<string>(() => undefined));
    const seen = await Promise.race([lineOf(out), lineOf(err)]);
    const pid = Number(/started \(pid (\d+)/.exec(seen)![1]);
    expect(alive(pid)).toBe(true);
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    expect((await out.done) + (await err.done)).toContain("cancelled");
    expect(alive(pid)).toBe(false);
    // Nothing of its group either (node --test runs each file in a child process of its own).
    // The group got SIGKILL as its leader exited; a killed process still counts until it is
    // reaped (by init, once docket has exited), so it is given a moment to be gone.
    expect(await gone(-pid, 5000)).toBe(true);
  }, 30_000);
});
