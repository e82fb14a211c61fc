/** @jsxImportSource hono/jsx */
import type { JSX } from "hono/jsx/jsx-runtime";
import { ExecutionTable } from "../components/execution-table.tsx";
import { StateChart } from "../components/state-chart.tsx";
import { StateCounts } from "../components/state-counts.tsx";
import type { OverviewProps } from "./overview.tsx";

/**
 * The parts of the overview that live-list.js re-reads (by their `data-section` name): the page
 * draws each of them from here, and `?section=<name>` (repeated) answers those alone, so the
 * counts re-read at each change of state cost a count, not the page and its chart.
 */
export const OVERVIEW_SECTIONS = {
  counts: (p) => <StateCounts counts={p.counts} />,
  activity: (p) => <StateChart buckets={p.activity.buckets} spanHours={p.activity.spanHours} more={p.activity.more} />,
  active: (p) => (
    <div data-section="active">
      <ExecutionTable name="active" items={p.active} empty="Nothing is running or queued." caption="Executions running, cancelling or queued" />
    </div>
  ),
  recent: (p) => (
    <div data-section="recent">
      <ExecutionTable name="recent" items={p.recent} empty="No executions yet. Start one from a capability's page." caption="Most recent executions" />
    </div>
  ),
} satisfies Record<string, (props: OverviewProps) => JSX.Element>;

/** A section's name. */
export type OverviewSectionName = keyof typeof OVERVIEW_SECTIONS;

/** Every section's name, in the page's order. */
export const OVERVIEW_SECTION_NAMES = Object.keys(OVERVIEW_SECTIONS) as OverviewSectionName[];

/** Only the sections asked for, in a bare document: what refresh.js takes them from. */
export function OverviewSections(props: OverviewProps & { names: OverviewSectionName[] }) {
  return <div data-sections>{props.names.map((name) => OVERVIEW_SECTIONS[name](props))}</div>;
}
