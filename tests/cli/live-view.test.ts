import { describe, expect, test } from "bun:test";
import { applyEvent, displayWidth, initialLiveState, renderLiveView, renderSummary, SPINNER, truncate, type LiveState } from "../../runtime/cli/_live-render.ts";
import { createLiveView, wantsLiveView, type FrameTimer } from "../../runtime/cli/live-view.ts";
import { terminalStyle } from "../../runtime/cli/_terminal.ts";
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";

const ID = "x-20260908T010203Z-0a1b2c3d";
const START = Date.parse("2026-09-08T12:03:04.000Z");
const plain = terminalStyle({ isTTY: false }, {});
const colour = terminalStyle({ isTTY: true }, {});
let sequence = 0;
const event = (type: string, data: unknown) =>
  ({ schema_version: "1", event_id: `${ID}#${++sequence}`, execution_id: ID, sequence, timestamp: "2026-09-08T12:03:04.000Z", type, data }) as ExecutionEvent;
const ESC = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

function stateOf(...events: ExecutionEvent[]): LiveState {
  const state = initialLiveState();
  for (const e of [event("execution.created", { capability: "files.digest", input: {}, actor: { kind: "cli", pid: 1 }, run_id: null, session_key: null }), event("execution.started", {}), ...events]) applyEvent(state, e);
  return state;
}
const frame = (state: LiveState, o: Partial<{ width: number; height: number; now: number; frame: number }> = {}) =>
  renderLiveView(state, { width: 80, height: 24, now: START + 1500, frame: 0, style: plain, ...o });

describe("live view renderer", () => {
  test("renderLiveView shows the header, a mark per step state, the bar with count and percent, and the tail", () => {
    const state = stateOf(
      event("execution.step", { id: "a", title: "Scan" }),
      event("execution.step_done", { id: "a", ok: true, message: "137 files" }),
      event("execution.step", { id: "b", title: "Hash" }),
      event("execution.step_done", { id: "b", ok: false }),
      event("execution.step", { id: "c", title: "Write" }),
      event("execution.progress", { current: 17, total: 68, message: "hashing" }),
    );
    state.tail.push("12:03:04 warn  stale cache");
    const lines = frame(state);
    expect(lines[0]).toBe(`${SPINNER[0]} files.digest ${ID} running 1.5 s`);
    expect(lines.slice(1, 4)).toEqual(["  ✔ Scan — 137 files", "  ✘ Hash", `  ${SPINNER[0]} Write`]);
    expect(lines[4]).toMatch(/^ {2}[█░]+ 17\/68 25% {2}hashing$/);
    expect(lines[5]).toBe("  12:03:04 warn  stale cache");
    expect(lines).toHaveLength(6);
  });

  test("renderLiveView advances the spinner with the frame number, wrapping around", () => {
    const state = stateOf(event("execution.step", { id: "a", title: "Scan" }));
    expect(frame(state, { frame: 3 })[0]!.startsWith(SPINNER[3])).toBe(true);
    expect(frame(state, { frame: 3 })[1]).toBe(`  ${SPINNER[3]} Scan`);
    expect(frame(state, { frame: SPINNER.length + 1 })[0]!.startsWith(SPINNER[1])).toBe(true);
  });

  test("renderLiveView shows a count instead of a bar when the total is unknown", () => {
    const lines = frame(stateOf(event("execution.progress", { current: 12345, message: "rows" })));
    expect(lines[1]).toBe(`  ${SPINNER[0]} 12,345 so far  rows`);
    expect(lines[1]).not.toContain("%");
  });

  test("renderLiveView truncates every line below the width, colour or not, so nothing wraps", () => {
    const state = stateOf(event("execution.step", { id: "a", title: "A very long step title ".repeat(10) }), event("execution.progress", { current: 1, total: 3, message: "m".repeat(200) }));
    state.tail.push(`12:03:04 info  ${"x".repeat(300)}`);
    for (const style of [plain, colour]) {
      const lines = renderLiveView(state, { width: 40, height: 24, now: START, frame: 0, style });
      expect(lines).toHaveLength(4);
      for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(39);
      expect(lines[1]!.replace(ESC, "")).toEndWith("…");
    }
  });

  test("renderLiveView keeps a message with newlines on one line", () => {
    const state = stateOf(event("execution.step", { id: "a", title: "two\nlines\r\tand a tab" }));
    expect(frame(state)[1]).toBe(`  ${SPINNER[0]} two lines   and a tab`);
  });

  test("renderLiveView stays within the height, dropping finished steps first and saying how many", () => {
    const events: ExecutionEvent[] = [];
    for (let i = 1; i <= 30; i++) {
      events.push(event("execution.step", { id: `s${i}`, title: `Step ${i}` }));
      if (i !== 2) events.push(event("execution.step_done", { id: `s${i}`, ok: true }));
    }
    const state = stateOf(...events, event("execution.progress", { current: 29, total: 30 }));
    state.tail.push("log 1", "log 2", "log 3");
    const lines = frame(state, { height: 10 });
    expect(lines).toHaveLength(9);
    expect(lines[0]).toContain("files.digest");
    expect(lines).toContain(`  ${SPINNER[0]} Step 2`);
    expect(lines).toContain("  ✔ Step 30");
    expect(lines.find((l) => l.includes("earlier step"))).toMatch(/… \d+ earlier steps/);
    expect(lines.some((l) => l.includes("29/30"))).toBe(true);
    expect(lines.at(-1)).toBe("  log 3");
    // A terminal of two rows: the header alone.
    expect(frame(state, { height: 2 })).toHaveLength(1);
  });

  test("a cancel nobody asked for (a deadline passed) is the cancelling note of a terminal's live view, as it is a line of plain output (checking tester, session 42)", () => {
    const state = stateOf(event("execution.step", { id: "a", title: "Scan" }), event("execution.cancel_requested", { actor: { kind: "cli", pid: 1 }, reason: "deadline_ms" }));
    expect(frame(state).at(-1)).toBe("  deadline_ms passed: the handler is asked to stop");
    // A note of the run's own (Ctrl-C) is not replaced by it.
    const asked = stateOf(event("execution.step", { id: "a", title: "Scan" }));
    asked.cancelNote = "cancelling… press Ctrl-C again to stop now";
    applyEvent(asked, event("execution.cancel_requested", { actor: { kind: "cli", pid: 1 }, reason: "timeout_ms" }));
    expect(asked.cancelNote).toBe("cancelling… press Ctrl-C again to stop now");
  });

  test("renderLiveView shows the cancelling note above all but the header", () => {
    const state = stateOf(event("execution.step", { id: "a", title: "Scan" }), event("execution.cancel_requested", { actor: { kind: "cli", pid: 1 } }));
    state.cancelNote = "cancelling… press Ctrl-C again to stop now";
    const lines = frame(state);
    expect(lines[0]).toContain(" cancelling ");
    expect(lines.at(-1)).toBe("  cancelling… press Ctrl-C again to stop now");
    expect(frame(state, { height: 3 })).toEqual([lines[0], "  cancelling… press Ctrl-C again to stop now"]);
  });

  test("renderSummary lists every step and the final state with its duration", () => {
    const events: ExecutionEvent[] = [];
    for (let i = 1; i <= 40; i++) events.push(event("execution.step", { id: `s${i}`, title: `Step ${i}` }), event("execution.step_done", { id: `s${i}`, ok: true }));
    const state = stateOf(...events, event("execution.completed", { state: "failed", duration_ms: 2400 }));
    const lines = renderSummary(state, { now: START, style: plain });
    expect(lines).toHaveLength(41);
    expect(lines.at(-1)).toBe(`✘ files.digest ${ID} failed in 2.4 s`);
  });

  test("a step still running when the execution ended is shown stopped, in the last frame and the summary, never with a spinner", () => {
    const state = stateOf(
      event("execution.step", { id: "a", title: "Scan" }),
      event("execution.step_done", { id: "a", ok: true }),
      event("execution.step", { id: "b", title: "Upload" }),
    );
    expect(frame(state).slice(1, 3)).toEqual(["  ✔ Scan", `  ${SPINNER[0]} Upload`]);
    applyEvent(state, event("execution.completed", { state: "cancelled", duration_ms: 900 }));
    const stopped = "  ■ Upload — stopped: the execution ended before this step did";
    expect(frame(state).slice(1, 3)).toEqual(["  ✔ Scan", stopped]);
    expect(renderSummary(state, { now: START, style: plain })).toEqual(["  ✔ Scan", stopped, `■ files.digest ${ID} cancelled in 900 ms`]);
  });

  test("truncate counts wide characters twice and never cuts inside an escape sequence", () => {
    expect(truncate("漢字漢字", 5, false)).toBe("漢字…");
    expect(truncate("\u001b[31mredred\u001b[39m", 4, true)).toBe("\u001b[31mred…\u001b[0m");
    expect(truncate("short", 10, false)).toBe("short");
  });
});

/** A timer the test fires by hand. */
function fakeTimer() {
  let tick: (() => void) | null = null;
  const timer: FrameTimer = { setInterval: (fn) => ((tick = fn), 1), clearInterval: () => void (tick = null) };
  return { timer, fire: () => tick?.(), get running() { return tick !== null; } };
}

function liveView() {
  const writes: string[] = [];
  const clock = fakeTimer();
  let exitHooks = 0;
  const view = createLiveView({ write: (t) => writes.push(t), style: plain, size: () => ({ columns: 60, rows: 20 }), now: () => START + 1000, timer: clock.timer, onExit: () => (exitHooks++, () => exitHooks--) });
  return { view, writes, clock, hooks: () => exitHooks, screen: () => writes.join("") };
}

describe("live view", () => {
  test("coalesces: 200,000 progress events write nothing until the timer, then one frame", () => {
    const { view, writes, clock } = liveView();
    view.print(event("execution.created", { capability: "executions.demonstrate", input: {}, actor: { kind: "cli", pid: 1 }, run_id: null, session_key: null }));
    for (let i = 1; i <= 200_000; i++) view.print(event("execution.progress", { current: i, total: 200_000 }));
    expect(writes).toHaveLength(0);
    clock.fire();
    expect(writes).toHaveLength(1);
    expect(writes[0]).toContain("200000/200000 100%");
    expect(writes[0]).not.toContain("199999/");
  });

  test("redraws in place: hides the cursor, moves up over the last region and erases it", () => {
    const { view, writes, clock } = liveView();
    view.print(event("execution.step", { id: "a", title: "Scan" }));
    clock.fire();
    expect(writes[0]).toContain("\u001b[?25l");
    const height = writes[0]!.split("\n").length - 1;
    clock.fire();
    expect(writes[1]).toContain(`\u001b[${height}A\r\u001b[J`);
    expect(writes[1]).not.toContain("\u001b[?25l");
  });

  test("prints lines that leave the tail above the region once, the rest at the end, then the summary", () => {
    const { view, clock, screen, hooks } = liveView();
    view.above("no server serves this checkout");
    for (let i = 1; i <= 6; i++) view.print(event("execution.log", { level: "info", message: `line ${i}` }));
    expect(hooks()).toBe(1);
    clock.fire();
    view.print(event("execution.stream", { name: "git", chunk: "partial" }));
    view.print(event("execution.step", { id: "a", title: "Scan" }));
    view.print(event("execution.step_done", { id: "a", ok: true }));
    view.print(event("execution.completed", { state: "succeeded", duration_ms: 840 }));
    const out = screen();
    // The stdout of a terminal: what stays is what the last erase did not take.
    const final = out.slice(out.lastIndexOf("\u001b[J") + 3);
    // Log lines carry local time on a terminal: compared without it.
    expect(final.replace(ESC, "").replace(/^\d\d:\d\d:\d\d /gm, "")).toBe(["info  line 4", "info  line 5", "info  line 6", "git │ partial", "  ✔ Scan", `✔ run ${ID} succeeded in 840 ms`, ""].join("\n"));
    expect(out.match(/line 1/g)).toHaveLength(1);
    expect(out.match(/no server serves/g)).toHaveLength(1);
    expect(out.endsWith("\u001b[?25h")).toBe(true);
    expect(clock.running).toBe(false);
    expect(hooks()).toBe(0);
  });

  test("stop leaves the last frame, shows the cursor and draws nothing after", () => {
    const { view, writes, clock, hooks } = liveView();
    view.print(event("execution.step", { id: "a", title: "Scan" }));
    clock.fire();
    view.cancelling("cancelling… press Ctrl-C again to stop now");
    expect(writes.at(-1)).toContain("cancelling… press Ctrl-C again to stop now");
    view.stop();
    view.stop();
    expect(writes.at(-1)).toBe("\u001b[?25h");
    expect(writes.join("").match(/\u001b\[\?25h/g)).toHaveLength(1);
    const count = writes.length;
    clock.fire();
    view.print(event("execution.log", { level: "info", message: "late" }));
    expect(writes).toHaveLength(count);
    expect(hooks()).toBe(0);
  });

  test("the exit hook restores the cursor when the process leaves mid-run", () => {
    const writes: string[] = [];
    let restore = () => {};
    const view = createLiveView({ write: (t) => writes.push(t), style: plain, size: () => ({ columns: 60, rows: 20 }), timer: fakeTimer().timer, onExit: (fn) => ((restore = fn), () => {}) });
    view.print(event("execution.step", { id: "a", title: "Scan" }));
    restore();
    expect(writes.join("")).toContain("\u001b[?25l");
    expect(writes.at(-1)).toBe("\u001b[?25h");
  });

  test("wantsLiveView: a TTY, unless NO_COLOR, TERM=dumb, GitHub Actions or CI", () => {
    const tty = { isTTY: true };
    expect(wantsLiveView(tty, { TERM: "xterm-256color" })).toBe(true);
    expect(wantsLiveView(tty, { CI: "false" })).toBe(true);
    expect(wantsLiveView({ isTTY: false }, {})).toBe(false);
    expect(wantsLiveView(tty, { NO_COLOR: "1" })).toBe(false);
    expect(wantsLiveView(tty, { TERM: "dumb" })).toBe(false);
    expect(wantsLiveView(tty, { GITHUB_ACTIONS: "true" })).toBe(false);
    expect(wantsLiveView(tty, { CI: "true" })).toBe(false);
    expect(wantsLiveView({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(false);
  });
});
