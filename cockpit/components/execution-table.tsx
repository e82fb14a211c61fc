/** @jsxImportSource hono/jsx */
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { actorLabel, formatDuration, progressText } from "../format.ts";
import { capabilityPagePath, executionPagePath } from "../paths.ts";
import { StateBadge } from "./badges.tsx";
import { When } from "./when.tsx";

/** One execution as a row; the `data-cell` slots are what live-list.js updates, from events after `data-sequence`. */
function ExecutionRow(props: { execution: ExecutionSnapshot; now: number }) {
  const x = props.execution;
  return (
    <tr data-execution-row={x.id} data-state={x.state} data-sequence={String(x.last_sequence)}>
      <td data-cell="state">
        <StateBadge state={x.state} />
      </td>
      <td>
        <a href={executionPagePath(x.id)} class="mono nowrap" data-cell="link">
          {x.id}
        </a>
      </td>
      <td>
        <a href={capabilityPagePath(x.capability)} class="nowrap" data-cell="capability">
          {x.capability}
        </a>
      </td>
      <td data-cell="actor">{actorLabel(x.actor)}</td>
      <td data-cell="created" class="nowrap">
        <When iso={x.created_at} now={props.now} />
      </td>
      <td data-cell="duration" class="nowrap">{formatDuration(x.duration_ms)}</td>
      <td data-cell="progress" class="wrap-anywhere">
        {x.progress ? progressText(x.progress) : "—"}
      </td>
    </tr>
  );
}

/** Executions as a table, newest first; `name` tells live-list.js which table this is. */
export function ExecutionTable(props: { name: string; items: ExecutionSnapshot[]; empty: string; caption: string; now?: number }) {
  const now = props.now ?? Date.now();
  return (
    <div class="table-scroll">
      <table class="table" data-execution-table={props.name}>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Execution</th>
            <th scope="col">Capability</th>
            <th scope="col">Started by</th>
            <th scope="col">Created</th>
            <th scope="col">Duration</th>
            <th scope="col">Progress</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((x) => (
            <ExecutionRow execution={x} now={now} />
          ))}
          <tr data-empty hidden={props.items.length > 0}>
            <td colspan={7} class="empty">
              {props.empty}
            </td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

/** An empty row for live-list.js to clone when an execution appears (its text is set with textContent). */
export function ExecutionRowTemplate() {
  return (
    <template data-template="execution-row">
      <table>
        <tbody>
          <tr data-root data-execution-row="" data-state="queued">
            <td data-cell="state"></td>
            <td>
              <a href="" class="mono nowrap" data-cell="link"></a>
            </td>
            <td>
              <span data-cell="capability" class="nowrap"></span>
            </td>
            <td data-cell="actor"></td>
            <td data-cell="created" class="nowrap"></td>
            <td data-cell="duration" class="nowrap">
              —
            </td>
            <td data-cell="progress" class="wrap-anywhere">
              —
            </td>
          </tr>
        </tbody>
      </table>
    </template>
  );
}
