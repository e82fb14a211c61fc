/** @jsxImportSource hono/jsx */
import type { StepSnapshot } from "../../runtime/execution/snapshot.ts";
import { between, formatDuration, shownCut, shownText, SHOWN_MESSAGE_CHARS, SHOWN_TITLE_CHARS, stepsDroppedText } from "../format.ts";
import { StepBadge } from "./badges.tsx";

/**
 * One step as a row; `data-started` lets the script compute the duration when the step ends. A
 * step stopped by its execution's end lasted until then, as the timeline says.
 */
function StepRow(props: { step: StepSnapshot; endedAt: string | null }) {
  const s = props.step;
  const stopped = s.state === "running" && props.endedAt !== null;
  const state = stopped ? "stopped" : s.state;
  return (
    <tr data-step-id={s.id} data-started={s.started_at}>
      <td data-field="state">
        <StepBadge state={state} />
      </td>
      <td>
        <span data-field="title" class="wrap-anywhere">
          {shownCut(s.title, SHOWN_TITLE_CHARS)}
        </span>{" "}
        <code class="muted" data-field="id">
          {shownText(s.id)}
        </code>
      </td>
      <td data-field="message" class="wrap-anywhere">
        {shownCut(s.message ?? "", SHOWN_MESSAGE_CHARS)}
      </td>
      <td data-field="duration">{formatDuration(between(s.started_at, stopped ? props.endedAt : s.finished_at))}</td>
    </tr>
  );
}

/** What the steps table shows besides the steps: the bound and what it let go. */
export interface StepsKept {
  /** steps_retained: execution.js keeps the page to the same bound, by the same rule. */
  limit: number;
  dropped: number;
  /** How many of the dropped had failed; null when the snapshot predates that count. */
  droppedFailed: number | null;
}

/**
 * The named steps, in the order they began (a step left running by an ended execution reads
 * "Stopped"), and how many earlier ones were not kept; the template is what the script clones for
 * a new one.
 */
export function StepsTable(props: { steps: StepSnapshot[]; /** When the execution ended; null while it runs. */ endedAt: string | null; kept: StepsKept }) {
  const { kept } = props;
  return (
    <section class="panel" aria-labelledby="steps-heading" data-section="steps">
      <h2 id="steps-heading">Steps</h2>
      <p class="muted" data-slot="steps-dropped" hidden={kept.dropped === 0}>
        {stepsDroppedText(kept.dropped, kept.droppedFailed)}
      </p>
      <div class="table-scroll">
        <table class="table">
          <caption class="visually-hidden">Steps of this execution</caption>
          <thead>
            <tr>
              <th scope="col">State</th>
              <th scope="col">Step</th>
              <th scope="col">Message</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody data-slot="steps" data-limit={String(kept.limit)} data-dropped={String(kept.dropped)} data-dropped-failed={kept.droppedFailed === null ? "" : String(kept.droppedFailed)}>
            {props.steps.map((step) => (
              <StepRow step={step} endedAt={props.endedAt} />
            ))}
            <tr data-empty hidden={props.steps.length > 0}>
              <td colspan={4} class="empty">
                No steps reported.
              </td>
            </tr>
          </tbody>
        </table>
      </div>
      <template data-template="step">
        <table>
          <tbody>
            <tr data-root data-step-id="" data-started="">
              <td data-field="state"></td>
              <td>
                <span data-field="title" class="wrap-anywhere"></span> <code class="muted" data-field="id"></code>
              </td>
              <td data-field="message" class="wrap-anywhere"></td>
              <td data-field="duration">—</td>
            </tr>
          </tbody>
        </table>
      </template>
    </section>
  );
}
