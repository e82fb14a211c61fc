import { describe, expect, test } from "bun:test";
import { annotation, escapeData, escapeProperty, gitHubPrinters, inertCommands, isGitHubActions, maskCommands, stepSummary } from "../../runtime/cli/github-actions.ts";
import { plainPrinters } from "../../runtime/cli/run-reporter.ts";
import { terminalStyle } from "../../runtime/cli/_terminal.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { obeyedCommands } from "../_support/workflow-commands.ts";

const event = (type: string, data: unknown, sequence = 2) =>
  ({ schema_version: "1", event_id: `x-20260908T010203Z-0a1b2c3d#${sequence}`, execution_id: "x-20260908T010203Z-0a1b2c3d", sequence, timestamp: "2026-09-08T01:02:07.123Z", type, data }) as ExecutionEvent;

describe("github-actions", () => {
  test("isGitHubActions is true only for GITHUB_ACTIONS=true", () => {
    expect(isGitHubActions({ GITHUB_ACTIONS: "true" })).toBe(true);
    expect(isGitHubActions({ GITHUB_ACTIONS: "1" })).toBe(false);
    expect(isGitHubActions({})).toBe(false);
  });

  test("maskCommands announces each secret (and each line of a multi-line one) once, skipping short ones", () => {
    expect(maskCommands(["tok-1234", "abc", "tok-1234", "line-one\nline-two\nx"], 4)).toBe(
      "::add-mask::tok-1234\n::add-mask::line-one%0Aline-two%0Ax\n::add-mask::line-one\n::add-mask::line-two\n",
    );
    expect(maskCommands([], 4)).toBe("");
  });

  test("escapeData escapes %, CR and LF; escapeProperty also : and ,", () => {
    expect(escapeData("100%\r\nnext: a,b")).toBe("100%25%0D%0Anext: a,b");
    expect(escapeProperty("C:\\a,b%\n")).toBe("C%3A\\a%2Cb%25%0A");
  });

  test("annotation maps severity to error / warning / notice with escaped properties", () => {
    expect(annotation({ severity: "error", message: "bad\nthing", file: "a:b,c.ts", line: 3, column: 9, code: "x_y" })).toBe("::error file=a%3Ab%2Cc.ts,line=3,col=9,title=x_y::bad%0Athing");
    expect(annotation({ severity: "warning", message: "w" })).toBe("::warning::w");
    expect(annotation({ severity: "info", message: "i", file: "f.ts" })).toBe("::notice file=f.ts::i");
  });

  test("inertCommands pauses the runner around text holding a workflow command, and leaves other text as it is", () => {
    const forged = "line1\n::error title=forged::x\n  ##[warning]old form\r::stop-commands::tok\nafter";
    // Unpaused, the runner obeys both forms (and then the text's own pause).
    expect(obeyedCommands(forged)).toEqual(["::error title=forged::x", "##[warning]old form"]);
    const inert = inertCommands(forged, "t0k3n");
    expect(inert).toBe(`::stop-commands::t0k3n\n${forged}\n::t0k3n::\n`);
    expect(obeyedCommands(inert)).toEqual([]);
    // Lines after the pause are obeyed again: the pause ends where the text ends.
    expect(obeyedCommands(`${inert}::notice::mine`)).toEqual(["::notice::mine"]);
    // A fresh token each time, so that the text cannot hold the line that ends the pause.
    expect(inertCommands("::error::x")).not.toBe(inertCommands("::error::x"));
    for (const text of ["plain\n", "a :: b\n", '{\n  "a": "::error::x"\n}\n', "x ##[error]\n"]) expect(inertCommands(text)).toBe(text);
  });

  test("gitHubPrinters close an open group before the next step and at the end", () => {
    const printers = gitHubPrinters(plainPrinters(terminalStyle({}, {})).printers);
    const lines = [
      ...printers["execution.step"]!(event("execution.step", { id: "a", title: "First" }) as never),
      ...printers["execution.step"]!(event("execution.step", { id: "b", title: "Second" }) as never),
      ...printers["execution.completed"]!(event("execution.completed", { state: "succeeded", output: 1, duration_ms: 5 }) as never),
    ];
    expect(lines.filter((l) => l.startsWith("::"))).toEqual(["::group::First (a)", "::endgroup::", "::group::Second (b)", "::endgroup::"]);
  });

  test("stepSummary escapes table cells and fences an output holding backticks", () => {
    const markdown = stepSummary({
      capability: "demo.x",
      failure: null,
      execution: {
        id: "x-20260908T010203Z-0a1b2c3d",
        state: "succeeded",
        duration_ms: 1500,
        diagnostics: [{ severity: "warning", message: "a | b\nc", file: "f.ts", line: 2 }],
        diagnostics_dropped: 0,
        output: "has ``` inside",
        failure: null,
      } as never,
    });
    expect(markdown).toContain("### ✅ docket run `demo.x` — succeeded");
    expect(markdown).toContain("| duration | 1.5 s |");
    expect(markdown).toContain("| warning | f.ts:2 | a \\| b c |  |");
    expect(markdown).toContain("````text\nhas ``` inside\n````");
  });

  test("stepSummary of a refusal shows the failure without an execution", () => {
    const markdown = stepSummary({
      capability: "no.such",
      execution: null,
      failure: { error_code: "not_found", message: "No capability.", suggestion: "List them.", correlation_id: "c-1", retryability: "never", outcome_certainty: "not_applied" } as never,
    });
    expect(markdown).toContain("— refused");
    expect(markdown).toContain("**not_found**: No capability.");
  });
});
