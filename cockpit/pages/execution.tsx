/** @jsxImportSource hono/jsx */
import type { RegisteredCapability } from "../../runtime/capability/registered.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { isTerminal } from "../../runtime/execution/state-machine.ts";
import { BadgeTemplates, EffectBadge, StateBadge } from "../components/badges.tsx";
import { ConnectionStatus } from "../components/connection-status.tsx";
import { DiagnosticsTable } from "../components/diagnostics-table.tsx";
import { FailurePanel } from "../components/failure-panel.tsx";
import { JsonBlock } from "../components/json-block.tsx";
import { Layout } from "../components/layout.tsx";
import { LogBox } from "../components/log-box.tsx";
import { Notice } from "../components/notice.tsx";
import { OtherEvents } from "../components/other-events.tsx";
import { ProgressBar } from "../components/progress-bar.tsx";
import { StepsTable } from "../components/steps-table.tsx";
import { Streams } from "../components/streams.tsx";
import { actorLabel, formatDuration, formatTime } from "../format.ts";
import type { HistoryExtras } from "../history-extras.ts";
import { cancelPath, capabilityPagePath, executionsPath } from "../paths.ts";

/** What the execution page shows. */
export interface ExecutionPageProps {
  root: string;
  execution: ExecutionSnapshot;
  /** The registered capability, when it is (still) loaded. */
  capability: RegisteredCapability | null;
  extras: HistoryExtras;
  heartbeatMs: number;
  logLimit: number;
  streamLimit: number;
  /** A message after an action (a cancel request), already in words. */
  notice: { kind: "info" | "error" | "success"; text: string } | null;
}

function Fact(props: { label: string; value: string; mono?: boolean; slot?: string }) {
  return (
    <div class="fact">
      <dt>{props.label}</dt>
      <dd class={props.mono ? "mono wrap-anywhere" : "wrap-anywhere"} data-fact={props.slot}>
        {props.value}
      </dd>
    </div>
  );
}

/** The Cancel form: only for a cancellable execution that has not finished (README.md). */
function CancelControl(props: { execution: ExecutionSnapshot }) {
  const x = props.execution;
  if (isTerminal(x.state)) return null;
  if (!x.cancellable) return <p class="muted small">This capability does not check for cancellation, so it cannot be cancelled.</p>;
  const requested = x.state === "cancelling";
  return (
    <form method="post" action={cancelPath(x.id)} class="cancel-form" data-slot="cancel">
      <button type="submit" class="button button-danger" disabled={requested}>
        {requested ? "Cancel requested" : "Cancel"}
      </button>
    </form>
  );
}

/**
 * `/cockpit/executions/<id>`: one execution at a stable URL, complete as served. execution.js
 * follows it over the live channel from `data-after` (the sequence it was rendered at).
 */
export function ExecutionPage(props: ExecutionPageProps) {
  const x = props.execution;
  const terminal = isTerminal(x.state);
  const title = props.capability?.title ?? x.capability;
  return (
    <Layout title={`${x.capability} ${x.id}`} section="executions" root={props.root} scripts={["socket.js", "format.js", "execution.js"]}>
      <div
        class="page execution"
        data-docket-execution
        data-execution-id={x.id}
        data-state={x.state}
        data-terminal={terminal ? "true" : "false"}
        data-socket={x.links.socket}
        data-events={x.links.events}
        data-after={String(x.last_sequence)}
        data-heartbeat-ms={String(props.heartbeatMs)}
      >
        <nav class="breadcrumbs" aria-label="Breadcrumbs">
          <a href={executionsPath()}>Executions</a> <span aria-hidden="true">›</span> <span class="mono wrap-anywhere">{x.id}</span>
        </nav>
        <div class="page-head">
          <div>
            <h1 class="wrap-anywhere">{title}</h1>
            <p class="mono muted wrap-anywhere">{x.id}</p>
          </div>
          <div class="head-status">
            <div data-slot="state">
              <StateBadge state={x.state} large />
            </div>
            <ConnectionStatus finished={terminal} />
            <CancelControl execution={x} />
          </div>
        </div>
        {props.notice ? (
          <Notice kind={props.notice.kind} slot="notice">
            {props.notice.text}
          </Notice>
        ) : (
          <div data-slot="notice" hidden></div>
        )}
        {x.details_expired ? <Notice kind="info">The details of this long-finished execution have expired; its identity and outcome remain.</Notice> : null}

        <section class="panel" aria-labelledby="summary-heading">
          <h2 id="summary-heading" class="visually-hidden">
            Summary
          </h2>
          <dl class="facts facts-grid">
            <div class="fact">
              <dt>Capability</dt>
              <dd>
                <a href={capabilityPagePath(x.capability)} class="mono">
                  {x.capability}
                </a>{" "}
                <EffectBadge effect={x.effect} />
              </dd>
            </div>
            <Fact label="Started by" value={actorLabel(x.actor)} />
            <Fact label="Created" value={formatTime(x.created_at)} />
            <Fact label="Started" value={formatTime(x.started_at)} slot="started_at" />
            <Fact label="Finished" value={formatTime(x.finished_at)} slot="finished_at" />
            <Fact label="Duration" value={formatDuration(x.duration_ms)} slot="duration" />
            <Fact label="Cancellable" value={x.cancellable ? "yes" : "no"} />
            <Fact label="Code version" value={x.capability_version ?? "—"} mono />
            <Fact label="Run id" value={x.run_id ?? "—"} mono />
            <Fact label="Session key" value={x.session_key ?? "—"} mono />
            <Fact label="Request id" value={x.request_id} mono />
            <Fact label="Trace id" value={x.trace_id} mono />
            <Fact label="Repository" value={x.repository} mono />
          </dl>
        </section>

        <ProgressBar progress={x.progress} />
        <FailurePanel failure={x.failure} />
        <section class="panel output" data-section="output" hidden={x.state !== "succeeded"} aria-labelledby="output-heading">
          <h2 id="output-heading">
            <span aria-hidden="true">✓ </span>Output
          </h2>
          <JsonBlock value={x.output} slot="output" label="Output" />
        </section>
        <StepsTable steps={x.steps} />
        <DiagnosticsTable diagnostics={x.diagnostics} dropped={x.diagnostics_dropped} />
        <LogBox lines={x.log} dropped={x.log_dropped} limit={props.logLimit} />
        <Streams streams={props.extras.streams} limit={props.streamLimit} />
        <OtherEvents events={props.extras.other} />

        <section class="panel" aria-labelledby="input-heading">
          <h2 id="input-heading">Input</h2>
          <p class="muted small">As stored: values the schema marks secret were replaced by "[redacted]" before anything kept them.</p>
          <JsonBlock value={x.input} slot="input" label="Input" />
        </section>

        <p class="muted small sequence-note">
          Events: through sequence <span data-slot="last-sequence">{String(x.last_sequence)}</span>
          {x.retained_from > 1 ? `, retained from ${x.retained_from}` : ""}
          {x.truncated ? " (older events were dropped)" : ""}.
        </p>
        <BadgeTemplates large steps severities />
      </div>
    </Layout>
  );
}
