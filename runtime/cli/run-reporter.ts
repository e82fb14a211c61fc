import type { EventType, ExecutionEvent } from "../execution/protocol.ts";
import { CANCEL_WORDS } from "../execution/cancel-words.ts";
import { withoutColour } from "../execution/text-colour.ts";
import type { TerminalStyle } from "./_terminal.ts";

/** Turns one event into the lines it prints (without newlines); an empty list prints nothing. */
export type EventPrinter<T extends EventType = EventType> = (event: ExecutionEvent<T>) => string[];

/** One printer per event type; a type missing here is shown by the fallback, never dropped (docs/protocol.md). */
export type EventPrinters = { [T in EventType]?: EventPrinter<T> };

/** What a run reporter writes to: stderr in the CLI, a buffer in tests. */
export interface RunReporterOptions {
  write(text: string): void;
  printers: EventPrinters;
  /** Prints an event type missing from `printers`. */
  unknown: EventPrinter;
  /** Ends what printers hold back (partial stream lines). */
  flush?: () => string[];
}

/** Prints a run's events as they arrive; `flush` ends partial stream lines. */
export interface RunReporter {
  print(event: ExecutionEvent): void;
  flush(): void;
}

/**
 * `12:03:04`, an event's time of day. Local time for a person at a terminal (they compare it with
 * their clock); UTC elsewhere, as CI logs are, read straight from the ISO stamp: the first local-time
 * call loads the time-zone database, ~15 ms that a cold `docket run` in a pipeline should not pay.
 */
export function clockTime(timestamp: string, local = false): string {
  if (!local) return /^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)/.exec(timestamp)?.[1] ?? "--:--:--";
  const at = new Date(timestamp);
  if (Number.isNaN(at.getTime())) return "--:--:--";
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
}

/** `file:line:col`, as editors and terminals make clickable; whatever of it is known. */
export function location(d: { file?: string; line?: number; column?: number }): string {
  if (!d.file) return "";
  return [d.file, d.line, d.line !== undefined ? d.column : undefined].filter((part) => part !== undefined).join(":");
}

/**
 * The plain, timestamped lines of README.md for CI logs and pipes: one function per event type.
 * A stream's chunks are joined into whole lines, so a child's output is not cut mid-line.
 */
export function plainPrinters(style: TerminalStyle, options: { localTime?: boolean } = {}): { printers: Required<EventPrinters>; unknown: EventPrinter; flush(): string[] } {
  const partial = new Map<string, string>();
  const stamp = (event: ExecutionEvent, text: string) => `${style.dim(clockTime(event.timestamp, options.localTime))} ${text}`;
  const streamLine = (name: string, text: string) => `${style.dim(`${name} │`)} ${painted(text)}`;
  // Events keep a handler's colours (docs/protocol.md): shown on a colour terminal, ended with a
  // reset so they never leak into the next line, and stripped everywhere else.
  const painted = (text: string) => (!style.color ? withoutColour(text) : text.includes("\u001b[") ? `${text}\u001b[0m` : text);
  const printers: Required<EventPrinters> = {
    "execution.created": (e) => [stamp(e, `${style.cyan("▸")} ${style.bold(e.data.capability)} ${style.dim(e.execution_id)}`)],
    "execution.started": () => [],
    "execution.step": (e) => [stamp(e, `${style.cyan("▸")} step ${e.data.id} — ${e.data.title}`)],
    "execution.step_done": (e) => {
      const mark = e.data.ok ? style.green("✔") : style.red("✖");
      const verdict = e.data.ok ? "" : " failed";
      return [stamp(e, `${mark} step ${e.data.id}${verdict}${e.data.message ? ` — ${e.data.message}` : ""}`)];
    },
    "execution.progress": (e) => {
      const total = e.data.total === undefined || e.data.total === null ? "" : `/${e.data.total}`;
      return [stamp(e, `${style.dim(`[${e.data.current}${total}]`)}${e.data.message ? ` ${e.data.message}` : ""}`)];
    },
    "execution.log": (e) => {
      const paint = e.data.level === "error" ? style.red : e.data.level === "warn" ? style.yellow : style.dim;
      return [stamp(e, `${paint(e.data.level.padEnd(5))} ${painted(e.data.message)}${e.data.truncated ? style.dim(" (truncated)") : ""}`)];
    },
    "execution.stream": (e) => {
      const text = (partial.get(e.data.name) ?? "") + e.data.chunk;
      const lines = text.split("\n");
      partial.set(e.data.name, lines.pop()!);
      return lines.map((line) => streamLine(e.data.name, line.replace(/\r$/, "")));
    },
    "execution.diagnostic": (e) => {
      const paint = e.data.severity === "error" ? style.red : e.data.severity === "warning" ? style.yellow : style.cyan;
      const where = location(e.data);
      const code = e.data.code ? style.dim(` [${e.data.code}]`) : "";
      return [stamp(e, `${paint(e.data.severity)} ${where ? `${where} ` : ""}${painted(e.data.message)}${code}`)];
    },
    "execution.cancel_requested": (e) => [stamp(e, `${style.yellow("■")} ${CANCEL_WORDS[e.data.reason ?? "requested"]}`)],
    "execution.completed": (e) => {
      const took = `in ${formatDuration(e.data.duration_ms)}`;
      if (e.data.state === "succeeded") return [stamp(e, `${style.green("✔")} succeeded ${took}`)];
      if (e.data.state === "cancelled") return [stamp(e, `${style.yellow("■")} cancelled ${took}`)];
      return [stamp(e, `${style.red("✖")} failed ${took}${e.data.failure ? ` — ${e.data.failure.error_code}` : ""}`)];
    },
    "execution.reconciled": (e) => {
      const by = e.data.actor.kind === "cli" ? `docket run (pid ${e.data.actor.pid})` : e.data.actor.kind;
      const how = e.data.method === "check" ? "by its capability's check" : e.data.method === "run" ? "by the run's own end" : "by hand";
      return [stamp(e, `${style.cyan("◆")} reconciled as ${e.data.outcome} ${how} (${by})${e.data.note ? ` — ${e.data.note}` : ""}`)];
    },
  };
  // Without colour, no line keeps one a handler's text brought (a step title, a stream's name, a
  // diagnostic's file): `NO_COLOR` and a pipe get none, whatever field it came in.
  const plain = (lines: string[]) => (style.color ? lines : lines.map(withoutColour));
  const uncoloured = style.color ? printers : (Object.fromEntries(Object.entries(printers).map(([type, print]) => [type, (e: ExecutionEvent) => plain((print as EventPrinter)(e))])) as Required<EventPrinters>);
  return {
    printers: uncoloured,
    // A type this CLI does not know: shown with its data, never dropped (docs/protocol.md).
    unknown: (e) => plain([stamp(e, `${style.dim("·")} ${e.type} ${JSON.stringify(e.data)}`)]),
    flush() {
      const rest = [...partial].filter(([, text]) => text !== "").map(([name, text]) => streamLine(name, text));
      partial.clear();
      return plain(rest);
    },
  };
}

/** A duration as a person reads it: `840 ms`, `12.3 s`, `4 min 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")} s`;
}

/** A time the CLI waits or gave, as it says it: `500 ms`, `3 s`, `1.5 s` (a whole number of seconds without its ".0"). */
export function formatWindow(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms)} ms`;
}

/** A reporter that prints each event through its type's printer, and the rest through `unknown`. */
export function createRunReporter(options: RunReporterOptions): RunReporter {
  const emit = (lines: string[]) => {
    if (lines.length > 0) options.write(`${lines.join("\n")}\n`);
  };
  return {
    print(event) {
      // A stream's unfinished last line belongs before the run's final line, not after it.
      if (event.type === "execution.completed") emit(options.flush?.() ?? []);
      const printer = options.printers[event.type] as EventPrinter | undefined;
      emit((printer ?? options.unknown)(event));
    },
    flush() {
      emit(options.flush?.() ?? []);
    },
  };
}
