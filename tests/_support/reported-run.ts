// A run as `docket run` reports it to a server (executions.report): its envelope and its events,
// for the tests that send reports by hand.

/** The reported execution's id and the pid of the run that reports it. */
export const REPORTED_ID = "x-20260908T010203Z-0a1b2c3d";
export const REPORTED_PID = 4242;

/** One event of the reported execution. */
export const reportedEvent = (sequence: number, type: string, data: unknown) => ({
  schema_version: "1",
  event_id: `${REPORTED_ID}#${sequence}`,
  execution_id: REPORTED_ID,
  sequence,
  timestamp: new Date().toISOString(),
  type,
  data,
});

/** The body of executions.report for `events` (executions.demonstrate, steps 1), with `extra` members over it. */
export const reportOf = (events: unknown[], extra: Record<string, unknown> = {}) => ({
  id: REPORTED_ID,
  pid: REPORTED_PID,
  capability: "executions.demonstrate",
  input: { steps: 1 },
  effect: "read",
  cancellable: true,
  request_id: "r-report-test",
  trace_id: "0af7651916cd43dd8448eb211c80319c",
  events,
  ...extra,
});
