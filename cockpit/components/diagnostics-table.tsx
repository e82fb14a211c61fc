/** @jsxImportSource hono/jsx */
import type { DiagnosticInput } from "../../runtime/capability/declaration.ts";
import { shownCut, shownText, SHOWN_MESSAGE_CHARS } from "../format.ts";
import { SeverityBadge } from "./badges.tsx";

/** `file:line:column` of a diagnostic, as far as it is known. */
export function locationOf(d: Pick<DiagnosticInput, "file" | "line" | "column">): string {
  if (!d.file) return "—";
  return `${shownText(d.file)}${d.line !== undefined ? `:${d.line}${d.column !== undefined ? `:${d.column}` : ""}` : ""}`;
}

/**
 * Findings about the work (not the run), bounded like the snapshot (`limit`, diagnostics_retained:
 * execution.js keeps the page to it); dropped ones are counted.
 */
export function DiagnosticsTable(props: { diagnostics: DiagnosticInput[]; dropped: number; limit: number }) {
  return (
    <section class="panel" aria-labelledby="diagnostics-heading" data-section="diagnostics">
      <h2 id="diagnostics-heading">Diagnostics</h2>
      <p class="muted" data-slot="diagnostics-dropped" hidden={props.dropped === 0}>
        {`${props.dropped} earlier diagnostic(s) not kept.`}
      </p>
      <div class="table-scroll">
        <table class="table">
          <caption class="visually-hidden">Diagnostics of this execution</caption>
          <thead>
            <tr>
              <th scope="col">Severity</th>
              <th scope="col">Finding</th>
              <th scope="col">Code</th>
            </tr>
          </thead>
          <tbody data-slot="diagnostics" data-limit={String(props.limit)} data-dropped={String(props.dropped)}>
            {props.diagnostics.map((d) => (
              <tr data-diagnostic>
                <td data-field="severity">
                  <SeverityBadge severity={d.severity} />
                </td>
                <td>
                  <span data-field="message" class="wrap-anywhere pre-line">
                    {shownCut(d.message, SHOWN_MESSAGE_CHARS)}
                  </span>
                  <span data-field="location" class="location mono wrap-anywhere">
                    {locationOf(d)}
                  </span>
                </td>
                <td data-field="code" class="mono nowrap">
                  {shownText(d.code ?? "—")}
                </td>
              </tr>
            ))}
            <tr data-empty hidden={props.diagnostics.length > 0}>
              <td colspan={3} class="empty">
                No diagnostics.
              </td>
            </tr>
          </tbody>
        </table>
      </div>
      <template data-template="diagnostic">
        <table>
          <tbody>
            <tr data-root data-diagnostic>
              <td data-field="severity"></td>
              <td>
                <span data-field="message" class="wrap-anywhere pre-line"></span>
                <span data-field="location" class="location mono wrap-anywhere"></span>
              </td>
              <td data-field="code" class="mono nowrap"></td>
            </tr>
          </tbody>
        </table>
      </template>
    </section>
  );
}
