import { StringDecoder } from "node:string_decoder";
import { format } from "node:util";
import type { LogLevel } from "../capability/declaration.ts";
import { withoutImportQueries } from "../capability/import-query.ts";

/**
 * Where a write to a worker's console goes, asked at each write: the log and streams of the
 * execution whose code is writing (still running), or, for code of no running execution (a direct
 * call, a file's top level, work left running after its task ended), the process's own output,
 * through the main thread, made safe by `mask`.
 */
export type ConsoleTarget =
  | { kind: "execution"; mask(text: string): string; print(stream: "stdout" | "stderr", text: string, level: LogLevel): void; stream(name: "stdout" | "stderr", chunk: string): void }
  | { kind: "process"; mask(text: string): string; write?(stream: "stdout" | "stderr", text: string): void };

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
  // Bytes are decoded as a stream: a character split between two writes (a piped file's 64 KiB
  // blocks) is whole, not two U+FFFD that would also hide a secret's start from its mask.
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  const write = (stream: "stdout" | "stderr") =>
    function (this: unknown, chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
      const text = textOf(chunk, encoding, decoders[stream]);
      const done = typeof encoding === "function" ? encoding : callback;
      const to = target();
      // A task's own writes are held and masked by its context, so that a secret written in two goes whole.
      if (to.kind === "process") to.write ? to.write(stream, text) : output(stream, to.mask(text));
      else if (calling === "") to.stream(stream, text);
      else to.print(stream, text, calling);
      if (typeof done === "function") queueMicrotask(() => (done as (error?: Error | null) => void)(null));
      return true;
    };
  process.stdout.write = write("stdout") as typeof process.stdout.write;
  process.stderr.write = write("stderr") as typeof process.stderr.write;
  // The other ways out of the two streams: a last chunk given to end(), and the runtime's own
  // unbuffered debug line. Neither may pass unmasked, nor end the worker's stdout for good.
  for (const [name, stream] of [["stdout", process.stdout], ["stderr", process.stderr]] as const) {
    // The Writable's own underlying writes, which a caller can reach past write() itself.
    const through = (chunk: unknown, encoding: unknown) => (process[name].write as (c: unknown, e?: unknown) => boolean)(chunk, encoding);
    const writable = stream as unknown as { _write?: unknown; _writev?: unknown };
    writable._write = (chunk: unknown, encoding: unknown, callback: (error?: Error | null) => void) => (through(chunk, encoding), callback(null));
    writable._writev = (chunks: Array<{ chunk: unknown; encoding: unknown }>, callback: (error?: Error | null) => void) => {
      for (const { chunk, encoding } of chunks) through(chunk, encoding);
      callback(null);
    };
    stream.end = function (this: unknown, chunk?: unknown, encoding?: unknown, callback?: unknown) {
      const done = [chunk, encoding, callback].find((arg) => typeof arg === "function") as (() => void) | undefined;
      if (chunk !== undefined && chunk !== null && typeof chunk !== "function") (process[name].write as (c: unknown, e?: unknown) => boolean)(chunk, typeof encoding === "string" ? encoding : undefined);
      if (done) queueMicrotask(done);
      return stream;
    } as typeof stream.end;
  }
  const runtime = process as unknown as { _rawDebug?: (...args: unknown[]) => void };
  if (typeof runtime._rawDebug === "function") runtime._rawDebug = (...args: unknown[]) => void process.stderr.write(`${format(...args)}\n`);
  const methods = console as unknown as Record<string, unknown>;
  for (const [name, level] of Object.entries(LEVELS)) {
    const original = methods[name];
    if (typeof original !== "function") continue;
    // The runtime's trace drops its message: "Trace: <message>" and the caller's frames, as Node prints it.
    const run = name === "trace" ? (...args: unknown[]) => process.stderr.write(`Trace${args.length > 0 ? `: ${format(...args)}` : ""}\n${callerFrames()}`) : original;
    methods[name] = function (this: unknown, ...args: unknown[]) {
      // An inner call (console.table writes with console.log) keeps the outer call's level.
      const outer = calling;
      if (outer === "") calling = level;
      try {
        return (run as (...a: unknown[]) => unknown).apply(console, bytesUnshown(args, target().mask));
      } finally {
        calling = outer;
      }
    };
  }
}

/**
 * A chunk written to stdout or stderr as the text it stands for: a string as it is, unless its
 * encoding says it spells bytes (hex, base64), which are read as UTF-8; bytes (any view, or an
 * ArrayBuffer) as UTF-8. A string written as UTF-16 is its own text, so that masking sees it whole.
 */
function textOf(chunk: unknown, encoding: unknown, decoder: StringDecoder): string {
  if (typeof chunk === "string") {
    const spelled = typeof encoding === "string" && BYTE_SPELLINGS.has(encoding.toLowerCase());
    if (spelled) return decoder.write(Buffer.from(chunk, encoding as BufferEncoding));
    // Text after bytes: what an unfinished character of them held back is let go first.
    return decoder.end() + chunk;
  }
  if (ArrayBuffer.isView(chunk)) return decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  if (chunk instanceof ArrayBuffer) return decoder.write(Buffer.from(chunk));
  return decoder.end() + String(chunk);
}

/**
 * The console's arguments, each one that is bytes (a Buffer, a typed array, an ArrayBuffer)
 * holding a secret as UTF-8 given as a line that says so instead: the console prints bytes as
 * numbers (`<Buffer 53 75 70 …>`), which no mask of text finds — a request body logged as it came
 * showed the token in it (containment tester, session 45). An object (an array, a Map, a class's
 * instance, a function…) holding such bytes within the depth the console prints is not shown
 * either: a request logged whole (`{ headers, body: <Buffer> }`) showed it the same way. The bytes
 * of every argument are joined in order for the look, so a secret split between two of them
 * (`{ a: part1 }, { b: part2 }`) hides all that hold a part. Bytes the look cannot reach (a
 * Proxy's target, a Promise's value) are found by the mask itself, as the console prints them
 * whole (secret-mask.ts, byteRenderings).
 */
function bytesUnshown(args: unknown[], mask: (text: string) => string): unknown[] {
  // Every argument's bytes, in order: its own, or those it holds.
  const held: Array<[index: number, text: string, bytes: number | null]> = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const bytes = bytesOf(arg);
    if (bytes !== null) held.push([i, bytes.toString("utf8"), (arg as ArrayBufferView | ArrayBuffer).byteLength]);
    else if ((typeof arg === "object" && arg !== null) || typeof arg === "function") {
      const inside = bytesWithin(arg);
      if (inside !== "") held.push([i, inside, null]);
    }
  }
  if (held.length === 0) return args;
  let joined = "";
  for (const [, text] of held) joined += text;
  if (mask(joined) === joined) return args;
  // One of them holds a secret, or they do together: none is shown (a part alone may be most of it).
  const shown = [...args];
  for (const [i, , length] of held) {
    const arg = args[i];
    shown[i] =
      length === null
        ? `<${Array.isArray(arg) ? "array" : typeof arg === "function" ? "function" : "object"} holding bytes that hold [redacted], not shown>`
        : `<${Buffer.isBuffer(arg) ? "Buffer" : ArrayBuffer.isView(arg) ? "bytes" : "ArrayBuffer"} of ${length} bytes holding [redacted], not shown>`;
  }
  return shown;
}

/**
 * How many of a byte value's first bytes are looked at: more than the console prints of one (a
 * Buffer's first 50 bytes, a typed array's first 100 items), so that a secret starting where it
 * is printed is found whole. A 600 MB Buffer logged was read whole into a string and its worker
 * ran out of memory (checking tester, session 46).
 */
const LOOKED_AT_BYTES = 1024;

/** The first LOOKED_AT_BYTES of bytes, as a Buffer over the same memory; null for any other value. */
function bytesOf(value: unknown): Buffer | null {
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, Math.min(value.byteLength, LOOKED_AT_BYTES));
  if (value instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && value instanceof SharedArrayBuffer)) return Buffer.from(value, 0, Math.min(value.byteLength, LOOKED_AT_BYTES));
  return null;
}

/** How deep and how much of an object's inside is looked at for bytes: past the console's own depth (2 levels below the argument in Bun and Node, more with --console-depth), and a bound on the values seen. */
const NESTED_DEPTH = 6;
const NESTED_VALUES = 20_000;
/** An array's items looked at: those the console prints (the first 100), as its other own members are. */
const ARRAY_ITEMS = 100;

/**
 * The bytes inside `root` — in its own data properties (a function's too), an array's items the
 * console prints and its other members, a Map's keys and values, a Set's items, down to
 * NESTED_DEPTH — as UTF-8 text, joined in the order met; "" when it holds none. No getter is
 * called (the console shows one as `[Getter]`); what cannot be read (a Proxy's trap that throws)
 * is passed over.
 */
function bytesWithin(root: object): string {
  let joined = "";
  let budget = NESTED_VALUES;
  const seen = new Set<object>();
  const visit = (value: unknown, depth: number): void => {
    if (budget-- <= 0 || ((typeof value !== "object" || value === null) && typeof value !== "function") || seen.has(value as object)) return;
    seen.add(value as object);
    const bytes = bytesOf(value);
    if (bytes !== null) {
      joined += bytes.toString("utf8");
      return;
    }
    if (depth >= NESTED_DEPTH) return;
    try {
      if (value instanceof Map) {
        for (const [key, item] of value) {
          if (budget <= 0) return;
          visit(key, depth + 1);
          visit(item, depth + 1);
        }
      } else if (value instanceof Set) {
        for (const item of value) {
          if (budget <= 0) return;
          visit(item, depth + 1);
        }
      }
      const keys = Array.isArray(value) ? arrayKeys(value) : Reflect.ownKeys(value as object);
      for (const key of keys) {
        if (budget <= 0) return;
        const field = Reflect.getOwnPropertyDescriptor(value as object, key);
        if (field !== undefined && "value" in field) visit(field.value, depth + 1);
      }
    } catch {
      // A Proxy or an exotic object that refuses to be read: the console meets the same refusal.
    }
  };
  visit(root, 0);
  return joined;
}

/** The keys of an array the console prints: its first ARRAY_ITEMS items present (a sparse one's too), then its other own members (`a.extra`). */
function arrayKeys(array: unknown[]): Array<string | symbol> {
  const keys: Array<string | symbol> = [];
  if (array.length <= 10_000) {
    let items = 0;
    for (const key of Reflect.ownKeys(array)) {
      if (key === "length") continue;
      const index = typeof key === "string" && /^(?:0|[1-9]\d*)$/.test(key);
      if (!index || items++ < ARRAY_ITEMS) keys.push(key);
    }
    return keys;
  }
  // A long array: its first items, and no walk of a million keys for members beside them.
  for (let i = 0; i < ARRAY_ITEMS; i++) keys.push(String(i));
  return keys;
}

/** The encodings in which a string spells bytes rather than being text. */
const BYTE_SPELLINGS = new Set(["hex", "base64", "base64url"]);

/** The stack of whoever called console.trace, without this module's frames nor docket's own. */
function callerFrames(): string {
  const lines = (new Error().stack ?? "").split("\n").slice(1);
  return lines
    .filter((line) => !/_console-capture|worker-entry|\$bunfs|node:async_hooks/.test(line))
    .map((line) => `${withoutImportQueries(line)}\n`)
    .join("");
}
