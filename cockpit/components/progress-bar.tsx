/** @jsxImportSource hono/jsx */
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import { progressText } from "../format.ts";

/**
 * The counter as a native `<progress>` (a bar with no inline style, which the CSP forbids) and in
 * words. An unknown total is an indeterminate bar. `data-reported` says whether any progress came:
 * execution.js takes the panel away when the execution ends without any (docs/cockpit.md).
 */
export function ProgressBar(props: { progress: ExecutionSnapshot["progress"] }) {
  const p = props.progress;
  const max = p && p.total !== null && p.total > 0 ? p.total : 1;
  const value = p ? (p.total === null ? undefined : Math.min(p.current, max)) : 0;
  return (
    <section class="panel" aria-labelledby="progress-heading" data-section="progress" data-reported={p ? "true" : "false"}>
      <h2 id="progress-heading">Progress</h2>
      <progress class="bar" data-slot="progress" max={String(max)} value={value === undefined ? undefined : String(value)} aria-labelledby="progress-heading">
        {progressText(p)}
      </progress>
      <p class="progress-text wrap-anywhere" data-slot="progress-text">
        {progressText(p)}
      </p>
    </section>
  );
}
