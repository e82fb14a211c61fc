// The live view's model and its drawing: what a run looks like at one instant, as lines that fit
// the terminal. Pure, so that tests check a frame without a terminal or a clock.
import type { ExecutionEvent } from "../execution/protocol.ts";
import { CANCEL_WORDS } from "../execution/cancel-words.ts";
import { formatDuration } from "./run-reporter.ts";
import type { TerminalStyle } from "./_terminal.ts";

/** Braille spinner frames, one per frame tick. */
export const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] as const;

/** Lines of the log tail kept in the region; the older ones are printed above it for good. */
export const LOG_TAIL = 3;

/** One step as the view shows it. */
export interface LiveStep {
  id: string;
  title: string;
  state: "running" | "done" | "failed";
  message?: string;
}

/** What the view knows of a run: folded from its events, one cheap assignment per event. */
export interface LiveState {
  capability: string;
  executionId: string;
  state: "queued" | "running" | "cancelling" | "succeeded" | "failed" | "cancelled";
  /** Epoch ms of the first event seen, from which the elapsed time counts. */
  startedAt: number | null;
  durationMs: number | null;
  steps: LiveStep[];
  progress: { current: number; total: number | null; message?: string } | null;
  /** Log lines and diagnostics, already formatted, newest last; at most LOG_TAIL. */
  tail: string[];
  /** The note shown while cancelling, or null. */
  cancelNote: string | null;
}

/** The state before any event. */
export function initialLiveState(): LiveState {
  return { capability: "", executionId: "", state: "queued", startedAt: null, durationMs: null, steps: [], progress: null, tail: [], cancelNote: null };
}

/**
 * Folds one event into the state (in place: a handler may send hundreds of thousands of progress
 * events, and each must cost an assignment, not a copy). Log lines and diagnostics are the
 * driver's, which formats them once; steps are looked up from the end, where the live ones are.
 */
export function applyEvent(state: LiveState, event: ExecutionEvent): void {
  state.executionId ||= event.execution_id;
  if (state.startedAt === null) {
    const at = Date.parse(event.timestamp);
    state.startedAt = Number.isNaN(at) ? null : at;
  }
  switch (event.type) {
    case "execution.created":
      state.capability = (event as ExecutionEvent<"execution.created">).data.capability;
      return;
    case "execution.started":
      if (state.state === "queued") state.state = "running";
      return;
    case "execution.step": {
      const data = (event as ExecutionEvent<"execution.step">).data;
      if (state.state === "queued") state.state = "running";
      const known = findStep(state, data.id);
      if (known) Object.assign(known, { title: data.title, state: "running", message: undefined });
      else state.steps.push({ id: data.id, title: data.title, state: "running" });
      return;
    }
    case "execution.step_done": {
      const data = (event as ExecutionEvent<"execution.step_done">).data;
      const step = findStep(state, data.id) ?? (state.steps[state.steps.push({ id: data.id, title: data.id, state: "running" }) - 1] as LiveStep);
      step.state = data.ok ? "done" : "failed";
      step.message = data.message;
      return;
    }
    case "execution.progress": {
      const data = (event as ExecutionEvent<"execution.progress">).data;
      state.progress = { current: data.current, total: data.total ?? null, message: data.message };
      return;
    }
    case "execution.cancel_requested": {
      if (state.state === "queued" || state.state === "running") state.state = "cancelling";
      // Nobody asked (a deadline passed, the handler stopped itself): the note says why it is cancelling.
      const reason = (event as ExecutionEvent<"execution.cancel_requested">).data.reason;
      if (reason !== undefined) state.cancelNote ??= CANCEL_WORDS[reason];
      return;
    }
    case "execution.completed": {
      const data = (event as ExecutionEvent<"execution.completed">).data;
      state.state = data.state;
      state.durationMs = data.duration_ms;
      state.cancelNote = null;
      return;
    }
  }
}

function findStep(state: LiveState, id: string): LiveStep | undefined {
  for (let i = state.steps.length - 1; i >= 0; i--) if (state.steps[i]!.id === id) return state.steps[i];
  return undefined;
}

/** The terminal a frame is drawn for, and the instant it shows. */
export interface FrameOptions {
  width: number;
  height: number;
  /** Epoch ms, for the elapsed time. */
  now: number;
  /** The spinner frame: any integer, taken modulo the frames. */
  frame: number;
  style: TerminalStyle;
}

/**
 * The live region: a header, the steps, a progress bar, the log tail and the cancelling note.
 * Never more than `height - 1` lines (the cursor's own line stays free, so the region never
 * scrolls the screen) nor wider than `width - 1` columns (a line that filled the last column would
 * wrap on some terminals, and the cursor-up of the next redraw would miss it). When the steps do
 * not fit, the oldest finished ones give way to one "… N earlier steps" line.
 */
export function renderLiveView(state: LiveState, options: FrameOptions): string[] {
  const { style } = options;
  const width = Math.max(1, options.width - 1);
  const budget = Math.max(1, options.height - 1);
  const spin = SPINNER[((options.frame % SPINNER.length) + SPINNER.length) % SPINNER.length]!;
  const fit = (line: string) => truncate(line, width, style.color);

  const header = fit(headerLine(state, spin, options.now, style));
  const note = state.cancelNote ? fit(`  ${style.yellow(oneLine(state.cancelNote))}`) : null;
  const bar = state.progress ? fit(progressLine(state.progress, width, spin, style)) : null;
  // The header matters most, then the cancelling note, then the bar; the steps keep up to three
  // lines before the log tail gets any, and whatever is left after the tail.
  const fixed = [header, ...(note ? [note] : []), ...(bar ? [bar] : [])];
  if (fixed.length >= budget) return fixed.slice(0, budget);
  const room = budget - fixed.length;
  const tailCount = Math.min(state.tail.length, Math.max(0, room - Math.min(state.steps.length, 3)));
  const tail = state.tail.slice(state.tail.length - tailCount).map((line) => fit(`  ${oneLine(line)}`));
  const steps = stepLines(state.steps, room - tailCount, spin, style, !isLive(state)).map(fit);
  return [header, ...steps, ...(bar ? [bar] : []), ...tail, ...(note ? [note] : [])];
}

/** True until the execution reached a terminal state. */
function isLive(state: LiveState): boolean {
  return state.state === "queued" || state.state === "running" || state.state === "cancelling";
}

function headerLine(state: LiveState, spin: string, now: number, style: TerminalStyle): string {
  const live = isLive(state);
  const mark = live ? style.cyan(spin) : state.state === "succeeded" ? style.green("✔") : state.state === "failed" ? style.red("✘") : style.yellow("■");
  const elapsed = state.durationMs ?? (state.startedAt === null ? 0 : Math.max(0, now - state.startedAt));
  const word = state.state === "cancelling" ? style.yellow(state.state) : state.state;
  const took = state.durationMs === null ? formatDuration(elapsed) : `in ${formatDuration(elapsed)}`;
  return `${mark} ${style.bold(state.capability || "run")} ${style.dim(state.executionId)} ${word} ${style.dim(took)}`;
}

/** A step still running once its execution ended is shown stopped, never with a spinner that no longer turns. */
function stepLines(steps: LiveStep[], room: number, spin: string, style: TerminalStyle, ended: boolean): string[] {
  if (room <= 0 || steps.length === 0) return [];
  let shown = steps;
  let hidden = 0;
  if (steps.length > room) {
    // Keep every running step if it can be: the finished ones go first, oldest first.
    const excess = steps.length - (room - 1);
    let dropped = 0;
    shown = steps.filter((step) => (step.state !== "running" && dropped < excess ? (dropped++, false) : true));
    shown = shown.slice(Math.max(0, shown.length - (room - 1)));
    hidden = steps.length - shown.length;
  }
  const lines = shown.map((step) => {
    const stopped = ended && step.state === "running";
    const mark = stopped ? style.yellow("■") : step.state === "running" ? style.cyan(spin) : step.state === "done" ? style.green("✔") : style.red("✘");
    const message = stopped ? style.dim(" — stopped: the execution ended before this step did") : step.message ? style.dim(` — ${oneLine(step.message)}`) : "";
    return `  ${mark} ${oneLine(step.title)}${message}`;
  });
  return hidden > 0 ? [style.dim(`  … ${hidden} earlier step${hidden === 1 ? "" : "s"}`), ...lines] : lines;
}

function progressLine(progress: NonNullable<LiveState["progress"]>, width: number, spin: string, style: TerminalStyle): string {
  const message = progress.message ? `  ${oneLine(progress.message)}` : "";
  if (progress.total === null || !(progress.total > 0)) return `  ${style.cyan(spin)} ${progress.current.toLocaleString("en-US")} so far${message}`;
  const ratio = Math.min(1, Math.max(0, progress.current / progress.total));
  const barWidth = Math.max(5, Math.min(30, Math.floor(width / 3)));
  const filled = Math.round(ratio * barWidth);
  const bar = `${style.cyan("█".repeat(filled))}${style.dim("░".repeat(barWidth - filled))}`;
  return `  ${bar} ${progress.current}/${progress.total} ${Math.floor(ratio * 100)}%${message}`;
}

/** A message on one line: a newline or a control character inside the region would break its height. */
export function oneLine(text: string): string {
  // Escape sequences are kept (the formatted tail carries our own colours); other controls become spaces.
  return text.replace(/[\u0000-\u0008\u000a-\u001a\u001c-\u001f\u007f]/g, " ").replace(/\t/g, "  ");
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/y;

/** Columns a code point takes: 2 for East Asian wide and most emoji, 0 for combining marks, else 1. */
function columnsOf(code: number): number {
  if ((code >= 0x300 && code <= 0x36f) || code === 0x200d || (code >= 0xfe00 && code <= 0xfe0f)) return 0;
  if (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  )
    return 2;
  return 1;
}

/** Columns `text` takes on screen, escape sequences not counted. */
export function displayWidth(text: string): number {
  return truncateAt(text, Number.POSITIVE_INFINITY).columns;
}

/**
 * `text` cut to `width` columns, with `…` where it was cut; escape sequences do not count, and a
 * cut line ends with a reset so a colour never leaks into the next line.
 */
export function truncate(text: string, width: number, color: boolean): string {
  if (displayWidth(text) <= width) return text;
  const cut = truncateAt(text, Math.max(0, width - 1));
  return `${cut.text}…${color || cut.text.includes("\u001b[") ? "\u001b[0m" : ""}`;
}

function truncateAt(text: string, width: number): { text: string; columns: number } {
  let columns = 0;
  let i = 0;
  while (i < text.length) {
    ANSI.lastIndex = i;
    const escape = ANSI.exec(text);
    if (escape) {
      i += escape[0].length;
      continue;
    }
    const code = text.codePointAt(i)!;
    const w = columnsOf(code);
    if (columns + w > width) break;
    columns += w;
    i += code > 0xffff ? 2 : 1;
  }
  return { text: text.slice(0, i), columns };
}

/**
 * What stays on screen once the run has ended, in place of the region: every step with its mark,
 * then the run's state and duration. All the steps, however many: it is printed once, not redrawn.
 */
export function renderSummary(state: LiveState, options: Pick<FrameOptions, "now" | "style">): string[] {
  const steps = stepLines(state.steps, Number.POSITIVE_INFINITY, "·", options.style, !isLive(state));
  // Not cut to the width: printed once and never redrawn, a long line may wrap like any output.
  return [...steps, headerLine(state, "·", options.now, options.style)];
}
