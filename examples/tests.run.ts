// An example capability: runs a folder's test suite with `node --test` through ctx.exec, streams
// the runner's output as it comes, reports each failing test as a diagnostic, and stops the whole
// test process tree when the execution is cancelled. See docs/authoring.md, "Running a command".
import { capability, CapabilityError } from "docket";
import * as v from "valibot";

export default capability({
  id: "tests.run",
  title: "Run the tests",
  description: "Runs the test files of a folder of the checkout with node --test; its output is streamed, each failing test is a diagnostic.",
  effect: "read",
  cancellable: true,
  timeout_ms: 15 * 60_000,
  input: v.object({
    path: v.optional(v.pipe(v.string(), v.description("The folder whose tests run, relative to the checkout.")), "."),
    name: v.optional(v.pipe(v.string(), v.description("Only the tests whose name matches this pattern."))),
  }),
  output: v.object({ tests: v.number(), passed: v.number(), skipped: v.number(), duration_ms: v.number() }),
  errors: ["tests_failed"],
  examples: [{ path: "." }, { path: "test", name: "parser" }],
  async handler(input, ctx) {
    const argv = ["node", "--test", "--test-reporter=tap", ...(input.name ? ["--test-name-pattern", input.name] : [])];
    ctx.progress.step("run", `node --test in ${input.path}`);
    // allowFailure: a failing test is a result to read, not a child that broke; the verdict is below.
    const run = await ctx.exec(argv, { cwd: input.path, allowFailure: true });
    const summary = tapSummary(run.stdout);
    for (const failure of summary.failures) ctx.progress.diagnostic({ severity: "error", message: `test failed: ${failure}`, code: "test_failed" });
    ctx.progress.stepDone("run", run.exitCode === 0, `${summary.pass} passed, ${summary.fail} failed, ${summary.skip} skipped`);
    if (run.exitCode !== 0) {
      throw new CapabilityError(
        "tests_failed",
        summary.fail > 0 ? `${summary.fail} of ${summary.tests} test(s) failed in ${input.path}.` : `node --test exited ${run.exitCode} in ${input.path} without a failing test; see its output.`,
        { context: { failed: summary.fail, tests: summary.tests, exit_code: run.exitCode } },
      );
    }
    return { tests: summary.tests, passed: summary.pass, skipped: summary.skip, duration_ms: run.durationMs };
  },
});

/** The counts of node's TAP summary (`# tests 3`, `# pass 2`…) and the names of the failing tests. */
function tapSummary(tap: string) {
  const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, "m").exec(tap)?.[1] ?? 0);
  const failures = [...tap.matchAll(/^\s*not ok \d+ - (.+)$/gm)].map((m) => m[1]!.trim());
  return { tests: count("tests"), pass: count("pass"), fail: count("fail"), skip: count("skipped"), failures };
}
