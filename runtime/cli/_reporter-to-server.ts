import type { ExecutionPlane, EdgeInfo } from "../execution/plane.ts";
import type { ExecutionReport, ReportAnswer } from "../execution/report-protocol.ts";
import type { FailureDescriptor } from "../execution/failure.ts";
import { systemClock } from "../execution/clock.ts";
import { createExecutionReporter, ReportDeferredError, ReportRefusedError, ServerStoreFaultError, type ExecutionReporter } from "./_reporter.ts";
import { findServer, NO_ADDRESS, ServerUnreachableError, type ServerClient } from "./server-client.ts";
import { ownPidNamespace } from "../server/lease.ts";
import { leaveReports, removeLeftReports } from "../store/left-reports.ts";

/**
 * One report waits at most this long, looking the server up again included: a local server answers
 * in milliseconds, a hung one must not hold the run.
 */
const REPORT_TIMEOUT_MS = 3000;

/**
 * Fields of a report that a server of an earlier docket may not know, and that the run can do
 * without: such a server refuses them by name (`unknown_fields`), and the run reports again
 * without them (docs/protocol.md, "Servers of another version").
 */
const OPTIONAL_REPORT_FIELDS: ReadonlySet<string> = new Set(["pid_namespace"]);

/** The optional fields a refusal names as unknown, when it names only such fields; null otherwise. */
function unknownOptionalFields(failure: FailureDescriptor | null, report: ExecutionReport): string[] | null {
  const context = failure?.context as { reason?: unknown; fields?: unknown } | undefined;
  if (failure?.error_code !== "invalid_input" || context?.reason !== "unknown_fields" || !Array.isArray(context.fields)) return null;
  const fields = context.fields.filter((field): field is string => typeof field === "string");
  if (fields.length === 0 || fields.length !== context.fields.length) return null;
  return fields.every((field) => OPTIONAL_REPORT_FIELDS.has(field) && field in report) ? fields : null;
}

/** What a run hands to {@link reportToServer}. */
export interface ReportToServerOptions {
  server: ServerClient;
  /** The run's own plane: its store holds the events, its engine cancels when the server asks. */
  plane: Pick<ExecutionPlane, "store" | "cancel" | "limits">;
  id: string;
  /** The run's edge; a cancel the server passes on keeps its ids and names who asked. */
  edge: EdgeInfo;
  /** One line for stderr, already styled by the caller. */
  say(line: string): void;
  /** With a run_id: the hash of the real input, which the server keeps as the run's identity. */
  inputHash?: string;
  /**
   * The server holds the checkout but did not answer when the run began, and the run said so: it
   * is looked up again (its lease) before each report until it answers, and its first silences say nothing more.
   */
  unanswered?: boolean;
  /** Finds the checkout's server again after it stopped answering; default the lease (findServer). */
  findServer?: typeof findServer;
}

/**
 * Starts reporting a `docket run`'s execution to the server serving its checkout (docs/protocol.md), with
 * `executions.report` over HTTP and the lease's token. The work stays in this process.
 */
export function reportToServer(options: ReportToServerOptions): ExecutionReporter {
  const { plane, id, edge } = options;
  let server = options.server;
  // After a failed report, the lease is read again first: a server restarted on this checkout
  // (another port, another token) is the one to report to (docs/reconciliation.md).
  let lost = options.unanswered === true;
  // Optional fields the server refused as unknown: left out of every report from then on.
  const unknownToServer = new Set<string>();
  return createExecutionReporter({
    store: plane.store,
    id,
    pid: process.pid,
    pidNamespace: ownPidNamespace(),
    frameBytes: plane.limits.frame_bytes,
    serverUrl: () => server.url,
    // A server still starting has no address to name yet.
    serverName: () => (server.url === NO_ADDRESS ? `the docket server (pid ${server.pid}), which has written no address yet,` : `the server at ${server.url}`),
    clock: systemClock,
    leave: (reports) => leaveReports(server.root, id, reports),
    forgetLeft: () => removeLeftReports(server.root, id),
    async send(report, signal) {
      const deadline = Date.now() + REPORT_TIMEOUT_MS;
      if (lost) {
        const found = await (options.findServer ?? findServer)(server.root, { timeout_ms: REPORT_TIMEOUT_MS });
        if (found) server = found;
      }
      let answer;
      try {
        for (;;) {
          const body = unknownToServer.size === 0 ? report : withoutFields(report, unknownToServer);
          answer = await server.request("POST", "/api/v1/executions/report", { body, timeoutMs: Math.max(1, deadline - Date.now()), signal });
          const unknown = answer.ok || answer.status !== 400 ? null : unknownOptionalFields(answer.failure, body);
          if (unknown === null) break;
          for (const field of unknown) unknownToServer.add(field);
        }
      } catch (error) {
        lost = true;
        // A server whose store cannot write holds reports until it can: its /healthz says why.
        const fault = error instanceof ServerUnreachableError && error.reason === "no answer in time" ? await storeFaultOf(server.url) : null;
        if (fault !== null) throw new ServerStoreFaultError(fault);
        // The run names the server already; the reason alone completes its sentence.
        throw error instanceof ServerUnreachableError ? new Error(error.reason) : error;
      }
      lost = false;
      if (!answer.ok) {
        const refusal = `HTTP ${answer.status} ${answer.failure.error_code}: ${answer.failure.message}`;
        // A server that answers and refuses would refuse again; one going away (503) may come back,
        // and so may room (429), unless the server says waiting frees none (run identities full).
        const refused = answer.status >= 400 && answer.status < 500 && (answer.status !== 429 || answer.failure.retryability === "never");
        throw refused ? new ReportRefusedError(refusal, answer.failure) : new ReportDeferredError(refusal, answer.failure);
      }
      return (answer as { body: ReportAnswer }).body;
    },
    cancel(requestedBy) {
      plane.cancel(id, { ...edge, actor: requestedBy ?? edge.actor });
    },
    say: options.say,
    inputHash: options.inputHash,
    unanswered: options.unanswered,
  });
}

/** The report without `fields`. */
function withoutFields(report: ExecutionReport, fields: ReadonlySet<string>): ExecutionReport {
  const copy: Record<string, unknown> = { ...report };
  for (const field of fields) delete copy[field];
  return copy as unknown as ExecutionReport;
}

/** How long the look at a silent server's /healthz may take. */
const HEALTH_LOOK_MS = 1000;

/**
 * What a server that left a report unanswered says of its store (`GET /healthz`, open without a
 * token): "its store cannot write (since …: …)" while it has a storage fault, else null.
 */
async function storeFaultOf(url: string): Promise<string | null> {
  if (url === NO_ADDRESS) return null;
  try {
    const response = await fetch(new URL("/healthz", url), { signal: AbortSignal.timeout(HEALTH_LOOK_MS) });
    if (response.status !== 503) return null;
    const body = (await response.json()) as { store?: { reason?: unknown; since?: unknown } };
    const { reason, since } = body.store ?? {};
    return typeof reason === "string" ? `its store cannot write to disk${typeof since === "string" ? ` since ${since}` : ""} (${reason}), and it holds reports until it can` : null;
  } catch {
    return null;
  }
}
