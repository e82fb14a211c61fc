/** @jsxImportSource hono/jsx */
import type { LogLineSnapshot } from "../../runtime/execution/snapshot.ts";
import { timeOfDay } from "../format.ts";
import { LOG_LEVELS, logLineMatches, type LogFilter } from "../log-filter.ts";
import { ColouredText } from "./coloured-text.tsx";

/** One log line: time, level by word, the message in its colours (classes, never markup), a mark when cut. */
function LogLine(props: { line: LogLineSnapshot; hidden: boolean }) {
  const l = props.line;
  return (
    <li class="log-line" data-level={l.level} data-sequence={String(l.sequence)} hidden={props.hidden}>
      <time class="log-time" datetime={l.timestamp}>
        {timeOfDay(l.timestamp)}
      </time>
      <span class="log-level">{l.level}</span>
      <span class="log-message">
        <ColouredText text={l.message} />
      </span>
      {l.truncated ? <span class="log-cut">(cut)</span> : null}
    </li>
  );
}

/**
 * The level filter and the search. Without JavaScript the form reloads the page with `log_level`
 * and `log_q` and the server filters; log-filter.js applies the same rule in place, to new lines too.
 */
function LogFilterForm(props: { filter: LogFilter; action: string }) {
  return (
    <form method="get" action={props.action} class="log-filter" data-slot="log-filter" role="search" aria-label="Filter the log">
      <label>
        <span>Level</span>
        <select name="log_level">
          {LOG_LEVELS.map((level) => (
            <option value={level} selected={level === props.filter.level}>
              {level === "debug" ? "all" : `${level} and above`}
            </option>
          ))}
        </select>
      </label>
      <label class="log-search">
        <span>Search</span>
        <input type="search" name="log_q" value={props.filter.query} maxlength={200} placeholder="text in the log" />
      </label>
      <button type="submit" class="button">
        Filter
      </button>
    </form>
  );
}

/** How many earlier lines the tail let go; execution.js re-reads it (section `log-dropped`). */
export function LogDropped(props: { dropped: number }) {
  return (
    <p class="muted small" data-slot="log-dropped" data-section="log-dropped" hidden={props.dropped === 0}>
      {`${props.dropped} earlier line(s) not shown.`}
    </p>
  );
}

/** The lines of the tail, those the filter hides hidden; execution.js re-reads them (section `log-lines`). */
export function LogLines(props: { lines: LogLineSnapshot[]; dropped: number; limit: number; filter: LogFilter }) {
  return (
    <ol class="log" data-slot="log" data-section="log-lines" data-limit={String(props.limit)} data-dropped={String(props.dropped)}>
      {props.lines.map((line) => (
        <LogLine line={line} hidden={!logLineMatches(line, props.filter)} />
      ))}
    </ol>
  );
}

/**
 * The log tail in its own scrolling box. `limit` is the server's bound (log_tail_lines); the
 * script keeps the browser to the same bound, counting what it drops, and re-reads the lines and
 * their count once the execution ended (events it skipped may have held lines). Lines the filter hides are
 * still in the page (hidden), so clearing the filter needs no round trip.
 */
export function LogBox(props: { lines: LogLineSnapshot[]; dropped: number; limit: number; filter: LogFilter; action: string }) {
  const shown = props.lines.filter((line) => logLineMatches(line, props.filter)).length;
  const filtering = props.filter.level !== "debug" || props.filter.query !== "";
  return (
    <section class="panel" aria-labelledby="log-heading" data-section="log">
      <div class="panel-head">
        <h2 id="log-heading">Log</h2>
        <LogFilterForm filter={props.filter} action={props.action} />
      </div>
      <LogDropped dropped={props.dropped} />
      <p class="muted small" data-slot="log-matches" role="status" hidden={!filtering}>
        {`${shown} of ${props.lines.length} line(s) match.`}
      </p>
      <div class="log-box" tabindex={0} aria-labelledby="log-heading" data-slot="log-box">
        <LogLines lines={props.lines} dropped={props.dropped} limit={props.limit} filter={props.filter} />
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
