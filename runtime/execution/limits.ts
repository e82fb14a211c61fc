import { editDistance } from "../capability/did-you-mean.ts";

/** Every bound of docs/limits.md, in one typed object. */
export interface Limits {
  max_concurrent: number;
  direct_workers: number;
  max_queued: number;
  executions_retained: number;
  events_retained: number;
  log_line_bytes: number;
  step_title_bytes: number;
  step_message_bytes: number;
  progress_message_bytes: number;
  diagnostic_message_bytes: number;
  failure_message_bytes: number;
  stream_chunk_bytes: number;
  events_retained_bytes: number;
  executions_retained_bytes: number;
  diagnostics_retained: number;
  steps_retained: number;
  log_tail_lines: number;
  input_bytes: number;
  output_bytes: number;
  frame_bytes: number;
  subscriber_queue_bytes: number;
  lagging_kept_bytes: number;
  live_connections: number;
  answer_bytes_in_flight: number;
  request_bytes_in_flight: number;
  mcp_sessions: number;
  heartbeat_ms: number;
  report_silence_ms: number;
  run_identities: number;
  artifacts_per_execution: number;
  artifact_bytes: number;
  artifacts_total_bytes: number;
  details_retention_ms: number;
  grace_ms: number;
  storage_budget_bytes: number;
  disk_free_floor_bytes: number;
  direct_deadline_ms: number;
  worker_memory_mb: number;
  load_timeout_ms: number;
  log_files: number;
  log_file_bytes: number;
}

interface LimitSpec {
  default: number;
  min: number;
  max: number;
  /** What the value means, for `--help` and errors. */
  doc: string;
}

const DAY = 24 * 60 * 60 * 1000;
const MIB = 1024 * 1024;

/** Defaults, ranges and meaning of every limit. Flags and DOCKET_* variables derive from the keys. */
export const LIMIT_SPECS: Record<keyof Limits, LimitSpec> = {
  max_concurrent: { default: 2, min: 1, max: 8, doc: "executions running at once" },
  direct_workers: { default: 1, min: 1, max: 8, doc: "direct calls running at once (an HTTP call of a capability, the cockpit's Run, an MCP tool)" },
  max_queued: { default: 256, min: 0, max: 1_000_000, doc: "executions waiting to run" },
  executions_retained: { default: 1000, min: 1, max: 10_000_000, doc: "executions kept (oldest terminal forgotten first)" },
  events_retained: { default: 10_000, min: 10, max: 100_000_000, doc: "events kept per execution" },
  log_line_bytes: { default: 4096, min: 64, max: MIB, doc: "bytes of one log line" },
  step_title_bytes: { default: 1024, min: 64, max: MIB, doc: "bytes of one step title (and of a step id, a stream name, a diagnostic's code and file)" },
  step_message_bytes: { default: 4096, min: 64, max: MIB, doc: "bytes of one step's closing message" },
  progress_message_bytes: { default: 1024, min: 64, max: MIB, doc: "bytes of one progress message" },
  diagnostic_message_bytes: { default: 4096, min: 64, max: MIB, doc: "bytes of one diagnostic message" },
  failure_message_bytes: { default: 4096, min: 64, max: MIB, doc: "bytes of one failure message" },
  stream_chunk_bytes: { default: 64 * 1024, min: 64, max: 16 * MIB, doc: "bytes of one stream chunk" },
  events_retained_bytes: { default: 32 * MIB, min: 64 * 1024, max: 4096 * MIB, doc: "bytes of events kept per execution (oldest dropped first)" },
  // Without it the memory store's bounds multiply to 32 GB (executions_retained × events_retained_bytes).
  executions_retained_bytes: { default: 256 * MIB, min: MIB, max: 1024 * 1024 * MIB, doc: "bytes of events the memory store keeps, all executions together (oldest terminal forgotten first)" },
  diagnostics_retained: { default: 500, min: 1, max: 1_000_000, doc: "diagnostics in a snapshot" },
  steps_retained: { default: 1000, min: 1, max: 1_000_000, doc: "steps in a snapshot (oldest finished dropped first, then oldest running)" },
  log_tail_lines: { default: 1000, min: 1, max: 1_000_000, doc: "log lines in a snapshot" },
  // At most half of what one execution's stored snapshot may hold (256 Mi characters, docs/durability.md): every snapshot
  // holds the input, and a larger one could never be written — its start was acknowledged and the
  // execution then vanished (a tester's finding).
  input_bytes: { default: 8 * MIB, min: 1024, max: 128 * MIB, doc: "bytes of one input" },
  // Measured in the handler's worker, so that an oversized output never reaches the main thread,
  // whose parse, check and store of it held every request for seconds (100 MB: 7 s).
  output_bytes: { default: 8 * MIB, min: 1024, max: 1024 * MIB, doc: "bytes of one output's JSON (about: characters)" },
  frame_bytes: { default: 256 * 1024, min: 1024, max: 64 * MIB, doc: "bytes of one live-channel frame" },
  // Sized for a loopback client reading as fast as it can through a 200k-event burst (bench/RESULTS.md).
  subscriber_queue_bytes: { default: 64 * MIB, min: 256, max: 4096 * MIB, doc: "bytes of frames queued for one live-channel client that reads slower than events come" },
  // What clients that fell past subscriber_queue_bytes keep, all together: stalled clients cost at most this.
  lagging_kept_bytes: { default: 128 * MIB, min: 0, max: 4096 * MIB, doc: "bytes of frames kept, all together, for live-channel clients that fell more than subscriber_queue_bytes behind (the oldest stretch goes first)" },
  live_connections: { default: 256, min: 1, max: 100_000, doc: "live-channel connections" },
  // The runtime holds an HTTP answer until its client read it: clients that ask for 8 MiB outputs and never read held gigabytes.
  answer_bytes_in_flight: { default: 128 * MIB, min: MIB, max: 65536 * MIB, doc: "bytes of large HTTP answers (256 KiB or more) being sent at once; past it such an answer is 503 with Retry-After" },
  // The runtime holds what a client sent of a body until it is read whole: clients trickling the
  // last bytes of 8 MiB bodies held gigabytes (a tester's 250 connections: 2.3 GB).
  request_bytes_in_flight: { default: 128 * MIB, min: MIB, max: 65536 * MIB, doc: "bytes of HTTP request bodies held while being read, all together (counted as they arrive; a body of 4 KiB or less by its Content-Length, never refused); past it a request is 503 with Retry-After" },
  mcp_sessions: { default: 64, min: 1, max: 100_000, doc: "MCP sessions kept over HTTP (past it the least recently used idle one is closed)" },
  heartbeat_ms: { default: 20_000, min: 10, max: 3_600_000, doc: "quiet time before a heartbeat" },
  // At least 250: a run reports every third of it, and a round trip on a loaded machine takes tens of ms (at 10, every run failed).
  report_silence_ms: { default: 30_000, min: 250, max: 3_600_000, doc: "silence before a reported run fails unavailable" },
  run_identities: { default: 100_000, min: 1, max: 100_000_000, doc: "run_id identities kept" },
  artifacts_per_execution: { default: 64, min: 0, max: 100_000, doc: "artifact files per execution" },
  artifact_bytes: { default: 8 * MIB, min: 0, max: 1024 * MIB, doc: "bytes of one artifact" },
  artifacts_total_bytes: { default: 16 * MIB, min: 0, max: 4096 * MIB, doc: "bytes of all artifacts of one execution" },
  details_retention_ms: { default: 7 * DAY, min: 1000, max: 3650 * DAY, doc: "how long terminal details are kept (durable store)" },
  grace_ms: { default: 5000, min: 0, max: 3_600_000, doc: "time a handler asked to stop (a cancel, a deadline, a caller gone) gets before its worker is terminated" },
  storage_budget_bytes: { default: 512 * MIB, min: MIB, max: 1024 * 1024 * MIB, doc: "bytes .docket/ may hold (state and artifacts) before new executions are refused" },
  // A start the disk cannot hold is otherwise accepted and taken back once its write fails. Kept
  // free: what the sqlite store may still take by itself — its log growing to 64 MiB, a checkpoint
  // copying as much into the file — and an execution of the largest input (about 60 MiB written
  // for an 8 MiB input, measured): 192 MiB.
  disk_free_floor_bytes: { default: 192 * MIB, min: 0, max: 1024 * 1024 * MIB, doc: "free bytes the disk holding .docket/ must keep; below it new executions are refused until space is freed (0: never)" },
  // Containment (docs/containment.md): what keeps the server up whatever a handler does.
  direct_deadline_ms: { default: 60_000, min: 10, max: 3_600_000, doc: "deadline of a direct call (a capability's own timeout_ms wins when shorter)" },
  worker_memory_mb: { default: 1024, min: 16, max: 1_048_576, doc: "MiB a running handler may add to the process before its worker is terminated" },
  load_timeout_ms: { default: 5000, min: 10, max: 600_000, doc: "time a capability file gets to finish loading" },
  log_files: { default: 3, min: 1, max: 100, doc: "files of the server's log kept in .docket/logs (the one written included)" },
  log_file_bytes: { default: 10 * MIB, min: 1024, max: 1024 * MIB, doc: "bytes of one server log file before it is rotated" },
};

/** The defaults, as a fresh object. */
export function defaultLimits(): Limits {
  return Object.fromEntries(Object.entries(LIMIT_SPECS).map(([k, s]) => [k, s.default])) as unknown as Limits;
}

/** `max_concurrent` → `DOCKET_MAX_CONCURRENT`. */
export function limitEnvName(key: keyof Limits): string {
  return `DOCKET_${key.toUpperCase()}`;
}

/** `max_concurrent` → `max-concurrent` (the `serve` flag without its dashes). */
export function limitFlagName(key: keyof Limits): string {
  return key.replace(/_/g, "-");
}

/** Thrown for a limit value out of range or not a whole number; names the source and the range. */
export class LimitsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LimitsError";
  }
}

/**
 * Resolves the limits in force: defaults, then `DOCKET_*` variables, then explicit overrides
 * (flags). Every value is checked; the first bad one throws a LimitsError naming it.
 */
export function resolveLimits(options: { env?: Record<string, string | undefined>; overrides?: Partial<Record<keyof Limits, unknown>> } = {}): Limits {
  const limits = defaultLimits();
  for (const key of Object.keys(LIMIT_SPECS) as Array<keyof Limits>) {
    const fromEnv = options.env?.[limitEnvName(key)];
    if (fromEnv !== undefined && fromEnv !== "") limits[key] = checkLimit(key, fromEnv, limitEnvName(key));
    const fromFlag = options.overrides?.[key];
    if (fromFlag !== undefined) limits[key] = checkLimit(key, fromFlag, `--${limitFlagName(key)}`);
  }
  return limits;
}

/**
 * What to say of each `DOCKET_*` variable of `env` (in any case) that is no limit's but close to
 * one's name (`DOCKET_HEARBEAT_MS`, `DOCKET_SUBSCRIBER_QUEUE`, `docket_heartbeat_ms`): a mistyped
 * variable was ignored without a word, and the server ran on the default (serve tester, session
 * 46). Close is: the same name in another case, at most two letters apart (one for a short name),
 * or the start of a limit's name up to one of its words (`…_QUEUE` for `…_QUEUE_BYTES`). A
 * variable near no limit's name (a handler's own `DOCKET_SLACK_URL`, docket's `DOCKET_TOKEN`, a
 * `DOCKET_PORT` that only shares a word with `DOCKET_REPORT_SILENCE_MS`) is nobody's mistake here.
 */
export function mistypedLimitVariables(env: Record<string, string | undefined>): string[] {
  const names = Object.keys(LIMIT_SPECS).map((key) => limitEnvName(key as keyof Limits));
  const known = new Set(names);
  const notes: string[] = [];
  for (const name of Object.keys(env)) {
    if (!name.toUpperCase().startsWith("DOCKET_") || known.has(name) || env[name] === undefined) continue;
    const upper = name.toUpperCase();
    if (known.has(upper)) {
      notes.push(`${name} is not read: environment variables are named in upper case, so it is ${upper}.`);
      continue;
    }
    // Compared without the prefix every name shares, which would make any two look close.
    const rest = upper.slice("DOCKET_".length);
    const close = names.filter((limit) => {
      const other = limit.slice("DOCKET_".length);
      return editDistance(rest, other) <= (rest.length < 8 ? 1 : 2) || (rest.length >= 6 && other.startsWith(`${rest}_`));
    });
    if (close.length === 0) continue;
    notes.push(`${name} is not a setting of docket and is ignored; did you mean ${close.slice(0, 2).join(" or ")}? (docs/limits.md lists them)`);
  }
  return notes;
}

function checkLimit(key: keyof Limits, raw: unknown, source: string): number {
  const spec = LIMIT_SPECS[key];
  const value = typeof raw === "number" ? raw : typeof raw === "string" && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < spec.min || value > spec.max) {
    throw new LimitsError(`${source} (${spec.doc}) must be a whole number from ${spec.min} to ${spec.max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
