import { capability, CapabilityError, type CapabilityContext } from "docket";
import * as v from "valibot";
import { setTimeout as delay } from "node:timers/promises";

/** Events are checked for cancellation in batches: a check per event would dominate the benchmark it serves. */
const EVENTS_PER_CHECK = 1024;

export default capability({
  id: "executions.demonstrate",
  title: "Demonstrate an execution",
  description:
    "Runs a few named steps with logs, progress and a diagnostic, then returns: what every surface shows for an execution, for docs, tests and benchmarks (events emits that many progress events as fast as it can). Cancellable at any moment.",
  effect: "read",
  cancellable: true,
  errors: ["demonstration_failed"],
  input: v.object({
    steps: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100), v.description("Named steps to run.")), 3),
    delay_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60_000), v.description("Pause in each step, in milliseconds.")), 100),
    events: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000_000), v.description("Progress events to emit after the steps, as fast as possible.")), 0),
    fail: v.optional(v.pipe(v.boolean(), v.description("Fail with demonstration_failed after the steps, to show a failure."))),
  }),
  output: v.object({
    steps: v.pipe(v.number(), v.description("Steps completed.")),
    events: v.pipe(v.number(), v.description("Progress events emitted by the events phase.")),
    message: v.string(),
  }),
  examples: [{}, { steps: 5, delay_ms: 500 }, { steps: 0, delay_ms: 0, events: 100_000 }, { steps: 1, fail: true }],
  async handler(input, ctx) {
    ctx.progress.log(`Demonstrating ${input.steps} steps of ${input.delay_ms} ms`);
    for (let i = 1; i <= input.steps; i++) {
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      ctx.progress.step(`step-${i}`, `Step ${i} of ${input.steps}`);
      ctx.progress.log(`Working on step ${i}`, "debug");
      await pause(input.delay_ms, ctx);
      ctx.progress.progress(i, input.steps, `step ${i} done`);
      ctx.progress.stepDone(`step-${i}`, true);
    }
    ctx.progress.diagnostic({
      severity: "info",
      code: "demonstration",
      message: "A diagnostic is a finding about the work (here: none), shown apart from the run's own log.",
      file: "capabilities/executions.demonstrate.ts",
      line: 1,
    });

    if (input.events > 0) {
      ctx.progress.step("events", `Emit ${input.events} progress events`);
      for (let i = 1; i <= input.events; i++) {
        if (i % EVENTS_PER_CHECK === 0 && ctx.progress.cancelled()) throw ctx.progress.cancellation();
        ctx.progress.progress(i, input.events);
      }
      ctx.progress.stepDone("events", true);
    }

    if (input.fail) {
      throw new CapabilityError("demonstration_failed", `The demonstration failed on purpose after ${input.steps} steps (input.fail was true)`, {
        context: { steps: input.steps },
        suggestion: "Run it again without fail: true.",
      });
    }
    ctx.progress.log("Demonstration complete");
    return { steps: input.steps, events: input.events, message: `Completed ${input.steps} steps and ${input.events} events` };
  },
});

/** Waits, but gives up at once when the execution is cancelled or its deadline passes. */
async function pause(ms: number, ctx: CapabilityContext): Promise<void> {
  if (ms === 0) return;
  try {
    await delay(ms, undefined, { signal: ctx.signal });
  } catch (error) {
    if (ctx.signal.aborted || ctx.progress.cancelled()) throw ctx.progress.cancellation();
    throw error;
  }
}
