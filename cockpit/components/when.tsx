/** @jsxImportSource hono/jsx */
import { formatTime, relativeTime } from "../format.ts";

/**
 * An instant as "5 min ago", with the absolute time on hover. The server knows no reader's zone,
 * so it writes UTC; format.js rewrites the hover text in the reader's own zone (`data-local-time`).
 */
export function When(props: { iso: string | null | undefined; now: number; slot?: string }) {
  if (!props.iso) return <span data-fact={props.slot}>—</span>;
  return (
    <time datetime={props.iso} title={formatTime(props.iso)} data-local-time data-fact={props.slot}>
      {relativeTime(props.iso, props.now)}
    </time>
  );
}
