/** @jsxImportSource hono/jsx */
import type { FailureDescriptor } from "../../runtime/execution/failure.ts";
import { formatJson, shownText } from "../format.ts";

/** Every member of the failure descriptor (docs/protocol.md), in the order a reader needs them. */
export const FAILURE_FIELDS: Array<{ key: keyof FailureDescriptor; label: string }> = [
  { key: "error_code", label: "Error code" },
  { key: "message", label: "Message" },
  { key: "suggestion", label: "Suggestion" },
  { key: "stage", label: "Stage" },
  { key: "retryability", label: "Retryability" },
  { key: "outcome_certainty", label: "Outcome certainty" },
  { key: "correlation_id", label: "Correlation id" },
  { key: "request_id", label: "Request id" },
  { key: "trace_id", label: "Trace id" },
  { key: "context", label: "Context" },
];

/**
 * A failure with every descriptor field; a cancellation is drawn as one (neutral, "Cancelled"), not as a failure. With `failure` null it renders empty and hidden: the
 * execution page's script fills the `data-failure-field` slots when `execution.completed` says failed.
 */
export function FailurePanel(props: { failure: FailureDescriptor | null; title?: string; tone?: "failed" | "cancelled" }) {
  const f = props.failure;
  const cancelled = props.tone === "cancelled";
  return (
    <section class={`panel failure${cancelled ? " failure-cancelled" : ""}`} data-section="failure" hidden={!f} aria-labelledby="failure-heading">
      <h2 id="failure-heading">
        <span aria-hidden="true" data-slot="failure-glyph">
          {cancelled ? "⊘ " : "✕ "}
        </span>
        <span data-slot="failure-title">{props.title ?? "Failure"}</span>
      </h2>
      <dl class="facts">
        {FAILURE_FIELDS.map(({ key, label }) => (
          <div class="fact">
            <dt>{label}</dt>
            <dd>
              {key === "context" ? (
                <pre class="json" data-failure-field={key}>
                  {f ? formatJson(f.context) : ""}
                </pre>
              ) : (
                <span class={key.endsWith("_id") || key === "error_code" ? "mono wrap-anywhere" : "wrap-anywhere"} data-failure-field={key}>
                  {f ? shownText(String(f[key])) : ""}
                </span>
              )}
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
