/** @jsxImportSource hono/jsx */
import type { JSX } from "hono/jsx/jsx-runtime";
import { ExecutionTable } from "../components/execution-table.tsx";
import { StateCounts } from "../components/state-counts.tsx";
import { executionsPath } from "../paths.ts";
import type { ExecutionsProps } from "./executions.tsx";

/**
 * The parts of the executions list that live-list.js re-reads (by their `data-section` name): the
 * page draws each of them from here, and `?section=<name>` (repeated) answers those alone, so the
 * counts re-read at each change of state cost a count, not the page with its filters and rows.
 */
export const EXECUTIONS_SECTIONS = {
  counts: (p) => <StateCounts counts={p.counts} current={p.filter.state} />,
  list: (p) => {
    const { filter } = p;
    const filtered = filter.state !== null || filter.capability !== null;
    return (
      <div data-section="list">
        <ExecutionTable name="list" items={p.items} empty={filtered ? "No execution matches these filters." : "No executions yet."} caption="Executions, newest first" />
        <nav class="pager" aria-label="Pages">
          {filter.cursor ? <a href={executionsPath({ state: filter.state ?? undefined, capability: filter.capability ?? undefined })}>← First page</a> : <span></span>}
          {p.nextCursor ? (
            <a href={executionsPath({ state: filter.state ?? undefined, capability: filter.capability ?? undefined, cursor: p.nextCursor })} rel="next" data-next-page>
              Next page →
            </a>
          ) : (
            <span class="muted">End of the list.</span>
          )}
        </nav>
      </div>
    );
  },
} satisfies Record<string, (props: ExecutionsProps) => JSX.Element>;

/** A section's name. */
export type ExecutionsSectionName = keyof typeof EXECUTIONS_SECTIONS;

/** Every section's name, in the page's order. */
export const EXECUTIONS_SECTION_NAMES = Object.keys(EXECUTIONS_SECTIONS) as ExecutionsSectionName[];

/** Only the sections asked for, in a bare document: what refresh.js takes them from. */
export function ExecutionsSections(props: ExecutionsProps & { names: ExecutionsSectionName[] }) {
  return <div data-sections>{props.names.map((name) => EXECUTIONS_SECTIONS[name](props))}</div>;
}
