import { describe, expect, test } from "bun:test";
import { clockTime, createRunReporter, formatDuration, plainPrinters } from "../../runtime/cli/run-reporter.ts";
import { terminalStyle } from "../../runtime/cli/_terminal.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";

let sequence = 0;
const event = (type: string, data: unknown) =>
  ({ schema_version: "1", event_id: `x#${++sequence}`, execution_id: "x-20260908T010203Z-0a1b2c3d", sequence, timestamp: "2026-09-08T12:03:04.123Z", type, data }) as ExecutionEvent;

function collect(color = false) {
  let out = "";
  const plain = plainPrinters(terminalStyle({ isTTY: color }, {}));
  const reporter = createRunReporter({ write: (t) => (out += t), printers: plain.printers, unknown: plain.unknown, flush: plain.flush });
  return { reporter, text: () => out };
}

describe("run reporter", () => {
  test("prints one timestamped plain line per event, in the shapes of README.md", () => {
    const { reporter, text } = collect();
    reporter.print(event("execution.step", { id: "scan", title: "Scanning files" }));
    reporter.print(event("execution.progress", { current: 17, total: 42, message: "137 file(s) read" }));
    reporter.print(event("execution.progress", { current: 3 }));
    reporter.print(event("execution.log", { level: "error", message: "disk full" }));
    reporter.print(event("execution.diagnostic", { severity: "warning", message: "stale", file: "a.ts", line: 4, column: 2 }));
    reporter.print(event("execution.step_done", { id: "scan", ok: false, message: "2 unreadable" }));
    expect(text().split("\n")).toEqual([
      "12:03:04 ▸ step scan — Scanning files",
      "12:03:04 [17/42] 137 file(s) read",
      "12:03:04 [3]",
      "12:03:04 error disk full",
      "12:03:04 warning a.ts:4:2 stale",
      "12:03:04 ✖ step scan failed — 2 unreadable",
      "",
    ]);
  });

  test("without colour (NO_COLOR, a pipe) no line keeps a colour a handler's text brought, whatever the field (tester, session 33)", () => {
    const red = "\u001b[31mred\u001b[0m";
    const { reporter, text } = collect();
    reporter.print(event("execution.step", { id: "s", title: `title ${red}` }));
    reporter.print(event("execution.step_done", { id: "s", ok: true, message: `done ${red}` }));
    reporter.print(event("execution.progress", { current: 1, message: `at ${red}` }));
    reporter.print(event("execution.diagnostic", { severity: "error", message: `m ${red}`, file: `f${red}.ts`, code: `C${red}` }));
    reporter.print(event("execution.stream", { name: `out${red}`, chunk: `line ${red}\nrest ${red}` }));
    reporter.print(event("execution.completed", { state: "succeeded", duration_ms: 5 }));
    expect(text()).not.toContain("\u001b");
    expect(text()).toContain("12:03:04 ▸ step s — title red");
    expect(text()).toContain("outred │ rest red");
    // With colour, a handler's colour is shown, and reset before the line ends.
    const coloured = collect(true);
    coloured.reporter.print(event("execution.log", { level: "info", message: `x ${red}` }));
    expect(coloured.text()).toContain(`x ${red}\u001b[0m`);
  });

  test("joins stream chunks into whole lines and flushes the rest before the final line", () => {
    const { reporter, text } = collect();
    reporter.print(event("execution.stream", { name: "git", chunk: "one\ntw" }));
    reporter.print(event("execution.stream", { name: "git", chunk: "o\nthr" }));
    reporter.print(event("execution.completed", { state: "succeeded", output: null, duration_ms: 840 }));
    expect(text()).toBe("git │ one\ngit │ two\ngit │ thr\n12:03:04 ✔ succeeded in 840 ms\n");
  });

  test("shows an event type it does not know instead of dropping it", () => {
    const { reporter, text } = collect();
    reporter.print(event("execution.future_thing", { a: 1 }));
    expect(text()).toBe('12:03:04 · execution.future_thing {"a":1}\n');
  });

  test("colours only when asked", () => {
    const coloured = collect(true);
    coloured.reporter.print(event("execution.log", { level: "warn", message: "careful" }));
    expect(coloured.text()).toContain("\u001b[33mwarn");
  });

  test("clockTime is UTC from the stamp off a terminal, local time on one", () => {
    expect(clockTime("2026-09-08T23:59:58.001Z")).toBe("23:59:58");
    const local = new Date("2026-09-08T23:59:58.001Z");
    expect(clockTime("2026-09-08T23:59:58.001Z", true)).toBe([local.getHours(), local.getMinutes(), local.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":"));
  });

  test("formatDuration reads as a person would say it", () => {
    expect(formatDuration(840)).toBe("840 ms");
    expect(formatDuration(12_340)).toBe("12.3 s");
    expect(formatDuration(245_000)).toBe("4 min 05 s");
  });
});

describe("run reporter and a handler's colours", () => {
  test("strips colour codes of log lines, diagnostics and streams where no colour is shown", () => {
    const { reporter, text } = collect(false);
    reporter.print(event("execution.log", { level: "info", message: "\u001b[32mok\u001b[0m done" }));
    reporter.print(event("execution.diagnostic", { severity: "error", message: "\u001b[1mbad\u001b[0m" }));
    reporter.print(event("execution.stream", { name: "out", chunk: "\u001b[33mwarn\u001b[0m line\n" }));
    expect(text()).not.toContain("\u001b");
    expect(text()).toContain("info  ok done");
    expect(text()).toContain("out │ warn line");
  });

  test("keeps them on a colour terminal, ending each painted line with a reset", () => {
    const { reporter, text } = collect(true);
    reporter.print(event("execution.log", { level: "info", message: "\u001b[32mok" }));
    expect(text()).toContain("\u001b[32mok\u001b[0m");
  });
});
