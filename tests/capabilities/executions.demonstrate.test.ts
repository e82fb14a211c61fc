import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import demonstrate from "../../capabilities/executions.demonstrate.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { createTestContext, runHandler, TestCancellation } from "../_support/test-context.ts";

const root = "/nonexistent-checkout";

describe("executions.demonstrate", () => {
  test("executions.demonstrate runs its steps with logs, progress and a diagnostic", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(demonstrate, { steps: 3, delay_ms: 0 }, t.ctx);
    expect(output).toEqual({ steps: 3, events: 0, message: "Completed 3 steps and 0 events" });
    expect(t.steps().map((s) => [s.id, s.ok])).toEqual([
      ["step-1", true],
      ["step-2", true],
      ["step-3", true],
    ]);
    expect(t.progress().map((p) => [p.current, p.total])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    expect(t.logs().length).toBeGreaterThanOrEqual(4);
    expect(t.diagnostics()).toEqual([expect.objectContaining({ severity: "info", code: "demonstration" })]);
  });

  test("executions.demonstrate emits the requested number of progress events", async () => {
    const t = createTestContext({ root });
    await runHandler(demonstrate, { steps: 0, delay_ms: 0, events: 5000 }, t.ctx);
    const progress = t.progress();
    expect(progress).toHaveLength(5000);
    expect(progress.at(-1)).toMatchObject({ current: 5000, total: 5000 });
  });

  test("executions.demonstrate fails with demonstration_failed when asked", async () => {
    const t = createTestContext({ root });
    const error = await runHandler(demonstrate, { steps: 1, delay_ms: 0, fail: true }, t.ctx).catch((e) => e);
    expect(CapabilityError.is(error)).toBe(true);
    expect(error.code).toBe("demonstration_failed");
    expect(demonstrate.errors).toContain("demonstration_failed");
  });

  test("executions.demonstrate stops between steps when cancelled", async () => {
    const t = createTestContext({ root, cancelWhen: (e) => e.type === "step_done" && e.id === "step-2" });
    const error = await runHandler(demonstrate, { steps: 10, delay_ms: 0 }, t.ctx).catch((e) => e);
    expect(error).toBeInstanceOf(TestCancellation);
    expect(t.steps()).toHaveLength(2);
  });

  test("executions.demonstrate stops during a delay when cancelled (no waiting for the delay)", async () => {
    const t = createTestContext({ root, cancelWhen: (e) => e.type === "step" && e.id === "step-1" });
    const error = await runHandler(demonstrate, { steps: 2, delay_ms: 60_000 }, t.ctx).catch((e) => e);
    expect(error).toBeInstanceOf(TestCancellation);
    expect(t.steps()).toHaveLength(0);
  });

  test("executions.demonstrate stops a long event burst when cancelled", async () => {
    const t = createTestContext({ root, cancelWhen: (e) => e.type === "progress" && e.current === 3000 });
    const error = await runHandler(demonstrate, { steps: 0, delay_ms: 0, events: 10_000_000 }, t.ctx).catch((e) => e);
    expect(error).toBeInstanceOf(TestCancellation);
    expect(t.progress().length).toBeLessThan(5000);
  });

  test("executions.demonstrate bounds its input", () => {
    expect(v.safeParse(demonstrate.input, { steps: 101 }).success).toBe(false);
    expect(v.safeParse(demonstrate.input, { delay_ms: 60_001 }).success).toBe(false);
    expect(v.safeParse(demonstrate.input, { events: 10_000_001 }).success).toBe(false);
    expect(v.parse(demonstrate.input, {})).toEqual({ steps: 3, delay_ms: 100, events: 0 });
  });
});
