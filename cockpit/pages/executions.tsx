/** @jsxImportSource hono/jsx */
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { EXECUTION_STATES, type ExecutionState } from "../../runtime/execution/state-machine.ts";
import { BadgeTemplates } from "../components/badges.tsx";
import { ConnectionStatus } from "../components/connection-status.tsx";
import { Layout } from "../components/layout.tsx";
import { STATE_LOOK } from "../components/badges.tsx";
import { apiExecutionsPath, EXECUTION_PAGE_TEMPLATE, executionsPath, ID_PLACEHOLDER, LIVE_CHANNEL_PATH } from "../paths.ts";
import { EXECUTIONS_SECTIONS } from "./executions-sections.tsx";

/** What the executions list shows. */
export interface ExecutionsProps {
  root: string;
  items: ExecutionSnapshot[];
  counts: Record<ExecutionState, number>;
  nextCursor: string | null;
  /** How many rows a page shows at most: a reload shows no more new executions than that. */
  pageSize: number;
  filter: { state: ExecutionState | null; capability: string | null; cursor: string | null };
  /** Capability ids to offer in the filter (the registry's, plus the filtered one). */
  capabilityIds: string[];
  heartbeatMs: number;
}

/**
 * `/cockpit/executions`: everything this server ran or was told about, newest first, with counts
 * per state, filters by state and capability and cursor paging. Rows shown update live; the counts
 * and the rows are re-read from the server whenever the live channel is (again) ready.
 */
export function ExecutionsPage(props: ExecutionsProps) {
  const { filter } = props;
  const ids = [...new Set([...props.capabilityIds, ...(filter.capability ? [filter.capability] : [])])].sort();
  const filtered = filter.state !== null || filter.capability !== null;
  return (
    <Layout title="Executions" section="executions" root={props.root} scripts={["socket.js", "format.js", "refresh.js", "live-list.js"]}>
      <div
        class="page"
        data-docket-list
        data-mode="list"
        data-page={executionsPath({ state: filter.state ?? undefined, capability: filter.capability ?? undefined, cursor: filter.cursor ?? undefined })}
        data-filter-state={filter.state ?? ""}
        data-filter-capability={filter.capability ?? ""}
        data-page-size={String(props.pageSize)}
        data-socket={LIVE_CHANNEL_PATH}
        data-heartbeat-ms={String(props.heartbeatMs)}
        data-execution-url={EXECUTION_PAGE_TEMPLATE}
        data-id-placeholder={ID_PLACEHOLDER}
      >
        <div class="page-head">
          <div>
            <h1>Executions</h1>
            <p class="muted">
              What this server ran and what <code>docket run</code> reported to it, newest first. Also as JSON: <a href={apiExecutionsPath()}>{apiExecutionsPath()}</a>
            </p>
          </div>
          <ConnectionStatus finished={false} />
        </div>

        <section class="panel" aria-labelledby="counts-heading">
          {/* The counts are the whole store's: a list filtered by capability said "Succeeded 89" beside one row (cockpit tester, session 46). */}
          <h2 id="counts-heading">{filter.capability ? "By state, every capability" : "By state"}</h2>
          {EXECUTIONS_SECTIONS.counts(props)}
        </section>

        <section class="panel" aria-labelledby="list-heading">
          <h2 id="list-heading" class="visually-hidden">
            Executions
          </h2>
          <form method="get" action={executionsPath()} class="filters" role="search" aria-label="Filter executions">
            <div class="field">
              <label for="filter-state">State</label>
              <select id="filter-state" name="state">
                <option value="">Any state</option>
                {EXECUTION_STATES.map((state) => (
                  <option value={state} selected={filter.state === state}>
                    {STATE_LOOK[state].word}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="filter-capability">Capability</label>
              <select id="filter-capability" name="capability">
                <option value="">Any capability</option>
                {ids.map((id) => (
                  <option value={id} selected={filter.capability === id}>
                    {id}
                  </option>
                ))}
              </select>
            </div>
            <div class="actions">
              <button type="submit" class="button">
                Filter
              </button>
              {filtered ? <a href={executionsPath()}>Clear filters</a> : null}
            </div>
          </form>
          {EXECUTIONS_SECTIONS.list(props)}
        </section>
        <p class="notice notice-info" data-slot="resync" hidden role="status">
          <span class="glyph" aria-hidden="true">
            ℹ
          </span>
          <span>
            <span data-slot="new-count">New executions match this list</span> — <a href="" data-reload>reload</a> to see them.
          </span>
        </p>
        <BadgeTemplates />
      </div>
    </Layout>
  );
}
