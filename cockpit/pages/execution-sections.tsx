/** @jsxImportSource hono/jsx */
import type { JSX } from "hono/jsx/jsx-runtime";
import { isTerminal } from "../../runtime/execution/state-machine.ts";
import { ArtifactsPanel } from "../components/artifacts-panel.tsx";
import { DiagnosticsTable } from "../components/diagnostics-table.tsx";
import { FailurePanel } from "../components/failure-panel.tsx";
import { LogDropped, LogLines } from "../components/log-box.tsx";
import { OutputView } from "../components/output-view.tsx";
import { ReconciliationPanel } from "../components/reconciliation-panel.tsx";
import { StepTimeline } from "../components/step-timeline.tsx";
import { ranUntil } from "../timeline.ts";
import { StepsTable } from "../components/steps-table.tsx";
import type { ExecutionPageProps } from "./execution.tsx";

/**
 * The parts of the execution page that only the server draws and execution.js re-reads (by their
 * `data-section` name): the page draws each of them from here, and `?section=<name>` (repeated)
 * answers those alone, so a re-read costs what it shows, not the whole page (its input may be
 * large) once a second.
 */
export const EXECUTION_SECTIONS = {
  output: (p) => (
    <section class="panel output" data-section="output" hidden={p.execution.state !== "succeeded"} aria-labelledby="output-heading">
      <h2 id="output-heading">
        <span aria-hidden="true">✓ </span>Output
      </h2>
      <OutputView value={p.execution.output} slot="output" label="Output" />
    </section>
  ),
  failure: (p) => {
    const cancelled = p.execution.state === "cancelled";
    return <FailurePanel failure={p.execution.failure} title={cancelled ? "Cancelled" : "Failure"} tone={cancelled ? "cancelled" : "failed"} />;
  },
  reconciliation: (p) => <ReconciliationPanel execution={p.execution} canCheck={typeof p.capability?.def.reconcile === "function"} />,
  timeline: (p) => <StepTimeline steps={p.execution.steps} execution={p.execution} now={p.now} />,
  steps: (p) => {
    const x = p.execution;
    const endedAt = isTerminal(x.state) ? (ranUntil(x) ?? new Date(p.now).toISOString()) : null;
    return <StepsTable steps={x.steps} endedAt={endedAt} kept={{ limit: p.stepLimit, dropped: x.steps_dropped ?? 0, droppedFailed: x.steps_dropped_failed ?? null }} />;
  },
  diagnostics: (p) => <DiagnosticsTable diagnostics={p.execution.diagnostics} dropped={p.execution.diagnostics_dropped} limit={p.diagnosticLimit} />,
  artifacts: (p) => <ArtifactsPanel execution={p.execution} artifacts={p.artifacts} />,
  "log-dropped": (p) => <LogDropped dropped={p.execution.log_dropped} />,
  "log-lines": (p) => <LogLines lines={p.execution.log} dropped={p.execution.log_dropped} limit={p.logLimit} filter={p.logFilter} />,
} satisfies Record<string, (props: ExecutionPageProps) => JSX.Element>;

/** A section's name. */
export type ExecutionSectionName = keyof typeof EXECUTION_SECTIONS;

/** Every section's name, in the page's order. */
export const EXECUTION_SECTION_NAMES = Object.keys(EXECUTION_SECTIONS) as ExecutionSectionName[];

/** Only the sections asked for, in a bare document: what refresh.js takes them from. */
export function ExecutionSections(props: ExecutionPageProps & { names: ExecutionSectionName[] }) {
  return <div data-sections>{props.names.map((name) => EXECUTION_SECTIONS[name](props))}</div>;
}
