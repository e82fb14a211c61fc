// The TTY live view of `docket run` (README.md): the run's steps, progress bar and latest log lines,
// redrawn in place on a timer; log lines, diagnostics and stream output print above it for good.
import type { ExecutionEvent } from "../execution/protocol.ts";
import { isGitHubActions } from "./github-actions.ts";
import type { RunReporter } from "./run-reporter.ts";
import { plainPrinters } from "./run-reporter.ts";
import type { TerminalStream, TerminalStyle } from "./_terminal.ts";
import { applyEvent, initialLiveState, LOG_TAIL, renderLiveView, renderSummary, type LiveState } from "./_live-render.ts";

const HIDE_CURSOR = "\u001b[?25l";
const SHOW_CURSOR = "\u001b[?25h";
// Synchronized output (DEC mode 2026): a terminal that knows it shows the frame whole, the rest ignore it.
const BEGIN_FRAME = "\u001b[?2026h";
const END_FRAME = "\u001b[?2026l";
/** ~12 frames a second: a smooth spinner, and far below what a terminal or a person notices as load. */
const FRAME_MS = 80;

/**
 * True when stderr gets the live view: a terminal that may animate. `NO_COLOR` and `TERM=dumb` turn
 * animation off with colour; CI logs (`CI`, GitHub Actions) are read as text afterwards, where
 * cursor movement would leave every frame behind. `FORCE_COLOR` forces colour, never animation.
 */
export function wantsLiveView(stream: TerminalStream, env: Record<string, string | undefined>): boolean {
  if (stream.isTTY !== true || env.NO_COLOR || env.TERM === "dumb" || isGitHubActions(env)) return false;
  return env.CI === undefined || env.CI === "" || env.CI === "0" || env.CI === "false";
}

/** A timer the view redraws on; tests pass a fake one. */
export interface FrameTimer {
  setInterval(tick: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Where and how the live view draws. */
export interface LiveViewOptions {
  /** Writes to the terminal (stderr); each frame is one call. */
  write(text: string): void;
  style: TerminalStyle;
  /** The terminal's size now; default `process.stderr.columns/rows` (80×24 when unknown). */
  size?: () => { columns: number; rows: number };
  /** Epoch ms; default `Date.now`. */
  now?: () => number;
  /** Default the global `setInterval`, unref'd so it never keeps the process alive. */
  timer?: FrameTimer;
  /** Runs `restore` when the process exits however it exits; answers the uninstaller. Default `process.on("exit")`. */
  onExit?: (restore: () => void) => () => void;
}

/** A run reporter that draws in place; `stop` restores the terminal (idempotent). */
export interface LiveView extends RunReporter {
  /** Prints a line of the CLI's own above the region, for good. */
  above(line: string): void;
  /** Shows a note while cancelling (null removes it). */
  cancelling(note: string | null): void;
  /** Draws the last frame, leaves it on screen and shows the cursor; nothing is drawn after. */
  stop(): void;
}

const defaultTimer: FrameTimer = {
  setInterval(tick, ms) {
    const handle = setInterval(tick, ms);
    (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clearInterval: (handle) => clearInterval(handle as ReturnType<typeof setInterval>),
};

/**
 * The live view. `print` only folds the event into the state (and formats a log line once): it
 * never writes, so a handler's 200,000 progress events cost 200,000 assignments and a few frames.
 * A frame moves the cursor up over the last region, erases to the end of the screen, prints the
 * lines that left the region (above, for good), then the new region: one write per frame.
 */
export function createLiveView(options: LiveViewOptions): LiveView {
  const { style } = options;
  const size = options.size ?? (() => ({ columns: process.stderr.columns || 80, rows: process.stderr.rows || 24 }));
  const now = options.now ?? Date.now;
  const timer = options.timer ?? defaultTimer;
  const plain = plainPrinters(style, { localTime: true });
  const state: LiveState = initialLiveState();
  /** Lines that left the region (or never belonged in it), to print above it at the next frame. */
  let pending: string[] = [];
  let drawn = 0;
  let frame = 0;
  let cursorHidden = false;
  let stopped = false;
  let handle: unknown = null;
  let uninstallExit: (() => void) | null = null;

  const toTail = (lines: string[]) => {
    for (const line of lines) state.tail.push(line);
    if (state.tail.length > LOG_TAIL) pending.push(...state.tail.splice(0, state.tail.length - LOG_TAIL));
  };
  const start = () => {
    if (handle !== null || stopped) return;
    handle = timer.setInterval(() => draw(), FRAME_MS);
    uninstallExit = (options.onExit ?? ((restore) => (process.on("exit", restore), () => process.off("exit", restore))))(() => view.stop());
  };
  /** Erases the region and prints `lines` where it was; the cursor ends on the line after them. */
  const paint = (lines: string[], last: boolean) => {
    let out = BEGIN_FRAME;
    if (!cursorHidden && !last) {
      out += HIDE_CURSOR;
      cursorHidden = true;
    }
    if (drawn > 0) out += `\u001b[${drawn}A\r\u001b[J`;
    if (pending.length > 0) out += `${pending.join("\n")}\n`;
    pending = [];
    if (lines.length > 0) out += `${lines.join("\n")}\n`;
    out += END_FRAME;
    if (last && cursorHidden) {
      out += SHOW_CURSOR;
      cursorHidden = false;
    }
    options.write(out);
    drawn = last ? 0 : lines.length;
  };
  const draw = () => {
    if (stopped) return;
    const { columns, rows } = size();
    paint(renderLiveView(state, { width: columns, height: rows, now: now(), frame: frame++, style }), false);
  };
  const teardown = () => {
    stopped = true;
    if (handle !== null) timer.clearInterval(handle);
    handle = null;
    uninstallExit?.();
    uninstallExit = null;
  };

  const view: LiveView = {
    print(event: ExecutionEvent) {
      if (stopped) return;
      start();
      applyEvent(state, event);
      switch (event.type) {
        case "execution.log":
        case "execution.diagnostic":
        case "execution.stream":
          toTail(plain.printers[event.type](event as never));
          return;
        case "execution.completed": {
          // The end replaces the region: the tail and a stream's unfinished line go above for
          // good, then every step and the verdict, printed once.
          pending.push(...state.tail, ...plain.flush());
          state.tail = [];
          teardown();
          paint(renderSummary(state, { now: now(), style }), true);
          return;
        }
        default:
          if (!(event.type in plain.printers)) pending.push(...plain.unknown(event));
      }
    },
    flush() {
      toTail(plain.flush());
    },
    above(line) {
      if (stopped) options.write(`${line}\n`);
      else pending.push(line);
    },
    cancelling(note) {
      state.cancelNote = note;
      if (note !== null && !stopped) draw();
    },
    stop() {
      if (stopped) return;
      if (handle === null) {
        // Never drew: nothing to restore, only lines to print.
        teardown();
        pending.push(...state.tail, ...plain.flush());
        if (pending.length > 0) options.write(`${pending.join("\n")}\n`);
        pending = [];
        return;
      }
      // The last frame stays as it is (the tail in it is on screen once); only the cursor comes back.
      draw();
      teardown();
      if (cursorHidden) options.write(SHOW_CURSOR);
      cursorHidden = false;
      drawn = 0;
    },
  };
  return view;
}
