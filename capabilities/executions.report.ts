import { capability, CAPABILITY_ID_PATTERN, executionIdSchema, executionStateSchema, planeOf, sessionKeySchema } from "docket";
import * as v from "valibot";

const actor = v.looseObject({ kind: v.string() });

export default capability({
  id: "executions.report",
  title: "Report a run",
  description:
    "What `docket run` sends to the server serving its checkout: its execution's description, its pid, and its events after the last sequence the server took. Each event is applied once and in order; the answer says how far the server got (through) and whether a cancel was asked. Not for people or agents: no CLI command and no MCP tool.",
  effect: "write",
  execution: "never",
  input: v.object({
    id: executionIdSchema(),
    pid: v.pipe(v.number(), v.integer(), v.minValue(1), v.description("The process of docket run doing the work.")),
    pid_namespace: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^pid:\[\d{1,20}\]$/, "must be a pid namespace as Linux names it, like pid:[4026531836]"),
        v.description("The run's pid namespace (Linux): the server looks the pid up only when it is its own."),
      ),
    ),
    capability: v.pipe(v.string(), v.regex(CAPABILITY_ID_PATTERN, "must be a capability id like files.digest")),
    input: v.optional(v.pipe(v.unknown(), v.description("The input, already redacted by the run; sent until the server holds the execution."))),
    effect: v.picklist(["read", "write"]),
    cancellable: v.boolean(),
    run_id: v.optional(v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._:-]{1,128}$/, "must be 1-128 characters of A-Z a-z 0-9 . _ : -")))),
    input_hash: v.optional(
      v.pipe(
        v.string(),
        v.regex(/^[0-9a-f]{64}$/, "must be 64 lower-case hex digits"),
        v.description("With a run_id: the SHA-256 of the canonical JSON of the real input, so that the run and a start with the same run_id are one run."),
      ),
    ),
    bind_run_id: v.optional(
      v.pipe(
        v.boolean(),
        v.description("With a run_id, from a run whose handler waits for it: take the run_id as this execution's now. The report that creates the execution never does; the run begins once an answer says run_id_bound."),
      ),
    ),
    session_key: v.optional(v.nullable(sessionKeySchema())),
    request_id: v.pipe(v.string(), v.regex(/^[A-Za-z0-9._:-]{1,128}$/, "must be 1-128 characters of A-Z a-z 0-9 . _ : -")),
    trace_id: v.pipe(v.string(), v.regex(/^[0-9a-f]{32}$/, "must be 32 lower-case hex digits")),
    cancel_sequence: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(1),
        v.description("The sequence of the run's own execution.cancel_requested, once it has one: where the server's stored cancel is taken over by the run's."),
      ),
    ),
    events: v.pipe(
      // Each event is checked against the protocol's event schema where it is applied, before anything is.
      v.array(v.looseObject({ sequence: v.pipe(v.number(), v.integer(), v.minValue(1)), type: v.string() })),
      v.maxLength(1000),
      v.description("Events in order, dense, after the last sequence the server took (execution.created first when it holds none)."),
    ),
  }),
  output: v.object({
    id: v.string(),
    through: v.pipe(v.number(), v.description("The last of the run's sequences the server holds; the next report starts after it.")),
    applied: v.number(),
    gap: v.pipe(v.boolean(), v.description("The report began after a gap and nothing was applied: send again from through + 1.")),
    state: v.nullable(executionStateSchema()),
    cancel_requested: v.pipe(v.boolean(), v.description("A cancel was asked of the server: the run cancels its own execution.")),
    requested_by: v.nullable(actor),
    ended: v.pipe(v.boolean(), v.description("The server holds the execution as terminal (for example failed after silence): a run still working stops reporting.")),
    takes_end: v.pipe(
      v.boolean(),
      v.description("The server ended the execution for silence and has not settled it: the run reports its own execution.completed when it ends, recorded as a reconciliation."),
    ),
    silence_ms: v.number(),
    message: v.string(),
    deduplicated_to: v.optional(
      v.pipe(v.string(), v.description("The run_id was already used, with the same capability and input, for this execution: nothing was taken, and the run must not run again.")),
    ),
    run_id_bound: v.optional(
      v.pipe(v.boolean(), v.description("With a run_id: whether the server holds it as this execution's. A run that waits for it begins only once it is true; until then nothing ran.")),
    ),
  }),
  handler(input, ctx) {
    return planeOf(ctx).report(input);
  },
});
