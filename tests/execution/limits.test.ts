import { describe, expect, test } from "bun:test";
import { defaultLimits, LIMIT_SPECS, limitEnvName, limitFlagName, LimitsError, mistypedLimitVariables, resolveLimits } from "../../runtime/execution/limits.ts";

describe("limits", () => {
  test("defaultLimits carries the docs/limits.md defaults", () => {
    expect(defaultLimits()).toMatchObject({
      max_concurrent: 2,
      max_queued: 256,
      executions_retained: 1000,
      events_retained: 10_000,
      log_line_bytes: 4096,
      diagnostics_retained: 500,
      log_tail_lines: 1000,
      input_bytes: 8 * 1024 * 1024,
      frame_bytes: 256 * 1024,
      subscriber_queue_bytes: 64 * 1024 * 1024,
      live_connections: 256,
      heartbeat_ms: 20_000,
      report_silence_ms: 30_000,
      run_identities: 100_000,
      artifacts_per_execution: 64,
    });
  });

  test("resolveLimits takes DOCKET_* variables, and flags over them", () => {
    const limits = resolveLimits({ env: { DOCKET_HEARTBEAT_MS: "500", DOCKET_MAX_CONCURRENT: "4" }, overrides: { max_concurrent: 8 } });
    expect(limits.heartbeat_ms).toBe(500);
    expect(limits.max_concurrent).toBe(8);
  });

  test("resolveLimits refuses a value out of range or not whole, naming its source and range", () => {
    expect(() => resolveLimits({ env: { DOCKET_MAX_CONCURRENT: "9" } })).toThrow(new LimitsError('DOCKET_MAX_CONCURRENT (executions running at once) must be a whole number from 1 to 8, got "9"'));
    expect(() => resolveLimits({ overrides: { subscriber_queue_bytes: 1.5 } })).toThrow(/--subscriber-queue-bytes .* got 1.5/);
    expect(() => resolveLimits({ env: { DOCKET_GRACE_MS: "ten" } })).toThrow(/DOCKET_GRACE_MS/);
    // An input no stored snapshot could hold is refused as a setting, not accepted and then lost (tester V).
    expect(() => resolveLimits({ env: { DOCKET_INPUT_BYTES: "400000000" } })).toThrow(/DOCKET_INPUT_BYTES .* from 1024 to 134217728/);
    // A silence no run can report within: at 10 ms every reported run failed on the server (lifecycle tester, session 42).
    expect(() => resolveLimits({ overrides: { report_silence_ms: 10 } })).toThrow(/--report-silence-ms .* from 250 to 3600000, got 10/);
  });

  test("a DOCKET_* variable close to a limit's name is named with the limit it may mean; one near none is left alone (serve tester, session 46)", () => {
    const notes = mistypedLimitVariables({
      DOCKET_HEARBEAT_MS: "100",
      DOCKET_SUBSCRIBER_QUEUE: "10",
      DOCKET_MAX_CONCURRENT: "4",
      DOCKET_TOKEN: "t",
      DOCKET_SLACK_URL: "https://example.invalid",
      DOCKET_LOG_LEVEL: "debug",
      HEARTBEAT_MS: "5",
      // Sharing a word with a limit's name is no mistake (checking tester, session 46: DOCKET_PORT → DOCKET_REPORT_SILENCE_MS).
      DOCKET_PORT: "8080",
      DOCKET_OUT: "x",
      DOCKET_LOG: "x",
      docket_grace_ms: "10",
      DOCKET_GRACEMS: "10",
    });
    expect(notes).toEqual([
      "DOCKET_HEARBEAT_MS is not a setting of docket and is ignored; did you mean DOCKET_HEARTBEAT_MS? (docs/limits.md lists them)",
      "DOCKET_SUBSCRIBER_QUEUE is not a setting of docket and is ignored; did you mean DOCKET_SUBSCRIBER_QUEUE_BYTES? (docs/limits.md lists them)",
      "docket_grace_ms is not read: environment variables are named in upper case, so it is DOCKET_GRACE_MS.",
      "DOCKET_GRACEMS is not a setting of docket and is ignored; did you mean DOCKET_GRACE_MS? (docs/limits.md lists them)",
    ]);
    expect(mistypedLimitVariables({})).toEqual([]);
  });

  test("every limit has one env name and one flag name derived from its key", () => {
    for (const key of Object.keys(LIMIT_SPECS) as Array<keyof typeof LIMIT_SPECS>) {
      expect(limitEnvName(key)).toBe(`DOCKET_${key.toUpperCase()}`);
      expect(limitFlagName(key)).not.toContain("_");
      const spec = LIMIT_SPECS[key];
      expect(spec.min).toBeLessThanOrEqual(spec.default);
      expect(spec.default).toBeLessThanOrEqual(spec.max);
    }
  });

  test("defaultLimits bounds every text and budgets each execution's events and the storage of .docket/", () => {
    const MIB = 1024 * 1024;
    expect(defaultLimits()).toMatchObject({
      step_title_bytes: 1024,
      step_message_bytes: 4096,
      progress_message_bytes: 1024,
      diagnostic_message_bytes: 4096,
      failure_message_bytes: 4096,
      stream_chunk_bytes: 64 * 1024,
      events_retained_bytes: 32 * MIB,
      storage_budget_bytes: 512 * MIB,
    });
    expect(resolveLimits({ env: { DOCKET_STORAGE_BUDGET_BYTES: String(MIB) }, overrides: { step_title_bytes: 64 } })).toMatchObject({ storage_budget_bytes: MIB, step_title_bytes: 64 });
    expect(() => resolveLimits({ overrides: { step_title_bytes: 10 } })).toThrow(/--step-title-bytes .* from 64 /);
  });
});
