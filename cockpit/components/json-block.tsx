/** @jsxImportSource hono/jsx */
import { formatJson } from "../format.ts";

/** A JSON value, indented, in a block that scrolls on its own and wraps long strings; `whole`: where a value cut here is whole (formatJson). */
export function JsonBlock(props: { value: unknown; slot?: string; label?: string; whole?: string; max?: number }) {
  return (
    <pre class="json" data-slot={props.slot} tabindex={0} aria-label={props.label}>
      {formatJson(props.value, 2, props.whole, props.max)}
    </pre>
  );
}
