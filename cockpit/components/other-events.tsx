/** @jsxImportSource hono/jsx */
import type { ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { formatJson } from "../format.ts";

/**
 * Events of a type this cockpit does not know (docs/protocol.md: shown, not dropped): the type, the
 * sequence and the data as JSON.
 */
export function OtherEvents(props: { events: ExecutionEvent[] }) {
  return (
    <section class="panel" data-section="other-events" hidden={props.events.length === 0} aria-labelledby="other-heading">
      <h2 id="other-heading">Other events</h2>
      <p class="muted">Event types this page does not know how to show, as they arrived.</p>
      <ol class="other-events" data-slot="other-events">
        {props.events.map((event) => (
          <li data-sequence={String(event.sequence)}>
            <code data-field="type">{event.type}</code> <span class="muted" data-field="sequence">{`#${event.sequence}`}</span>
            <pre class="json" data-field="data">
              {formatJson(event.data)}
            </pre>
          </li>
        ))}
      </ol>
      <template data-template="other-event">
        <li data-sequence="">
          <code data-field="type"></code> <span class="muted" data-field="sequence"></span>
          <pre class="json" data-field="data"></pre>
        </li>
      </template>
    </section>
  );
}
