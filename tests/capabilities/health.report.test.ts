import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import health from "../../capabilities/health.report.ts";
import { removeCheckout, tempCheckout } from "../_support/capability-fixtures.ts";
import { createTestContext, defaultHostFacts, runHandler } from "../_support/test-context.ts";

let root: string;

beforeEach(async () => {
  root = await tempCheckout();
});

afterEach(async () => {
  await removeCheckout(root);
});

describe("health.report", () => {
  test("health.report reports a healthy process with one passing step per check", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(health, {}, t.ctx);
    expect(output).toMatchObject({ ok: true, root, capabilities: 1, load_errors: 0, warnings: 0, store: { kind: "memory" } });
    expect(output.checks.map((c: { id: string; ok: boolean }) => [c.id, c.ok])).toEqual([
      ["checkout", true],
      ["runtime", true],
      ["capabilities", true],
      ["store", true],
      ["limits", true],
    ]);
    expect(t.steps().map((s) => s.id)).toEqual(["checkout", "runtime", "capabilities", "store", "limits"]);
    expect(t.diagnostics()).toEqual([]);
    expect(output.checks[1].message).toContain("Bun 1.4.5");
  });

  test("health.report turns each load error into an error diagnostic with file and line", async () => {
    const t = createTestContext({
      root,
      host: {
        load_errors: [
          { file: join(root, "capabilities/bad.ts"), line: 3, column: 7, reason: "syntax error: Unexpected ," },
          { file: "/elsewhere/x.ts", line: null, column: null, reason: "the file has no default export" },
        ],
      },
    });
    const output = await runHandler(health, {}, t.ctx);
    expect(output.ok).toBe(false);
    expect(output.load_errors).toBe(2);
    expect(t.diagnostics()).toEqual([
      { severity: "error", code: "load_error", file: "capabilities/bad.ts", line: 3, column: 7, message: "Cannot load capabilities/bad.ts: syntax error: Unexpected ," },
      { severity: "error", code: "load_error", file: "/elsewhere/x.ts", message: "Cannot load /elsewhere/x.ts: the file has no default export" },
    ]);
    expect(output.checks.find((c: { id: string }) => c.id === "capabilities")).toMatchObject({ ok: false, message: expect.stringContaining("2 failed to load") });
  });

  test("health.report warns when the root is not a git checkout", async () => {
    await rm(join(root, ".git"), { recursive: true });
    const t = createTestContext({ root });
    const output = await runHandler(health, {}, t.ctx);
    expect(output.ok).toBe(true);
    expect(output.warnings).toBe(1);
    expect(t.diagnostics()).toEqual([expect.objectContaining({ severity: "warning", code: "not_a_checkout" })]);
  });

  test("health.report warns when the limits switch artifacts off", async () => {
    const t = createTestContext({ root, host: { limits: { ...defaultHostFacts(root).limits, artifacts_per_execution: 0 } } });
    const output = await runHandler(health, {}, t.ctx);
    expect(output.limits.artifacts_per_execution).toBe(0);
    expect(t.diagnostics()).toEqual([expect.objectContaining({ severity: "warning", code: "artifacts_disabled" })]);
  });

  test("health.report reports the memory store's retained events, and warns when what runs holds more than the bound", async () => {
    const facts = defaultHostFacts(root);
    const within = createTestContext({ root, host: { store: { ...facts.store, kind: "memory", retained_bytes: 1024 * 1024 }, limits: { ...facts.limits, executions_retained_bytes: 2 * 1024 * 1024 } } });
    const ok = await runHandler(health, {}, within.ctx);
    expect(ok.store.retained_bytes).toBe(1024 * 1024);
    expect(ok.checks.find((c: { id: string }) => c.id === "store")!.message).toContain("events 1.0 MiB of 2.0 MiB (executions_retained_bytes)");
    expect(within.diagnostics()).toEqual([]);
    const over = createTestContext({ root, host: { store: { ...facts.store, kind: "memory", retained_bytes: 3 * 1024 * 1024 }, limits: { ...facts.limits, executions_retained_bytes: 2 * 1024 * 1024 } } });
    const warned = await runHandler(health, {}, over.ctx);
    expect(warned.ok).toBe(true);
    expect(over.diagnostics()).toEqual([expect.objectContaining({ severity: "warning", code: "retained_over" })]);
  });

  test("health.report fails the checkout check when the root is gone", async () => {
    const t = createTestContext({ root: join(root, "missing") });
    const output = await runHandler(health, {}, t.ctx);
    expect(output.ok).toBe(false);
    expect(t.diagnostics()[0]).toMatchObject({ severity: "error", code: "root_missing" });
  });
});
