import type { Actor } from "./protocol.ts";
import type { ExecutionState } from "./state-machine.ts";

/**
 * What `docket run` sends to the server serving its checkout (`executions.report`, docs/protocol.md): its
 * description, its pid, and its events after the last sequence the server took. The same shape
 * every time, so a report that was lost, cut or sent twice is mended by the next.
 */
export interface ExecutionReport {
  /** The run's own execution id: the server keeps the execution under the same id. */
  id: string;
  pid: number;
  /**
   * The run's pid namespace (`pid:[4026531836]` on Linux), absent where it has none: the server
   * judges whether `pid` is alive only when it names the server's own, the pids it can see.
   */
  pid_namespace?: string;
  capability: string;
  /** Redacted by the run's engine; sent until the server holds the execution (the created event carries it too). */
  input?: unknown;
  effect: "read" | "write";
  cancellable: boolean;
  run_id?: string | null;
  /**
   * With a run_id: SHA-256 (hex) of the canonical JSON of the real input (canonical-json.ts), which
   * the server keeps as the run's identity, as for a start: the same run_id and input later — a
   * start or another run — is this run; another input is run_id_conflict.
   */
  input_hash?: string;
  /**
   * With a run_id, from a run whose handler waits for it: bind the run_id to this execution now.
   * The first report only creates the execution, queued; the run asks for the run_id with the next
   * one and begins only once an answer says `run_id_bound`. So a run_id is never held by a run that
   * gave up before the server read it (docs/protocol.md).
   */
  bind_run_id?: boolean;
  session_key?: string | null;
  request_id: string;
  trace_id: string;
  /**
   * The sequence of the run's own `execution.cancel_requested`, once it has one. A cancel asked of
   * the server is stored there first (its own event, so that a crash keeps it), and the run's own
   * takes its place: this tells the server whether it already took the run's (docs/protocol.md).
   */
  cancel_sequence?: number;
  /** Events in order, dense; checked against the event schema before anything is applied. */
  events: unknown[];
}

/** The server's answer to one report: how far it got, and what the run must know. */
export interface ReportAnswer {
  id: string;
  /** The last of the run's sequences the server holds (its own cancel not counted); the next report starts after it. */
  through: number;
  /** Events of this report applied now (those at or below the previous `through` are skipped). */
  applied: number;
  /** True when the report began after a gap: nothing was applied; send again from `through + 1`. */
  gap: boolean;
  state: ExecutionState | null;
  /** A cancel was asked of the server (cockpit, `executions.cancel`): the run cancels its execution. */
  cancel_requested: boolean;
  /** Who asked for the cancel, so the run's own `execution.cancel_requested` names them. */
  requested_by: Actor | null;
  /** The server holds the execution as terminal; a run that has not finished stops reporting. */
  ended: boolean;
  /**
   * The server ended the execution for silence (`unavailable`) and nobody settled it yet: the run
   * reports its own `execution.completed` when it ends, and the server records it as a
   * reconciliation (docs/reconciliation.md, "Runs that come back").
   */
  takes_end: boolean;
  /** Silence after which the server ends an unheard run; the run reports well within it. */
  silence_ms: number;
  message: string;
  /**
   * The run's first report named a run_id already used with the same capability and input: the
   * server took nothing, and this is the execution that run_id names. The run does not run.
   */
  deduplicated_to?: string;
  /**
   * With a run_id: whether the server holds the run_id as this execution's. A run whose handler
   * waits for it begins only once this is true; before, nothing ran, and a run_id not bound stops no
   * other run with it.
   */
  run_id_bound?: boolean;
}

/** The most events one report may carry (capabilities/executions.report.ts declares the same bound); a run further behind sends again at once. */
export const REPORT_MAX_EVENTS = 1000;
