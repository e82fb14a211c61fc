import type { ExecutionPlane, EdgeInfo } from "../execution/plane.ts";
import type { ReportAnswer } from "../execution/report-protocol.ts";
import { systemClock } from "../execution/clock.ts";
import { createExecutionReporter, type ExecutionReporter } from "./_reporter.ts";
import { ServerUnreachableError, type ServerClient } from "./server-client.ts";

/** One report waits at most this long: a local server answers in milliseconds, a hung one must not hold the run. */
const REPORT_TIMEOUT_MS = 3000;

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
}

/**
 * Starts reporting a `docket run`'s execution to the server serving its checkout (docs/protocol.md), with
 * `executions.report` over HTTP and the lease's token. The work stays in this process.
 */
export function reportToServer(options: ReportToServerOptions): ExecutionReporter {
  const { server, plane, id, edge } = options;
  return createExecutionReporter({
    store: plane.store,
    id,
    pid: process.pid,
    frameBytes: plane.limits.frame_bytes,
    serverUrl: server.url,
    clock: systemClock,
    async send(report) {
      let answer;
      try {
        answer = await server.request("POST", "/api/v1/executions/report", { body: report, timeoutMs: REPORT_TIMEOUT_MS });
      } catch (error) {
        // The run names the server already; the reason alone completes its sentence.
        throw error instanceof ServerUnreachableError ? new Error(error.reason) : error;
      }
      if (!answer.ok) throw new Error(`HTTP ${answer.status} ${answer.failure.error_code}: ${answer.failure.message}`);
      return answer.body as ReportAnswer;
    },
    cancel(requestedBy) {
      plane.cancel(id, { ...edge, actor: requestedBy ?? edge.actor });
    },
    say: options.say,
  });
}
