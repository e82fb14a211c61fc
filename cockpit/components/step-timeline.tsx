/** @jsxImportSource hono/jsx */
import type { StepSnapshot } from "../../runtime/execution/snapshot.ts";
import { formatDuration, stepsDroppedText } from "../format.ts";
import { timelineBars, type EndOf, type TimelineBar } from "../timeline.ts";

const STATE_WORDS: Record<TimelineBar["state"], string> = {
  running: "running",
  succeeded: "done",
  failed: "failed",
  stopped: "stopped",
};

/**
 * The steps as bars from start to end on one time axis (SVG, drawn by the server; attributes, not
 * styles, so the strict CSP holds). Each state has its own fill pattern as well as colour, and each
 * row says its state and duration in words: readable without colour. execution.js re-reads this
 * section from the server while steps change, so the drawing is written once.
 */
export function StepTimeline(props: { steps: StepSnapshot[]; execution: EndOf & { steps_dropped?: number; steps_dropped_failed?: number }; now: number }) {
  const { bars, spanMs } = timelineBars(props.steps, props.execution, props.now);
  const dropped = props.execution.steps_dropped ?? 0;
  return (
    <section class="panel" aria-labelledby="timeline-heading" data-section="timeline" hidden={bars.length === 0}>
      <h2 id="timeline-heading">Timeline</h2>
      <p class="muted small">{`${bars.length} step(s) over ${formatDuration(spanMs)}.${dropped > 0 ? ` ${stepsDroppedText(dropped, props.execution.steps_dropped_failed ?? null)}` : ""}`}</p>
      <ol class="timeline" data-slot="timeline">
        {bars.map((bar) => (
          <li class="timeline-row" data-step-id={bar.id} data-step-state={bar.state}>
            <span class="timeline-label wrap-anywhere">{bar.title}</span>
            <svg class="timeline-track" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label={`${bar.title}: ${STATE_WORDS[bar.state]}, ${formatDuration(bar.durationMs)}`}>
              <rect class="timeline-axis" x="0" y="4.5" width="100" height="1" />
              <rect class={`timeline-bar timeline-bar-${bar.state}`} x={bar.left.toFixed(2)} y="1" width={bar.width.toFixed(2)} height="8" />
            </svg>
            <span class="timeline-time muted small">{`${STATE_WORDS[bar.state]} · ${formatDuration(bar.durationMs)}`}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
