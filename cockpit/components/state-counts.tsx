/** @jsxImportSource hono/jsx */
import { EXECUTION_STATES, type ExecutionState } from "../../runtime/execution/state-machine.ts";
import { executionsPath } from "../paths.ts";
import { StateBadge } from "./badges.tsx";

/** How many executions the store holds in each state, each a link to the list filtered by it; live-list.js re-reads it from the server. */
export function StateCounts(props: { counts: Record<ExecutionState, number>; current?: ExecutionState | null }) {
  return (
    <ul class="counts" data-counts data-section="counts" aria-label="Executions per state">
      {EXECUTION_STATES.map((state) => (
        <li>
          <a href={executionsPath({ state })} class="count-tile" aria-current={props.current === state ? "true" : undefined}>
            <StateBadge state={state} />
            <span class="count" data-count={state}>
              {String(props.counts[state] ?? 0)}
            </span>
          </a>
        </li>
      ))}
    </ul>
  );
}
