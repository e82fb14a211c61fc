import type { CapabilityContext, DiagnosticInput, HostFacts, LogLevel } from "../capability/declaration.ts";
import type { EventDraft, EventPayload } from "../execution/protocol.ts";
import type { FromWorker } from "./_messages.ts";
import { createArtifactWriter } from "./_artifacts.ts";
import { createExec } from "./exec.ts";
import { spawnHere, type Spawner } from "./spawn-child.ts";
import type { OtherSecrets } from "./_other-secrets.ts";
import type { WorkerTask } from "./task.ts";
import { asItReads, createSecretMask, isSecretNumber, maskAcross, maskedBeforeSafe, secretsIn, unfinishedSecretLength, type SecretMask } from "../execution/secret-mask.ts";
import { boundDraftTexts } from "../execution/text-limits.ts";
import { postedEvents } from "./event-backlog.ts";
import { hooklessJson } from "./_hookless-json.ts";
import { sanitizeLine, sanitizeText, unfinishedEscapeLength } from "../execution/text-sanitize.ts";


// Batching: of one object per event, an array of objects per batch, an array of JSON strings per
// batch and one JSON string per batch, the last was fastest end to end (parse included); through
// the pool it runs ~4.5x one object per event (bench/worker-roundtrip.ts: ~2.2M vs ~0.5M
// events/s). 256 keeps a batch's JSON small (tens of KiB) while amortizing the message (1024
// measured no better); 16 ms bounds how long a busy synchronous handler holds an event.
const BATCH_SIZE = 256;
const MAX_DELAY_MS = 16;
// And at most about this many UTF-16 units of text: with raised text limits, 256 events of 1 MiB
// each would be one 256 MiB message, far past the backlog bound that is checked between batches.
const BATCH_UNITS = 1024 * 1024;

const LOG_LEVELS: ReadonlySet<string> = new Set(["debug", "info", "warn", "error"]);
const SEVERITIES: ReadonlySet<string> = new Set(["error", "warning", "info"]);

/** UTF-16 units per stream event: at most 48 KiB of UTF-8, well under a 256 KiB frame. */
const STREAM_PIECE_UNITS = 16 * 1024;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
/** The longest colour (SGR) sequence a stream piece keeps whole: ESC [ and some 60 parameters. */
const MAX_COLOUR_UNITS = 64;

/** The error a handler throws when it stops because it was cancelled. */
export class CancelledError extends Error {
  constructor(message = "The execution was cancelled.") {
    super(message);
    this.name = "CancelledError";
  }
}

/** True for the error of `ctx.progress.cancellation()`, from any module copy. */
export function isCancellation(error: unknown): boolean {
  return error instanceof Error && error.name === "CancelledError";
}

/** What the worker entry needs to build a task's context. */
export interface WorkerContextOptions {
  id: number;
  task: WorkerTask;
  /** The worker's shared cancel flag: holds the id of the task whose cancel was requested. */
  cancelFlag: Int32Array;
  /** Event JSON posted and not yet received by the main thread (event-backlog.ts); absent: never waits. */
  backlog?: Int32Array;
  post(message: FromWorker): void;
  host(): Promise<HostFacts>;
  /** Starts a `ctx.exec` child; a worker's go through the main thread (default: in this thread). */
  spawn?: Spawner;
  /** Milliseconds for the batching delay (default `performance.now`); tests hold it still. */
  now?: () => number;
  /**
   * The long one-line secrets of the tasks its worker ran last (OTHERS_MIN_LENGTH), masked in this
   * task's texts too, only where they appear whole (_other-secrets.ts): a module-level variable
   * keeps what an earlier task put there.
   */
  others?: OtherSecrets;
}

/** A child's TERM → KILL wait when none is given: short, so that a cancelled handler still ends on its own. */
const DEFAULT_KILL_GRACE_MS = 2000;

/** A handler's context inside a worker, with the controls the worker entry keeps for itself. */
export interface WorkerContext {
  ctx: CapabilityContext;
  /** Posts what is buffered now; called before the outcome so every event precedes it. */
  flush(): void;
  /** The cancel message arrived: abort `ctx.signal`. */
  cancel(): void;
  /** True once cancellation was requested, by either path. */
  cancelRequested(): boolean;
  /** The task ended: later calls from a stray callback are dropped instead of posted. */
  close(): void;
  /** `text` with the task's secret values masked (what a thrown value's detail gets before it is cut), and other tasks' whole. */
  mask(text: string): string;
  /** A value with other tasks' secrets masked where whole (a CapabilityError's context; its own are masked on the main thread). */
  maskValue<T>(value: T): T;
  /**
   * What a console method of the task's code printed to `stream` (console.log: stdout), as log
   * lines at `level`. A secret begun by a write to that stream whose start it holds back
   * (`process.stdout.write("hunt")`, then `console.log("er2…")`) is one text where they are
   * printed: masked as such, each part `[redacted]`.
   */
  print(stream: "stdout" | "stderr", text: string, level: LogLevel): void;
  /**
   * Writes what the task's code printed outside an execution (a direct call) to the process's
   * output, masked, holding back a tail that starts a secret until the next write or the task's
   * end, as an execution's streams do. Writes and console lines alike, in the order they came:
   * the process's output is one text, and put out of order it could show a secret its code never
   * printed whole (`write("hunter2SEChunt")`, then `console.log("RETxyz")`).
   */
  output(stream: "stdout" | "stderr", text: string): void;
}

/** Builds `ctx` for one task: progress methods batch event drafts, `cancelled()` reads shared memory. */
export function createWorkerContext(options: WorkerContextOptions): WorkerContext {
  const { id, task, cancelFlag, backlog, post } = options;
  const now = options.now ?? (() => performance.now());
  // Each text is made safe to print, then masked, then cut (in emit), here as it is made: no
  // event leaves the worker holding a secret of the input, whoever stores or forwards it next
  // (docs/security.md). Control characters go first, so that one inside a secret cannot keep it
  // from the mask only for the store to strip it and join the secret again; cutting goes last, so
  // that it never splits a secret or an escape sequence. `line` is for one-line texts, `block`
  // for multi-line ones (stream chunks, diagnostic messages), as the store sanitizes them.
  const mask = createSecretMask(task.secrets ?? []);
  // Other tasks' secrets, whole only: a prefix held back, or a short value blanked, would tell
  // this task's caller what another caller's secret begins with or is (checking tester, session 49).
  const others = options.others;
  const whole = others === undefined ? (text: string) => text : (text: string) => others.text(text);
  const own = (text: string) => whole(mask.text(text));
  const line = (value: unknown) => own(sanitizeLine(maskedBeforeSafe(String(value), mask.text)));
  // A number of an event that is a sensitive number of the input (a PIN given as a progress count):
  // the event's numbers are not text to mask, so such a one is left out, as "unknown" (null).
  const visible = (n: number | null) => (n !== null && mask.secrets.length > 0 && isSecretNumber(n, mask.text) ? null : n);
  const block = (value: unknown) => own(sanitizeText(maskedBeforeSafe(String(value), mask.text)));
  let pending: EventDraft[] = [];
  let pendingUnits = 0;
  let scheduled = false;
  let lastFlush = 0;
  let closed = false;

  const flush = () => {
    if (pending.length === 0) return;
    // Never through a toJSON the handler put on Object.prototype: it put masked secrets back.
    const json = hooklessJson(pending);
    pending = [];
    pendingUnits = 0;
    lastFlush = now();
    post({ type: "events", id, json });
    // Past the bound the handler's thread waits here for the main thread: a flood is slowed, never queued without end.
    if (backlog !== undefined) postedEvents(backlog, json.length);
  };
  const flushLater = () => {
    scheduled = false;
    if (!closed) flush();
  };
  const limits = task.text_limits;
  const emit = (draft: EventDraft) => {
    if (closed) return;
    // Cut here, after masking, as the store would cut it: a 1 MB title is 1 MB to copy, parse and
    // hold in flight between threads, and a handler can make a thousand of those a second.
    const bounded = limits === undefined ? draft : boundDraftTexts(draft, limits);
    pending.push(bounded);
    pendingUnits += textUnits(bounded);
    // The time check covers a synchronous loop, in which setImmediate would not run until it ends.
    if (pending.length >= BATCH_SIZE || pendingUnits >= BATCH_UNITS || now() - lastFlush >= MAX_DELAY_MS) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flushLater);
    }
  };

  /** Each stream's held-back tail: masked text that may be the start of a secret (see `stream`). */
  const heldStreams = new Map<string, string>();
  /** The same for what goes to the process's output (see `output`), not masked yet. */
  const heldOutput = new Map<"stdout" | "stderr", string>();
  const output = (stream: "stdout" | "stderr", text: string) => {
    // Once the task ended nothing would let a held tail go: a stray callback's write goes whole.
    if (closed || mask.secrets.length === 0) return post({ type: "output", stream, text: own(text) });
    const raw = (heldOutput.get(stream) ?? "") + text;
    const cut = heldBackFrom(raw, mask);
    if (cut < raw.length) heldOutput.set(stream, raw.slice(cut));
    else heldOutput.delete(stream);
    if (cut > 0) post({ type: "output", stream, text: own(raw.slice(0, cut)) });
  };
  /** A stream's text as events: a huge one as several, so that no event outgrows a live-channel frame. */
  const streamPieces = (name: string, text: string) => {
    const all = whole(text);
    for (let at = 0; at < all.length; ) {
      const end = pieceEnd(all, at);
      emit({ type: "execution.stream", data: { name, chunk: all.slice(at, end) } });
      at = end;
    }
  };

  // The AbortController is made on first use of ctx.signal: most handlers never touch it, and
  // making one per task is a measurable share of a no-op round trip.
  let controller: AbortController | null = null;
  let requested = false;
  const abort = () => {
    requested = true;
    if (controller && !controller.signal.aborted) controller.abort(new CancelledError());
  };
  const signal = () => {
    controller ??= new AbortController();
    if (requested) abort();
    return controller.signal;
  };
  const cancelRequested = () => {
    if (requested) return true;
    // Atomics.load sees the main thread's store at once, even while this thread never yields.
    if (Atomics.load(cancelFlag, 0) !== id) return false;
    abort();
    return true;
  };

  // A worker's children are started by the main thread, so that one terminated or lost leaves none behind.
  const children = createExec({
    root: task.root,
    get progress() {
      return ctx.progress;
    },
    signal,
    killGraceMs: task.kill_grace_ms ?? DEFAULT_KILL_GRACE_MS,
    spawn: options.spawn ?? spawnHere,
    // The longest form of a secret masked comes first.
    holdBack: Math.max(0, (mask.secrets[0]?.length ?? 0) - 1),
  });

  const ctx: CapabilityContext = {
    progress: {
      step: (stepId, title) => emit({ type: "execution.step", data: { id: line(stepId), title: line(title) } }),
      stepDone: (stepId, ok, message) =>
        emit({ type: "execution.step_done", data: { id: line(stepId), ok: Boolean(ok), ...(message === undefined ? {} : { message: line(message) }) } }),
      progress: (current, total, message) =>
        emit({
          type: "execution.progress",
          data: {
            current: visible(count(current)) ?? 0,
            // null (or NaN, or a negative total) is "total unknown", which the protocol allows.
            ...(total === undefined ? {} : { total: total === null ? null : visible(count(total)) }),
            ...(message === undefined ? {} : { message: line(message) }),
          },
        }),
      log: (message, level) => emit({ type: "execution.log", data: { level: LOG_LEVELS.has(level as string) ? (level as LogLevel) : "info", message: line(message) } }),
      stream: (name, chunk) => {
        const streamName = line(name);
        // With what an earlier chunk of the stream held back (below) before it, not masked yet.
        const raw = (heldStreams.get(streamName) ?? "") + String(chunk);
        // An escape sequence or a `\r` the chunk ends with may be finished by the next write
        // (`ESC [ 3` then `1m`, `\r` then `\n`): it waits for it, raw, as a split character does
        // in the decoder, since made safe alone it would change (docs/security.md).
        const unfinished = unfinishedEscapeLength(raw) || (raw.endsWith("\r") ? 1 : 0);
        const done = unfinished === 0 ? raw : raw.slice(0, raw.length - unfinished);
        if (mask.secrets.length === 0) {
          if (unfinished === 0) heldStreams.delete(streamName);
          else heldStreams.set(streamName, raw.slice(done.length));
          // The whole chunk is masked before it is cut into pieces, so no piece holds half a secret.
          return streamPieces(streamName, block(done));
        }
        const text = sanitizeText(maskedBeforeSafe(done, mask.text));
        // A chunk that ends with the start of a secret holds that start back until the next chunk
        // (or the task's end) says whether the secret follows: written in pieces (a library writing
        // in blocks, a token printed a character at a time), it is masked whole. Found in the text
        // before it is masked: masked first, a secret's first line (a secret of its own) hid the
        // start of the whole secret.
        const cut = heldBackFrom(text, mask);
        if (cut < text.length || unfinished > 0) heldStreams.set(streamName, text.slice(cut) + raw.slice(done.length));
        else heldStreams.delete(streamName);
        streamPieces(streamName, mask.text(text.slice(0, cut)));
      },
      diagnostic: (d) => emit({ type: "execution.diagnostic", data: diagnosticData(d, line, block, visible) }),
      cancelled: cancelRequested,
      cancellation: () => new CancelledError(),
    },
    get signal() {
      return signal();
    },
    root: task.root,
    artifacts: createArtifactWriter(task, mask.text),
    execution: task.execution,
    host: options.host,
    exec: (argv, execOptions) => children.exec(argv, execOptions),
  };

  return {
    ctx,
    flush,
    cancel: abort,
    cancelRequested,
    close() {
      children.endAll();
      // What streams held back is no secret's start after all: the task wrote nothing after it.
      // An escape it never finished is dropped: what it would have done is unknown.
      for (const [name, text] of heldStreams) streamPieces(name, block(text.slice(0, text.length - unfinishedEscapeLength(text))));
      heldStreams.clear();
      for (const [stream, text] of heldOutput) post({ type: "output", stream, text: own(text) });
      heldOutput.clear();
      flush();
      closed = true;
    },
    mask: own,
    maskValue: (value) => (others === undefined ? value : others.value(value)),
    print(stream, text, level) {
      const held = heldStreams.get(stream);
      const across = held === undefined ? null : maskAcross(held, text, mask);
      if (across !== null) {
        heldStreams.delete(stream);
        streamPieces(stream, block(across[0]));
      }
      // Masked whole before it is cut into lines: a secret with line breaks (a PEM key) spans them.
      for (const line of mask.text(across?.[1] ?? text).replace(/\n+$/, "").split("\n")) ctx.progress.log(line, level);
    },
    output,
  };
}

/**
 * Where the part of a stream's text to hold back begins: at the start of its longest tail that
 * begins a secret, or earlier, at the start of the run of overlapping secrets that point falls in
 * (masked apart, the two pieces would each show part of one). The text's length when nothing is
 * held. Looked for in the text as written and as it reads, together: a tail `hunte\x1b[31m` ends
 * in a colour escape, and the next write's `r2…` still shows the secret whole after it; a secret
 * holding a zero-width character stands only as written, and a cut found as the text reads must
 * not fall inside it.
 */
function heldBackFrom(text: string, mask: SecretMask): number {
  let cut = text.length - unfinishedSecretLength(text, mask.secrets, mask.index);
  const ranges = secretsIn(text, mask);
  const reads = asItReads(text);
  if (reads !== null) {
    const tail = unfinishedSecretLength(reads.visible, mask.secrets, mask.index);
    if (tail > 0) cut = Math.min(cut, reads.at[reads.visible.length - tail]!);
    for (const [from, to] of secretsIn(reads.visible, mask)) ranges.push([reads.at[from]!, reads.at[to - 1]! + 1]);
  }
  if (cut === 0) return 0;
  // Found in one pass: moved one secret at a time, each move searching again, a text of secrets
  // overlapping back to back took seconds a write.
  let start = 0;
  let end = 0;
  for (const [from, to] of ranges.sort((a, b) => a[0] - b[0])) {
    if (from >= cut) break;
    if (from < end) end = Math.max(end, to);
    else [start, end] = [from, to];
  }
  return start < cut && cut < end ? start : cut;
}

/** About how many UTF-16 units a draft's texts hold: what makes one event large. */
function textUnits(draft: EventDraft): number {
  const data = draft.data as { message?: unknown; title?: unknown; chunk?: unknown };
  let units = 64;
  if (typeof data.message === "string") units += data.message.length;
  if (typeof data.title === "string") units += data.title.length;
  if (typeof data.chunk === "string") units += data.chunk.length;
  return units;
}

/** A number that JSON can carry, or null ("unknown") for NaN, Infinity and non-numbers. */
function finite(value: unknown): number | null {
  const n = typeof value === "number" ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}

/**
 * A progress count or total: a finite number of 0 or more, else null. A report carrying a negative
 * one is refused by the server (execution/_report-events.ts), so none is ever made here.
 */
function count(value: unknown): number | null {
  const n = finite(value);
  return n !== null && n >= 0 ? n : null;
}

/**
 * Where the stream piece that starts at `at` ends: at most STREAM_PIECE_UNITS on, never between
 * the halves of a surrogate pair nor inside a colour sequence (the only escapes left after
 * sanitizing), which would reach a terminal as stray text.
 */
function pieceEnd(text: string, at: number): number {
  let end = Math.min(text.length, at + STREAM_PIECE_UNITS);
  if (end === text.length) return end;
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
  const escape = text.lastIndexOf("\u001b", end - 1);
  // A colour sequence is short: an escape further back than this has ended.
  if (escape > at && end - escape <= MAX_COLOUR_UNITS && text.indexOf("m", escape) >= end) end = escape;
  return end;
}

function diagnosticData(d: DiagnosticInput, oneLine: (value: unknown) => string, block: (value: unknown) => string, visible: (n: number | null) => number | null): EventPayload<"execution.diagnostic"> {
  const data: EventPayload<"execution.diagnostic"> = {
    severity: SEVERITIES.has(d?.severity) ? d.severity : "error",
    message: block(d?.message ?? ""),
  };
  if (d?.code !== undefined) data.code = oneLine(d.code);
  if (d?.file !== undefined) data.file = oneLine(d.file);
  const line = d?.line === undefined ? null : visible(finite(d.line));
  const column = d?.column === undefined ? null : visible(finite(d.column));
  if (line !== null) data.line = line;
  if (column !== null) data.column = column;
  return data;
}
