/** @jsxImportSource hono/jsx */
import { runsAsExecution, runsAsText, type RegisteredCapability } from "../../runtime/capability/registered.ts";
import type { FailureDescriptor } from "../../runtime/execution/failure.ts";
import { EffectBadge } from "../components/badges.tsx";
import { FailurePanel } from "../components/failure-panel.tsx";
import { JsonBlock } from "../components/json-block.tsx";
import { OutputView } from "../components/output-view.tsx";
import { Layout } from "../components/layout.tsx";
import { Notice } from "../components/notice.tsx";
import { checkoutPath, formatBytes, formatDuration, shownText } from "../format.ts";
import { MarkdownText } from "../components/markdown-text.tsx";
import { SchemaForm } from "../json-schema-form.tsx";
import { HistoryChart } from "../components/history-chart.tsx";
import type { HistoryPoint } from "../chart-data.ts";
import { capabilitiesPath, capabilityPagePath } from "../paths.ts";

/** What a direct call from the form gave: its output, or its failure. */
export type CallResult =
  | { kind: "output"; value: unknown }
  /** An output whose page is more than the cockpit keeps for a reload: said, not shown (call-results.ts). */
  | { kind: "output_too_large"; pageBytes: number }
  | { kind: "failure"; failure: FailureDescriptor };

/** What the capability page shows. */
export interface CapabilityPageProps {
  root: string;
  capability: RegisteredCapability;
  /** The submitted form, to fill it again; null for a fresh page. */
  values: URLSearchParams | null;
  errors: Record<string, string>;
  /** A sentence about what was wrong with the submission, shown above the form. */
  problem: string | null;
  result: CallResult | null;
  /** A sentence above the form (e.g. that it holds another execution's input); none by default. */
  notice?: string | null;
  /** Its latest executions, oldest first, for the history chart. */
  history: HistoryPoint[];
}

/**
 * `/cockpit/capabilities/<id>`: description, effect, the generated input form with "Run" (a
 * direct call whose result is shown here) and "Run as execution" (which lands on the execution's
 * page), examples and both JSON Schemas.
 */
export function CapabilityPage(props: CapabilityPageProps) {
  const c = props.capability;
  return (
    <Layout title={c.id} section="capabilities" root={props.root} scripts={["run-form.js", "output-table.js"]}>
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <a href={capabilitiesPath()}>Capabilities</a> <span aria-hidden="true">›</span> <span class="mono">{c.id}</span>
      </nav>
      <div class="page-head">
        <div>
          <h1 class="wrap-anywhere">{shownText(c.title)}</h1>
          <p class="mono muted">{c.id}</p>
        </div>
        <EffectBadge effect={c.effect} />
      </div>
      <MarkdownText text={c.description} class="lead wrap-anywhere" />

      <section class="panel" aria-labelledby="facts-heading">
        <h2 id="facts-heading">Facts</h2>
        <dl class="facts">
          <div class="fact">
            <dt>Effect</dt>
            <dd>{c.effect === "write" ? "write — may change something; the cockpit asks before running it" : "read — changes nothing"}</dd>
          </div>
          <div class="fact">
            <dt>Runs as</dt>
            <dd>{runsAsText(c)}</dd>
          </div>
          <div class="fact">
            <dt>Cancellable</dt>
            <dd>{c.cancellable ? "yes" : "no"}</dd>
          </div>
          <div class="fact">
            <dt>Default deadline</dt>
            <dd>{c.timeout_ms === null ? "none" : formatDuration(c.timeout_ms)}</dd>
          </div>
          <div class="fact">
            <dt>Direct-call cache</dt>
            <dd>{c.cache ? formatDuration(c.cache.ttl_ms) : "none"}</dd>
          </div>
          <div class="fact">
            <dt>Error codes</dt>
            <dd class="mono">{c.errors.length ? c.errors.join(", ") : "—"}</dd>
          </div>
          <div class="fact">
            <dt>Source</dt>
            <dd class="mono wrap-anywhere" title={c.source.kind === "builtin" ? undefined : shownText(c.source.file)}>
              {c.source.kind === "builtin" ? "built-in" : checkoutPath(c.source.file, props.root)}
            </dd>
          </div>
          <div class="fact">
            <dt>Code version</dt>
            <dd class="mono">{c.version}</dd>
          </div>
        </dl>
      </section>

      {props.result?.kind === "output" ? (
        <section class="panel result" data-section="result" aria-labelledby="result-heading">
          <h2 id="result-heading">
            <span aria-hidden="true">✓ </span>Result of the direct call
          </h2>
          {/* A direct call's output is kept nowhere: where it can be read whole is said as it is (checking tester, session 44). */}
          <OutputView value={props.result.value} slot="result" label="Output" whole={`a direct call's output is not kept: call POST /api/v1/${c.id.split(".").join("/")} to read it whole${runsAsExecution(c) ? ", or run it as an execution, whose output the API keeps" : ""}`} />
        </section>
      ) : null}
      {props.result?.kind === "output_too_large" ? (
        <section class="panel result" data-section="result" aria-labelledby="result-heading">
          <h2 id="result-heading">
            <span aria-hidden="true">✓ </span>Result of the direct call
          </h2>
          <p>{`The call succeeded, but its output makes a page of ${formatBytes(props.result.pageBytes)}, more than the cockpit keeps for a reload to read again (so that a reload never runs the call again). Call POST /api/v1/${c.id.split(".").join("/")} to read it whole${runsAsExecution(c) ? ", or run it as an execution, whose output the API keeps" : ""}.`}</p>
        </section>
      ) : null}
      {props.result?.kind === "failure" ? <FailurePanel failure={props.result.failure} title="The call failed" /> : null}

      <section class="panel" aria-labelledby="run-heading">
        <h2 id="run-heading">Run</h2>
        {props.notice ? (
          <Notice kind="info" slot="again">
            {props.notice}
          </Notice>
        ) : null}
        {props.problem ? (
          <Notice kind="error" slot="problem">
            {props.problem}
          </Notice>
        ) : null}
        <SchemaForm capability={c} action={capabilityPagePath(c.id)} values={props.values} errors={props.errors} />
      </section>

      {c.execution === "never" ? null : <HistoryChart points={props.history} />}

      {c.examples.length > 0 ? (
        <section class="panel" aria-labelledby="examples-heading">
          <h2 id="examples-heading">Examples</h2>
          <p class="muted">Inputs this capability declares valid; paste one into "Send raw JSON instead".</p>
          {c.examples.map((example) => (
            <JsonBlock value={example} label="Example input" />
          ))}
        </section>
      ) : null}

      <section class="panel" aria-labelledby="schemas-heading">
        <h2 id="schemas-heading">Schemas</h2>
        <details>
          <summary>Input JSON Schema</summary>
          <JsonBlock value={c.input_schema} slot="input-schema" label="Input JSON Schema" />
        </details>
        <details>
          <summary>Output JSON Schema</summary>
          <JsonBlock value={c.output_schema} slot="output-schema" label="Output JSON Schema" />
        </details>
      </section>
    </Layout>
  );
}
