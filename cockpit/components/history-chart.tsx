/** @jsxImportSource hono/jsx */
import { STATE_LOOK } from "./badges.tsx";
import { historySummary, type HistoryPoint } from "../chart-data.ts";
import { formatDuration, formatTime } from "../format.ts";
import { executionPagePath } from "../paths.ts";

const W = 600;
const H = 160;
const PAD = { right: 12, top: 18, bottom: 12 };
/**
 * How wide one character of a label is drawn at most, in the chart's units: on a narrow screen the
 * chart shrinks to about half and its labels are drawn at 22 units to stay legible (cockpit.css),
 * a monospace character 0.6 of that.
 */
const LABEL_CHAR_W = 13.2;

/** A round duration as an axis says it, short: `250 ms`, `2.5 s`, `15 min`, `3 h`. */
function axisDuration(ms: number): string {
  const round = (n: number) => String(Number(n.toFixed(2)));
  if (ms < 1000) return `${round(ms)} ms`;
  if (ms < 60_000) return `${round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${round(ms / 60_000)} min`;
  return `${round(ms / 3_600_000)} h`;
}

/** A marker per outcome, each its own shape, so the chart reads without colour. */
function Marker(props: { point: HistoryPoint; x: number; y: number }) {
  const { x, y } = props;
  const state = props.point.state;
  const cls = `marker marker-${state}`;
  if (state === "succeeded") return <circle class={cls} cx={x.toFixed(1)} cy={y.toFixed(1)} r="4.5" />;
  if (state === "failed") return <path class={cls} d={`M${x - 4.5} ${y - 4.5}L${x + 4.5} ${y + 4.5}M${x - 4.5} ${y + 4.5}L${x + 4.5} ${y - 4.5}`} />;
  if (state === "cancelled") return <rect class={cls} x={(x - 4).toFixed(1)} y={(y - 4).toFixed(1)} width="8" height="8" />;
  return <circle class={`${cls} marker-open`} cx={x.toFixed(1)} cy={y.toFixed(1)} r="4.5" />;
}

/** A round number at or above `ms` for the top of the axis. */
function niceTop(ms: number): number {
  const steps = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000];
  return steps.find((s) => s >= ms) ?? Math.ceil(ms / 3_600_000) * 3_600_000;
}

/**
 * A capability's recent executions as a chart (server-rendered SVG, no script): one marker per
 * execution, left to right in the order they were created, its height the duration, its shape
 * the outcome; each marker links to its execution and names it on hover. Summary in words above.
 */
export function HistoryChart(props: { points: HistoryPoint[] }) {
  const points = props.points;
  const summary = historySummary(points);
  const finished = points.filter((p) => p.duration_ms !== null);
  const top = niceTop(Math.max(1, ...finished.map((p) => p.duration_ms!)));
  const ticks = [axisDuration(top), axisDuration(top / 2), "0"];
  // The labels' gutter fits the longest as a narrow screen draws it: cut there, "2.00 s" read "00 s" (cockpit tester, session 50).
  const padLeft = Math.max(56, Math.ceil(Math.max(...ticks.map((tick) => tick.length)) * LABEL_CHAR_W) + 10);
  const plotW = W - padLeft - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const xOf = (i: number) => padLeft + (points.length === 1 ? plotW / 2 : (i / (points.length - 1)) * plotW);
  const yOf = (ms: number | null) => PAD.top + plotH - (ms === null ? plotH : (Math.min(ms, top) / top) * plotH);
  const counts = (["succeeded", "failed", "cancelled"] as const).filter((s) => summary.counts[s]).map((s) => `${summary.counts[s]} ${s}`);
  const active = (summary.counts.running ?? 0) + (summary.counts.queued ?? 0) + (summary.counts.cancelling ?? 0);
  return (
    <section class="panel" aria-labelledby="history-heading" data-section="history">
      <h2 id="history-heading">History</h2>
      {points.length === 0 ? (
        <p class="empty">No executions of this capability yet: the chart fills in as it runs.</p>
      ) : (
        <>
          <p class="muted small" data-slot="history-summary">
            {`Last ${points.length}: ${[...counts, ...(active ? [`${active} not finished`] : [])].join(", ")}.`}
            {summary.medianMs !== null ? ` Median ${formatDuration(summary.medianMs)}, 90th percentile ${formatDuration(summary.p90Ms)}.` : ""}
          </p>
          <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="history-heading" data-chart="history">
            <line class="chart-axis" x1={padLeft} y1={PAD.top + plotH} x2={W - PAD.right} y2={PAD.top + plotH} />
            <line class="chart-axis" x1={padLeft} y1={PAD.top} x2={padLeft} y2={PAD.top + plotH} />
            <line class="chart-grid" x1={padLeft} y1={PAD.top + plotH / 2} x2={W - PAD.right} y2={PAD.top + plotH / 2} />
            {ticks.map((tick, i) => (
              <text class="chart-label" x={padLeft - 6} y={PAD.top + (plotH * i) / 2 + 4} text-anchor="end">
                {tick}
              </text>
            ))}
            {points.map((point, i) => (
              <a href={executionPagePath(point.id)}>
                <title>{`${point.id}: ${STATE_LOOK[point.state].word.toLowerCase()}${point.duration_ms !== null ? ` in ${formatDuration(point.duration_ms)}` : ""}, created ${formatTime(point.created_at)}`}</title>
                <Marker point={point} x={xOf(i)} y={yOf(point.duration_ms)} />
              </a>
            ))}
          </svg>
          {/*
            The horizontal axis in words below the drawing, where a narrow screen wraps them: drawn
            in it, two times and the caption overlapped at 390 px (cockpit tester, session 50). It
            is an order, not a clock: six runs in one second and one nine minutes later are seven
            even steps (cockpit tester).
          */}
          <p class="chart-x small muted" data-slot="history-x">
            <span>{formatTime(points[0]!.created_at)}</span>
            <span data-slot="history-axis">{points.length > 1 ? "in order, evenly spaced" : ""}</span>
            {points.length > 1 ? <span>{formatTime(points[points.length - 1]!.created_at)}</span> : null}
          </p>
          <ul class="chart-legend" aria-label="Legend">
            <li>
              <span class="legend-shape" aria-hidden="true">●</span> succeeded
            </li>
            <li>
              <span class="legend-shape" aria-hidden="true">✕</span> failed
            </li>
            <li>
              <span class="legend-shape" aria-hidden="true">■</span> cancelled
            </li>
            <li>
              <span class="legend-shape" aria-hidden="true">○</span> not finished (drawn at the top)
            </li>
          </ul>
        </>
      )}
    </section>
  );
}
