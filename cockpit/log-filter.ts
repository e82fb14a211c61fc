import { withoutColour } from "../runtime/execution/text-colour.ts";
import type { LogLineSnapshot } from "../runtime/execution/snapshot.ts";

/** The log levels, least severe first: a filter shows its level and everything above it. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** What the log box shows: lines at `level` or above whose text holds `query` (any case). */
export interface LogFilter {
  level: LogLevel;
  query: string;
}

/** The filter in the page's query (`log_level`, `log_q`): an unknown level is "debug" (everything). */
export function logFilterOf(query: (name: string) => string | undefined): LogFilter {
  const level = query("log_level");
  return {
    level: (LOG_LEVELS as readonly string[]).includes(level ?? "") ? (level as LogLevel) : "debug",
    query: (query("log_q") ?? "").slice(0, 200),
  };
}

/** Whether a line passes the filter; the search reads the text as shown, without its colour codes. */
export function logLineMatches(line: Pick<LogLineSnapshot, "level" | "message">, filter: LogFilter): boolean {
  if (LOG_LEVELS.indexOf(line.level as LogLevel) < LOG_LEVELS.indexOf(filter.level)) return false;
  return filter.query === "" || withoutColour(line.message).toLowerCase().includes(filter.query.toLowerCase());
}
