/** @jsxImportSource hono/jsx */
import { BUCKET_STATES, type Bucket, type BucketState } from "../chart-data.ts";

const W = 600;
const H = 160;
const PAD = { right: 8, top: 18, bottom: 26 };
/** How wide one character of a label is drawn at most, in the chart's units (history-chart.tsx says why). */
const LABEL_CHAR_W = 13.2;

const WORDS: Record<BucketState, string> = { succeeded: "succeeded", failed: "failed", cancelled: "cancelled", active: "running or queued" };

/** `14:30` in UTC (the server does not know the reader's zone). */
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** A bar's fill: a pattern of the chart's own (an SVG attribute; the stylesheet fetches nothing). */
const FILL: Record<BucketState, string | undefined> = { succeeded: undefined, failed: "url(#fill-failed)", cancelled: "url(#fill-cancelled)", active: "url(#fill-active)" };

/**
 * Executions per state over the last hours (server-rendered SVG): one stacked bar per time slice,
 * each state with its own fill pattern as well as colour, so it reads without colour; every bar
 * says its counts on hover and the same figures are in a table for screen readers.
 */
export function StateChart(props: { buckets: Bucket[]; spanHours: number; more: boolean }) {
  const { buckets } = props;
  const totals = buckets.map((b) => BUCKET_STATES.reduce((n, s) => n + b.counts[s], 0));
  const top = Math.max(1, ...totals);
  // The gutter fits the count at the top as a narrow screen draws it (a label past it was cut: cockpit tester, session 50).
  const padLeft = Math.max(36, Math.ceil(String(top).length * LABEL_CHAR_W) + 10);
  const plotW = W - padLeft - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, buckets.length);
  const barW = Math.max(2, slot * 0.72);
  const total = totals.reduce((a, b) => a + b, 0);
  return (
    <section class="panel" aria-labelledby="activity-heading" data-section="activity">
      <h2 id="activity-heading">{`Last ${props.spanHours} hours`}</h2>
      <p class="muted small" data-slot="activity-summary">
        {total === 0 ? "No executions were created in this time." : `${total} execution(s) created${props.more ? " (the newest 2,000 are counted)" : ""}; each bar is ${Math.round((props.spanHours * 60) / Math.max(1, buckets.length))} minutes, UTC.`}
      </p>
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="activity-heading" data-chart="activity">
        <defs>
          <pattern id="fill-failed" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
            <rect class="pattern-bg pattern-failed" width="6" height="6" />
            <line class="pattern-line" x1="0" y1="0" x2="0" y2="6" />
          </pattern>
          <pattern id="fill-cancelled" width="5" height="5" patternUnits="userSpaceOnUse">
            <rect class="pattern-bg pattern-cancelled" width="5" height="5" />
            <circle class="pattern-dot" cx="2.5" cy="2.5" r="1" />
          </pattern>
          <pattern id="fill-active" width="6" height="6" patternUnits="userSpaceOnUse">
            <rect class="pattern-bg pattern-active" width="6" height="6" />
            <line class="pattern-line" x1="0" y1="3" x2="6" y2="3" />
          </pattern>
        </defs>
        <line class="chart-axis" x1={padLeft} y1={PAD.top + plotH} x2={W - PAD.right} y2={PAD.top + plotH} />
        <text class="chart-label" x={padLeft - 6} y={PAD.top + 4} text-anchor="end">
          {String(top)}
        </text>
        <text class="chart-label" x={padLeft - 6} y={PAD.top + plotH + 4} text-anchor="end">
          0
        </text>
        {buckets.map((bucket, i) => {
          let y = PAD.top + plotH;
          const x = padLeft + i * slot + (slot - barW) / 2;
          return (
            <g data-bucket={String(i)}>
              <title>{`${clock(bucket.from)}–${clock(bucket.to)} UTC: ${BUCKET_STATES.map((s) => `${bucket.counts[s]} ${WORDS[s]}`).join(", ")}`}</title>
              {BUCKET_STATES.filter((s) => bucket.counts[s] > 0).map((state) => {
                const h = (bucket.counts[state] / top) * plotH;
                y -= h;
                return <rect class={`bar bar-${state}`} fill={FILL[state]} x={x.toFixed(1)} y={y.toFixed(1)} width={barW.toFixed(1)} height={h.toFixed(1)} />;
              })}
            </g>
          );
        })}
        {buckets.length > 0 ? (
          <>
            <text class="chart-label" x={padLeft} y={H - 8}>
              {clock(buckets[0]!.from)}
            </text>
            <text class="chart-label" x={W - PAD.right} y={H - 8} text-anchor="end">
              {`${clock(buckets[buckets.length - 1]!.to)} UTC`}
            </text>
          </>
        ) : null}
      </svg>
      <ul class="chart-legend" aria-label="Legend">
        {BUCKET_STATES.map((state) => (
          <li>
            <svg class="legend-swatch" viewBox="0 0 12 12" aria-hidden="true">
              <rect class={`bar bar-${state}`} fill={FILL[state]} width="12" height="12" />
            </svg>{" "}
            {WORDS[state]}
          </li>
        ))}
      </ul>
      <div class="visually-hidden">
      <table>
        <caption>Executions per state and time slice</caption>
        <thead>
          <tr>
            <th scope="col">From (UTC)</th>
            {BUCKET_STATES.map((s) => (
              <th scope="col">{WORDS[s]}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {buckets.map((bucket) => (
            <tr>
              <th scope="row">{clock(bucket.from)}</th>
              {BUCKET_STATES.map((s) => (
                <td>{String(bucket.counts[s])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    </section>
  );
}
