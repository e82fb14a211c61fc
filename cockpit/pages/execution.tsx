/** @jsxImportSource hono/jsx */
import type { RegisteredCapability } from "../../runtime/capability/registered.ts";
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { isTerminal } from "../../runtime/execution/state-machine.ts";
import { CANCEL_WORDS, CANCEL_WORDS_PAST } from "../../runtime/execution/cancel-words.ts";
import type { Actor } from "../../runtime/execution/protocol.ts";
import { BadgeTemplates, EffectBadge, StateBadge } from "../components/badges.tsx";
import { ConnectionStatus } from "../components/connection-status.tsx";
import { JsonBlock } from "../components/json-block.tsx";
import { When } from "../components/when.tsx";
import type { ArtifactInfo } from "../../runtime/execution/plane.ts";
import type { LogFilter } from "../log-filter.ts";
import { Layout } from "../components/layout.tsx";
import { LogBox } from "../components/log-box.tsx";
import { Notice } from "../components/notice.tsx";
import { OtherEvents } from "../components/other-events.tsx";
import { ProgressBar } from "../components/progress-bar.tsx";
import { Streams } from "../components/streams.tsx";
import { actorLabel, formatDuration, formatTime, shownText } from "../format.ts";
import type { HistoryExtras } from "../history-extras.ts";
import { EXECUTION_SECTIONS } from "./execution-sections.tsx";
import { cancelPath, capabilityPagePath, executionPagePath, executionsPath, runAgainPath } from "../paths.ts";

/** What the execution page shows. */
export interface ExecutionPageProps {
  root: string;
  execution: ExecutionSnapshot;
  /** The registered capability, when it is (still) loaded. */
  capability: RegisteredCapability | null;
  extras: HistoryExtras;
  heartbeatMs: number;
  logLimit: number;
  /** steps_retained and diagnostics_retained: the page keeps the snapshot's bounds live too. */
  stepLimit: number;
  diagnosticLimit: number;
  streamLimit: number;
  /** A message after an action (a cancel request), already in words. */
  notice: { kind: "info" | "error" | "success"; text: string } | null;
  /** The files in its managed output folder. */
  artifacts: ArtifactInfo[];
  /** What the log box shows (the page's `log_level` and `log_q`). */
  logFilter: LogFilter;
  /** The server's clock when rendering: relative times and a running timeline's end. */
  now: number;
}

/**
 * Who asked an execution to stop, and why, when it was: its `cancel_requested`, or — cancelled
 * while queued, which ends it at once with no such event — the failure's `context.cancelled_by`.
 */
function stopAsked(x: ExecutionSnapshot): ExecutionSnapshot["cancel_requested"] {
  if (x.cancel_requested) return x.cancel_requested;
  const by = x.state === "cancelled" ? x.failure?.context?.cancelled_by : undefined;
  if (typeof by !== "object" || by === null || typeof (by as { kind?: unknown }).kind !== "string" || x.finished_at === null) return undefined;
  return { actor: by as Actor, at: x.finished_at };
}

function Fact(props: { label: string; value: string; mono?: boolean; slot?: string; hidden?: boolean }) {
  return (
    <div class="fact" hidden={props.hidden} data-fact-holder={props.slot}>
      <dt>{props.label}</dt>
      <dd class={props.mono ? "mono wrap-anywhere" : "wrap-anywhere"} data-fact={props.slot}>
        {props.value}
      </dd>
    </div>
  );
}

/**
 * The Cancel form: only for a cancellable execution that has not finished (README.md). One that
 * is cancelling though nobody asked says why instead (a deadline passed, its handler stopped itself).
 */
function CancelControl(props: { execution: ExecutionSnapshot }) {
  const x = props.execution;
  if (isTerminal(x.state)) return null;
  // From the snapshot, which keeps it when retention lets the event go (checking tester, session 42).
  const reason = x.cancel_requested?.reason;
  if (x.state === "cancelling" && reason !== undefined) {
    return (
      <p class="muted small" data-slot="cancel-note">
        {CANCEL_WORDS[reason]}.
      </p>
    );
  }
  if (!x.cancellable) {
    return (
      <p class="muted small" data-slot="cancel-note">
        This capability does not check for cancellation, so it cannot be cancelled.
      </p>
    );
  }
  const requested = x.state === "cancelling";
  return (
    <form method="post" action={cancelPath(x.id)} class="cancel-form" data-slot="cancel">
      <button type="submit" class="button button-danger" disabled={requested}>
        {requested ? "Cancel requested" : "Cancel"}
      </button>
    </form>
  );
}

/** "Run again": the capability's form, filled with this input; secrets must be typed again there. */
function RunAgain(props: { execution: ExecutionSnapshot; capability: RegisteredCapability | null }) {
  const c = props.capability;
  if (!c || c.execution === "never") return null;
  return (
    <a class="button" href={runAgainPath(c.id, props.execution.id)} data-slot="run-again">
      Run again
    </a>
  );
}

/** The repository as the reader knows it: "this checkout" when it is the one served. */
function repositoryText(repository: string, root: string): string {
  return repository === root ? `this checkout (${root})` : repository;
}

/**
 * `/cockpit/executions/<id>`: one execution at a stable URL, complete as served. What a reader
 * asks first comes first (state, progress, failure, output, the timeline), the identifiers are
 * folded. execution.js follows it over the live channel from `data-after` (the sequence it was
 * rendered at).
 */
export function ExecutionPage(props: ExecutionPageProps) {
  const x = props.execution;
  // Drawn while it runs too, hidden: execution.js shows it once the execution ends, as a reload would.
  const asked = stopAsked(x);
  const terminal = isTerminal(x.state);
  const title = shownText(props.capability?.title ?? x.capability);
  return (
    <Layout title={`${x.capability} ${x.id}`} section="executions" root={props.root} scripts={["socket.js", "format.js", "anser.js", "ansi.js", "log-filter.js", "output-table.js", "refresh.js", "execution.js", "run-form.js"]}>
      <div
        class="page execution"
        data-docket-execution
        data-execution-id={x.id}
        data-state={x.state}
        data-terminal={terminal ? "true" : "false"}
        data-socket={x.links.socket}
        data-events={x.links.events}
        data-snapshot={x.links.self}
        data-page={executionPagePath(x.id)}
        data-after={String(x.last_sequence)}
        data-heartbeat-ms={String(props.heartbeatMs)}
        data-cancel-words={JSON.stringify(CANCEL_WORDS)}
        data-cancel-words-past={JSON.stringify(CANCEL_WORDS_PAST)}
      >
        <nav class="breadcrumbs" aria-label="Breadcrumbs">
          <a href={executionsPath()}>Executions</a> <span aria-hidden="true">›</span> <span class="mono wrap-anywhere">{x.id}</span>
        </nav>
        <div class="page-head">
          <div>
            <h1 class="wrap-anywhere">{title}</h1>
            <p class="muted small">
              <a href={capabilityPagePath(x.capability)} class="mono">
                {x.capability}
              </a>{" "}
              <EffectBadge effect={x.effect} />
            </p>
          </div>
          <div class="head-status">
            <div data-slot="state">
              <StateBadge state={x.state} large />
            </div>
            <ConnectionStatus finished={terminal} />
            <div class="head-actions">
              <CancelControl execution={x} />
              <RunAgain execution={x} capability={props.capability} />
            </div>
          </div>
        </div>
        {props.notice ? (
          <Notice kind={props.notice.kind} slot="notice">
            {props.notice.text}
          </Notice>
        ) : (
          <div data-slot="notice" hidden></div>
        )}
        <div class="notice notice-info" role="status" data-slot="missed" hidden></div>
        {x.details_expired ? <Notice kind="info">The details of this long-finished execution have expired; its identity and outcome remain.</Notice> : null}

        <section class="panel summary" aria-labelledby="summary-heading">
          <h2 id="summary-heading" class="visually-hidden">
            Summary
          </h2>
          <dl class="facts facts-inline">
            <div class="fact">
              <dt>Started by</dt>
              <dd>{actorLabel(x.actor)}</dd>
            </div>
            <div class="fact">
              <dt>Created</dt>
              <dd>
                <When iso={x.created_at} now={props.now} />
              </dd>
            </div>
            <Fact label="Duration" value={formatDuration(x.duration_ms)} slot="duration" />
            {/* Why an ended execution was asked to stop, kept after the end: a run that passed its deadline and still succeeded shows it only here (checking tester). */}
            <Fact label="Asked to stop" value={asked ? `${asked.reason ? CANCEL_WORDS_PAST[asked.reason] : `by ${actorLabel(asked.actor)}`} (${formatTime(asked.at)})` : ""} slot="cancel-asked" hidden={!asked || !terminal} />
          </dl>
          <details class="more-facts">
            <summary>Identifiers and times</summary>
            <dl class="facts facts-grid">
              <Fact label="Execution id" value={x.id} mono />
              <Fact label="Created" value={formatTime(x.created_at)} />
              <Fact label="Started" value={formatTime(x.started_at)} slot="started_at" />
              <Fact label="Finished" value={formatTime(x.finished_at)} slot="finished_at" />
              <Fact label="Cancellable" value={x.cancellable ? "yes" : "no"} />
              <Fact label="Code version" value={x.capability_version ?? "—"} mono />
              <Fact label="Run id" value={x.run_id ?? "—"} mono />
              <Fact label="Session key" value={x.session_key ?? "—"} mono />
              <Fact label="Request id" value={x.request_id} mono />
              <Fact label="Trace id" value={x.trace_id} mono />
              <Fact label="Repository" value={repositoryText(x.repository, props.root)} mono />
            </dl>
          </details>
        </section>

        {terminal && x.progress === null ? null : <ProgressBar progress={x.progress} />}
        {EXECUTION_SECTIONS.failure(props)}
        {EXECUTION_SECTIONS.reconciliation(props)}
        {EXECUTION_SECTIONS.output(props)}
        {EXECUTION_SECTIONS.timeline(props)}
        {EXECUTION_SECTIONS.steps(props)}
        {EXECUTION_SECTIONS.diagnostics(props)}
        {EXECUTION_SECTIONS.artifacts(props)}
        <LogBox lines={x.log} dropped={x.log_dropped} limit={props.logLimit} filter={props.logFilter} action={executionPagePath(x.id)} />
        <Streams streams={props.extras.streams} written={props.extras.streamsWritten} dropped={props.extras.streamsDropped} limit={props.streamLimit} />
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
