import { describe, expect, test } from "bun:test";
import { EXIT, exitCodeOf, failureText } from "../../runtime/cli/exit-code.ts";
import { terminalStyle } from "../../runtime/cli/_terminal.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";

const failure = (error_code: string, extra: Record<string, unknown> = {}) =>
  buildFailure({ error_code, stage: "validate", message: `because ${error_code}`, request_id: "r-1", trace_id: "t".repeat(32), ...extra });

describe("exitCodeOf", () => {
  test("terminal states: succeeded 0, failed 1, cancelled 130", () => {
    expect(exitCodeOf({ state: "succeeded", failure: null })).toBe(EXIT.succeeded);
    expect(exitCodeOf({ state: "failed", failure: failure("internal") })).toBe(1);
    expect(exitCodeOf({ state: "cancelled", failure: failure("cancelled") })).toBe(130);
  });

  test("refusals before an execution: the caller's mistakes are 2, the rest 1", () => {
    for (const code of ["invalid_input", "not_found", "not_runnable", "run_id_conflict"]) expect(exitCodeOf({ state: null, failure: failure(code) })).toBe(2);
    for (const code of ["capacity", "unavailable", "internal"]) expect(exitCodeOf({ state: null, failure: failure(code) })).toBe(1);
  });

  test("a run stopped before its execution existed is cancelled all the same: 130", () => {
    expect(exitCodeOf({ state: null, failure: failure("cancelled") })).toBe(EXIT.cancelled);
  });
});

describe("failureText", () => {
  test("shows code, message, suggestion and the ids, and warns of an unknown outcome", () => {
    const text = failureText(failure("deadline_exceeded", { outcome_certainty: "unknown", retryability: "manual_reconcile" }), terminalStyle({}, {}));
    // A write whose effect is unknown is settled first, whatever stopped it: no "give it more time".
    expect(text).toStartWith("error deadline_exceeded: because deadline_exceeded\n  The work may have been done: check what it changed, then settle it with executions.reconcile");
    expect(failureText(failure("deadline_exceeded"), terminalStyle({}, {}))).toContain("\n  Give it more time (the start's deadline_ms, or the capability's timeout_ms");
    expect(text).toMatch(/correlation id c-[0-9a-f]{16} · request r-1 · stage validate · retry: manual_reconcile; its effect is unknown/);
  });
});
