import type { HostFacts } from "../capability/declaration.ts";
import { markArrivedAsText, type TaskOutcome, type WorkerTask } from "./task.ts";
import type { SpawnRequest } from "./spawn-child.ts";
import { MAX_INPUT_DEPTH } from "../execution/json-depth.ts";
// JSON's writer as this thread began, asking no object for a toJSON: a handler that replaces
// JSON.stringify must not write the messages (and so the outputs) of every later task on its worker.
import { hooklessJson } from "./_hookless-json.ts";

/** What the pool hands a new worker through `workerData`. Structured-clone safe. */
export interface WorkerBoot {
  lane: "execution" | "direct";
  /**
   * One Int32 shared with the main thread: the id of the task whose cancellation was requested.
   * A handler in a synchronous busy loop reads it with `Atomics.load`, no event loop needed.
   * Holding a task id (not a boolean) means the flag never has to be reset between tasks, so a
   * cancel can never leak into the next task nor be lost to a reset.
   */
  cancel: SharedArrayBuffer;
  /**
   * One Int32 shared with the main thread: the UTF-16 units of event JSON this worker posted that
   * the main thread has not received yet. The worker adds, the main thread subtracts on receipt;
   * past a bound the handler waits (worker/event-backlog.ts). One per worker, never reused, so a
   * terminated worker's unreceived batches cannot hold up the next one.
   */
  backlog: SharedArrayBuffer;
  /**
   * One Int32 shared with the main thread: where the task handed to this worker stands — handed,
   * received (being prepared), begun (worker/_task-claim.ts). The worker marks it received as it
   * reads it and begun just before its handler is called; the main thread takes back a task not
   * begun (a cancel, a deadline, a worker still busy with a previous handler's leftovers). Each is
   * one atomic swap, so a task is never both begun and taken back.
   */
  claim: SharedArrayBuffer;
  /** How long importing a capability file may take before the task fails (docs/containment.md). */
  load_timeout_ms: number;
  /** When the process started (Date.now() milliseconds): a worker's own process.uptime() is its thread's age (capability/_process-started.ts). */
  process_started_ms: number;
}

/** Main thread → worker. */
export type ToWorker =
  /** Run one handler; `id` tags every message about this task. */
  | { type: "run"; id: number; task: WorkerTask }
  /**
   * Task `id` is received now: its `run` follows by structured clone, which the worker's thread
   * copies in before it reads the message, for seconds with a large input: it is not too busy to
   * begin.
   */
  | { type: "receive"; id: number }
  /** Cooperative cancel: aborts `ctx.signal` (the shared flag already turned `cancelled()` true). */
  | { type: "cancel"; id: number }
  /** Collect garbage now: the task that just ended faulted in much memory, which it may still hold. */
  | { type: "collect" }
  /** The answer to a `host` request. */
  | { type: "host"; request: number; facts: HostFacts | null; error: string | null }
  /** The child of a `spawn` started, with this pid (also its process group's id). */
  | { type: "spawned"; ref: number; pid: number }
  /** The child of a `spawn` could not start. */
  | { type: "spawn_failed"; ref: number; code: string | null; message: string }
  /** Bytes the child wrote, in order. */
  | { type: "child_output"; ref: number; stream: "stdout" | "stderr"; chunk: Uint8Array }
  /** The child ended; always after its last output. */
  | { type: "child_exit"; ref: number; code: number | null; signal: NodeJS.Signals | null }
  /** The child's pipe took the stdin it was given: the next part, please (`child_stdin`). */
  | { type: "child_stdin_wanted"; ref: number };

/** Worker → main thread. */
export type FromWorker =
  /**
   * The worker registered its modules and listens: it is warm. `thread` is the OS thread it runs
   * on (`<pid>/task/<tid>` under /proc, Linux only), so the memory watchdog can read its counters.
   */
  | { type: "ready"; thread: string | null }
  /**
   * A batch of the task's event drafts, serialized once as one JSON array: one message and one
   * parse per batch is the fastest way across the boundary (see bench/worker-roundtrip.ts).
   */
  | { type: "events"; id: number; json: string }
  /** The task's end. Always after its last `events` message on the same port, so order holds. */
  | { type: "outcome"; id: number; outcome: TaskOutcome }
  /**
   * A trial load (worker/load-probe.ts) has its texts and the data they import parsed, and imports
   * the file now: its time limit, the top level's, counts from here.
   */
  | { type: "importing"; id: number }
  /** `ctx.host()`: ask the main thread for the serving process's facts. */
  | { type: "host"; request: number }
  /**
   * Start a child for `ctx.exec`. The main thread starts it (and so reaps it), and ends its process
   * group if this worker is terminated or crashes, which can then run no code (_worker-children.ts).
   */
  | { type: "spawn"; ref: number; request: SpawnRequest }
  /**
   * The worker took `bytes` of a child's output (child_output): the main thread reads no more of
   * the child's pipes while too much it sent is not taken yet (_worker-children.ts).
   */
  | { type: "child_taken"; ref: number; bytes: number }
  /** The next part of a child's stdin (STDIN_PART_BYTES at most), answering `child_stdin_wanted`; null: its end. */
  | { type: "child_stdin"; ref: number; part: Uint8Array | null }
  /** Something went wrong outside any task (for the server log only). */
  | { type: "problem"; message: string }
  /**
   * Built-ins every task of this worker shares were replaced (by the task that ran, or work one
   * left running): the worker is to be replaced once its task ends. `message` is for the server log.
   */
  | { type: "tainted"; message: string }
  /** Console or process.stdout/stderr output of no running execution, masked (_console-capture.ts). */
  | { type: "output"; stream: "stdout" | "stderr"; text: string }
  /** The answer to `collect`: MiB this worker's heap still holds once it collected (what its handler keeps). */
  | { type: "collected"; held_mb: number }
  /** The OS threads (`<pid>/task/<tid>`, where known) of the threads handlers started here (`new Worker`) that are alive: sent on each start and end. */
  | { type: "nested"; threads: string[] };

/**
 * Deeper than this, a value goes by structured clone. Above the deepest input admitted (json-depth.ts,
 * MAX_INPUT_DEPTH) and the task around it: every input crosses as JSON. Structured clone of a deep
 * one (32,000 arrays nested 120 deep) held the main thread 1.2 s, against 0.1 s to stringify it.
 */

const MAX_JSON_DEPTH = 160;

/**
 * The most objects `isJsonPlain` goes through: more than the largest input (input_bytes) or output
 * (output_bytes) can hold as a tree. Only an object met on two paths (a cycle, or one shared by two
 * members) takes it past: JSON would copy it once per path, without end for a cycle, and the walk
 * itself would go down every path, 2^depth of them for two members sharing each level.
 */
const MAX_OBJECTS = 8_000_000;

/**
 * A message as it crosses the thread boundary: one JSON string when JSON carries it without loss,
 * else the object itself for structured clone. Bun copies a string far faster than an object
 * graph (measured: ~1.3× the no-op round trips of the same pool posting objects), while a Date,
 * Map, typed array, undefined or NaN that a valibot transform or a handler produced still arrives
 * as it was sent.
 */
export function toWire<M extends ToWorker | FromWorker>(message: M): string | M {
  // An events batch already is JSON: encoding it again would escape every quote of the batch.
  if (message.type === "events") return message;
  // Never through a toJSON a handler put on Object.prototype: a direct call's printed line, masked,
  // got its secret back from one (checking tester, session 45).
  return isJsonPlain(message, 0, { objects: 0 }) ? hooklessJson(message) : message;
}

/** The message `toWire` sent. */
export function fromWire<M extends ToWorker | FromWorker>(data: string | M): M {
  return typeof data === "string" ? (JSON.parse(data) as M) : data;
}

/**
 * The message `toWire` sent, its outcome marked (task.ts, markArrivedAsText) when it arrived as
 * JSON text that nests no deeper than an output may and holds no number JSON.parse could make
 * Infinity of: then its output is plain JSON by construction, and the main thread need not walk
 * it again. One scan of the text, no call per member: 7 ms for 2M empty objects, where a walk of
 * what JSON.parse made took 300 ms.
 */
export function fromWorkerWire(data: string | FromWorker): FromWorker | null {
  let message: unknown;
  try {
    message = fromWire(data);
  } catch {
    return null;
  }
  if (!isFromWorker(message)) return null;
  if (typeof data === "string" && message.type === "outcome" && typeof message.outcome === "object" && message.outcome !== null && plainText(data, MAX_INPUT_DEPTH + OUTCOME_ENVELOPE_DEPTH)) markArrivedAsText(message.outcome);
  return message;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const isNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);
const isString = (value: unknown): value is string => typeof value === "string";
/**
 * An OS thread as a worker names it (`<pid>/task/<tid>`, digits only): the main thread reads
 * files under /proc by it, so any other string — a path to a FIFO that blocked the main thread in
 * open(), forged by a handler (checking tester, session 48) — is no thread. Its pid is not compared
 * with this process's: in a pid namespace of its own under the host's /proc, the two differ.
 */
const isOwnThread = (value: unknown): value is string => isString(value) && /^\d+\/task\/\d+$/.test(value);

/**
 * True for a message of a shape a worker sends: its type known and the fields the main thread reads
 * of the types they are. A handler shares its thread with the worker's code, and may post on the
 * worker's port itself (`parentPort.postMessage(null)`, a string): such a message was read as one of
 * docket's, and threw on the main thread — once part-way through releasing a task (foundation
 * tester, session 48). Not a defence against a handler that means to forge: what it posts in a
 * known shape is its own task's doing.
 */
function isFromWorker(message: unknown): message is FromWorker {
  if (!isObject(message)) return false;
  switch (message.type) {
    case "ready":
      return message.thread === null || message.thread === undefined || isOwnThread(message.thread);
    case "events":
      return isNumber(message.id) && isString(message.json);
    case "outcome": {
      const outcome = message.outcome;
      return isNumber(message.id) && isObject(outcome) && (outcome.ok === true || (outcome.ok === false && isObject(outcome.error) && isString(outcome.error.kind)));
    }
    case "importing":
      return isNumber(message.id);
    case "host":
      return isNumber(message.request);
    case "spawn":
      return isNumber(message.ref) && isObject(message.request);
    case "child_taken":
      return isNumber(message.ref) && isNumber(message.bytes);
    case "child_stdin":
      return isNumber(message.ref) && (message.part === null || message.part instanceof Uint8Array);
    case "problem":
    case "tainted":
      return isString(message.message);
    case "output":
      return (message.stream === "stdout" || message.stream === "stderr") && isString(message.text);
    case "collected":
      return isNumber(message.held_mb) && message.held_mb >= 0;
    case "nested":
      return Array.isArray(message.threads) && message.threads.every(isOwnThread);
    default:
      return false;
  }
}

/** The levels an outcome message puts around its output: the message, its `outcome`. */
const OUTCOME_ENVELOPE_DEPTH = 2;

/**
 * True when JSON text `text` nests at most `max` levels and holds no number with an exponent or
 * over 300 digits (the only ones JSON.parse may turn into Infinity). JSON.stringify writes a
 * number past 1e21 or below 1e-6 with an exponent: such an output is walked as any other.
 */
function plainText(text: string, max: number): boolean {
  let depth = 0;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: on to its closing quote, past every escaped character.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      digits = 0;
      continue;
    }
    if (c >= 0x30 && c <= 0x39) {
      if (++digits > 300) return false;
      continue;
    }
    // "e" or "E" after a digit is an exponent; in true and false it follows a letter.
    if ((c === 0x65 || c === 0x45) && digits > 0) return false;
    digits = 0;
    if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return false;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return true;
}

/** How `toWire` writes a `run` message's start, the task id next. */
const RUN_HEAD = '{"type":"run","id":';

/**
 * The task id of a `run` message as `toWire` wrote it, read from its first characters: the worker
 * marks the task received before it parses an input of megabytes, so that the parse is never taken
 * for a worker too busy to begin (pool.ts, checkStarts). Null for any other message.
 */
export function runIdOfWire(data: unknown): number | null {
  if (typeof data !== "string" || !data.startsWith(RUN_HEAD)) return null;
  const end = data.indexOf(",", RUN_HEAD.length);
  const id = Number(data.slice(RUN_HEAD.length, end));
  return end > 0 && Number.isInteger(id) ? id : null;
}

/** How many objects `isJsonPlain` went through so far. */
interface Visits {
  objects: number;
}

/**
 * True when `JSON.parse(JSON.stringify(value))` gives back an equal value, as far as it can tell
 * within MAX_OBJECTS: past them it says no, and structured clone (which keeps shared objects
 * shared) carries the value.
 */
function isJsonPlain(value: unknown, depth: number, visits: Visits): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth >= MAX_JSON_DEPTH || ++visits.objects > MAX_OBJECTS) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!isJsonPlain(value[i], depth + 1, visits)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) if (!isJsonPlain((value as Record<string, unknown>)[key], depth + 1, visits)) return false;
      return true;
    }
    default:
      return false;
  }
}
