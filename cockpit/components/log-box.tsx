/** @jsxImportSource hono/jsx */
import type { LogLineSnapshot } from "../../runtime/execution/snapshot.ts";
import { timeOfDay } from "../format.ts";

/** One log line: time, level by word, the message (already sanitized by the server), a mark when cut. */
function LogLine(props: { line: LogLineSnapshot }) {
  const l = props.line;
  return (
    <li class="log-line" data-level={l.level} data-sequence={String(l.sequence)}>
      <time class="log-time" datetime={l.timestamp}>
        {timeOfDay(l.timestamp)}
      </time>
      <span class="log-level">{l.level}</span>
      <span class="log-message">{l.message}</span>
      {l.truncated ? <span class="log-cut">(cut)</span> : null}
    </li>
  );
}

/**
 * The log tail in its own scrolling box. `limit` is the server's bound (log_tail_lines); the
 * script keeps the browser to the same bound, counting what it drops.
 */
export function LogBox(props: { lines: LogLineSnapshot[]; dropped: number; limit: number }) {
  return (
    <section class="panel" aria-labelledby="log-heading">
      <h2 id="log-heading">Log</h2>
      <p class="muted" data-slot="log-dropped" hidden={props.dropped === 0}>
        {`${props.dropped} earlier line(s) not shown.`}
      </p>
      <div class="log-box" tabindex={0} aria-labelledby="log-heading" data-slot="log-box">
        <ol class="log" data-slot="log" data-limit={String(props.limit)} data-dropped={String(props.dropped)}>
          {props.lines.map((line) => (
            <LogLine line={line} />
          ))}
        </ol>
        <p class="empty" data-slot="log-empty" hidden={props.lines.length > 0}>
          No log lines.
        </p>
      </div>
      <template data-template="log-line">
        <li class="log-line" data-level="" data-sequence="">
          <time class="log-time" datetime=""></time>
          <span class="log-level"></span>
          <span class="log-message"></span>
        </li>
      </template>
    </section>
  );
}
