/** @jsxImportSource hono/jsx */
import type { LoadError } from "../../runtime/capability/registered.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import type { ExecutionState } from "../../runtime/execution/state-machine.ts";
import { BadgeTemplates } from "../components/badges.tsx";
import { ConnectionStatus } from "../components/connection-status.tsx";
import { ExecutionRowTemplate } from "../components/execution-table.tsx";
import { OVERVIEW_SECTIONS } from "./overview-sections.tsx";
import { Layout } from "../components/layout.tsx";
import { LoadErrors } from "../components/load-errors.tsx";
import { CATALOG_PATH } from "../catalog-signature.ts";
import type { Bucket } from "../chart-data.ts";
import { capabilitiesPath, EXECUTION_PAGE_TEMPLATE, executionsPath, ID_PLACEHOLDER, LIVE_CHANNEL_PATH, overviewPath } from "../paths.ts";

/** What the overview shows. */
export interface OverviewProps {
  root: string;
  counts: Record<ExecutionState, number>;
  /** Queued, running and cancelling executions, newest first. */
  active: ExecutionSnapshot[];
  recent: ExecutionSnapshot[];
  loadErrors: LoadError[];
  capabilityCount: number;
  heartbeatMs: number;
  /** Executions per state over the last hours, for the chart. */
  activity: { buckets: Bucket[]; spanHours: number; more: boolean };
  /** The registry's signature when rendered; catalog-watch.js swaps the parts marked data-catalog-slot when it changes. */
  catalog?: string;
}

/**
 * `/cockpit`: what runs now, what ran recently, how many are in each state, and which capability
 * files did not load. live-list.js keeps it current over the live channel (every execution).
 */
export function OverviewPage(props: OverviewProps) {
  return (
    <Layout title="Overview" section="overview" root={props.root} scripts={["socket.js", "format.js", "refresh.js", "live-list.js", "catalog-watch.js"]}>
      <div
        class="page"
        data-docket-list
        data-mode="overview"
        data-page={overviewPath()}
        data-socket={LIVE_CHANNEL_PATH}
        data-heartbeat-ms={String(props.heartbeatMs)}
        data-execution-url={EXECUTION_PAGE_TEMPLATE}
        data-id-placeholder={ID_PLACEHOLDER}
        data-recent-limit={String(Math.max(props.recent.length, 20))}
        data-catalog={props.catalog ?? ""}
        data-catalog-url={CATALOG_PATH}
      >
        <div class="page-head">
          <div>
            <h1>Overview</h1>
            <p class="muted wrap-anywhere" data-catalog-slot="count">
              {props.capabilityCount} capabilities loaded from <code class="path">{props.root}</code>
            </p>
          </div>
          <ConnectionStatus finished={false} />
        </div>

        <section class="panel" aria-labelledby="counts-heading">
          <h2 id="counts-heading">Executions by state</h2>
          {OVERVIEW_SECTIONS.counts(props)}
        </section>

        {OVERVIEW_SECTIONS.activity(props)}

        <section class="panel" aria-labelledby="active-heading">
          <h2 id="active-heading">Running now</h2>
          {OVERVIEW_SECTIONS.active(props)}
        </section>

        <section class="panel" aria-labelledby="recent-heading">
          <div class="section-head">
            <h2 id="recent-heading">Recent</h2>
            <a href={executionsPath()}>All executions →</a>
          </div>
          {OVERVIEW_SECTIONS.recent(props)}
        </section>

        <section class="panel" aria-labelledby="load-heading">
          <div class="section-head">
            <h2 id="load-heading">Load errors</h2>
            <a href={capabilitiesPath()}>Capabilities →</a>
          </div>
          <div data-catalog-slot="load-errors">
            <LoadErrors errors={props.loadErrors} root={props.root} />
          </div>
        </section>
        <ExecutionRowTemplate />
        <BadgeTemplates />
      </div>
    </Layout>
  );
}
