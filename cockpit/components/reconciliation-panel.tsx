/** @jsxImportSource hono/jsx */
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { isTerminal } from "../../runtime/execution/state-machine.ts";
import { CONFIRM_CONTROL } from "../json-schema-form.tsx";
import { actorLabel, formatTime } from "../format.ts";
import { reconcilePath } from "../paths.ts";
import { JsonBlock } from "./json-block.tsx";

/** The form's control that carries the chosen outcome (`applied`, `not_applied`) or `check`. */
export const OUTCOME_CONTROL = "outcome";
/** The form's note. */
export const NOTE_CONTROL = "note";

const METHOD_TEXT = { manual: "by hand", check: "by its capability's check", run: "by the run's own end" } as const;

/**
 * How an unknown outcome was settled, or the form that settles it (docs/reconciliation.md): shown
 * only for a finished execution whose outcome is unknown. The form asks for confirmation like
 * every write (run-form.js, or a box to tick without scripts: unticked, the server refuses it);
 * "Check" appears only when the capability declares `reconcile()`.
 */
export function ReconciliationPanel(props: { execution: ExecutionSnapshot; canCheck: boolean }) {
  const x = props.execution;
  const r = x.reconciliation;
  if (r) {
    return (
      <section class="panel reconciliation" data-section="reconciliation" aria-labelledby="reconciliation-heading">
        <h2 id="reconciliation-heading">
          <span aria-hidden="true">◆ </span>Reconciled: {r.outcome === "applied" ? "it took effect" : "it did not take effect"}
        </h2>
        <dl class="facts">
          <div class="fact">
            <dt>Outcome</dt>
            <dd class="mono" data-field="outcome">{r.outcome}</dd>
          </div>
          <div class="fact">
            <dt>How</dt>
            <dd data-field="method">{METHOD_TEXT[r.method]}</dd>
          </div>
          <div class="fact">
            <dt>By</dt>
            <dd data-field="actor">{actorLabel(r.actor)}</dd>
          </div>
          <div class="fact">
            <dt>At</dt>
            <dd data-field="at">{formatTime(r.at)}</dd>
          </div>
          <div class="fact">
            <dt>Note</dt>
            <dd class="wrap-anywhere" data-field="note">{r.note ?? "—"}</dd>
          </div>
        </dl>
        {r.evidence === undefined ? null : <JsonBlock value={r.evidence} slot="evidence" label="Evidence" />}
        <p class="muted small">The state stays {x.state}: a reconciliation records what was found, it never rewrites how the execution ended.</p>
      </section>
    );
  }
  // An empty, hidden section still: execution.js re-reads it from the server when the execution ends.
  if (!isTerminal(x.state) || x.failure?.outcome_certainty !== "unknown") return <section class="panel reconciliation" data-section="reconciliation" hidden></section>;
  const question = `Record a reconciliation of ${x.id}? It is written once and never replaced.`;
  return (
    <section class="panel reconciliation" data-section="reconciliation" aria-labelledby="reconciliation-heading">
      <h2 id="reconciliation-heading">Outcome unknown: reconcile</h2>
      <p>
        {x.capability} may or may not have taken effect before it stopped. Check what it was meant to change, then record what you found; its artifacts can be released afterwards.
      </p>
      <form method="post" action={reconcilePath(x.id)} class="run-form reconcile-form" data-docket-run data-confirm={question}>
        <label for="reconcile-note">What you checked and what you saw</label>
        <textarea id="reconcile-note" name={NOTE_CONTROL} rows={3} maxlength={4096}></textarea>
        <input type="hidden" name={CONFIRM_CONTROL} value="" data-confirmed />
        <noscript>
          <label class="confirm-box">
            <input type="checkbox" name={CONFIRM_CONTROL} value="1" /> I checked, and this reconciliation is written once and never replaced.
          </label>
        </noscript>
        <div class="actions">
          <button type="submit" name={OUTCOME_CONTROL} value="applied" class="button">
            It took effect
          </button>
          <button type="submit" name={OUTCOME_CONTROL} value="not_applied" class="button">
            It did not take effect
          </button>
          {props.canCheck ? (
            <button type="submit" name={OUTCOME_CONTROL} value="check" class="button button-primary">
              Let {x.capability} check
            </button>
          ) : null}
        </div>
      </form>
    </section>
  );
}
