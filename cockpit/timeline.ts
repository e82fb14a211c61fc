import type { StepSnapshot } from "../runtime/execution/snapshot.ts";
import { shownCut, SHOWN_TITLE_CHARS } from "./format.ts";

/** One step as a bar: where it starts and how long it is, in percent of the execution's span. */
export interface TimelineBar {
  id: string;
  title: string;
  /** `stopped`: still running when the execution ended (cancelled or failed around it). */
  state: StepSnapshot["state"] | "stopped";
  left: number;
  width: number;
  durationMs: number;
}

/** The smallest bar drawn, in percent, so an instant step is still seen. */
const MIN_WIDTH = 0.6;

/**
 * The steps as bars on one time axis, from the execution's start (or its first step) to its end
 * (or `now` while it runs). A step still running is drawn to the axis' end; once the execution
 * has ended it is "stopped", never "running".
 */
export function timelineBars(steps: StepSnapshot[], execution: EndOf, now: number): { bars: TimelineBar[]; spanMs: number } {
  if (steps.length === 0) return { bars: [], spanMs: 0 };
  const starts = steps.map((s) => Date.parse(s.started_at));
  const from = Math.min(execution.started_at ? Date.parse(execution.started_at) : Infinity, ...starts);
  const until = ranUntil(execution);
  const ended = until === null ? null : Date.parse(until);
  const to = Math.max(ended ?? now, ...steps.map((s) => (s.finished_at ? Date.parse(s.finished_at) : (ended ?? now))));
  const span = Math.max(1, to - from);
  const bars = steps.map((step, i): TimelineBar => {
    const start = starts[i]!;
    const end = step.finished_at ? Date.parse(step.finished_at) : (ended ?? now);
    const left = ((start - from) / span) * 100;
    const width = Math.max(MIN_WIDTH, ((end - start) / span) * 100);
    return {
      id: step.id,
      title: shownCut(step.title, SHOWN_TITLE_CHARS),
      state: step.state === "running" && ended !== null ? "stopped" : step.state,
      left: Math.min(left, 100 - MIN_WIDTH),
      width: Math.min(width, 100 - Math.min(left, 100 - MIN_WIDTH)),
      durationMs: Math.max(0, end - start),
    };
  });
  return { bars, spanMs: span };
}

/** What {@link ranUntil} reads of an execution. */
export type EndOf = { started_at: string | null; finished_at: string | null; duration_ms?: number | null };

/**
 * When an ended execution stopped running, for the steps it left running: its start plus its
 * duration, where that is earlier than `finished_at` — a run a crash interrupted is ended by the
 * next start, minutes later, its duration counted to its last event (cockpit tester: a step drawn
 * running through the time the server was down). Null while it has not ended.
 */
export function ranUntil(execution: EndOf): string | null {
  if (execution.finished_at === null) return null;
  const started = execution.started_at === null ? Number.NaN : Date.parse(execution.started_at);
  const duration = execution.duration_ms ?? Number.NaN;
  if (!Number.isFinite(started) || !Number.isFinite(duration)) return execution.finished_at;
  const end = started + duration;
  return end < Date.parse(execution.finished_at) ? new Date(end).toISOString() : execution.finished_at;
}
