import type { LogLevel } from "../capability/declaration.ts";

/**
 * Where a write to a worker's console goes, asked at each write: the log and streams of the
 * execution whose code is writing (still running), or, for code of no running execution (a direct
 * call, a file's top level, work left running after its task ended), the process's own output,
 * through the main thread, made safe by `mask`.
 */
export type ConsoleTarget =
  | { kind: "execution"; log(message: string, level: LogLevel): void; stream(name: "stdout" | "stderr", chunk: string): void }
  | { kind: "process"; mask(text: string): string };

/** What the worker's console and process.stdout/stderr write to when no execution takes it. */
export type ProcessOutput = (stream: "stdout" | "stderr", text: string) => void;

/** The level each console method's lines get in an execution's log (others: by stream, below). */
const LEVELS: Record<string, LogLevel> = {
  debug: "debug",
  info: "info",
  log: "info",
  dir: "info",
  dirxml: "info",
  table: "info",
  group: "info",
  groupCollapsed: "info",
  count: "info",
  timeLog: "info",
  timeEnd: "info",
  warn: "warn",
  assert: "warn",
  countReset: "warn",
  error: "error",
  trace: "error",
};

/**
 * Takes a worker thread's console and `process.stdout`/`process.stderr` writes (docs/handler-api.md,
 * "Console output"). In a Bun or Node worker every console method formats its text and writes it
 * with those two, synchronously; so each method is wrapped only to know the level of what it
 * writes, and the two writes decide where it goes:
 *
 * - in an execution, a console call's text becomes `execution.log` events, one per line, at the
 *   method's level; a direct `process.stdout.write` becomes an `execution.stream` chunk named
 *   "stdout" (or "stderr") — the handler's context masks and bounds both, as it does its own;
 * - anywhere else it is posted to the main thread, which writes it where the process writes
 *   (`output`): in order with the main thread's own lines, and never lost at exit, where a
 *   worker's own stdio is not flushed.
 */
export function captureConsole(target: () => ConsoleTarget, output: ProcessOutput): void {
  // The level of the console call writing now; "" for a plain process.stdout/stderr write.
  let calling: LogLevel | "" = "";
  const write = (stream: "stdout" | "stderr") =>
    function (this: unknown, chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
      const text = typeof chunk === "string" ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8") : String(chunk);
      const done = typeof encoding === "function" ? encoding : callback;
      const to = target();
      if (to.kind === "process") output(stream, to.mask(text));
      else if (calling === "") to.stream(stream, text);
      else for (const line of text.replace(/\n+$/, "").split("\n")) to.log(line, calling);
      if (typeof done === "function") queueMicrotask(() => (done as (error?: Error | null) => void)(null));
      return true;
    };
  process.stdout.write = write("stdout") as typeof process.stdout.write;
  process.stderr.write = write("stderr") as typeof process.stderr.write;
  const methods = console as unknown as Record<string, unknown>;
  for (const [name, level] of Object.entries(LEVELS)) {
    const original = methods[name];
    if (typeof original !== "function") continue;
    methods[name] = function (this: unknown, ...args: unknown[]) {
      // An inner call (console.table writes with console.log) keeps the outer call's level.
      const outer = calling;
      if (outer === "") calling = level;
      try {
        return (original as (...a: unknown[]) => unknown).apply(console, args);
      } finally {
        calling = outer;
      }
    };
  }
}
